//! Real extension processes (Python, standard library only): the protocol end to end, and
//! every way a bad extension can fail, contained.

#![expect(clippy::unwrap_used, reason = "tests")]

use std::path::Path;
use std::time::Duration;

use pretty_assertions::assert_eq;
use serde_json::json;
use strata_extensions::{
    Extension, ExtensionReport, ExtensionSpec, MemorySlots, Slot, SlotError, UiCall, UiRequest,
};
use strata_hooks::{HookEvent, HookInput, PreToolDecision};
use tokio::sync::mpsc;

fn spec(mode: &str, name: &str, timeout: Duration) -> ExtensionSpec {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/ext.py");
    ExtensionSpec {
        name: name.into(),
        program: "python3".into(),
        args: vec![script.display().to_string(), mode.into(), name.into()],
        cwd: std::env::temp_dir(),
        timeout,
    }
}

fn bash(command: &str) -> HookInput {
    HookInput::new(HookEvent::PreToolUse, "s", "t", "c")
        .with("tool_name", "Bash")
        .with("tool_input", json!({ "command": command }))
}

/// Answers every confirm with `yes`, records the rest.
fn ui(yes: bool, capacity: usize) -> (mpsc::Sender<UiCall>, mpsc::UnboundedReceiver<UiRequest>) {
    let (tx, mut rx) = mpsc::channel::<UiCall>(capacity);
    let (seen_tx, seen) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        while let Some(call) = rx.recv().await {
            if let Some(reply) = call.reply {
                let _ = reply.send(json!({ "confirmed": yes }));
            }
            let _ = seen_tx.send(call.request);
        }
    });
    (tx, seen)
}

fn drain<T>(rx: &mut mpsc::UnboundedReceiver<T>) -> Vec<T> {
    let mut all = Vec::new();
    while let Ok(item) = rx.try_recv() {
        all.push(item);
    }
    all
}

#[tokio::test]
async fn handshake_hooks_ui_events_commands_and_tools() {
    let (ui_tx, mut seen) = ui(false, 16);
    let ext = Extension::start(
        spec("good", "guard", Duration::from_secs(20)),
        Some(ui_tx),
        None,
    )
    .await
    .unwrap();
    assert_eq!(ext.manifest().name, "guard");
    assert_eq!(ext.manifest().hooks, vec!["PreToolUse"]);
    assert_eq!(ext.manifest().tools[0].name, "shout");
    // A destructive command: the extension asks the user, who says no.
    let outcome = ext.hook(&bash("rm -rf /")).await.unwrap();
    assert_eq!(outcome.decision, PreToolDecision::Deny);
    assert_eq!(
        outcome.reason.as_deref(),
        Some("the user said no to: rm -rf /")
    );
    let harmless = ext.hook(&bash("ls")).await.unwrap();
    assert_eq!(harmless.decision, PreToolDecision::None);
    // Not declared: not asked.
    let stop = HookInput::new(HookEvent::Stop, "s", "t", "c");
    assert!(ext.hook(&stop).await.is_none());
    ext.notify_event("agent_start", &json!({}));
    ext.notify_event("turn_end", &json!({"turn": 1}));
    assert_eq!(
        ext.command("events", "").await.unwrap(),
        "agent_start,turn_end"
    );
    let shout = ext.call_tool("shout", &json!({"text": "hi"})).await;
    assert_eq!((shout.text.as_str(), shout.is_error), ("HI", false));
    let requests = drain(&mut seen);
    assert!(matches!(&requests[0], UiRequest::Confirm { message, .. } if message == "rm -rf /"));
    assert!(
        requests
            .iter()
            .any(|r| matches!(r, UiRequest::Status { text } if text == "guard asked"))
    );
    ext.shutdown().await;
    assert!(!ext.is_alive());
}

async fn misbehaving(
    mode: &str,
    timeout: Duration,
) -> (Extension, mpsc::UnboundedReceiver<ExtensionReport>) {
    let (reports, rx) = mpsc::unbounded_channel();
    let (ui_tx, _seen) = ui(true, 4);
    let ext = Extension::start(spec(mode, mode, timeout), Some(ui_tx), Some(reports))
        .await
        .unwrap();
    (ext, rx)
}

#[tokio::test]
async fn a_crash_fails_the_call_at_once_and_is_reported_once() {
    let (ext, mut reports) = misbehaving("crash", Duration::from_secs(600)).await;
    let outcome = ext.hook(&bash("ls")).await.unwrap();
    assert_eq!(
        outcome.decision,
        PreToolDecision::None,
        "a failure never blocks"
    );
    assert!(
        outcome.user_messages[0].contains("extension `crash` is not running"),
        "{outcome:?}"
    );
    // Later calls fail at once too.
    assert!(ext.command("events", "").await.is_err());
    let reports = drain(&mut reports);
    assert_eq!(
        reports,
        vec![ExtensionReport {
            extension: "crash".into(),
            problem: "extension `crash` exited".into()
        }]
    );
}

