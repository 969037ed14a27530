//! The rules layer through the agent against strata-mock: what each permission mode refuses
//! reaches the model as tool results, a mode switch costs only a line at the end (the cache
//! reads the previous prompt, the tools array keeps its bytes), and `auto` leaves every
//! request as it was before the rules layer.

use std::path::Path;
use std::sync::{Arc, Mutex};

use serde_json::Value;
use strata_agent::{Agent, ToolRules};
use strata_mock::MockServer;
use strata_permissions::{Answer, Gate, Mode, PermissionRequest, Policy};
use strata_session::{AgentMessage, Session, WriteOptions};

use crate::mock::{agent, mock};

/// One read, one write and one command in a batch, then an answer.
const BATCH: &str = r#"
[[turn]]
[[turn.tool_call]]
tool = "read"
args = { path = "notes.txt" }
[[turn.tool_call]]
tool = "write"
args = { path = "new.txt", content = "written\n" }
[[turn.tool_call]]
tool = "bash"
args = { command = "echo ran > ran.txt" }
[[turn]]
text = "Done."
"#;

fn project() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("notes.txt"), "the notes\n").unwrap();
    dir
}

/// A session in `dir` (apart from the project, as sessions are kept).
fn session_in(dir: &Path, cwd: &Path) -> Session {
    Session::create(
        dir.join("s.jsonl"),
        &cwd.display().to_string(),
        WriteOptions::default(),
    )
    .unwrap()
}

fn gate(project: &Path, mode: Mode) -> Gate {
    let root = std::fs::canonicalize(project).unwrap();
    Gate::new(Policy::new(mode, vec![root]), None)
}

/// Serves the gate's questions with `answer`, recording each request.
fn answer_with(
    gate: &Gate,
    answer: impl Fn(&PermissionRequest) -> Answer + Send + 'static,
) -> Arc<Mutex<Vec<PermissionRequest>>> {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<strata_permissions::PendingAsk>();
    gate.set_asker(Some(tx));
    let record = seen.clone();
    tokio::spawn(async move {
        while let Some(ask) = rx.recv().await {
            let reply = answer(&ask.request);
            record.lock().unwrap().push(ask.request);
            let _ = ask.reply.send(reply);
        }
    });
    seen
}

/// Each tool result on the path: (text, is_error), in call order.
fn results(agent: &Agent) -> Vec<(String, bool)> {
    let session = agent.session();
    let tree = session.tree();
    tree.path_from_root(session.leaf().unwrap())
        .into_iter()
        .filter_map(|id| match tree.entry(id).unwrap() {
            strata_session::Entry::Message(m) => match m.message.into_message() {
                AgentMessage::ToolResult(r) => {
                    Some((strata_session::join_text(&r.content, ""), r.is_error))
                }
                _ => None,
            },
            _ => None,
        })
        .collect()
}

/// Each tool result's `strataPermission` details on the path, in call order.
fn judgements(agent: &Agent) -> Vec<Value> {
    let session = agent.session();
    let tree = session.tree();
    tree.path_from_root(session.leaf().unwrap())
        .into_iter()
        .filter_map(|id| match tree.entry(id).unwrap() {
            strata_session::Entry::Message(m) => match m.message.into_message() {
                AgentMessage::ToolResult(r) => Some(r.details.as_ref().map_or(Value::Null, |d| {
                    d[strata_agent::PERMISSION_DETAILS_KEY].clone()
                })),
                _ => None,
            },
            _ => None,
        })
        .collect()
}

/// Runs [`BATCH`] in a fresh project with `gate` (answered by `answer`, if any); returns the
/// results, the questions asked, the project and the mock.
async fn run_batch(
    mode: Mode,
    answer: Option<fn(&PermissionRequest) -> Answer>,
) -> (
    Vec<(String, bool)>,
    Vec<PermissionRequest>,
    tempfile::TempDir,
    MockServer,
    Vec<Value>,
) {
    let server = mock(BATCH).await;
    let dir = project();
    let sessions = tempfile::tempdir().unwrap();
    let gate = gate(dir.path(), mode);
    let seen = answer.map(|answer| answer_with(&gate, answer));
    let mut agent = agent(&server, session_in(sessions.path(), dir.path()), dir.path());
    agent.set_tool_rules(ToolRules {
        gate: Some(gate),
        ..ToolRules::default()
    });
    let summary = agent.prompt("do the three things").await.unwrap();
    assert_eq!(summary.final_text, "Done.");
    let asked = seen
        .map(|seen| seen.lock().unwrap().clone())
        .unwrap_or_default();
    (results(&agent), asked, dir, server, judgements(&agent))
}

/// The text of the request that carried the batch's results back to the model.
fn second_body(server: &MockServer) -> String {
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    requests[1].body.clone().unwrap().to_string()
}

