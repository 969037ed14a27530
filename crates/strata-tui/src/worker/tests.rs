//! The worker's translations of stored sessions into items and counters.

use serde_json::json;
use strata_agent::KEEP_WARM_CUSTOM_TYPE;

use super::*;

fn session(lines: &[serde_json::Value]) -> (tempfile::TempDir, Session) {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("s.jsonl");
    let text: String = lines.iter().map(|line| format!("{line}\n")).collect();
    std::fs::write(&path, text).expect("writing");
    let session = Session::open(&path).expect("opening").session;
    (dir, session)
}

fn entry(id: &str, parent: Option<&str>, message: serde_json::Value) -> serde_json::Value {
    json!({"type":"message","id":id,"parentId":parent,
        "timestamp":"2026-03-01T10:00:00.000Z","message":message})
}

#[test]
fn keep_warm_pings_in_the_file_are_billed_but_not_the_last_answer() {
    let usage = |read: u64, total: f64| {
        json!({"input":0,"output":1,"cacheRead":read,"cacheWrite":0,"totalTokens":read + 1,
            "cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":total}})
    };
    let (_dir, session) = session(&[
        json!({"type":"session","version":3,"id":"s","timestamp":"2026-03-01T10:00:00.000Z","cwd":"/p"}),
        entry(
            "u0000001",
            None,
            json!({"role":"user","content":"hi","timestamp":1}),
        ),
        entry(
            "a0000001",
            Some("u0000001"),
            json!({"role":"assistant","content":[{"type":"text","text":"Hello."}],
            "api":"anthropic-messages","provider":"anthropic","model":"claude-opus-4-8",
            "usage":usage(900, 0.002),"stopReason":"stop","timestamp":2}),
        ),
        json!({"type":"custom","id":"k0000001","parentId":"a0000001",
            "timestamp":"2026-03-01T10:05:00.000Z","customType":KEEP_WARM_CUSTOM_TYPE,
            "data":{"usage":usage(950, 0.0005),"provider":"anthropic","model":"claude-opus-4-8"}}),
        json!({"type":"usage","id":"k0000002","parentId":"k0000001",
            "timestamp":"2026-03-01T10:09:00.000Z","kind":"cache_warm",
            "provider":"anthropic","model":"claude-opus-4-8","usage":usage(960, 0.0005)}),
    ]);
    let stats = stats_of(&session);
    assert_eq!(stats.requests, 3);
    assert_eq!(stats.pings, 2);
    assert_eq!(stats.cache_read, 2810);
    assert!((stats.cost - 0.003).abs() < 1e-12, "{}", stats.cost);
    assert_eq!(stats.last.map(|usage| usage.cache_read), Some(900));
}

#[test]
fn a_resumed_branch_becomes_transcript_items_and_counters() {
    let (_dir, session) = session(&[
        json!({"type":"session","version":3,"id":"s","timestamp":"2026-03-01T10:00:00.000Z","cwd":"/p"}),
        json!({"type":"model_change","id":"m0000001","parentId":null,
            "timestamp":"2026-03-01T10:00:00.000Z","provider":"anthropic","modelId":"claude-sonnet-4-5"}),
        entry(
            "u0000001",
            Some("m0000001"),
            json!({"role":"user","content":"read it","timestamp":1}),
        ),
        entry(
            "a0000001",
            Some("u0000001"),
            json!({"role":"assistant","content":[
            {"type":"thinking","thinking":"look first"},
            {"type":"text","text":"Reading."},
            {"type":"toolCall","id":"c1","name":"read","arguments":{"path":"a.rs"}}],
            "api":"anthropic-messages","provider":"anthropic","model":"claude-sonnet-4-5",
            "usage":{"input":100,"output":10,"cacheRead":900,"cacheWrite":0,"totalTokens":1010,
                "cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0.002}},
            "stopReason":"toolUse","timestamp":2}),
        ),
        entry(
            "r0000001",
            Some("a0000001"),
            json!({"role":"toolResult","toolCallId":"c1",
            "toolName":"read","content":[{"type":"text","text":"fn a() {}"}],"isError":false,"timestamp":3}),
        ),
        json!({"type":"model_change","id":"m0000002","parentId":"r0000001",
            "timestamp":"2026-03-01T10:00:00.000Z","provider":"openai","modelId":"gpt-5"}),
    ]);
    assert_eq!(
        transcript_of(&session),
        vec![
            Item::User("read it".into()),
            Item::Thinking("look first".into()),
            Item::Assistant("Reading.".into()),
            Item::Tool(ToolItem {
                id: "c1".into(),
                name: "read".into(),
                arguments: "{\"path\":\"a.rs\"}".into(),
                output: "fn a() {}".into(),
                state: ToolState::Done,
                diff: None,
            }),
            Item::Notice(Notice {
                level: Level::Info,
                text: "model → openai/gpt-5".into(),
            }),
        ]
    );
    let points = fork_rows(read_model::fork_points(&session));
    assert_eq!(
        points.iter().map(|row| row.id.as_str()).collect::<Vec<_>>(),
        vec!["u0000001"]
    );
    assert_eq!(points[0].user_text.as_deref(), Some("read it"));
    assert_eq!(points[0].parent, Some(EntryId::new("m0000001")));
    let stats = stats_of(&session);
    assert_eq!(stats.requests, 1);
    assert_eq!(stats.hit_rate(), Some(0.9));
    assert!((stats.cost - 0.002).abs() < 1e-12);
}
