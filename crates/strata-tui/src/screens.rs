//! Screens drawn into ratatui's `TestBackend` and compared with insta snapshots.

use std::time::Instant;

use ratatui::crossterm::event::KeyCode;
use serde_json::json;
use strata_agent::AgentEvent;
use strata_context::render::{Chapter, Divergence};
use strata_session::{Session, SessionStore};

use super::testing::{
    app, assistant, ctrl, key, message_end, screen, tool_result, type_text, usage,
};
use super::worker::{Reply, session_item, tree_rows};

/// Feeds a streamed turn: thinking, text, a tool call whose arguments arrive in pieces.
fn stream_first_turn(app: &mut super::app::App) {
    for event in [
        AgentEvent::AgentStart,
        AgentEvent::TurnStart { turn: 1 },
        AgentEvent::RequestStart {
            chapter_bytes: [4_000, 9_000, 120],
            divergence: None,
        },
        AgentEvent::ThinkingDelta {
            text: "The user wants the greeting fixed.\n".into(),
        },
        AgentEvent::ThinkingDelta {
            text: "I should read the file first.".into(),
        },
        AgentEvent::TextDelta {
            text: "Let me look at ".into(),
        },
        AgentEvent::TextDelta {
            text: "`src/greeting.rs`.".into(),
        },
        AgentEvent::ToolCallStart {
            id: "call_1".into(),
            name: "bash".into(),
        },
        AgentEvent::ToolCallDelta {
            index: 2,
            arguments: "{\"command\": \"cat src/gr".into(),
        },
    ] {
        app.on_agent(event);
    }
}

fn finish_first_turn(app: &mut super::app::App) {
    let output = (1..=8)
        .map(|n| format!("line {n} of the file"))
        .collect::<Vec<_>>()
        .join("\n");
    for event in [
        AgentEvent::ToolCallDelta {
            index: 2,
            arguments: "{\"command\": \"cat src/greeting.rs\"}".into(),
        },
        usage(2_000, 0, 11_000, 120),
        message_end(assistant(
            "Let me look at `src/greeting.rs`.",
            &[("call_1", "bash", json!({"command": "cat src/greeting.rs"}))],
        )),
        AgentEvent::ToolStart {
            id: "call_1".into(),
            name: "bash".into(),
            arguments: json!({"command": "cat src/greeting.rs"}),
        },
        AgentEvent::ToolUpdate {
            id: "call_1".into(),
            text: "line 1 of the file".into(),
            details: serde_json::Value::Null,
        },
        AgentEvent::ToolEnd {
            id: "call_1".into(),
            name: "bash".into(),
            is_error: false,
        },
        message_end(tool_result("call_1", "bash", &output, false)),
        AgentEvent::TurnEnd { turn: 1 },
        AgentEvent::TurnStart { turn: 2 },
        AgentEvent::RequestStart {
            chapter_bytes: [4_000, 9_000, 900],
            divergence: Some(Divergence::Extends { at: 13_120 }),
        },
        AgentEvent::TextDelta {
            text: "## Fixed\n\nThe typo is **gone**:\n\n- `Helo` → `Hello`\n".into(),
        },
        usage(300, 13_000, 400, 60),
        message_end(assistant("## Fixed", &[])),
        AgentEvent::TurnEnd { turn: 2 },
        AgentEvent::AgentEnd {
            reason: "stop".into(),
        },
    ] {
        app.on_agent(event);
    }
    app.on_reply(Reply::Idle);
}

#[test]
fn empty_screen_shows_the_editor_and_footer() {
    insta::assert_snapshot!(screen(&app(), 80, 12));
}

#[test]
fn a_tool_call_shows_its_arguments_while_they_stream() {
    let mut app = app();
    type_text(&mut app, "fix the greeting");
    app.on_key(key(KeyCode::Enter), Instant::now());
    stream_first_turn(&mut app);
    insta::assert_snapshot!(screen(&app, 80, 16));
}

