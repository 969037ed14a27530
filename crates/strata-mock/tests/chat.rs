//! OpenAI Chat Completions and the DeepSeek variant over HTTP.

use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use crate::common::{filler, parse_sse, start, tokens};

fn tool(name: &str, words: usize) -> Value {
    json!({"type": "function", "function": {"name": name, "description": filler(name, words), "parameters": {"type": "object", "properties": {"command": {"type": "string"}}}}})
}

fn request(model: &str, tools: &[Value], words: usize, question: &str) -> Value {
    json!({
        "model": model,
        "tools": tools,
        "messages": [
            {"role": "system", "content": filler("sys", words)},
            {"role": "user", "content": question},
        ],
    })
}

fn cached(reply: &Value) -> (u64, u64) {
    (
        reply["usage"]["prompt_tokens_details"]["cached_tokens"]
            .as_u64()
            .unwrap(),
        reply["usage"]["prompt_tokens"].as_u64().unwrap(),
    )
}

#[tokio::test]
async fn below_1024_tokens_nothing_is_cached() {
    let h = start().await;
    let body = request("gpt-5", &[], 300, "hi");
    let first = h.post("/v1/chat/completions", &body).await;
    assert_eq!(first.status, 200, "{}", first.text);
    let (_, prompt) = cached(&first.json());
    assert!(prompt < 1024, "prompt {prompt}");
    assert_eq!(
        cached(&h.post("/v1/chat/completions", &body).await.json()).0,
        0
    );
}

#[tokio::test]
async fn above_1024_tokens_hits_count_in_128_token_steps() {
    let h = start().await;
    let body = request("gpt-5", &[], 1500, "hi");
    let (first_cached, prompt) = cached(&h.post("/v1/chat/completions", &body).await.json());
    assert_eq!(first_cached, 0);
    assert!(prompt > 2048);
    let (hit, _) = cached(&h.post("/v1/chat/completions", &body).await.json());
    assert_eq!(hit, prompt / 128 * 128);
    // A changed last message keeps the common prefix, rounded down to 128.
    let other = request(
        "gpt-5",
        &[],
        1500,
        "something else entirely, much longer than before",
    );
    let (partial, _) = cached(&h.post("/v1/chat/completions", &other).await.json());
    assert_eq!(partial % 128, 0);
    assert!(partial >= 1024 && partial <= hit, "{partial} vs {hit}");
}

#[tokio::test]
async fn prompt_cache_key_routes_to_separate_caches() {
    let h = start().await;
    let mut body = request("gpt-5", &[], 1500, "hi");
    body["prompt_cache_key"] = json!("session-a");
    h.post("/v1/chat/completions", &body).await;
    assert!(cached(&h.post("/v1/chat/completions", &body).await.json()).0 > 0);
    body["prompt_cache_key"] = json!("session-b");
    assert_eq!(
        cached(&h.post("/v1/chat/completions", &body).await.json()).0,
        0
    );
    assert_eq!(h.last_record().cache_key.as_deref(), Some("session-b"));
}

#[tokio::test]
async fn a_tool_removed_from_the_middle_misses_from_that_tool_on() {
    let h = start().await;
    let all = [
        tool("read", 300),
        tool("bash", 300),
        tool("edit", 300),
        tool("write", 300),
    ];
    let body = request("gpt-5", &all, 100, "hi");
    h.post("/v1/chat/completions", &body).await;
    let without = [all[0].clone(), all[1].clone(), all[3].clone()];
    let (hit, _) = cached(
        &h.post(
            "/v1/chat/completions",
            &request("gpt-5", &without, 100, "hi"),
        )
        .await
        .json(),
    );
    let before_removed = tokens(&all[0].to_string()) + tokens(&all[1].to_string());
    assert_eq!(hit, before_removed / 128 * 128);
    let cache = h.last_record().cache.unwrap();
    assert_eq!(cache.system.read + cache.messages.read, 0);
}