#[tokio::test]
async fn a_hang_ends_at_the_timeout_and_the_extension_is_stopped() {
    let (ext, mut reports) = misbehaving("hang", Duration::from_millis(1500)).await;
    let outcome = ext.hook(&bash("ls")).await.unwrap();
    assert!(
        outcome.user_messages[0].contains("did not answer `hook`"),
        "{outcome:?}"
    );
    assert!(!ext.is_alive());
    assert!(ext.hook(&bash("ls")).await.unwrap().user_messages[0].contains("not running"));
    let reports = drain(&mut reports);
    assert_eq!(reports.len(), 1, "{reports:?}");
    assert!(reports[0].problem.contains("`hang`"));
}

#[tokio::test]
async fn garbage_floods_and_a_100_mb_message_are_dropped_and_the_answer_still_arrives() {
    for (mode, kind) in [
        ("garbage", "not a JSON-RPC message"),
        ("flood", "more UI requests"),
        ("huge", "limit"),
    ] {
        let (ext, mut reports) = misbehaving(mode, Duration::from_secs(60)).await;
        // The flood spends its own UI budget: its later confirm may be refused, so it is not
        // asked one; the others go through a UI round trip after the noise.
        let command = if mode == "flood" { "ls" } else { "rm -rf /" };
        let outcome = ext.hook(&bash(command)).await.unwrap();
        // The UI said yes (or was not asked): the answer after the noise got through.
        assert_eq!(
            outcome.decision,
            PreToolDecision::None,
            "{mode}: {outcome:?}"
        );
        assert!(outcome.user_messages.is_empty(), "{mode}: {outcome:?}");
        assert!(ext.is_alive(), "{mode}");
        let again = ext.hook(&bash(command)).await.unwrap();
        assert!(again.user_messages.is_empty(), "{mode}");
        let reports = drain(&mut reports);
        assert_eq!(reports.len(), 1, "{mode}: reported once: {reports:?}");
        assert!(reports[0].problem.contains(kind), "{mode}: {reports:?}");
        assert_eq!(reports[0].extension, mode);
        ext.shutdown().await;
    }
}

#[tokio::test]
async fn a_second_claimant_of_a_slot_is_refused_and_the_session_is_unchanged() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.jsonl");
    let mut session =
        strata_session::Session::create(&path, "/tmp", strata_session::WriteOptions::default())
            .unwrap();
    let mut slots = MemorySlots::new();
    assert!(Slot::ALL.iter().all(|slot| slots.owner(*slot) == "strata"));
    let first = Extension::start(
        spec("claim:compaction", "sticky-note", Duration::from_secs(20)),
        None,
        None,
    )
    .await
    .unwrap();
    let second = Extension::start(
        spec("claim:compaction", "lossless", Duration::from_secs(20)),
        None,
        None,
    )
    .await
    .unwrap();
    for slot in &first.manifest().slots {
        slots
            .claim(slot, first.name(), &mut session)
            .unwrap()
            .unwrap();
    }
    assert_eq!(slots.owner(Slot::Compaction), "sticky-note");
    let before = std::fs::read(&path).unwrap();
    let leaf = session.leaf().cloned();
    let refused = slots
        .claim(&second.manifest().slots[0], second.name(), &mut session)
        .unwrap_err();
    assert_eq!(
        refused,
        SlotError::Taken {
            slot: Slot::Compaction,
            owner: "sticky-note".into(),
            claimant: "lossless".into()
        }
    );
    assert!(
        refused
            .to_string()
            .contains("owned by extension `sticky-note`")
    );
    assert_eq!(std::fs::read(&path).unwrap(), before, "nothing written");
    assert_eq!(session.leaf().cloned(), leaf);
    assert_eq!(slots.owner(Slot::Compaction), "sticky-note");
    // The claim is a Pi custom entry.
    let text = String::from_utf8(before).unwrap();
    assert!(
        text.contains(r#""customType":"strata.memory-slot""#),
        "{text}"
    );
    slots.release_all("sticky-note");
    assert_eq!(slots.owner(Slot::Compaction), "strata");
    first.shutdown().await;
    second.shutdown().await;
}

