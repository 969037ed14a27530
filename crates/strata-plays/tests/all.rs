//! The plays as real extension processes, run by the agent against strata-mock.

#![expect(clippy::unwrap_used, reason = "tests")]

#[path = "all/memory.rs"]
mod memory;

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use strata_agent::{Agent, AgentConfig};
use strata_anthropic::AnthropicProvider;
use strata_extensions::{Extension, ExtensionSpec, UiCall, UiRequest};
use strata_hooks::{HookRunner, HookSet};
use strata_mock::{MockConfig, MockServer, Scenario};
use strata_plays::guard::{is_destructive, outside_paths};
use strata_provider::transport::{HttpClient, TransportConfig};
use strata_provider::{ApiKey, Catalog, StreamOptions};
use strata_session::{AgentMessage, Entry, Session, WriteOptions};
use strata_tools::ToolSet;
use tokio::sync::mpsc;

#[test]
fn the_guard_tells_destructive_commands_outside_the_project() {
    let project = Path::new("/work/app");
    let home = Some(Path::new("/home/me"));
    for (command, destructive, outside) in [
        ("rm -rf /tmp/x", true, vec!["/tmp/x"]),
        ("rm -rf build", true, vec![]),
        ("rm -fr ../other", true, vec!["/work/other"]),
        ("ls /etc", false, vec!["/etc"]),
        ("cd /work/app && rm -r ./target", true, vec![]),
        ("git reset --hard", true, vec![]),
        ("git status", false, vec![]),
        (
            "dd if=/dev/zero of=/dev/sda",
            true,
            vec!["/dev/zero", "/dev/sda"],
        ),
        ("rm -rf ~/notes", true, vec!["/home/me/notes"]),
        ("echo hi; sudo rm -r /work/app/../x", true, vec!["/work/x"]),
    ] {
        assert_eq!(is_destructive(command), destructive, "{command}");
        let found: Vec<String> = outside_paths(command, project, home)
            .iter()
            .map(|p| p.display().to_string())
            .collect();
        assert_eq!(found, outside, "{command}");
    }
}

fn agent(server: &MockServer, dir: &Path) -> Agent {
    let catalog = Catalog::builtin().unwrap();
    let row = catalog.provider("anthropic").unwrap().clone();
    let model = catalog.model("anthropic", "claude-sonnet-4-5").unwrap();
    let client = HttpClient::new(&TransportConfig::default()).unwrap();
    let provider = AnthropicProvider::for_row(&row, client);
    let config = AgentConfig {
        cwd: dir.to_path_buf(),
        capabilities: row.capabilities(&model.id),
        api: "anthropic-messages".into(),
        model,
        max_tokens: Some(4096),
        global_dir: None,
        custom_intro: None,
        append_system_prompt: None,
        stream: StreamOptions {
            base_url: Some(server.base_url()),
            api_key: Some(ApiKey::new("test-key")),
            ..StreamOptions::default()
        },
        render_policy: strata_context::RenderPolicy::Strata,
        compaction: strata_compaction::CompactionSettings::default(),
        summary_model: None,
        cache: strata_agent::CacheSettings::default(),
        tool_settings: strata_tools::ToolSettings::default(),
    };
    let session = Session::create(
        dir.join("s.jsonl"),
        &dir.display().to_string(),
        WriteOptions::default(),
    )
    .unwrap();
    Agent::new(session, Arc::new(provider), ToolSet::default_set(), config)
}

#[tokio::test]
async fn the_guard_extension_asks_before_a_destructive_command_outside_and_denies_on_no() {
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("keep.txt"), "precious").unwrap();
    let project = tempfile::tempdir().unwrap();
    std::fs::create_dir(project.path().join("build")).unwrap();
    let scenario = format!(
        r#"
[[turn]]
[[turn.tool_call]]
tool = "bash"
args = {{ command = "rm -rf {outside}" }}
[[turn]]
[[turn.tool_call]]
tool = "bash"
args = {{ command = "rm -rf build" }}
[[turn]]
text = "Cleaned what I was allowed to."
"#,
        outside = outside.path().display()
    );
    let server = MockServer::start(MockConfig::new()).await.unwrap();
    server.load_scenario(Scenario::from_toml(&scenario, "guard").unwrap());
    // The user says no to every question, and we count the questions.
    let (ui, mut calls) = mpsc::channel::<UiCall>(8);
    let (asked_tx, mut asked) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        while let Some(call) = calls.recv().await {
            if let Some(reply) = call.reply {
                let _ = reply.send(serde_json::json!({"confirmed": false}));
            }
            let _ = asked_tx.send((call.extension, call.request));
        }
    });
    let spec = ExtensionSpec {
        name: "guard".into(),
        program: env!("CARGO_BIN_EXE_strata-play-guard").into(),
        args: Vec::new(),
        cwd: project.path().to_path_buf(),
        timeout: Duration::from_secs(30),
    };
    let guard = Arc::new(Extension::start(spec, Some(ui), None).await.unwrap());
    let runner = HookRunner::new(HookSet::default(), project.path()).with_responder(guard.clone());
    let mut agent = agent(&server, project.path());
    agent.set_hooks(Some(runner));
    let summary = agent.prompt("clean up").await.unwrap();
    assert_eq!(summary.final_text, "Cleaned what I was allowed to.");
    assert_eq!(
        std::fs::read_to_string(outside.path().join("keep.txt")).unwrap(),
        "precious"
    );
    assert!(
        !project.path().join("build").exists(),
        "inside the project it ran unasked"
    );
    let mut questions = Vec::new();
    while let Ok(question) = asked.try_recv() {
        questions.push(question);
    }
    assert_eq!(questions.len(), 1, "{questions:?}");
    assert_eq!(questions[0].0, "guard");
    assert!(
        matches!(&questions[0].1, UiRequest::Confirm { message, .. } if message.contains("outside the project"))
    );
    let session = agent.session();
    let results: Vec<(String, bool)> = session
        .tree()
        .path_from_root(session.leaf().unwrap())
        .into_iter()
        .filter_map(|id| match session.tree().entry(id).unwrap() {
            Entry::Message(m) => match m.message.into_message() {
                AgentMessage::ToolResult(r) => {
                    Some((strata_session::join_text(&r.content, ""), r.is_error))
                }
                _ => None,
            },
            _ => None,
        })
        .collect();
    assert!(
        results[0].1 && results[0].0.starts_with("Blocked by the guard"),
        "{results:?}"
    );
    assert!(!results[1].1, "{results:?}");
    guard.shutdown().await;
}
