//! The host wires hooks and extensions into every agent it builds: a project's hook files
//! and extensions run only when the project is trusted; two extensions claiming one memory
//! slot leave the first its owner and the session with one claim.

#![expect(clippy::unwrap_used, reason = "tests")]

use std::path::{Path, PathBuf};

use strata_mock::{MockConfig, MockServer, Scenario};
use strata_session::Entry;

/// A Python extension (standard library only) from strata-extensions' tests.
fn ext_py() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../strata-extensions/tests/ext.py")
}

struct Project {
    _dir: tempfile::TempDir,
    global: PathBuf,
    project: PathBuf,
}

/// A user config naming `user_extra`, a project whose `.strata/config.toml` is
/// `project_config`, with a Claude Code `settings.json` whose UserPromptSubmit hook leaves a
/// marker file and adds context.
fn project(user_extra: &str, project_config: &str) -> Project {
    let dir = tempfile::tempdir().unwrap();
    let global = dir.path().join("user");
    let project = dir.path().join("project");
    std::fs::create_dir_all(&global).unwrap();
    std::fs::create_dir_all(project.join(".strata")).unwrap();
    std::fs::create_dir_all(project.join(".claude")).unwrap();
    let sessions = dir.path().join("sessions");
    std::fs::write(
        global.join("config.toml"),
        format!("pi_models = false\nsessions_dir = {sessions:?}\nmax_retries = 0\n{user_extra}"),
    )
    .unwrap();
    std::fs::write(project.join(".strata/config.toml"), project_config).unwrap();
    std::fs::write(
        project.join(".claude/settings.json"),
        r#"{"hooks": {"UserPromptSubmit": [{"hooks": [{"type": "command",
            "command": "touch \"$CLAUDE_PROJECT_DIR/hook-ran\"; echo 'Project rule: be brief.'"}]}]}}"#,
    )
    .unwrap();
    Project {
        _dir: dir,
        global,
        project,
    }
}

async fn mock(turns: usize) -> MockServer {
    let server = MockServer::start(MockConfig::new()).await.unwrap();
    let scenario: String = (0..turns)
        .map(|i| format!("[[turn]]\ntext = \"answer {i}\"\n"))
        .collect();
    server.load_scenario(Scenario::from_toml(&scenario, "host").unwrap());
    server
}

fn setup(p: &Project, server: &MockServer, trust: bool) -> strata_host::Setup {
    let sources = strata_host::Sources {
        global_dir: Some(p.global.clone()),
        project_dir: p.project.clone(),
    };
    let overrides = strata_host::Overrides {
        model: Some("anthropic/claude-sonnet-4-5".into()),
        api_key: Some("test-key".into()),
        base_url: Some(server.base_url()),
        trust,
        ..strata_host::Overrides::default()
    };
    strata_host::Setup::load_in(sources, p.project.clone(), &overrides).unwrap()
}

/// The `data` of every `custom` entry of `custom_type` in the session file.
fn customs(agent: &strata_agent::Agent, custom_type: &str) -> Vec<serde_json::Value> {
    let session = agent.session();
    let Some(leaf) = session.leaf() else {
        return Vec::new();
    };
    session
        .tree()
        .path_from_root(leaf)
        .into_iter()
        .filter_map(|id| match session.tree().entry(id).unwrap() {
            Entry::Custom(c) if c.custom_type == custom_type => c.data,
            _ => None,
        })
        .collect()
}

const PROJECT_EXTENSION: &str = r#"
[extensions.claimer]
command = "python3"
args = ["EXT", "claim:compaction", "claimer"]
"#;

#[tokio::test]
async fn an_untrusted_projects_hooks_and_extensions_do_not_run_a_trusted_ones_do() {
    for trust in [false, true] {
        let config = PROJECT_EXTENSION.replace("EXT", &ext_py().display().to_string());
        let p = project("", &config);
        let server = mock(1).await;
        let setup = setup(&p, &server, trust);
        let mut built = setup.build_agent().unwrap();
        built.agent.prompt("hi").await.unwrap();
        let body = server.requests()[0].body.clone().unwrap().to_string();
        let claims = customs(&built.agent, strata_extensions::SLOT_CUSTOM_TYPE);
        assert_eq!(
            p.project.join("hook-ran").exists(),
            trust,
            "trusted: {trust}"
        );
        assert_eq!(body.contains("Project rule: be brief."), trust, "{body}");
        if trust {
            assert_eq!(claims.len(), 1, "{claims:?}");
            assert_eq!(claims[0]["owner"], "claimer");
            assert_eq!(claims[0]["slot"], "compaction");
        } else {
            assert!(
                claims.is_empty(),
                "an untrusted project's extension started: {claims:?}"
            );
            assert!(setup.extension_set().is_none());
        }
        if let Some(set) = setup.extension_set() {
            set.shutdown().await;
        }
    }
}

#[tokio::test]
async fn a_second_extension_claiming_a_slot_is_refused_and_the_session_records_one_owner() {
    let ext = ext_py().display().to_string();
    let user = format!(
        r#"
[extensions.first]
command = "python3"
args = ["{ext}", "claim:ingress_filter", "first"]
[extensions.second]
command = "python3"
args = ["{ext}", "claim:ingress_filter", "second"]
"#
    );
    let p = project(&user, "");
    let server = mock(2).await;
    let setup = setup(&p, &server, false);
    let mut built = setup.build_agent().unwrap();
    built.agent.prompt("hi").await.unwrap();
    let notices = built.agent.take_memory_notices();
    assert_eq!(
        notices,
        vec![
            "memory slot `ingress_filter` is owned by extension `first`; `second` was refused"
                .to_owned()
        ]
    );
    let claims = customs(&built.agent, strata_extensions::SLOT_CUSTOM_TYPE);
    assert_eq!(claims.len(), 1, "{claims:?}");
    assert_eq!(claims[0]["owner"], "first");
    // A second prompt claims nothing again and writes nothing more.
    built.agent.prompt("again").await.unwrap();
    assert_eq!(
        customs(&built.agent, strata_extensions::SLOT_CUSTOM_TYPE).len(),
        1
    );
    assert!(built.agent.take_memory_notices().is_empty());
    setup.extension_set().unwrap().shutdown().await;
}
