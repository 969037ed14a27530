//! The scripted model: the bundled demo played through a tool loop, and the echo default.

use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use strata_mock::Scenario;

use crate::common::start;

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
