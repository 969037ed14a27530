//! The loop: tools really run, results come back in call order, errors reach the model,
//! abort leaves a session that reopens and continues.

use serde_json::json;
use strata_agent::AgentEvent;
use strata_provider::{ContentBlock, Role};
use strata_session::{AgentMessage, Entry, Session, StopReason, WriteOptions};

use crate::scripted::{Scripted, Turn, agent};

fn new_session(dir: &std::path::Path) -> Session {
    Session::create(
        dir.join("s.jsonl"),
        &dir.display().to_string(),
        WriteOptions::default(),
    )
    .unwrap()
}

fn messages(session: &Session) -> Vec<AgentMessage> {
    let tree = session.tree();
    tree.path_from_root(session.leaf().unwrap())
        .into_iter()
        .filter_map(|id| match tree.entry(id).unwrap() {
            Entry::Message(m) => Some(m.message.into_message()),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn read_edit_bash_answer_changes_the_file_and_appends_every_step() {
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path().join("repo");
    std::fs::create_dir(&repo).unwrap();
    std::fs::write(
        repo.join("calc.py"),
        "def add(a, b):\n    return abs(a) + b\n",
    )
    .unwrap();
    let provider = Scripted::new(vec![
        Turn::Calls(vec![("read", json!({"path": "calc.py"}))]),
        Turn::Calls(vec![(
            "edit",
            json!({"path": "calc.py", "edits": [{"oldText": "abs(a) + b", "newText": "a + b"}]}),
        )]),
        Turn::Calls(vec![(
            "bash",
            json!({"command": "grep -c 'a + b' calc.py"}),
        )]),
        Turn::Text("Fixed add()."),
    ]);
    let mut agent = agent(new_session(dir.path()), provider.clone(), &repo, None);
    let mut events = agent.subscribe();
    let summary = agent
        .prompt("Fix add() for negative numbers.")
        .await
        .unwrap();

    assert_eq!(summary.reason, "stop");
    assert_eq!(summary.turns, 4);
    assert_eq!(summary.final_text, "Fixed add().");
    assert_eq!(
        std::fs::read_to_string(repo.join("calc.py")).unwrap(),
        "def add(a, b):\n    return a + b\n"
    );

    let roles: Vec<String> = messages(agent.session())
        .iter()
        .map(|m| m.role().to_owned())
        .collect();
    // The first request's system message (Pi 1.x's shape) is stored before the prompt.
    assert_eq!(
        roles,
        [
            "system",
            "user",
            "assistant",
            "toolResult",
            "assistant",
            "toolResult",
            "assistant",
            "toolResult",
            "assistant"
        ]
    );
    // The bash result reached the model in the last request.
    let requests = provider.requests();
    let last = requests.last().unwrap();
    let bash_result = last
        .messages
        .iter()
        .flat_map(|m| &m.content)
        .find_map(|b| match b {
            ContentBlock::ToolResult { content, .. } => Some(format!("{content:?}")),
            _ => None,
        });
    assert!(bash_result.is_some());
    assert!(
        format!("{last:?}").contains('1'),
        "grep count in the result"
    );

    // Events: one agent start/end, a tool start and end per call.
    let mut kinds = Vec::new();
    while let Ok(event) = events.try_recv() {
        kinds.push(
            serde_json::to_value(&event).unwrap()["type"]
                .as_str()
                .unwrap()
                .to_owned(),
        );
    }
    assert_eq!(kinds.first().map(String::as_str), Some("agent_start"));
    assert_eq!(kinds.last().map(String::as_str), Some("agent_end"));
    assert_eq!(kinds.iter().filter(|k| *k == "tool_end").count(), 3);

    // The file reopens to the same messages.
    let reopened = Session::open(agent.session().path()).unwrap();
    assert!(reopened.diagnostics.is_empty());
    assert_eq!(messages(&reopened.session), messages(agent.session()));
}

#[tokio::test]
async fn parallel_calls_run_and_results_come_back_in_call_order() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.txt"), "alpha").unwrap();
    std::fs::write(dir.path().join("b.txt"), "beta").unwrap();
    let provider = Scripted::new(vec![
        Turn::Calls(vec![
            ("bash", json!({"command": "sleep 0.3; echo slow"})),
            ("read", json!({"path": "a.txt"})),
            ("read", json!({"path": "b.txt"})),
        ]),
        Turn::Text("done"),
    ]);
    let mut agent = agent(new_session(dir.path()), provider, dir.path(), None);
    agent.prompt("read both").await.unwrap();
    let results: Vec<String> = messages(agent.session())
        .iter()
        .filter_map(|m| match m {
            AgentMessage::ToolResult(r) => Some(strata_session::join_text(&r.content, "")),
            _ => None,
        })
        .collect();
    assert_eq!(results.len(), 3);
    assert!(results[0].contains("slow"));
    assert_eq!(results[1], "alpha");
    assert_eq!(results[2], "beta");
}

#[tokio::test]
async fn a_tool_error_goes_back_to_the_model_and_the_loop_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let provider = Scripted::new(vec![
        Turn::Calls(vec![("read", json!({"path": "missing.txt"}))]),
        Turn::Text("That file does not exist."),
    ]);
    let mut agent = agent(new_session(dir.path()), provider.clone(), dir.path(), None);
    let summary = agent.prompt("read missing.txt").await.unwrap();
    assert_eq!(summary.reason, "stop");
    let second = &provider.requests()[1];
    let error = second
        .messages
        .iter()
        .flat_map(|m| &m.content)
        .find_map(|b| match b {
            ContentBlock::ToolResult { is_error, .. } => Some(*is_error),
            _ => None,
        });
    assert_eq!(error, Some(true));
}

#[tokio::test]
async fn a_stream_broken_after_tokens_stores_the_adapters_partial_message_as_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let provider = Scripted::new(vec![Turn::Cut("Half an ans")]);
    let mut agent = agent(new_session(dir.path()), provider.clone(), dir.path(), None);
    let error = agent.prompt("start").await.unwrap_err();
    assert!(error.to_string().contains("connection reset"), "{error}");
    let AgentMessage::Assistant(last) = messages(agent.session()).pop().unwrap() else {
        panic!("the broken answer is stored");
    };
    assert_eq!(last.stop_reason, StopReason::Error);
    assert!(
        last.error_message
            .as_deref()
            .is_some_and(|text| text.contains("connection reset"))
    );
    assert_eq!(strata_session::join_text(&last.content, ""), "Half an ans");
    // The signed thinking block only the adapter saw is kept too.
    assert!(
        last.content.iter().any(|block| matches!(
            block,
            strata_session::ContentBlock::Thinking(block)
                if block.thinking == "plan" && block.thinking_signature.as_deref() == Some("sig-1")
        )),
        "{:?}",
        last.content
    );
}