fn agent(server: &strata_mock::MockServer, dir: &Path) -> strata_agent::Agent {
    use strata_provider::{ApiKey, Catalog, StreamOptions};
    let catalog = Catalog::builtin().unwrap();
    let row = catalog.provider("anthropic").unwrap().clone();
    let model = catalog.model("anthropic", "claude-sonnet-4-5").unwrap();
    let client = strata_provider::transport::HttpClient::new(&Default::default()).unwrap();
    let provider = strata_anthropic::AnthropicProvider::for_row(&row, client);
    let config = strata_agent::AgentConfig {
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
    let session = strata_session::Session::create(
        dir.join("s.jsonl"),
        &dir.display().to_string(),
        strata_session::WriteOptions::default(),
    )
    .unwrap();
    strata_agent::Agent::new(
        session,
        std::sync::Arc::new(provider),
        strata_tools::ToolSet::default_set(),
        config,
    )
}

#[tokio::test]
async fn an_extensions_tool_is_declared_called_and_withdrawn_at_the_end() {
    let server = strata_mock::MockServer::start(strata_mock::MockConfig::new())
        .await
        .unwrap();
    let scenario = r#"
[[turn]]
[[turn.tool_call]]
tool = "shout"
args = { text = "hello" }
[[turn]]
text = "Shouted."
[[turn]]
text = "Still here."
"#;
    server.load_scenario(strata_mock::Scenario::from_toml(scenario, "tools").unwrap());
    let dir = tempfile::tempdir().unwrap();
    let ext = std::sync::Arc::new(
        Extension::start(spec("good", "shouter", Duration::from_secs(20)), None, None)
            .await
            .unwrap(),
    );
    let mut agent = agent(&server, dir.path());
    agent.set_tool_source(Some(std::sync::Arc::new(
        strata_extensions::ExtensionTools::new(vec![ext.clone()], None),
    )));
    let mut events = agent.subscribe();
    agent.prompt("shout hello").await.unwrap();
    let first = server.requests()[0].body.clone().unwrap();
    let names: Vec<&str> = first["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert!(names.contains(&"shout"), "{names:?}");
    let second = server.requests()[1].body.clone().unwrap().to_string();
    assert!(second.contains("HELLO"), "{second}");
    ext.stop();
    agent.prompt("again").await.unwrap();
    let mut removed = Vec::new();
    while let Ok(event) = events.try_recv() {
        if let strata_agent::AgentEvent::SystemUpdate { tools_removed, .. } = event {
            removed.extend(tools_removed);
        }
    }
    assert_eq!(removed, vec!["shout".to_owned()]);
    // The tools chapter of the request after the removal is the one before: said at the end.
    let third = server.requests()[2].body.clone().unwrap();
    assert_eq!(server.requests()[2].changed, None, "{third}");
}

/// `op`: what an extension sends reaches the runtime's channel as written, and the runtime's
/// answer (taken, or refused with a reason) reaches the extension; with no runtime to take
/// it, the extension is told so.
#[tokio::test]
async fn an_extensions_operations_reach_the_runtime_and_its_answer_comes_back() {
    let (ops_tx, mut ops) = mpsc::channel::<strata_extensions::OpCall>(4);
    // The runtime's stand-in: takes follow-ups, refuses anything else.
    let seen = tokio::spawn(async move {
        let mut seen = Vec::new();
        while let Some(call) = ops.recv().await {
            let answer = if call.op["op"] == "follow_up" {
                Ok(())
            } else {
                Err(format!(
                    "`{}` is not an operation extensions may send",
                    call.op["op"]
                ))
            };
            if let Some(reply) = call.reply {
                let _ = reply.send(answer);
            }
            seen.push((call.extension, call.op));
        }
        seen
    });
    let outlets = strata_extensions::Outlets {
        ui: None,
        ops: Some(ops_tx),
    };
    let ext = Extension::start_with(
        spec("good", "opper", Duration::from_secs(20)),
        outlets,
        None,
    )
    .await
    .unwrap();
    let follow_up = r#"{"op":"follow_up","args":{"text":"and now the tests","images":[]}}"#;
    assert_eq!(ext.command("op", follow_up).await.unwrap(), "op: ok");
    assert_eq!(
        ext.command("op", r#"{"op":"shutdown"}"#).await.unwrap(),
        "op: refused: `\"shutdown\"` is not an operation extensions may send"
    );
    ext.shutdown().await;
    drop(ext);
    let seen = seen.await.unwrap();
    assert_eq!(
        seen,
        vec![
            (
                "opper".to_owned(),
                json!({"op":"follow_up","args":{"text":"and now the tests","images":[]}})
            ),
            ("opper".to_owned(), json!({"op":"shutdown"})),
        ]
    );

    let alone = Extension::start(spec("good", "alone", Duration::from_secs(20)), None, None)
        .await
        .unwrap();
    assert_eq!(
        alone.command("op", follow_up).await.unwrap(),
        "op: refused: no session runtime takes operations here"
    );
    alone.shutdown().await;
}
