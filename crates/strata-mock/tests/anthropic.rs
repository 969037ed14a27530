//! Anthropic Messages over HTTP: cache rules, stream sequence, errors.

use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use strata_mock::{CacheConfig, MockConfig, ModelProfile, ModelRule, Protocol, UsageDialect};

use crate::common::{filler, parse_sse, start, start_with};

const MODEL: &str = "claude-sonnet-4-5";

fn tool(name: &str, words: usize) -> Value {
    json!({"name": name, "description": filler(name, words), "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}}})
}

fn tools() -> Vec<Value> {
    vec![
        tool("read", 700),
        tool("bash", 400),
        tool("edit", 400),
        tool("write", 400),
    ]
}

/// strata's three breakpoints: after the last tool, after the system prompt, on the last message.
fn request(mut tools: Vec<Value>, system: &str, question: &str) -> Value {
    if let Some(last) = tools.last_mut() {
        last["cache_control"] = json!({"type": "ephemeral"});
    }
    json!({
        "model": MODEL,
        "max_tokens": 1024,
        "tools": tools,
        "system": [{"type": "text", "text": system, "cache_control": {"type": "ephemeral"}}],
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": filler("context", 300), "cache_control": {"type": "ephemeral"}}]},
            {"role": "assistant", "content": [{"type": "text", "text": "ok"}]},
            {"role": "user", "content": [{"type": "text", "text": question}]},
        ],
    })
}

fn usage(reply: &Value) -> (u64, u64, u64) {
    let u = &reply["usage"];
    (
        u["cache_read_input_tokens"].as_u64().unwrap(),
        u["cache_creation_input_tokens"].as_u64().unwrap(),
        u["input_tokens"].as_u64().unwrap(),
    )
}

#[tokio::test]
async fn the_same_request_twice_reads_everything_up_to_its_last_breakpoint() {
    let h = start().await;
    let body = request(tools(), &filler("system", 300), "what now?");
    let first = h.post("/v1/messages", &body).await;
    assert_eq!(first.status, 200, "{}", first.text);
    let (read, written, uncached) = usage(&first.json());
    assert_eq!(read, 0);
    assert!(written > 2000, "written {written}");
    let second = h.post("/v1/messages", &body).await.json();
    assert_eq!(usage(&second), (written, 0, uncached));
    assert_eq!(h.last_record().changed, None, "a repeat changes nothing");
    // Only the blocks after the last breakpoint are uncached: the assistant "ok" and the question.
    let record = h.last_record();
    let cache = record.cache.unwrap();
    assert_eq!(
        cache.tools.read + cache.system.read + cache.messages.read,
        written
    );
    assert_eq!(cache.messages.uncached, uncached);
    assert_eq!(cache.input_tokens, read + written + uncached);
    // Priced at Anthropic's ratios: reads 0.1x, 5-minute writes 1.25x.
    let expected = uncached as f64 + written as f64 * 0.1;
    assert!(
        (cache.input_cost_units - expected).abs() < 1e-6,
        "{} vs {expected}",
        cache.input_cost_units
    );
    let first_cost = h.server.requests()[0].cache.unwrap().input_cost_units;
    assert!((first_cost - (uncached as f64 + written as f64 * 1.25)).abs() < 1e-6);
    // The 5m/1h split of writes: all default 5m.
    assert_eq!(
        first.json()["usage"]["cache_creation"]["ephemeral_5m_input_tokens"],
        json!(written)
    );
}

#[tokio::test]
async fn a_message_sent_as_a_string_reads_what_its_block_form_wrote() {
    // A harness marks its last message as a block, and sends that message as a plain string
    // once the marker has moved on: the same text, so the same cache entry.
    let h = start().await;
    let text = filler("context", 300);
    let mut body = request(tools(), &filler("system", 300), "what now?");
    body["messages"] = json!([
        {"role": "user", "content": [{"type": "text", "text": text, "cache_control": {"type": "ephemeral"}}]},
    ]);
    let (_, written, _) = usage(&h.post("/v1/messages", &body).await.json());
    body["messages"] = json!([
        {"role": "user", "content": text},
        {"role": "assistant", "content": [{"type": "text", "text": "ok"}]},
        {"role": "user", "content": [{"type": "text", "text": "and then?", "cache_control": {"type": "ephemeral"}}]},
    ]);
    let (read, _, _) = usage(&h.post("/v1/messages", &body).await.json());
    assert_eq!(
        read, written,
        "the string form read the block form's whole prefix"
    );
}

#[tokio::test]
async fn a_changed_system_chapter_still_reads_the_tools_and_writes_the_rest() {
    let h = start().await;
    h.post(
        "/v1/messages",
        &request(tools(), &filler("system", 300), "q"),
    )
    .await;
    let first = h.last_record().cache.unwrap();
    let second = h
        .post(
            "/v1/messages",
            &request(tools(), &filler("changed", 300), "q"),
        )
        .await
        .json();
    let record = h.last_record().cache.unwrap();
    let (read, written, _) = usage(&second);
    assert_eq!(read, first.tools.written, "the tools chapter reads");
    assert_eq!(record.tools.written, 0);
    assert_eq!(record.system.read, 0);
    assert_eq!(written, record.system.written + record.messages.written);
    assert_eq!(record.messages.read, 0);
    let change = h.last_record().changed.unwrap();
    assert_eq!(change.chapter, strata_mock::prompt::Chapter::System);
    assert_eq!(change.block, 4, "four tools, then the system block");
}

#[tokio::test]
async fn a_tool_removed_from_the_middle_misses_from_that_tool_on() {
    let h = start().await;
    let mut with_all = tools();
    // A fourth breakpoint right after the first tool, so there is an entry before the removed one.
    with_all[0]["cache_control"] = json!({"type": "ephemeral"});
    let first = h
        .post("/v1/messages", &request(with_all.clone(), "sys", "q"))
        .await;
    assert_eq!(first.status, 200, "{}", first.text);
    let first_tool_tokens = {
        let mut only_first = request(vec![with_all[0].clone()], "sys", "q");
        only_first["messages"] = json!([{"role": "user", "content": "x"}]);
        only_first["system"] = json!([]);
        h.post("/v1/messages", &only_first).await;
        h.last_record().cache.unwrap().tools.read
    };
    assert!(first_tool_tokens > 0);
    let mut without_second = with_all.clone();
    without_second.remove(1);
    h.post("/v1/messages", &request(without_second, "sys", "q"))
        .await;
    let cache = h.last_record().cache.unwrap();
    assert_eq!(
        cache.cache_read, first_tool_tokens,
        "reads up to the tool before the removed one"
    );
    assert_eq!(cache.tools.read, first_tool_tokens);
    assert!(cache.tools.written > 0);
    assert_eq!(cache.system.read + cache.messages.read, 0);
}

#[tokio::test]
async fn entries_expire_on_the_virtual_clock_and_hits_refresh_them() {
    let h = start().await;
    let body = request(tools(), &filler("system", 300), "q");
    h.post("/v1/messages", &body).await;
    h.server
        .advance_clock(std::time::Duration::from_secs(4 * 60));
    let (read, _, _) = usage(&h.post("/v1/messages", &body).await.json());
    assert!(read > 0, "hit within 5 minutes");
    h.server
        .advance_clock(std::time::Duration::from_secs(4 * 60));
    let (read_again, _, _) = usage(&h.post("/v1/messages", &body).await.json());
    assert_eq!(read_again, read, "the hit refreshed the entry");
    h.server
        .advance_clock(std::time::Duration::from_secs(6 * 60));
    let (expired, rewritten, _) = usage(&h.post("/v1/messages", &body).await.json());
    assert_eq!(expired, 0, "expired after 6 idle minutes");
    assert_eq!(rewritten, read);
}

#[tokio::test]
async fn one_hour_breakpoints_outlive_five_minutes_and_split_the_writes() {
    let h = start().await;
    let mut body = request(tools(), &filler("system", 300), "q");
    body["tools"][3]["cache_control"] = json!({"type": "ephemeral", "ttl": "1h"});
    let first = h.post("/v1/messages", &body).await.json();
    let tools_tokens = h.last_record().cache.unwrap().tools.written;
    let creation = &first["usage"]["cache_creation"];
    assert_eq!(creation["ephemeral_1h_input_tokens"], json!(tools_tokens));
    assert_eq!(
        creation["ephemeral_5m_input_tokens"].as_u64().unwrap() + tools_tokens,
        first["usage"]["cache_creation_input_tokens"]
            .as_u64()
            .unwrap()
    );
    h.server
        .advance_clock(std::time::Duration::from_secs(30 * 60));
    let (read, _, _) = usage(&h.post("/v1/messages", &body).await.json());
    assert_eq!(read, tools_tokens, "only the 1h entry survives 30 minutes");
}

#[tokio::test]
async fn a_breakpoint_looks_back_at_most_twenty_blocks() {
    let h = start().await;
    let big =
        json!({"type": "text", "text": filler("doc", 800), "cache_control": {"type": "ephemeral"}});
    let with_blocks = |n: usize| {
        let mut content = vec![json!({"type": "text", "text": filler("doc", 800)})];
        for i in 0..n {
            content.push(json!({"type": "text", "text": format!("note {i}")}));
        }
        if let Some(last) = content.last_mut() {
            last["cache_control"] = json!({"type": "ephemeral"});
        }
        json!({"model": MODEL, "max_tokens": 10, "messages": [{"role": "user", "content": content}]})
    };
    let seed =
        json!({"model": MODEL, "max_tokens": 10, "messages": [{"role": "user", "content": [big]}]});
    h.post("/v1/messages", &seed).await;
    let entry = h.last_record().cache.unwrap().cache_write;
    h.post("/v1/messages", &with_blocks(20)).await;
    assert_eq!(
        h.last_record().cache.unwrap().cache_read,
        entry,
        "20 blocks back is reached"
    );
    h.server.reset();
    h.post("/v1/messages", &seed).await;
    h.post("/v1/messages", &with_blocks(21)).await;
    assert_eq!(
        h.last_record().cache.unwrap().cache_read,
        0,
        "21 blocks back is out of reach"
    );
}

#[tokio::test]
async fn below_the_model_minimum_nothing_is_cached() {
    let h = start().await;
    let body = json!({"model": MODEL, "max_tokens": 10, "system": [{"type": "text", "text": "short", "cache_control": {"type": "ephemeral"}}],
        "messages": [{"role": "user", "content": "hi"}]});
    h.post("/v1/messages", &body).await;
    let second = h.post("/v1/messages", &body).await.json();
    assert_eq!(usage(&second).0, 0);
    assert_eq!(usage(&second).1, 0);
}

#[tokio::test]
async fn top_level_cache_control_marks_the_last_block() {
    let h = start().await;
    let body = json!({"model": MODEL, "max_tokens": 10, "cache_control": {"type": "ephemeral"},
        "messages": [{"role": "user", "content": filler("auto", 800)}]});
    let first = h.post("/v1/messages", &body).await.json();
    let (_, written, uncached) = usage(&first);
    assert_eq!(uncached, 0);
    assert_eq!(
        usage(&h.post("/v1/messages", &body).await.json()),
        (written, 0, 0)
    );
}

#[tokio::test]
async fn more_than_four_breakpoints_is_the_providers_400() {
    let h = start().await;
    let content: Vec<Value> = (0..5).map(|i| json!({"type": "text", "text": format!("b{i}"), "cache_control": {"type": "ephemeral"}})).collect();
    let reply = h.post("/v1/messages", &json!({"model": MODEL, "max_tokens": 10, "messages": [{"role": "user", "content": content}]})).await;
    assert_eq!(reply.status, 400);
    let body = reply.json();
    assert_eq!(body["type"], "error");
    assert_eq!(body["error"]["type"], "invalid_request_error");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("maximum of 4")
    );
}