#[tokio::test]
async fn deepseek_counts_hits_in_64_token_units_with_its_own_fields() {
    let h = start().await;
    let body = request("deepseek-chat", &[], 250, "hi");
    let first = h.post("/v1/chat/completions", &body).await.json();
    assert_eq!(first["usage"]["prompt_cache_hit_tokens"], json!(0));
    let prompt = first["usage"]["prompt_tokens"].as_u64().unwrap();
    assert_eq!(first["usage"]["prompt_cache_miss_tokens"], json!(prompt));
    let second = h.post("/v1/chat/completions", &body).await.json();
    let hit = second["usage"]["prompt_cache_hit_tokens"].as_u64().unwrap();
    assert_eq!(hit, prompt / 64 * 64);
    assert_eq!(
        second["usage"]["prompt_cache_miss_tokens"]
            .as_u64()
            .unwrap(),
        prompt - hit
    );
    assert!(
        prompt < 1024,
        "DeepSeek has no 1024-token minimum: {prompt}"
    );
    // Under 64 tokens nothing is cached.
    let tiny =
        json!({"model": "deepseek-chat", "messages": [{"role": "user", "content": "hello"}]});
    h.post("/v1/chat/completions", &tiny).await;
    assert_eq!(
        h.post("/v1/chat/completions", &tiny).await.json()["usage"]["prompt_cache_hit_tokens"],
        json!(0)
    );
}

#[tokio::test]
async fn the_stream_sends_chunks_usage_and_done() {
    let h = start().await;
    h.server.load_scenario(
        strata_mock::Scenario::from_toml(
            "[[turn]]\ntext = \"running the tests\"\n[[turn.tool_call]]\ntool = \"bash\"\nargs = { command = \"cargo test\" }\n",
            "inline",
        )
        .unwrap(),
    );
    let mut body = request("gpt-5", &[tool("exec_command", 10)], 10, "test it");
    body["stream"] = json!(true);
    body["stream_options"] = json!({"include_usage": true});
    let reply = h.post("/v1/chat/completions", &body).await;
    let events = parse_sse(&reply.text);
    assert_eq!(events.last().unwrap().data, "[DONE]");
    assert!(events.iter().all(|e| e.event.is_none()));
    let chunks: Vec<Value> = events[..events.len() - 1]
        .iter()
        .map(|e| e.json())
        .collect();
    assert_eq!(chunks[0]["choices"][0]["delta"]["role"], "assistant");
    let text: String = chunks
        .iter()
        .filter_map(|c| c["choices"][0]["delta"]["content"].as_str())
        .collect();
    assert_eq!(text, "running the tests");
    let first_call = chunks
        .iter()
        .find(|c| c["choices"][0]["delta"]["tool_calls"].is_array())
        .unwrap();
    assert_eq!(
        first_call["choices"][0]["delta"]["tool_calls"][0]["function"]["name"],
        "exec_command"
    );
    let arguments: String = chunks
        .iter()
        .filter_map(|c| c["choices"][0]["delta"]["tool_calls"][0]["function"]["arguments"].as_str())
        .collect();
    assert_eq!(
        serde_json::from_str::<Value>(&arguments).unwrap(),
        json!({"command": "cargo test"})
    );
    let finish = &chunks[chunks.len() - 2];
    assert_eq!(finish["choices"][0]["finish_reason"], "tool_calls");
    assert_eq!(finish["usage"], Value::Null);
    let usage = chunks.last().unwrap();
    assert_eq!(usage["choices"], json!([]));
    assert!(usage["usage"]["prompt_tokens_details"]["cached_tokens"].is_u64());
    // Without include_usage no usage chunk is sent.
    body["stream_options"] = json!({"include_usage": false});
    let plain = parse_sse(&h.post("/v1/chat/completions", &body).await.text);
    assert!(
        plain
            .iter()
            .filter(|e| e.data != "[DONE]")
            .all(|e| e.json().get("usage").is_none())
    );
}

#[tokio::test]
async fn bad_requests_get_openais_error_shape() {
    let h = start().await;
    let reply = h
        .post("/v1/chat/completions", &json!({"model": "gpt-5"}))
        .await;
    assert_eq!(reply.status, 400);
    let error = &reply.json()["error"];
    assert_eq!(error["type"], "invalid_request_error");
    assert_eq!(error["message"], "Missing required parameter: 'messages'.");
    let reply = h
        .post(
            "/v1/chat/completions",
            &json!({"model": "gpt-5", "messages": []}),
        )
        .await;
    assert_eq!(reply.status, 400);
    assert!(
        reply.json()["error"]["message"]
            .as_str()
            .unwrap()
            .contains("empty array")
    );
}
