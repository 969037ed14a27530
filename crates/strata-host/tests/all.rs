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
    // The refusal is for the user: a notice every front end shows (the runtime drains them).
    let notices: Vec<(String, String)> = built
        .agent
        .take_notices()
        .into_iter()
        .map(|n| (n.source.to_string(), n.text))
        .collect();
    assert_eq!(
        notices,
        vec![(
            "memory slots".to_owned(),
            "memory slot `ingress_filter` is owned by extension `first`; `second` was refused"
                .to_owned()
        )]
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

/// A project with `notes.txt`, a user config with `extensions`, a mock playing `scenario`.
async fn with_extensions(
    extensions: &str,
    scenario: &str,
) -> (Project, MockServer, strata_host::Setup) {
    let p = project(extensions, "");
    std::fs::write(p.project.join("notes.txt"), "NOTES-CONTENT ".repeat(50)).unwrap();
    let server = MockServer::start(MockConfig::new()).await.unwrap();
    server.load_scenario(Scenario::from_toml(scenario, "memory").unwrap());
    let setup = setup(&p, &server, false);
    (p, server, setup)
}

fn py_extension(name: &str, mode: &str, timeout: f64) -> String {
    format!(
        "[extensions.{name}]\ncommand = \"python3\"\nargs = [{:?}, {mode:?}, {name:?}]\ntimeout = {timeout}\n",
        ext_py().display().to_string()
    )
}

const READ_NOTES: &str = r#"
[[turn]]
[[turn.tool_call]]
tool = "read"
args = { path = "notes.txt" }
[[turn]]
text = "Read them."
[[turn]]
text = "Second."
"#;

#[tokio::test]
async fn the_ingress_filter_rewrites_a_result_before_the_model_reads_it_and_the_file_keeps_it() {
    let (_p, server, setup) =
        with_extensions(&py_extension("shortener", "filter", 20.0), READ_NOTES).await;
    let mut built = setup.build_agent().unwrap();
    built.agent.prompt("read the notes").await.unwrap();
    let second = server.requests()[1].body.clone().unwrap().to_string();
    assert!(
        second.contains("filtered: 700 characters of read"),
        "{second}"
    );
    assert!(!second.contains("NOTES-CONTENT"), "{second}");
    // The tool's own result is in the file, then the edit that replaced it.
    let file = std::fs::read_to_string(built.agent.session().path()).unwrap();
    assert!(file.contains("NOTES-CONTENT"));
    assert!(file.contains(r#""type":"context_edit""#), "{file}");
    let records = customs(&built.agent, strata_agent::MEMORY_CUSTOM_TYPE);
    assert_eq!(records[0]["slot"], "ingress_filter");
    assert_eq!(records[0]["owner"], "shortener");
    // What the model reads instead is the extension's cache write: 32 characters, 8 tokens
    // at Sonnet 4.5's $3.75 per million.
    let by = &records[0]["cacheWriteBy"][0];
    assert_eq!(by["source"], "extension shortener", "{records:?}");
    assert_eq!(by["tokens"], 8);
    assert!((by["cost"].as_f64().unwrap() - 8.0 * 3.75 / 1e6).abs() < 1e-12);
    setup.extension_set().unwrap().shutdown().await;
}

#[tokio::test]
async fn the_forgetting_owner_masks_finished_results_only() {
    let (_p, server, setup) =
        with_extensions(&py_extension("forgetful", "forget", 20.0), READ_NOTES).await;
    let mut built = setup.build_agent().unwrap();
    built.agent.prompt("read the notes").await.unwrap();
    // Within the task that read them, the notes stay.
    let second = server.requests()[1].body.clone().unwrap().to_string();
    assert!(second.contains("NOTES-CONTENT"), "{second}");
    built.agent.prompt("and now?").await.unwrap();
    let third = server.requests()[2].body.clone().unwrap().to_string();
    assert!(third.contains("[forgotten: read "), "{third}");
    assert!(!third.contains("NOTES-CONTENT"), "{third}");
    let file = std::fs::read_to_string(built.agent.session().path()).unwrap();
    assert!(
        file.contains("NOTES-CONTENT"),
        "the full output stays in the file"
    );
    let records = customs(&built.agent, strata_agent::MEMORY_CUSTOM_TYPE);
    assert_eq!(records.last().unwrap()["slot"], "forgetting");
    setup.extension_set().unwrap().shutdown().await;
}

#[tokio::test]
async fn a_crashing_hanging_garbage_writing_or_huge_extension_never_stops_the_run() {
    let extensions: String = [
        ("crasher", "crash", 20.0),
        ("hanger", "hang", 2.0),
        ("garbler", "garbage", 20.0),
        ("huge", "huge", 60.0),
    ]
    .iter()
    .map(|(name, mode, timeout)| py_extension(name, mode, *timeout))
    .collect();
    let scenario = r#"
[[turn]]
[[turn.tool_call]]
tool = "bash"
args = { command = "echo made > made.txt" }
[[turn]]
[[turn.tool_call]]
tool = "bash"
args = { command = "echo again >> made.txt" }
[[turn]]
text = "Done despite them."
"#;
    let (p, _server, setup) = with_extensions(&extensions, scenario).await;
    let mut built = setup.build_agent().unwrap();
    let summary = built.agent.prompt("make the file").await.unwrap();
    assert_eq!(summary.final_text, "Done despite them.");
    assert_eq!(
        std::fs::read_to_string(p.project.join("made.txt")).unwrap(),
        "made\nagain\n"
    );
    // Nothing lost: the file reopens with both results and the answer.
    let path = built.agent.session().path().to_path_buf();
    let reopened = strata_session::Session::open(&path).unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(
        reopened.diagnostics.is_empty(),
        "{:?}",
        reopened.diagnostics
    );
    assert_eq!(text.matches(r#""role":"toolResult""#).count(), 2, "{text}");
    assert!(text.contains("Done despite them."));
    // Each reported once, by name.
    let reports = setup.extension_set().unwrap().take_reports();
    let mut names: Vec<&str> = reports.iter().map(|r| r.extension.as_str()).collect();
    names.sort_unstable();
    assert_eq!(
        names,
        vec!["crasher", "garbler", "hanger", "huge"],
        "{reports:?}"
    );
    setup.extension_set().unwrap().shutdown().await;
}

#[tokio::test]
async fn loaded_lists_each_extension_with_its_source_status_slots_and_the_hooks() {
    let user = format!(
        "{}[extensions.missing]\ncommand = \"/nonexistent/strata-ext\"\n",
        py_extension("keeper", "claim:compaction", 10.0)
    );
    let p = project(&user, "");
    let server = mock(1).await;
    let setup = setup(&p, &server, true);
    // Before the first prompt nothing has started.
    let before = setup.loaded().extensions(&[]);
    assert_eq!(
        before.iter().map(|r| r.status).collect::<Vec<_>>(),
        vec!["not started", "not started"]
    );
    let mut built = setup.build_agent().unwrap();
    built.agent.prompt("hi").await.unwrap();
    let loaded = setup.loaded();
    let attributed = strata_accounting::attributions(built.agent.session().tree());
    let rows = loaded.extensions(&attributed);
    let user_file = p.global.join("config.toml").display().to_string();
    assert_eq!(rows[0].name, "keeper");
    assert_eq!(rows[0].status, "running");
    assert_eq!(rows[0].source, user_file);
    assert_eq!(rows[0].slots, vec!["compaction"]);
    assert_eq!(rows[0].hooks, vec!["PreToolUse"]);
    assert_eq!(rows[0].tools, vec!["shout"]);
    assert_eq!(rows[1].name, "missing");
    assert_eq!(rows[1].status, "failed");
    assert!(
        rows[1]
            .error
            .as_deref()
            .unwrap()
            .contains("could not start"),
        "{rows:?}"
    );
    // The project's Claude Code hook (trusted), then the extension answering PreToolUse.
    let hooks = loaded.hooks(&attributed);
    let settings = p
        .project
        .join(".claude/settings.json")
        .display()
        .to_string();
    assert!(
        hooks
            .iter()
            .any(|h| h.event == "UserPromptSubmit" && h.scope == "project" && h.source == settings),
        "{hooks:?}"
    );
    // Its 23 characters of context cost 6 tokens of cache writes.
    let prompt_hook = hooks
        .iter()
        .find(|h| h.event == "UserPromptSubmit")
        .unwrap();
    assert_eq!(prompt_hook.cache_write_tokens, 6, "{hooks:?}");
    // The extension's tool `shout` entered the ledger: its definition is its cache write,
    // said in one custom entry.
    let tool_writes = customs(&built.agent, strata_accounting::ATTRIBUTION_CUSTOM_TYPE);
    assert_eq!(tool_writes.len(), 1, "{tool_writes:?}");
    let by = &tool_writes[0]["cacheWriteBy"][0];
    assert_eq!(by["source"], "extension keeper");
    assert!(by["tokens"].as_u64().unwrap() > 5, "{by}");
    assert_eq!(rows[0].cache_write_tokens, by["tokens"].as_u64().unwrap());
    assert!(
        hooks
            .iter()
            .any(|h| h.event == "PreToolUse" && h.command == "extension keeper"),
        "{hooks:?}"
    );
    let lines = loaded.extension_lines(&attributed).join("\n");
    assert!(
        loaded
            .hook_lines(&attributed)
            .contains(&"  cache writes: 6 tokens, $0.000023".to_owned()),
        "{:?}",
        loaded.hook_lines(&attributed)
    );
    assert!(lines.contains("memory slots: compaction"), "{lines}");
    // A stopped extension is failed, with why, and holds no slot.
    setup.extension_set().unwrap().shutdown().await;
    let after = setup.loaded().extensions(&[]);
    assert_eq!(after[0].status, "failed");
    assert!(after[0].slots.is_empty(), "{after:?}");
}