#[tokio::test]
async fn bad_requests_get_anthropics_400_shape() {
    let h = start().await;
    let missing = h
        .post(
            "/v1/messages",
            &json!({"model": MODEL, "messages": [{"role": "user", "content": "hi"}]}),
        )
        .await;
    assert_eq!(missing.status, 400);
    assert_eq!(
        missing.json()["error"],
        json!({"type": "invalid_request_error", "message": "max_tokens: Field required"})
    );
    let garbage = h.post_raw("/v1/messages", "{not json").await;
    assert_eq!(garbage.status, 400);
    assert_eq!(garbage.json()["error"]["type"], "invalid_request_error");
    let role = h.post("/v1/messages", &json!({"model": MODEL, "max_tokens": 1, "messages": [{"role": "robot", "content": "hi"}]})).await;
    assert_eq!(role.status, 400);
    assert_eq!(h.server.requests().len(), 3);
}

#[tokio::test]
async fn a_prompt_over_the_window_gets_the_context_length_error() {
    let profile = ModelProfile {
        cache: CacheConfig::anthropic(1024),
        context_window: 500,
        dialect: UsageDialect::Openai,
        input_includes_cache: false,
        rejects: Vec::new(),
    };
    let h = start_with(MockConfig::new().with_model(ModelRule {
        protocol: Some(Protocol::Anthropic),
        pattern: "tiny-*".into(),
        profile,
    }))
    .await;
    let reply = h
        .post("/v1/messages", &json!({"model": "tiny-claude", "max_tokens": 1, "messages": [{"role": "user", "content": filler("x", 600)}]}))
        .await;
    assert_eq!(reply.status, 400);
    let message = reply.json()["error"]["message"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        message.starts_with("prompt is too long: ") && message.ends_with(" tokens > 500 maximum"),
        "{message}"
    );
}