#[tokio::test]
async fn auto_runs_every_call() {
    let (results, asked, dir, _, judged) = run_batch(Mode::Auto, None).await;
    assert_eq!(
        judged,
        [Value::Null, Value::Null, Value::Null],
        "nothing recorded"
    );
    assert!(asked.is_empty());
    assert!(results.iter().all(|(_, error)| !error), "{results:?}");
    assert!(results[0].0.contains("the notes"));
    assert_eq!(
        std::fs::read_to_string(dir.path().join("new.txt")).unwrap(),
        "written\n"
    );
    assert!(dir.path().join("ran.txt").exists());
}

#[tokio::test]
async fn plan_refuses_the_write_and_the_command_and_the_model_reads_why() {
    let (results, asked, dir, server, judged) = run_batch(Mode::Plan, None).await;
    assert_eq!(judged[0], Value::Null);
    for record in &judged[1..] {
        assert_eq!(record["verdict"], "deny", "{record}");
        assert_eq!(record["ran"], false);
        assert_eq!(record["source"], "permission mode plan");
    }
    // Kept in the session for the export; never sent to the model.
    assert!(!second_body(&server).contains(strata_agent::PERMISSION_DETAILS_KEY));
    assert!(asked.is_empty(), "plan refuses without asking: {asked:?}");
    assert!(!results[0].1 && results[0].0.contains("the notes"));
    for (text, error) in &results[1..] {
        assert!(error, "{text}");
        assert!(text.starts_with("Permission denied:"), "{text}");
        assert!(text.contains("plan"), "{text}");
    }
    assert!(!dir.path().join("new.txt").exists());
    assert!(!dir.path().join("ran.txt").exists());
    // The refusals are what the model read in the next request.
    let body = second_body(&server);
    for (text, _) in &results[1..] {
        let quoted = serde_json::to_string(text).unwrap();
        assert!(
            body.contains(&quoted[1..quoted.len() - 1]),
            "{text} not in {body}"
        );
    }
}

#[tokio::test]
async fn edits_runs_the_write_and_asks_for_the_command() {
    let (results, asked, dir, server, _) = run_batch(
        Mode::Edits,
        Some(|_| Answer::Deny {
            reason: Some("not before review".into()),
        }),
    )
    .await;
    let tools: Vec<&str> = asked.iter().map(|r| r.tool.as_str()).collect();
    assert_eq!(tools, ["bash"]);
    assert_eq!(asked[0].mode, Mode::Edits);
    assert_eq!(asked[0].suggested_rules, ["Bash(echo ran > ran.txt)"]);
    assert!(!results[0].1 && !results[1].1, "{results:?}");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("new.txt")).unwrap(),
        "written\n"
    );
    assert!(results[2].1);
    assert!(results[2].0.contains("not before review"), "{results:?}");
    assert!(!dir.path().join("ran.txt").exists());
    assert!(second_body(&server).contains("not before review"));
}

#[tokio::test]
async fn ask_puts_the_write_and_the_command_to_the_user() {
    // The write is allowed once; the command refused.
    let (results, asked, dir, server, judged) = run_batch(
        Mode::Ask,
        Some(|request| match request.tool.as_str() {
            "write" => Answer::AllowOnce,
            _ => Answer::Deny { reason: None },
        }),
    )
    .await;
    let tools: Vec<&str> = asked.iter().map(|r| r.tool.as_str()).collect();
    assert_eq!(tools, ["write", "bash"], "the read runs unasked");
    assert_eq!(judged[0], Value::Null);
    assert_eq!(judged[1]["verdict"], "ask");
    assert_eq!(judged[1]["ran"], true);
    assert_eq!(judged[1]["answer"]["answer"], "allow_once");
    assert_eq!(judged[2]["ran"], false);
    assert_eq!(judged[2]["answer"]["answer"], "deny");
    assert!(!results[0].1 && !results[1].1, "{results:?}");
    assert!(dir.path().join("new.txt").exists());
    assert!(results[2].1);
    assert!(
        results[2].0.starts_with("The user refused this call"),
        "{results:?}"
    );
    assert!(!dir.path().join("ran.txt").exists());
    assert!(second_body(&server).contains("The user refused this call"));
}

#[tokio::test]
async fn ask_with_nobody_to_answer_refuses_with_the_hint() {
    let server = mock(BATCH).await;
    let dir = project();
    let sessions = tempfile::tempdir().unwrap();
    let gate = gate(dir.path(), Mode::Ask);
    gate.set_unattended("rerun with --allow-all to let it run");
    let mut agent = agent(&server, session_in(sessions.path(), dir.path()), dir.path());
    agent.set_tool_rules(ToolRules {
        gate: Some(gate),
        ..ToolRules::default()
    });
    agent.prompt("do the three things").await.unwrap();
    let results = results(&agent);
    for (text, error) in &results[1..] {
        assert!(error);
        assert!(text.contains("rerun with --allow-all"), "{text}");
    }
    assert!(!dir.path().join("new.txt").exists());
}

