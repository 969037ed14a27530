//! The request's output cap: every route stops at it with its own stop reason, reports the
//! tokens it sent, and a cut reply leaves the scripted turn for the next request.

use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use strata_mock::Scenario;

use crate::bedrock::{decode_frames, header};
use crate::common::{Harness, filler, gemini_text, parse_sse, start, tokens};

/// An echo prompt far longer than the caps used here.
const LONG: &str = "one two three four five six seven eight nine ten eleven twelve";
const CAP: u64 = 3;

/// What the mock's tokenizer keeps of `text` under `cap`.
fn prefix(text: &str, cap: u64) -> String {
    strata_mock::tokens::Tokenizer::new().prefix(text, cap)
}

fn anthropic(cap: u64, stream: bool) -> Value {
    json!({"model": "claude-sonnet-4-5", "max_tokens": cap, "stream": stream,
           "messages": [{"role": "user", "content": LONG}]})
}

fn stream_events(text: &str) -> Vec<Value> {
    parse_sse(text).iter().map(|e| e.json()).collect()
}

#[tokio::test]
async fn anthropic_stops_at_max_tokens_in_the_reply_and_the_stream() {
    let h = start().await;
    let expected = prefix(LONG, CAP);
    assert_eq!(tokens(&expected), CAP);
    let reply = h.post("/v1/messages", &anthropic(CAP, false)).await.json();
    assert_eq!(reply["stop_reason"], "max_tokens");
    assert_eq!(
        reply["content"],
        json!([{"type": "text", "text": expected}])
    );
    assert_eq!(reply["usage"]["output_tokens"], json!(CAP));
    assert_eq!(h.last_record().output_tokens, CAP);

    let events = stream_events(&h.post("/v1/messages", &anthropic(CAP, true)).await.text);
    let text: String = events
        .iter()
        .filter_map(|e| e["delta"]["text"].as_str())
        .collect();
    assert_eq!(text, expected);
    let delta = events
        .iter()
        .find(|e| e["type"] == "message_delta")
        .unwrap();
    assert_eq!(delta["delta"]["stop_reason"], "max_tokens");
    assert_eq!(delta["usage"]["output_tokens"], json!(CAP));
    // A cap the reply fits under changes nothing.
    let whole = h.post("/v1/messages", &anthropic(1000, false)).await.json();
    assert_eq!(whole["stop_reason"], "end_turn");
    assert_eq!(whole["content"][0]["text"], LONG);
}

fn chat(cap_field: &str, cap: u64, stream: bool) -> Value {
    let mut body = json!({"model": "gpt-4.1", "stream": stream,
        "stream_options": {"include_usage": true},
        "messages": [{"role": "user", "content": LONG}]});
    body[cap_field] = json!(cap);
    body
}

#[tokio::test]
async fn chat_finishes_with_length_under_either_cap_field() {
    let h = start().await;
    let expected = prefix(LONG, CAP);
    for field in ["max_completion_tokens", "max_tokens"] {
        let reply = h
            .post("/v1/chat/completions", &chat(field, CAP, false))
            .await;
        assert_eq!(reply.status, 200, "{}", reply.text);
        let reply = reply.json();
        assert_eq!(reply["choices"][0]["finish_reason"], "length", "{field}");
        assert_eq!(reply["choices"][0]["message"]["content"], expected.as_str());
        assert_eq!(reply["usage"]["completion_tokens"], json!(CAP));
    }
    // `max_completion_tokens` wins over the older field.
    let mut both = chat("max_tokens", 1000, false);
    both["max_completion_tokens"] = json!(CAP);
    let reply = h.post("/v1/chat/completions", &both).await.json();
    assert_eq!(reply["choices"][0]["finish_reason"], "length");

    let reply = h
        .post(
            "/v1/chat/completions",
            &chat("max_completion_tokens", CAP, true),
        )
        .await;
    let chunks: Vec<Value> = parse_sse(&reply.text)
        .iter()
        .filter(|e| e.data != "[DONE]")
        .map(|e| e.json())
        .collect();
    let text: String = chunks
        .iter()
        .filter_map(|c| c["choices"][0]["delta"]["content"].as_str())
        .collect();
    assert_eq!(text, expected);
    let finish: Vec<&Value> = chunks
        .iter()
        .map(|c| &c["choices"][0]["finish_reason"])
        .filter(|f| !f.is_null())
        .collect();
    assert_eq!(finish, [&json!("length")]);
    let usage = chunks
        .iter()
        .rev()
        .find(|c| c["usage"].is_object())
        .unwrap();
    assert_eq!(usage["usage"]["completion_tokens"], json!(CAP));
}

