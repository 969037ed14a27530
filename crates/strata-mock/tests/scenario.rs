//! The scripted model: the bundled demo played through a tool loop, and the echo default.

use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use strata_mock::{Fault, FaultKind, Playback, Scenario, SummaryKind};

use crate::common::{parse_sse, start};

fn demo() -> Scenario {
    Scenario::from_file(
        &std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/demo.toml"),
    )
    .unwrap()
}

/// Claude Code's tool names and argument names.
fn claude_code_tools() -> Value {
    json!([
        {"name": "Read", "input_schema": {"type": "object", "properties": {"file_path": {"type": "string"}}}},
        {"name": "Edit", "input_schema": {"type": "object", "properties": {"file_path": {"type": "string"}, "old_string": {"type": "string"}, "new_string": {"type": "string"}}}},
        {"name": "Bash", "input_schema": {"type": "object", "properties": {"command": {"type": "string"}}}},
    ])
}

#[tokio::test]
async fn the_demo_plays_read_edit_bash_answer_against_other_harness_tool_names() {
    let h = start().await;
    h.server.load_scenario(demo());
    let mut messages = vec![json!({"role": "user", "content": "fix the greeting"})];
    let mut calls = Vec::new();
    for _ in 0..4 {
        let body = json!({"model": "claude-sonnet-4-5", "max_tokens": 100, "tools": claude_code_tools(), "messages": messages});
        let reply = h.post("/v1/messages", &body).await.json();
        let content = reply["content"].as_array().unwrap().clone();
        messages.push(json!({"role": "assistant", "content": content}));
        let Some(call) = content.iter().find(|b| b["type"] == "tool_use") else {
            assert_eq!(reply["stop_reason"], "end_turn");
            break;
        };
        assert_eq!(reply["stop_reason"], "tool_use");
        calls.push((call["name"].clone(), call["input"].clone()));
        messages.push(json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": call["id"], "content": "done"}]}));
    }
    assert_eq!(
        calls,
        [
            (json!("Read"), json!({"file_path": "src/greeting.rs"})),
            (
                json!("Edit"),
                json!({"file_path": "src/greeting.rs", "old_string": "Helo", "new_string": "Hello"})
            ),
            (json!("Bash"), json!({"command": "cargo test"})),
        ]
    );
    let last = messages.last().unwrap();
    assert!(
        last["content"][0]["text"]
            .as_str()
            .unwrap()
            .starts_with("Fixed the typo")
    );
    let turns: Vec<Option<usize>> = h.server.requests().iter().map(|r| r.turn).collect();
    assert_eq!(turns, [Some(0), Some(1), Some(2), Some(3)]);
}

#[tokio::test]
async fn the_same_request_gets_the_same_reply() {
    let h = start().await;
    h.server.load_scenario(demo());
    let body = json!({"model": "gpt-5", "tools": [{"type": "function", "function": {"name": "read_file", "parameters": {"type": "object", "properties": {"path": {"type": "string"}}}}}],
        "messages": [{"role": "user", "content": "go"}]});
    let first = h.post("/v1/chat/completions", &body).await.json();
    let second = h.post("/v1/chat/completions", &body).await.json();
    assert_eq!(first["choices"], second["choices"]);
    assert_eq!(
        first["choices"][0]["message"]["tool_calls"][0]["function"]["name"],
        "read_file"
    );
}

#[tokio::test]
async fn without_a_scenario_the_model_echoes() {
    let h = start().await;
    let reply = h
        .post(
            "/v1/responses",
            &json!({"model": "gpt-5", "input": "echo me"}),
        )
        .await
        .json();
    assert_eq!(reply["output"][0]["content"][0]["text"], "echo me");
}

/// A coding session in `sequence` playback: two scripted turns, then a compaction, then more.
const SEQUENCE: &str = r###"
name = "sequence"
playback = "sequence"

[[turn]]
user = "Fix the failing test."
text = "Reading the test."
[[turn.tool_call]]
tool = "read"
args = { path = "test.sh" }

[[turn]]
text = "The test reads fine."

[[turn]]
user = "Now add a changelog line."
text = "Adding it."
[[turn.tool_call]]
tool = "write"
args = { path = "CHANGELOG", content = "fixed" }

[[turn]]
user = "Thanks."
text = "You're welcome."

[[summary]]
text = "## Goal\nFix the failing test."
"###;

fn sequence() -> Scenario {
    Scenario::from_toml(SEQUENCE, "SEQUENCE").unwrap()
}

fn strata_tools() -> Value {
    json!([
        {"name": "read", "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}}},
        {"name": "write", "input_schema": {"type": "object", "properties": {"path": {"type": "string"}, "content": {"type": "string"}}}},
    ])
}

fn messages_request(messages: &[Value], stream: bool) -> Value {
    json!({"model": "claude-sonnet-4-5", "max_tokens": 1000, "stream": stream,
        "system": [{"type": "text", "text": "You are a coding agent."}],
        "tools": strata_tools(), "messages": messages})
}

#[test]
fn user_prompts_are_listed_in_turn_order() {
    assert_eq!(
        sequence().user_prompts(),
        [
            "Fix the failing test.",
            "Now add a changelog line.",
            "Thanks."
        ]
    );
    assert_eq!(sequence().playback, Playback::Sequence);
    assert_eq!(demo().playback, Playback::AssistantCount);
}

#[tokio::test]
async fn a_sequence_plays_across_a_compaction_without_spending_a_turn_on_it() {
    let h = start().await;
    h.server.load_scenario(sequence());
    let mut messages = vec![json!({"role": "user", "content": "Fix the failing test."})];
    let first = h
        .post("/v1/messages", &messages_request(&messages, false))
        .await
        .json();
    let call = first["content"][1].clone();
    assert_eq!(call["name"], "read");
    messages.push(json!({"role": "assistant", "content": first["content"]}));
    messages.push(json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": call["id"], "content": "echo ok"}]}));
    let second = h
        .post("/v1/messages", &messages_request(&messages, false))
        .await
        .json();
    assert_eq!(second["content"][0]["text"], "The test reads fine.");
    messages.push(json!({"role": "assistant", "content": second["content"]}));

    // strata's cache-friendly compaction: the session's request plus the checkpoint instruction.
    let mut checkpoint = messages.clone();
    checkpoint.push(json!({"role": "user", "content": "[Context checkpoint request — not a message from the user]\nStop the task here. Write a structured summary."}));
    let summary = h
        .post("/v1/messages", &messages_request(&checkpoint, false))
        .await
        .json();
    assert_eq!(
        summary["content"][0]["text"],
        "## Goal\nFix the failing test."
    );
    // Pi's transcript form, with no [[summary]] left: the default summary, built from it.
    let pi = json!({"model": "claude-sonnet-4-5", "max_tokens": 1000,
        "system": "You are a context summarization assistant. Your task is to read a conversation between a user and an AI coding assistant, then produce a structured summary following the exact format specified.",
        "messages": [{"role": "user", "content": [{"type": "text", "text": "<conversation>\n[User]: Fix the failing test.\n\n[Assistant]: Reading the test.\n</conversation>\n\nThe messages above are a conversation to summarize. Create a structured context checkpoint summary that another LLM will use to continue the work."}]}]});
    let default = h.post("/v1/messages", &pi).await.json();
    let default = default["content"][0]["text"].as_str().unwrap().to_owned();
    assert!(
        default.starts_with("## Goal\nFix the failing test.\n"),
        "{default}"
    );
    assert_eq!(
        h.post("/v1/messages", &pi).await.json()["content"][0]["text"],
        default.as_str(),
        "the default summary is deterministic"
    );

    // After the compaction the next request plays the next turn.
    let compacted = vec![
        json!({"role": "user", "content": "The conversation history before this point was compacted into the following summary:\n\n<summary>\n## Goal\nFix the failing test.\n</summary>"}),
        json!({"role": "user", "content": "Now add a changelog line."}),
    ];
    let third = h
        .post("/v1/messages", &messages_request(&compacted, false))
        .await
        .json();
    assert_eq!(third["content"][0]["text"], "Adding it.");
    assert_eq!(third["content"][1]["name"], "write");

    let records = h.server.requests();
    let turns: Vec<Option<usize>> = records.iter().map(|r| r.turn).collect();
    assert_eq!(turns, [Some(0), Some(1), None, None, None, Some(2)]);
    let summaries: Vec<Option<SummaryKind>> = records.iter().map(|r| r.summary).collect();
    assert_eq!(
        summaries,
        [
            None,
            None,
            Some(SummaryKind::History),
            Some(SummaryKind::History),
            Some(SummaryKind::History),
            None
        ]
    );
}

#[tokio::test]
async fn a_retry_after_a_dropped_stream_gets_the_same_turn() {
    let h = start().await;
    h.server.load_scenario(sequence());
    h.server
        .push_fault(Fault::next(FaultKind::CutAfter { events: 3 }));
    let messages = vec![
        json!({"role": "user", "content": [{"type": "text", "text": "Fix the failing test."}]}),
    ];
    let dropped = h
        .post("/v1/messages", &messages_request(&messages, true))
        .await;
    assert!(!dropped.text.contains("message_stop"), "{}", dropped.text);
    // The retry moves the cache marker; the conversation is the same.
    let marked = vec![
        json!({"role": "user", "content": [{"type": "text", "text": "Fix the failing test.", "cache_control": {"type": "ephemeral"}}]}),
    ];
    let retry = h
        .post("/v1/messages", &messages_request(&marked, true))
        .await;
    assert!(retry.text.contains("message_stop"));
    let events = parse_sse(&retry.text);
    let tool = events
        .iter()
        .map(|e| e.json())
        .find(|e| e["content_block"]["type"] == "tool_use")
        .unwrap();
    assert_eq!(tool["content_block"]["name"], "read");
    let turns: Vec<Option<usize>> = h.server.requests().iter().map(|r| r.turn).collect();
    assert_eq!(turns, [Some(0), Some(0)]);
}

#[tokio::test]
async fn a_fault_in_a_sequence_turn_is_played_once() {
    let h = start().await;
    let mut scenario = sequence();
    scenario.turns[0].fault = Some(FaultKind::RateLimit {
        retry_after_secs: 1,
    });
    h.server.load_scenario(scenario);
    let body = messages_request(&[json!({"role": "user", "content": "go"})], false);
    assert_eq!(h.post("/v1/messages", &body).await.status, 429);
    let reply = h.post("/v1/messages", &body).await;
    assert_eq!(reply.status, 200);
    assert_eq!(reply.json()["content"][0]["text"], "Reading the test.");
}

#[tokio::test]
async fn a_prompt_over_the_window_takes_no_turn() {
    use strata_mock::{MockConfig, ModelRule, Protocol, config::builtin_profile};
    let mut profile = builtin_profile(Protocol::Anthropic, "claude-sonnet-4-5");
    profile.context_window = 400;
    let h = crate::common::start_with(MockConfig::new().with_model(ModelRule {
        protocol: Some(Protocol::Anthropic),
        pattern: "claude-sonnet-4-5".into(),
        profile,
    }))
    .await;
    h.server.load_scenario(sequence());
    let long = crate::common::filler("x", 600);
    let over = messages_request(&[json!({"role": "user", "content": long})], false);
    let refused = h.post("/v1/messages", &over).await;
    assert_eq!(refused.status, 400);
    // The harness compacts and sends a shorter conversation: it gets the first turn.
    let short = messages_request(
        &[json!({"role": "user", "content": "Fix the failing test."})],
        false,
    );
    let reply = h.post("/v1/messages", &short).await;
    assert_eq!(reply.status, 200);
    assert_eq!(reply.json()["content"][0]["text"], "Reading the test.");
    let turns: Vec<Option<usize>> = h.server.requests().iter().map(|r| r.turn).collect();
    assert_eq!(turns, [None, Some(0)]);
}

#[tokio::test]
async fn a_request_for_another_model_gets_the_side_reply_and_takes_no_turn() {
    let h = start().await;
    let mut scenario = sequence();
    scenario.model = Some("claude-sonnet-4-5".into());
    h.server.load_scenario(scenario);
    // A harness's title request to its small model, before the conversation's first request.
    let mut title = messages_request(
        &[json!({"role": "user", "content": "Write a 5-word title for: Fix the failing test."})],
        false,
    );
    title["model"] = json!("claude-haiku-4-5");
    let side = h.post("/v1/messages", &title).await;
    assert_eq!(side.status, 200);
    assert_eq!(
        side.json()["content"][0]["text"],
        strata_mock::scenario::SIDE_REPLY
    );
    let first = messages_request(
        &[json!({"role": "user", "content": "Fix the failing test."})],
        false,
    );
    let reply = h.post("/v1/messages", &first).await;
    assert_eq!(reply.json()["content"][0]["text"], "Reading the test.");
    let turns: Vec<(String, Option<usize>)> = h
        .server
        .requests()
        .iter()
        .map(|r| (r.model.clone(), r.turn))
        .collect();
    assert_eq!(
        turns,
        [
            ("claude-haiku-4-5".to_owned(), None),
            ("claude-sonnet-4-5".to_owned(), Some(0))
        ]
    );
    // A scenario naming no model plays every model, as before.
    assert!(!sequence().is_side_request("claude-haiku-4-5"));
}