#[tokio::test]
async fn the_stream_follows_the_message_event_sequence() {
    let h = start().await;
    h.server.load_scenario(
        strata_mock::Scenario::from_toml(
            r#"
            [[turn]]
            thinking = "Let me look at the file."
            text = "Reading it now."
            [[turn.tool_call]]
            tool = "read"
            args = { path = "src/lib.rs" }
            "#,
            "inline",
        )
        .unwrap(),
    );
    let mut body = request(tools(), "sys", "go");
    body["messages"] = json!([{"role": "user", "content": "go"}]);
    body["stream"] = json!(true);
    let reply = h.post("/v1/messages", &body).await;
    assert_eq!(reply.status, 200);
    assert!(
        reply.headers["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/event-stream")
    );
    let events = parse_sse(&reply.text);
    for event in &events {
        assert_eq!(
            event.event.as_deref(),
            event.json()["type"].as_str(),
            "event name equals data type"
        );
    }
    let names: Vec<String> = events
        .iter()
        .map(|e| {
            let data = e.json();
            match data["type"].as_str().unwrap() {
                "content_block_delta" => {
                    format!("delta:{}", data["delta"]["type"].as_str().unwrap())
                }
                "content_block_start" => {
                    format!("start:{}", data["content_block"]["type"].as_str().unwrap())
                }
                other => other.to_owned(),
            }
        })
        .collect();
    let mut collapsed: Vec<String> = names.clone();
    collapsed.dedup();
    assert_eq!(
        collapsed,
        [
            "message_start",
            "ping",
            "start:thinking",
            "delta:thinking_delta",
            "delta:signature_delta",
            "content_block_stop",
            "start:text",
            "delta:text_delta",
            "content_block_stop",
            "start:tool_use",
            "delta:input_json_delta",
            "content_block_stop",
            "message_delta",
            "message_stop"
        ]
    );
    let arguments: String = events
        .iter()
        .map(|e| e.json())
        .filter(|d| d["delta"]["type"] == "input_json_delta")
        .map(|d| d["delta"]["partial_json"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(
        serde_json::from_str::<Value>(&arguments).unwrap(),
        json!({"path": "src/lib.rs"})
    );
    let thinking: String = events
        .iter()
        .map(|e| e.json())
        .filter(|d| d["delta"]["type"] == "thinking_delta")
        .map(|d| d["delta"]["thinking"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(thinking, "Let me look at the file.");
    let start = events[0].json();
    assert!(start["message"]["usage"]["cache_creation_input_tokens"].is_u64());
    let delta = events
        .iter()
        .map(|e| e.json())
        .find(|d| d["type"] == "message_delta")
        .unwrap();
    assert_eq!(delta["delta"]["stop_reason"], "tool_use");
    assert_eq!(
        delta["usage"]["output_tokens"].as_u64().unwrap(),
        h.last_record().output_tokens
    );
}

#[tokio::test]
async fn replayed_thinking_must_keep_its_signature() {
    let h = start().await;
    h.server.load_scenario(
        strata_mock::Scenario::from_toml("[[turn]]\nthinking = \"hmm\"\ntext = \"hi\"\n", "inline")
            .unwrap(),
    );
    let first = h.post("/v1/messages", &json!({"model": MODEL, "max_tokens": 10, "messages": [{"role": "user", "content": "a"}]})).await.json();
    let content = first["content"].clone();
    assert_eq!(content[0]["type"], "thinking");
    let replay = |content: Value| {
        json!({"model": MODEL, "max_tokens": 10, "messages": [
        {"role": "user", "content": "a"}, {"role": "assistant", "content": content}, {"role": "user", "content": "b"}]})
    };
    assert_eq!(
        h.post("/v1/messages", &replay(content.clone()))
            .await
            .status,
        200
    );
    let mut altered = content.clone();
    altered[0]["thinking"] = json!("edited");
    let rejected = h.post("/v1/messages", &replay(altered)).await;
    assert_eq!(rejected.status, 400);
    assert_eq!(
        rejected.json()["error"]["message"],
        "messages.1.content.0.thinking: Invalid `signature` in `thinking` block"
    );
    let mut unsigned = content;
    unsigned[0].as_object_mut().unwrap().remove("signature");
    assert_eq!(h.post("/v1/messages", &replay(unsigned)).await.status, 400);
}

fn deferred(name: &str, words: usize) -> Value {
    let mut tool = tool(name, words);
    tool["defer_loading"] = json!(true);
    tool
}

/// Anthropic's tool search documentation: deferred tools are not in the prefix; a
/// tool_reference loads the definition inline, where it stands (crate `strata_mock::deferred`).
#[tokio::test]
async fn deferred_tools_are_billed_only_where_a_tool_reference_loads_them() {
    let h = start().await;
    let search =
        json!({"type": "tool_search_tool_regex_20251119", "name": "tool_search_tool_regex"});
    let plain = request(tools(), "sys", "q");
    h.post("/v1/messages", &plain).await;
    let without = h.last_record().cache.unwrap();

    let mut with_deferred = tools();
    with_deferred.push(search.clone());
    with_deferred.push(deferred("mcp__big__one", 900));
    with_deferred.push(deferred("mcp__big__two", 900));
    let body = request(with_deferred.clone(), "sys", "q");
    let reply = h.post("/v1/messages", &body).await;
    assert_eq!(reply.status, 200, "{}", reply.text);
    let cache = h.last_record().cache.unwrap();
    let search_tokens = cache.input_tokens - without.input_tokens;
    assert!(
        search_tokens < 100,
        "only the search tool is added: {search_tokens} tokens"
    );
    // The breakpoint on the last (deferred) tool still caches the prefix before it.
    assert!(
        cache.tools.written > 0 && cache.tools.uncached == 0,
        "{cache:?}"
    );

    // Another set of deferred tools leaves the prefix untouched: everything reads.
    let mut other = with_deferred.clone();
    other[6] = deferred("mcp__big__three", 900);
    h.post("/v1/messages", &request(other, "sys", "q")).await;
    let again = h.last_record().cache.unwrap();
    assert_eq!(again.cache_read, cache.cache_read + cache.cache_write);
    assert_eq!(again.cache_write, 0);

    // A search result referencing one of them bills its definition once, in the conversation.
    let mut searched = body.clone();
    let messages = searched["messages"].as_array_mut().unwrap();
    messages.pop();
    messages.push(json!({"role": "assistant", "content": [
        {"type": "server_tool_use", "id": "srv_1", "name": "tool_search_tool_regex", "input": {"query": "one"}},
        {"type": "tool_search_tool_result", "tool_use_id": "srv_1", "content": {
            "type": "tool_search_tool_search_result",
            "tool_references": [{"type": "tool_reference", "tool_name": "mcp__big__one"}]}},
        {"type": "tool_use", "id": "toolu_1", "name": "mcp__big__one", "input": {}}]}));
    messages.push(json!({"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "toolu_1", "content": [
            {"type": "text", "text": "done"},
            {"type": "tool_reference", "tool_name": "mcp__big__one"}]}]}));
    let reply = h.post("/v1/messages", &searched).await;
    assert_eq!(reply.status, 200, "{}", reply.text);
    let loaded = h.last_record().cache.unwrap();
    let only_one = {
        let probe = json!({"model": MODEL, "max_tokens": 16, "tools": [tool("mcp__big__one", 900)],
            "messages": [{"role": "user", "content": "x"}]});
        h.post("/v1/messages", &probe).await;
        h.last_record().cache.unwrap().tools.uncached
    };
    assert!(only_one > 900, "{only_one}");
    let total = |c: strata_mock::Split| c.read + c.written + c.uncached;
    assert_eq!(
        total(loaded.tools),
        total(cache.tools),
        "the same tools chapter"
    );
    assert_eq!(loaded.tools.read, total(cache.tools), "and it reads");
    let messages_growth = loaded.messages.read + loaded.messages.written + loaded.messages.uncached;
    let before = cache.messages.read + cache.messages.written + cache.messages.uncached;
    assert!(
        messages_growth >= before + only_one && messages_growth < before + 2 * only_one,
        "one definition loaded once: {messages_growth} vs {before} + {only_one}"
    );
}

/// Anthropic's tool search, played: a call to a deferred tool no reference loaded is preceded,
/// in the same response, by a `server_tool_use` of the declared search tool and a
/// `tool_search_tool_result` referencing it; the definition it loads is this response's input,
/// and the next request, carrying the blocks back, bills it once, where the reference stands.
#[tokio::test]
async fn a_deferred_tool_is_found_by_the_search_tool_in_the_same_response() {
    let h = start().await;
    // The request already has one assistant turn: turns 1 and 2 call the deferred tool.
    let calls_one = || {
        strata_mock::Scenario::from_toml(
            "[[turn]]\ntext = \"ok\"\n[[turn]]\n[[turn.tool_call]]\ntool = \"mcp__big__one\"\n[[turn]]\n[[turn.tool_call]]\ntool = \"mcp__big__one\"\n",
            "inline",
        )
        .unwrap()
    };
    let search =
        json!({"type": "tool_search_tool_regex_20251119", "name": "tool_search_tool_regex"});
    let mut declared = tools();
    declared.push(search);
    declared.push(deferred("mcp__big__one", 900));
    let body = request(declared.clone(), "sys", "q");
    let baseline = {
        h.post("/v1/messages", &body).await;
        h.last_record().cache.unwrap()
    };
    h.server.load_scenario(calls_one());
    let mut streamed = body.clone();
    streamed["stream"] = json!(true);
    let reply = h.post("/v1/messages", &streamed).await;
    assert_eq!(reply.status, 200, "{}", reply.text);
    let first = h.last_record().cache.unwrap();
    let starts: Vec<Value> = parse_sse(&reply.text)
        .iter()
        .map(|e| e.json())
        .filter(|d| d["type"] == "content_block_start")
        .map(|d| d["content_block"].clone())
        .collect();
    let kinds: Vec<&str> = starts.iter().map(|b| b["type"].as_str().unwrap()).collect();
    assert_eq!(
        kinds,
        ["server_tool_use", "tool_search_tool_result", "tool_use"]
    );
    assert_eq!(starts[0]["name"], "tool_search_tool_regex");
    assert_eq!(
        starts[1]["content"]["tool_references"][0]["tool_name"],
        "mcp__big__one"
    );
    assert!(
        first.input_tokens > baseline.input_tokens + 900,
        "the found definition is this response's input: {first:?} vs {baseline:?}"
    );
    h.server.load_scenario(calls_one());
    let blocks = h.post("/v1/messages", &body).await.json()["content"].clone();

    // The next request carries the blocks back: the definition is billed once, where the
    // reference stands, and the tool is called again without a search.
    h.server.load_scenario(calls_one());
    let mut next = body.clone();
    let messages = next["messages"].as_array_mut().unwrap();
    messages.push(json!({"role": "assistant", "content": blocks}));
    messages.push(json!({"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": blocks[2]["id"], "content": "ok"}]}));
    let reply = h.post("/v1/messages", &next).await;
    assert_eq!(reply.status, 200, "{}", reply.text);
    let second = h.last_record().cache.unwrap();
    assert!(
        second.input_tokens > first.input_tokens && second.input_tokens < first.input_tokens + 200,
        "{second:?} after {first:?}"
    );
    assert!(reply.text.contains("tool_use"), "{}", reply.text);
    assert!(!reply.text.contains("server_tool_use"), "{}", reply.text);
}
