//! Cut points never split a tool call from its result.

use std::collections::HashSet;

use serde_json::json;
use strata_compaction::{CompactionSettings, prepare};
use strata_session::{AgentMessage, Entry};

use crate::support::{TestSession, assistant, tool_call, tool_result, user};

/// A session of turns with 0–3 tool calls each, sizes varying.
fn session_with_tools() -> TestSession {
    let mut session = TestSession::new();
    for turn in 0..12 {
        session.push(user(&format!(
            "turn {turn} {}",
            "u".repeat(40 * (turn % 4 + 1))
        )));
        for call in 0..(turn % 4) {
            let id = format!("c{turn}-{call}");
            session.push(tool_call(
                &id,
                "read",
                json!({"path": format!("f{turn}.rs")}),
                0,
            ));
            session.push(tool_result(
                &id,
                "read",
                &"r".repeat(100 * (call + 1) * (turn % 3 + 1)),
            ));
        }
        session.push(assistant(&"a".repeat(60 * (turn % 5 + 1)), 0));
    }
    session
}

#[test]
fn every_budget_keeps_each_result_with_its_call() {
    let session = session_with_tools();
    let tree = session.session.tree();
    let leaf = session.leaf();
    let mut cuts = HashSet::new();
    for keep in (1..3000).step_by(7) {
        let settings = CompactionSettings {
            keep_recent_tokens: keep,
            ..CompactionSettings::default()
        };
        let Some(preparation) = prepare(tree, &leaf, &settings).expect("prepare") else {
            continue;
        };
        cuts.insert(preparation.first_kept_entry_id.clone());
        let first = tree
            .entry(preparation.first_kept_entry_id.as_str())
            .expect("entry");
        assert!(
            !matches!(&first, Entry::Message(m) if matches!(*m.message, AgentMessage::ToolResult(_))),
            "keep={keep}: cut at a tool result"
        );
        // After compaction, every tool result in context has its call in context.
        let path = tree.path_from_root(leaf.as_str());
        let start = path
            .iter()
            .position(|id| **id == preparation.first_kept_entry_id)
            .expect("on path");
        let mut calls = HashSet::new();
        for id in &path[start..] {
            if let Entry::Message(entry) = tree.entry(id.as_str()).expect("entry") {
                match &*entry.message {
                    AgentMessage::Assistant(message) => {
                        calls.extend(message.tool_calls().map(|call| call.id.clone()));
                    }
                    AgentMessage::ToolResult(result) => assert!(
                        calls.contains(&result.tool_call_id),
                        "keep={keep}: result {} kept without its call",
                        result.tool_call_id
                    ),
                    _ => {}
                }
            }
        }
        // Nothing is both summarized and kept, nothing on the path is lost.
        let summarized: usize =
            preparation.messages_to_summarize.len() + preparation.turn_prefix.len();
        let in_turn_prefix: HashSet<_> = preparation
            .turn_prefix
            .iter()
            .map(|m| m.entry_id.clone())
            .collect();
        assert!(
            preparation
                .messages_to_summarize
                .iter()
                .all(|m| !in_turn_prefix.contains(&m.entry_id))
        );
        assert_eq!(
            summarized, start,
            "keep={keep}: every entry before the cut is summarized"
        );
    }
    assert!(
        cuts.len() > 10,
        "the budgets exercised many cut points: {}",
        cuts.len()
    );
}

#[test]
fn a_cut_inside_a_turn_is_split() {
    let mut session = TestSession::new();
    session.push(user("old request"));
    session.push(assistant(&"o".repeat(400), 0));
    let turn = session.push(user("big request"));
    for call in 0..6 {
        let id = format!("c{call}");
        session.push(tool_call(
            &id,
            "edit",
            json!({"path": format!("src/{call}.rs")}),
            0,
        ));
        session.push(tool_result(&id, "edit", &"e".repeat(400)));
    }
    session.push(assistant("done", 0));
    let settings = CompactionSettings {
        keep_recent_tokens: 250,
        ..CompactionSettings::default()
    };
    let tree = session.session.tree();
    let preparation = prepare(tree, &session.leaf(), &settings)
        .expect("prepare")
        .expect("something to compact");
    assert!(preparation.is_split_turn);
    assert_eq!(preparation.turn_prefix[0].entry_id, turn);
    assert_eq!(preparation.messages_to_summarize.len(), 2);
    assert!(matches!(
        tree.entry(preparation.first_kept_entry_id.as_str()).expect("entry"),
        Entry::Message(m) if matches!(*m.message, AgentMessage::Assistant(_))
    ));
    // Files edited in the summarized turn prefix are tracked.
    assert!(
        preparation
            .file_lists()
            .modified_files
            .contains(&"src/0.rs".to_owned())
    );
}