#[tokio::test]
async fn abort_mid_stream_leaves_a_session_that_reopens_and_continues() {
    let dir = tempfile::tempdir().unwrap();
    let provider = Scripted::new(vec![Turn::Hang("Let me think"), Turn::Text("Continuing.")]);
    let mut agent = agent(new_session(dir.path()), provider.clone(), dir.path(), None);
    let control = agent.control();
    let aborter = tokio::spawn(async move {
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        control.abort();
    });
    let summary = agent.prompt("start").await.unwrap();
    aborter.await.unwrap();
    assert_eq!(summary.reason, "aborted");
    let last = messages(agent.session()).pop().unwrap();
    let AgentMessage::Assistant(last) = last else {
        panic!("last message is the aborted answer")
    };
    assert_eq!(last.stop_reason, StopReason::Aborted);
    assert_eq!(strata_session::join_text(&last.content, ""), "Let me think");

    // Reopen for writing and continue in a new agent.
    let path = agent.session().path().to_path_buf();
    drop(agent);
    let reopened = Session::open_writable(&path, WriteOptions::default()).unwrap();
    assert!(reopened.diagnostics.is_empty());
    let mut agent = crate::scripted::agent(reopened.session, provider.clone(), dir.path(), None);
    let summary = agent.prompt("go on").await.unwrap();
    assert_eq!(summary.final_text, "Continuing.");
    // The aborted answer is not sent back to the model (as in Pi).
    let resumed = provider.requests().pop().unwrap();
    let assistant_texts: Vec<String> = resumed
        .messages
        .iter()
        .filter(|m| m.role == Role::Assistant)
        .map(|m| m.text())
        .collect();
    assert!(
        !assistant_texts.iter().any(|t| t.contains("Let me think")),
        "{assistant_texts:?}"
    );
}