#[test]
fn a_streamed_answer_with_its_tool_call_collapsed() {
    let mut app = app();
    type_text(&mut app, "fix the greeting");
    app.on_key(key(KeyCode::Enter), Instant::now());
    stream_first_turn(&mut app);
    finish_first_turn(&mut app);
    insta::assert_snapshot!(screen(&app, 80, 24));
}

#[test]
fn a_streamed_answer_with_its_tool_call_expanded() {
    let mut app = app();
    type_text(&mut app, "fix the greeting");
    app.on_key(key(KeyCode::Enter), Instant::now());
    stream_first_turn(&mut app);
    finish_first_turn(&mut app);
    app.on_key(ctrl('o'), Instant::now());
    insta::assert_snapshot!(screen(&app, 80, 28));
}

#[test]
fn thinking_is_collapsed_to_one_line_until_expanded() {
    let mut app = app();
    app.on_agent(AgentEvent::AgentStart);
    app.on_agent(AgentEvent::ThinkingDelta {
        text: "First I consider the tests.\nThen the parser.\nThen the docs.".into(),
    });
    app.on_agent(AgentEvent::TextDelta {
        text: "Done thinking.".into(),
    });
    let collapsed = screen(&app, 60, 10);
    insta::assert_snapshot!("thinking_collapsed", collapsed);
    app.on_key(ctrl('t'), Instant::now());
    insta::assert_snapshot!("thinking_expanded", screen(&app, 60, 14));
}

#[test]
fn the_footer_names_the_chapter_where_the_cache_broke() {
    let mut app = app();
    app.on_agent(AgentEvent::RequestStart {
        chapter_bytes: [4_000, 9_000, 120],
        divergence: None,
    });
    app.on_agent(usage(2_000, 0, 11_000, 120));
    app.on_agent(AgentEvent::RequestStart {
        chapter_bytes: [4_000, 9_100, 900],
        divergence: Some(Divergence::At {
            offset: 4_500,
            chapter: Chapter::System,
            chapter_offset: 500,
        }),
    });
    app.on_agent(usage(20, 1_000, 12_400, 80));
    insta::assert_snapshot!(screen(&app, 110, 8));
}

#[test]
fn after_a_compaction_the_footer_shows_the_smaller_context_before_the_next_request() {
    let mut app = app();
    app.on_agent(usage(2_000, 40_000, 8_000, 500));
    let before = screen(&app, 110, 8);
    assert!(before.contains("context 51k/200k (25%)"), "{before}");
    app.on_agent(AgentEvent::CompactionEnd {
        entry_id: Some(strata_session::EntryId::new("c0000001")),
        tokens_before: 50_500,
        usage: None,
        cost: None,
        error: None,
    });
    // The status the worker sends after the command carries the new chapters' estimate.
    let mut status = super::testing::status();
    status.chapter_tokens = [1_000, 2_000, 3_000];
    app.on_reply(Reply::Status(Box::new(status.clone())));
    assert!(screen(&app, 110, 8).contains("context 6.0k/200k (3%)"));
    // A later status without a compaction in between changes nothing; a request does.
    status.chapter_tokens = [1_000, 2_000, 9_000];
    app.on_reply(Reply::Status(Box::new(status)));
    assert!(screen(&app, 110, 8).contains("context 6.0k/200k (3%)"));
    app.on_agent(usage(100, 6_000, 400, 200));
    assert!(screen(&app, 110, 8).contains("context 6.7k/200k (3%)"));
}