fn responses(cap: u64, stream: bool) -> Value {
    json!({"model": "gpt-5.1-codex", "max_output_tokens": cap, "stream": stream, "store": false,
           "input": [{"role": "user", "content": [{"type": "input_text", "text": LONG}]}]})
}

#[tokio::test]
async fn responses_end_incomplete_for_max_output_tokens() {
    let h = start().await;
    let expected = prefix(LONG, CAP);
    let reply = h.post("/v1/responses", &responses(CAP, false)).await.json();
    assert_eq!(reply["status"], "incomplete");
    assert_eq!(
        reply["incomplete_details"],
        json!({"reason": "max_output_tokens"})
    );
    assert_eq!(reply["output"][0]["status"], "incomplete");
    assert_eq!(reply["output"][0]["content"][0]["text"], expected.as_str());
    assert_eq!(reply["usage"]["output_tokens"], json!(CAP));

    let events = parse_sse(&h.post("/v1/responses", &responses(CAP, true)).await.text);
    let last = events.last().unwrap();
    assert_eq!(last.event.as_deref(), Some("response.incomplete"));
    assert!(
        !events
            .iter()
            .any(|e| e.event.as_deref() == Some("response.completed"))
    );
    let last = last.json();
    assert_eq!(last["response"]["status"], "incomplete");
    assert_eq!(
        last["response"]["incomplete_details"]["reason"],
        "max_output_tokens"
    );
    assert_eq!(last["response"]["usage"]["output_tokens"], json!(CAP));
    let text: String = events
        .iter()
        .filter(|e| e.event.as_deref() == Some("response.output_text.delta"))
        .map(|e| e.json()["delta"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(text, expected);

    let whole = h
        .post("/v1/responses", &responses(1000, false))
        .await
        .json();
    assert_eq!(
        (&whole["status"], &whole["incomplete_details"]),
        (&json!("completed"), &Value::Null)
    );
}

#[tokio::test]
async fn gemini_finishes_with_max_tokens() {
    let h = start().await;
    let expected = prefix(LONG, CAP);
    let body = json!({"contents": [{"role": "user", "parts": [{"text": LONG}]}],
                      "generationConfig": {"maxOutputTokens": CAP}});
    let reply = h
        .post("/v1beta/models/gemini-2.5-flash:generateContent", &body)
        .await
        .json();
    let candidate = &reply["candidates"][0];
    assert_eq!(candidate["finishReason"], "MAX_TOKENS");
    assert_eq!(candidate["content"]["parts"][0]["text"], expected.as_str());
    assert_eq!(reply["usageMetadata"]["candidatesTokenCount"], json!(CAP));

    let events = parse_sse(
        &h.post(
            "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse",
            &body,
        )
        .await
        .text,
    );
    let last = events.last().unwrap().json();
    assert_eq!(last["candidates"][0]["finishReason"], "MAX_TOKENS");
    assert_eq!(gemini_text(&events), expected);
}

#[tokio::test]
async fn bedrock_stops_with_max_tokens() {
    let h = start().await;
    let expected = prefix(LONG, CAP);
    let body = json!({"messages": [{"role": "user", "content": [{"text": LONG}]}],
                      "inferenceConfig": {"maxTokens": CAP}});
    let path = "/model/us.anthropic.claude-sonnet-4-5-v1:0";
    let reply = h.post(&format!("{path}/converse"), &body).await.json();
    assert_eq!(reply["stopReason"], "max_tokens");
    assert_eq!(
        reply["output"]["message"]["content"][0]["text"],
        expected.as_str()
    );
    assert_eq!(reply["usage"]["outputTokens"], json!(CAP));

    let (status, _, bytes) = h
        .post_bytes(&format!("{path}/converse-stream"), &body)
        .await;
    assert_eq!(status, 200);
    let (frames, bad) = decode_frames(&bytes);
    assert!(!bad);
    let payload = |name: &str| -> Vec<Value> {
        frames
            .iter()
            .filter(|(headers, _)| header(headers, ":event-type") == name)
            .map(|(_, payload)| serde_json::from_slice(payload).unwrap())
            .collect()
    };
    assert_eq!(payload("messageStop")[0]["stopReason"], "max_tokens");
    let text: String = payload("contentBlockDelta")
        .iter()
        .filter_map(|d| d["delta"]["text"].as_str().map(str::to_owned))
        .collect();
    assert_eq!(text, expected);
    assert_eq!(payload("metadata")[0]["usage"]["outputTokens"], json!(CAP));
}

const SCRIPT: &str = r#"
playback = "sequence"

[[turn]]
text = "Reading the file first, then I will fix it."
[[turn.tool_call]]
tool = "read"
args = { path = "src/lib.rs" }

[[turn]]
fault = { kind = "rate_limit", retry_after_secs = 1 }
[[turn.tool_call]]
tool = "bash"
args = { command = "cargo test" }

[[turn]]
text = "Fixed."
"#;

fn turn_request(messages: &[Value], cap: u64) -> Value {
    json!({"model": "claude-sonnet-4-5", "max_tokens": cap, "messages": messages,
    "tools": [
      {"name": "read", "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}}},
      {"name": "bash", "input_schema": {"type": "object", "properties": {"command": {"type": "string"}}}}
    ]})
}

async fn send(h: &Harness, messages: &[Value], cap: u64) -> Value {
    let reply = h.post("/v1/messages", &turn_request(messages, cap)).await;
    assert_eq!(reply.status, 200, "{}", reply.text);
    reply.json()
}

/// A keep-warm ping: the conversation so far plus a short user line, capped at one token.
async fn ping(h: &Harness, messages: &[Value]) -> Value {
    let mut pinged = messages.to_vec();
    pinged.push(json!({"role": "user", "content": "ping"}));
    send(h, &pinged, 1).await
}

#[tokio::test]
async fn a_cut_reply_leaves_the_scripted_turn_for_the_next_request() {
    let h = start().await;
    h.server
        .load_scenario(Scenario::from_toml(SCRIPT, "inline").unwrap());
    let mut messages = vec![json!({"role": "user", "content": "fix it"})];

    // Pings before each turn see the turn's first token and take nothing from the script.
    let pinged = ping(&h, &messages).await;
    assert_eq!(pinged["stop_reason"], "max_tokens");
    let first_token = prefix("Reading the file first, then I will fix it.", 1);
    assert_eq!(
        pinged["content"],
        json!([{"type": "text", "text": first_token}])
    );
    assert_eq!(pinged["usage"]["output_tokens"], json!(1));
    let first = send(&h, &messages, 4096).await;
    assert_eq!(first["stop_reason"], "tool_use");
    assert_eq!(
        first["content"][0]["text"],
        "Reading the file first, then I will fix it."
    );
    assert_eq!(first["content"][1]["input"], json!({"path": "src/lib.rs"}));
    assert_eq!(h.last_record().turn, Some(0));
    messages.push(json!({"role": "assistant", "content": first["content"]}));
    messages.push(json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": first["content"][1]["id"], "content": "fn main() {}"}]}));

    // The second turn is only a tool call: the ping gets nothing but the stop, and does not
    // set off the turn's rate limit either.
    let pinged = ping(&h, &messages).await;
    assert_eq!(pinged["stop_reason"], "max_tokens");
    assert_eq!(pinged["content"], json!([]));
    assert_eq!(pinged["usage"]["output_tokens"], json!(0));
    let limited = h.post("/v1/messages", &turn_request(&messages, 4096)).await;
    assert_eq!(
        limited.status, 429,
        "the turn's fault is played by the real request"
    );
    let second = send(&h, &messages, 4096).await;
    assert_eq!(second["stop_reason"], "tool_use");
    assert_eq!(
        second["content"][0]["input"],
        json!({"command": "cargo test"})
    );
    messages.push(json!({"role": "assistant", "content": second["content"]}));
    messages.push(json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": second["content"][0]["id"], "content": "ok"}]}));

    ping(&h, &messages).await;
    let third = send(&h, &messages, 4096).await;
    assert_eq!(third["content"][0]["text"], "Fixed.");
    assert_eq!(third["stop_reason"], "end_turn");
    assert_eq!(h.last_record().turn, Some(2));
}

#[tokio::test]
async fn a_tool_call_the_cap_cuts_is_not_sent_but_the_text_before_it_is() {
    let h = start().await;
    h.server.load_scenario(
        Scenario::from_toml(
            "[[turn]]\ntext = \"Running the tests.\"\n[[turn.tool_call]]\ntool = \"bash\"\nargs = { command = \"cargo test --workspace\" }\n",
            "inline",
        )
        .unwrap(),
    );
    let text_tokens = tokens("Running the tests.");
    let body = json!({"model": "gpt-4.1", "max_completion_tokens": text_tokens + 2,
        "tools": [{"type": "function", "function": {"name": "bash", "parameters": {"type": "object", "properties": {"command": {"type": "string"}}}}}],
        "messages": [{"role": "user", "content": "test it"}]});
    let reply = h.post("/v1/chat/completions", &body).await.json();
    let choice = &reply["choices"][0];
    assert_eq!(choice["finish_reason"], "length");
    assert_eq!(choice["message"]["content"], "Running the tests.");
    assert!(choice["message"].get("tool_calls").is_none(), "{choice}");
    assert_eq!(reply["usage"]["completion_tokens"], json!(text_tokens));
}

#[tokio::test]
async fn a_cut_request_reads_and_writes_the_cache_like_any_other() {
    let h = start().await;
    let body = |cap: u64| {
        json!({"model": "claude-sonnet-4-5", "max_tokens": cap,
               "system": [{"type": "text", "text": filler("system", 1500), "cache_control": {"type": "ephemeral"}}],
               "messages": [{"role": "user", "content": LONG}]})
    };
    let pinged = h.post("/v1/messages", &body(1)).await.json();
    assert_eq!(pinged["stop_reason"], "max_tokens");
    let written = pinged["usage"]["cache_creation_input_tokens"]
        .as_u64()
        .unwrap();
    assert!(written > 1024);
    let ping_record = h.last_record();
    let full = h.post("/v1/messages", &body(4096)).await.json();
    assert_eq!(full["usage"]["cache_read_input_tokens"], json!(written));
    assert_eq!(full["content"][0]["text"], LONG);
    // The cut request's accounting is the one an uncut first request has.
    h.server.reset();
    h.post("/v1/messages", &body(4096)).await;
    assert_eq!(h.last_record().cache, ping_record.cache);
}

#[tokio::test]
async fn a_cap_of_the_wrong_type_is_refused() {
    let h = start().await;
    let mut body = chat("max_completion_tokens", 1, false);
    body["max_completion_tokens"] = json!("ten");
    let reply = h.post("/v1/chat/completions", &body).await;
    assert_eq!(reply.status, 400);
    assert!(
        reply.json()["error"]["message"]
            .as_str()
            .unwrap()
            .contains("max_completion_tokens"),
        "{}",
        reply.text
    );
}