#[tokio::test]
async fn steering_queued_during_a_tool_batch_is_delivered_after_it() {
    let dir = tempfile::tempdir().unwrap();
    let provider = Scripted::new(vec![
        // The tool waits until the steer is queued, so the steer lands inside the batch
        // however slow the machine (a fixed sleep raced it).
        Turn::Calls(vec![(
            "bash",
            json!({"command": "until [ -e steered ]; do sleep 0.01; done", "timeout": 60}),
        )]),
        Turn::Text("ok, also doing that"),
    ]);
    let mut agent = agent(new_session(dir.path()), provider.clone(), dir.path(), None);
    let control = agent.control();
    let mut events = agent.subscribe();
    let marker = dir.path().join("steered");
    let steer = tokio::spawn(async move {
        while let Some(event) = events.recv().await {
            if matches!(event, AgentEvent::ToolStart { .. }) {
                control.steer("also update the README");
                std::fs::write(&marker, "").unwrap();
                break;
            }
        }
    });
    agent.prompt("run it").await.unwrap();
    steer.await.unwrap();
    let roles: Vec<String> = messages(agent.session())
        .iter()
        .map(|m| m.role().to_owned())
        .collect();
    assert_eq!(
        roles,
        [
            "system",
            "user",
            "assistant",
            "toolResult",
            "user",
            "assistant"
        ]
    );
    let second = &provider.requests()[1];
    assert!(second.messages.last().unwrap().text().contains("README"));
}

/// A front end's view of an event: its kind, with the detail that places it.
fn label(event: &AgentEvent) -> String {
    match event {
        AgentEvent::AgentStart => "agent_start".into(),
        AgentEvent::TurnStart { turn } => format!("turn_start {turn}"),
        AgentEvent::RequestStart { .. } => "request_start".into(),
        AgentEvent::TextDelta { text } => format!("text_delta {text}"),
        AgentEvent::ThinkingDelta { .. } => "thinking_delta".into(),
        AgentEvent::ToolCallStart { name, .. } => format!("tool_call_start {name}"),
        AgentEvent::ToolCallDelta { .. } => "tool_call_delta".into(),
        AgentEvent::Usage { .. } => "usage".into(),
        AgentEvent::KeepWarm { .. } => "keep_warm".into(),
        AgentEvent::MessageEnd { message, .. } => format!("message_end {}", message.role()),
        AgentEvent::ToolStart { name, .. } => format!("tool_start {name}"),
        AgentEvent::ToolUpdate { .. } => "tool_update".into(),
        AgentEvent::ToolEnd { name, is_error, .. } => format!("tool_end {name} {is_error}"),
        AgentEvent::SystemUpdate { snapshot, .. } => format!("system_update {snapshot}"),
        AgentEvent::Retry { .. } => "retry".into(),
        AgentEvent::CompactionStart { .. } => "compaction_start".into(),
        AgentEvent::CompactionEnd { .. } => "compaction_end".into(),
        AgentEvent::SteeringDelivered { .. } => "steering_delivered".into(),
        AgentEvent::TurnEnd { turn } => format!("turn_end {turn}"),
        AgentEvent::AgentEnd { reason } => format!("agent_end {reason}"),
    }
}

#[tokio::test]
async fn a_tool_turn_reaches_a_front_end_as_one_ordered_stream_of_events() {
    let dir = tempfile::tempdir().unwrap();
    // The command prints before it exits, so its output streams as an update.
    let provider = Scripted::new(vec![
        Turn::Calls(vec![("bash", json!({"command": "echo hi; sleep 0.3"}))]),
        Turn::Text("It said hi."),
    ]);
    let mut agent = agent(new_session(dir.path()), provider, dir.path(), None);
    let mut events = agent.subscribe();
    let summary = agent.prompt("say hi").await.unwrap();
    assert_eq!(summary.reason, "stop");
    let mut seen: Vec<String> = Vec::new();
    let mut update_text = String::new();
    while let Ok(event) = events.try_recv() {
        if let AgentEvent::ToolUpdate { text, .. } = &event {
            update_text.push_str(text);
        }
        let label = label(&event);
        // Updates come as often as the output does; one stands for a run of them.
        if label == "tool_update" && seen.last().is_some_and(|last| *last == label) {
            continue;
        }
        seen.push(label);
    }
    let expected = [
        "agent_start",
        "system_update true",
        "message_end user",
        "turn_start 1",
        "request_start",
        "tool_call_start bash",
        "tool_call_delta",
        "usage",
        "message_end assistant",
        "tool_start bash",
        "tool_update",
        "tool_end bash false",
        "message_end toolResult",
        "turn_end 1",
        "turn_start 2",
        "request_start",
        "text_delta It said hi.",
        "usage",
        "message_end assistant",
        "turn_end 2",
        "agent_end stop",
    ];
    pretty_assertions::assert_eq!(seen, expected);
    assert!(update_text.contains("hi"), "{update_text}");
}