/// A session file with fixed ids and times, so the screens do not change between runs.
fn write_session(path: &std::path::Path, id: &str, day: u32, name: Option<&str>, prompt: &str) {
    let stamp = format!("2026-03-{day:02}T10:00:00.000Z");
    let millis = strata_session::parse_iso_millis(&stamp).expect("a valid time");
    let mut lines = vec![
        json!({"type":"session","version":3,"id":id,"timestamp":stamp,"cwd":"/work/project"}),
        json!({"type":"message","id":format!("{id}u1"),"parentId":null,"timestamp":stamp,
            "message":{"role":"user","content":prompt,"timestamp":millis}}),
        json!({"type":"message","id":format!("{id}a1"),"parentId":format!("{id}u1"),"timestamp":stamp,
            "message":{"role":"assistant","content":[{"type":"text","text":"On it."}],
            "api":"anthropic-messages","provider":"anthropic","model":"claude-sonnet-4-5",
            "usage":{"input":10,"output":5,"cacheRead":0,"cacheWrite":100,"totalTokens":115,
            "cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0.001}},
            "stopReason":"stop","timestamp":millis + 60_000}}),
    ];
    if let Some(name) = name {
        lines.push(
            json!({"type":"session_info","id":format!("{id}n1"),"parentId":format!("{id}a1"),
            "timestamp":stamp,"name":name}),
        );
    }
    let text: String = lines.iter().map(|line| format!("{line}\n")).collect();
    std::fs::write(path, text).expect("writing the session");
}

#[test]
fn resume_lists_sessions_and_searches_names_and_first_messages() {
    let root = tempfile::tempdir().expect("temp dir");
    let store = SessionStore::new(root.path());
    let dir = store.dir_for_cwd("/work/project");
    std::fs::create_dir_all(&dir).expect("session dir");
    write_session(
        &dir.join("a.jsonl"),
        "aaaa0001",
        1,
        None,
        "Fix the parser bug in tokens.rs",
    );
    write_session(
        &dir.join("b.jsonl"),
        "bbbb0002",
        2,
        Some("release prep"),
        "Bump versions",
    );
    write_session(
        &dir.join("c.jsonl"),
        "cccc0003",
        3,
        None,
        "Benchmark the parser",
    );
    let items = store
        .list("/work/project")
        .expect("listing")
        .iter()
        .map(session_item)
        .collect();
    let mut app = app();
    app.on_reply(Reply::Sessions(items));
    insta::assert_snapshot!("resume_list", screen(&app, 90, 14));
    type_text(&mut app, "parser");
    insta::assert_snapshot!("resume_list_searched", screen(&app, 90, 14));
    app.on_key(key(KeyCode::Down), Instant::now());
    app.on_key(key(KeyCode::Enter), Instant::now());
    let effects = app.take_effects();
    assert_eq!(
        effects,
        vec![super::app::Effect::Worker(super::worker::Command::Resume(
            dir.join("a.jsonl")
        ))]
    );
}

/// A tree with a fork: two answers to the first prompt, the leaf on the second branch.
fn forked_session(dir: &std::path::Path) -> Session {
    let path = dir.join("tree.jsonl");
    let user = |id: &str, parent: Option<&str>, text: &str, minute: u32| {
        json!({"type":"message","id":id,"parentId":parent,"timestamp":format!("2026-03-01T10:{minute:02}:00.000Z"),
            "message":{"role":"user","content":text,"timestamp":minute}})
    };
    let answer = |id: &str, parent: &str, text: &str, minute: u32| {
        json!({"type":"message","id":id,"parentId":parent,"timestamp":format!("2026-03-01T10:{minute:02}:00.000Z"),
            "message":{"role":"assistant","content":[{"type":"text","text":text}],
            "api":"anthropic-messages","provider":"anthropic","model":"claude-sonnet-4-5",
            "stopReason":"stop","timestamp":minute}})
    };
    let lines = [
        json!({"type":"session","version":3,"id":"tree0001","timestamp":"2026-03-01T10:00:00.000Z","cwd":"/work/project"}),
        user("aaaa0001", None, "Explain the cache", 1),
        answer("aaaa0002", "aaaa0001", "It keeps the prefix.", 2),
        user("aaaa0003", Some("aaaa0002"), "Show the numbers", 3),
        answer("aaaa0004", "aaaa0003", "Hit rate is 97%.", 4),
        user("bbbb0003", Some("aaaa0002"), "Now the tools chapter", 5),
        answer("bbbb0004", "bbbb0003", "Tools come first.", 6),
        json!({"type":"label","id":"cccc0001","parentId":"bbbb0004","timestamp":"2026-03-01T10:07:00.000Z",
            "targetId":"aaaa0002","label":"good answer"}),
    ];
    let text: String = lines.iter().map(|line| format!("{line}\n")).collect();
    std::fs::write(&path, text).expect("writing the session");
    Session::open(&path).expect("opening").session
}

#[test]
fn tree_shows_the_branches_and_the_current_position() {
    let dir = tempfile::tempdir().expect("temp dir");
    let session = forked_session(dir.path());
    let mut app = app();
    app.on_reply(Reply::Tree(tree_rows(&session)));
    insta::assert_snapshot!(screen(&app, 90, 20));
    // Choosing the other branch's user message re-edits it from its parent.
    app.on_key(key(KeyCode::Up), Instant::now());
    app.on_key(key(KeyCode::Up), Instant::now());
    app.on_key(key(KeyCode::Up), Instant::now());
    app.on_key(key(KeyCode::Enter), Instant::now());
    type_text(&mut app, "keep the numbers");
    app.on_key(key(KeyCode::Down), Instant::now());
    app.on_key(key(KeyCode::Enter), Instant::now());
    assert_eq!(
        app.take_effects(),
        vec![super::app::Effect::Worker(
            super::worker::Command::Navigate {
                target: Some(strata_session::EntryId::new("aaaa0002")),
                summarize: true,
                instructions: Some("keep the numbers".into()),
            }
        )]
    );
    assert_eq!(app.editor.text(), "Show the numbers");
}

#[test]
fn page_up_scrolls_back_through_a_long_transcript_to_the_banner() {
    let mut app = super::app::App::new(Some("strata demo: a scripted session".into()), vec![]);
    app.status = super::testing::status();
    for n in 1..=30 {
        app.items
            .push(super::app::Item::User(format!("prompt {n}")));
    }
    let bottom = screen(&app, 60, 14);
    assert!(bottom.contains("prompt 30"), "{bottom}");
    assert!(!bottom.contains("strata demo"), "{bottom}");
    for _ in 0..10 {
        app.on_key(key(KeyCode::PageUp), Instant::now());
    }
    let top = screen(&app, 60, 14);
    assert!(top.contains("strata demo: a scripted session"), "{top}");
    assert!(top.contains("prompt 1 "), "{top}");
    assert!(!top.contains("prompt 30"), "{top}");
    app.on_key(key(KeyCode::PageDown), Instant::now());
    app.scroll = 0;
    assert_eq!(screen(&app, 60, 14), bottom);
}

#[test]
fn an_edit_shows_what_it_changed_as_a_colored_diff() {
    let mut app = app();
    let arguments =
        json!({"path": "src/greeting.rs", "edits": [{"oldText": "Helo", "newText": "Hello"}]});
    app.on_agent(AgentEvent::ToolCallStart {
        id: "e1".into(),
        name: "edit".into(),
    });
    app.on_agent(message_end(assistant("", &[("e1", "edit", arguments)])));
    app.on_agent(message_end(json!({
        "role": "toolResult", "toolCallId": "e1", "toolName": "edit",
        "content": [{"type": "text", "text": "Successfully replaced 1 block(s) in src/greeting.rs."}],
        "details": {"diff": "--- a/src/greeting.rs\n+++ b/src/greeting.rs\n@@ -1 +1 @@\n-pub fn greet() -> &'static str { \"Helo\" }\n+pub fn greet() -> &'static str { \"Hello\" }\n", "firstChangedLine": 1},
        "isError": false, "timestamp": 3
    })));
    insta::assert_snapshot!(screen(&app, 80, 12));
}

#[test]
fn the_tools_picker_states_what_the_change_costs() {
    let mut app = app();
    type_text(&mut app, "/tools");
    app.on_key(key(KeyCode::Enter), Instant::now());
    // Down to `grep` (off) and switch it on.
    for _ in 0..4 {
        app.on_key(key(KeyCode::Down), Instant::now());
    }
    app.on_key(key(KeyCode::Char(' ')), Instant::now());
    insta::assert_snapshot!(screen(&app, 100, 16));
}