const FIVE_ANSWERS: &str = r#"
[[turn]]
text = "One."
[[turn]]
text = "Two."
[[turn]]
text = "Three."
[[turn]]
text = "Four."
[[turn]]
text = "Five."
"#;

/// A body without its cache markers (they move to the newest message by design).
fn without_cache_control(mut value: Value) -> Value {
    fn strip(value: &mut Value) {
        match value {
            Value::Object(map) => {
                map.remove("cache_control");
                map.values_mut().for_each(strip);
            }
            Value::Array(items) => items.iter_mut().for_each(strip),
            _ => {}
        }
    }
    strip(&mut value);
    value
}

#[tokio::test]
async fn a_mode_switch_reads_the_previous_prompt_from_the_cache_and_keeps_the_tools_bytes() {
    let server = mock(FIVE_ANSWERS).await;
    let dir = project();
    let sessions = tempfile::tempdir().unwrap();
    let mut agent = agent(&server, session_in(sessions.path(), dir.path()), dir.path());
    agent.set_tool_rules(ToolRules {
        gate: Some(gate(dir.path(), Mode::Auto)),
        ..ToolRules::default()
    });
    // Long enough to pass the model's 1,024-token cache minimum.
    let long = "Read the parser and list every odd corner case you find in it. ".repeat(120);
    agent.prompt(long).await.unwrap();
    let modes = [Mode::Plan, Mode::Ask, Mode::Edits, Mode::Auto];
    for (i, mode) in modes.into_iter().enumerate() {
        assert!(agent.set_permission_mode(mode));
        agent.prompt(format!("next, in {mode}")).await.unwrap();
        let requests = server.requests();
        let [.., before, after] = requests.as_slice() else {
            unreachable!()
        };
        let previous = before.cache.as_ref().unwrap().input_tokens;
        let read = after.cache.as_ref().unwrap().cache_read;
        eprintln!("switch to {mode}: cache read {read} of the previous prompt's {previous} tokens");
        assert!(
            read * 100 >= previous * 99,
            "after the switch to {mode}: read {read} of the previous prompt's {previous}"
        );
        assert_eq!(
            after.changed, None,
            "nothing before the end changed ({mode})"
        );
        let (old, new) = (before.body.clone().unwrap(), after.body.clone().unwrap());
        assert_eq!(
            old["tools"].to_string(),
            new["tools"].to_string(),
            "the tools array keeps its bytes ({mode})"
        );
        assert_eq!(
            without_cache_control(old["system"].clone()),
            without_cache_control(new["system"].clone()),
            "the system chapter is unchanged ({mode})"
        );
        // The mode is said after the prompt before it, at the end.
        let text = new.to_string();
        let said = match mode.instructions() {
            Some(instructions) => instructions.to_owned(),
            None => "Permission mode: auto.".to_owned(),
        };
        let at = text
            .find(&said)
            .unwrap_or_else(|| panic!("{said} not in {text}"));
        let prompt = if i == 0 {
            "every odd corner case".to_owned()
        } else {
            format!("next, in {}", modes[i - 1])
        };
        assert!(text.rfind(&prompt).unwrap() < at, "{mode} said at the end");
    }
}

#[tokio::test]
async fn a_gate_in_auto_leaves_every_request_byte_identical() {
    // The same project, two sessions: one without rules, one with the gate in auto and
    // checkpoints on.
    let dir = project();
    let mut bodies = Vec::new();
    for with_rules in [false, true] {
        std::fs::remove_file(dir.path().join("new.txt")).ok();
        std::fs::remove_file(dir.path().join("ran.txt")).ok();
        let server = mock(BATCH).await;
        let sessions = tempfile::tempdir().unwrap();
        let mut agent = agent(&server, session_in(sessions.path(), dir.path()), dir.path());
        if with_rules {
            agent.set_tool_rules(ToolRules {
                gate: Some(gate(dir.path(), Mode::Auto)),
                sandbox: None,
                checkpoints: true,
            });
        }
        agent.prompt("do the three things").await.unwrap();
        assert!(results(&agent).iter().all(|(_, error)| !error));
        bodies.push(
            server
                .requests()
                .into_iter()
                .map(|r| r.body.unwrap().to_string())
                .collect::<Vec<_>>(),
        );
    }
    assert_eq!(bodies[0].len(), 2);
    assert_eq!(bodies[0], bodies[1]);
}
