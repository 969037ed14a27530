//! OpenAI Responses over HTTP.

use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use crate::common::{filler, parse_sse, start};

fn request(words: usize) -> Value {
    json!({
        "model": "gpt-5.1-codex",
        "instructions": filler("be helpful", words),
        "input": [{"role": "user", "content": [{"type": "input_text", "text": "hi"}]}],
        "tools": [{"type": "function", "name": "shell", "parameters": {"type": "object", "properties": {"cmd": {"type": "string"}}}}],
        "prompt_cache_key": "session-1",
        "store": false,
    })
}

#[tokio::test]
async fn the_same_request_twice_reads_whole_128_token_steps() {
    let h = start().await;
    let body = request(1200);
    let first = h.post("/v1/responses", &body).await;
    assert_eq!(first.status, 200, "{}", first.text);
    let first = first.json();
    assert_eq!(first["object"], "response");
    assert_eq!(first["status"], "completed");
    assert_eq!(
        first["usage"]["input_tokens_details"]["cached_tokens"],
        json!(0)
    );
    let input = first["usage"]["input_tokens"].as_u64().unwrap();
    let second = h.post("/v1/responses", &body).await.json();
    assert_eq!(
        second["usage"]["input_tokens_details"]["cached_tokens"],
        json!(input / 128 * 128)
    );
    assert_eq!(second["prompt_cache_key"], "session-1");
}

#[tokio::test]
async fn the_stream_runs_from_created_to_completed() {
    let h = start().await;
    h.server.load_scenario(
        strata_mock::Scenario::from_toml(
            "[[turn]]\nthinking = \"plan\"\ntext = \"listing\"\n[[turn.tool_call]]\ntool = \"bash\"\nargs = { command = \"ls\" }\n",
            "inline",
        )
        .unwrap(),
    );
    let mut body = request(10);
    body["stream"] = json!(true);
    let reply = h.post("/v1/responses", &body).await;
    let events = parse_sse(&reply.text);
    let data: Vec<Value> = events.iter().map(|e| e.json()).collect();
    for (i, (event, d)) in events.iter().zip(&data).enumerate() {
        assert_eq!(event.event.as_deref(), d["type"].as_str());
        assert_eq!(d["sequence_number"], json!(i));
    }
    let names: Vec<&str> = data.iter().map(|d| d["type"].as_str().unwrap()).collect();
    assert_eq!(names.first(), Some(&"response.created"));
    assert_eq!(names.last(), Some(&"response.completed"));
    for expected in [
        "response.in_progress",
        "response.reasoning_summary_text.delta",
        "response.output_text.delta",
        "response.output_text.done",
        "response.function_call_arguments.delta",
        "response.function_call_arguments.done",
        "response.output_item.done",
    ] {
        assert!(
            names.contains(&expected),
            "{expected} missing from {names:?}"
        );
    }
    let done = data
        .iter()
        .find(|d| d["type"] == "response.function_call_arguments.done")
        .unwrap();
    // openai-python 3.57.0's ResponseFunctionCallArgumentsDoneEvent has no `name`; the
    // item carries it.
    assert!(done.get("name").is_none());
    let item = data
        .iter()
        .find(|d| d["type"] == "response.output_item.done" && d["item"]["type"] == "function_call")
        .unwrap();
    assert_eq!(item["item"]["name"], "shell");
    assert_eq!(
        serde_json::from_str::<Value>(done["arguments"].as_str().unwrap()).unwrap(),
        json!({"cmd": "ls"})
    );
    let completed = data.last().unwrap();
    let details = &completed["response"]["usage"]["input_tokens_details"];
    assert!(details["cached_tokens"].is_u64());
    // openai-python 3.57.0 `InputTokensDetails.cache_write_tokens` is required.
    assert!(details["cache_write_tokens"].is_u64(), "{details}");
    assert_eq!(completed["response"]["output"].as_array().unwrap().len(), 3);
    // Every `Response` object carries the request's tools (`Response.tools` is required).
    for d in &data[..2] {
        assert_eq!(d["response"]["tools"], body["tools"], "{}", d["type"]);
    }
    assert_eq!(completed["response"]["tools"], body["tools"]);
    let plain = h.post("/v1/responses", &request(10)).await.json();
    assert_eq!(plain["tools"], body["tools"]);
    assert!(plain["usage"]["input_tokens_details"]["cache_write_tokens"].is_u64());
}

#[tokio::test]
async fn encrypted_reasoning_comes_back_when_included_and_is_required_to_replay_unstored() {
    let h = start().await;
    h.server.load_scenario(
        strata_mock::Scenario::from_toml(
            "[[turn]]\nthinking = \"plan\"\ntext = \"ok\"\n",
            "inline",
        )
        .unwrap(),
    );
    let mut body = request(10);
    body["store"] = json!(false);
    body["include"] = json!(["reasoning.encrypted_content"]);
    let reply = h.post("/v1/responses", &body).await.json();
    let reasoning = reply["output"][0].clone();
    assert_eq!(reasoning["type"], "reasoning");
    assert!(reasoning["encrypted_content"].is_string(), "{reasoning}");
    let mut replay = body.clone();
    let input = replay["input"].as_array_mut().unwrap();
    input.push(reasoning.clone());
    input.push(json!({"role": "user", "content": "next"}));
    assert_eq!(h.post("/v1/responses", &replay).await.status, 200);
    // Without its encrypted content an unstored item cannot be found.
    replay["input"][1]
        .as_object_mut()
        .unwrap()
        .remove("encrypted_content");
    let refused = h.post("/v1/responses", &replay).await;
    assert_eq!(refused.status, 400, "{}", refused.text);
    assert!(refused.text.contains("not persisted"), "{}", refused.text);
    // Altered content is refused too.
    replay["input"][1]["encrypted_content"] = json!(strata_mock::encrypted_reasoning("other"));
    assert_eq!(h.post("/v1/responses", &replay).await.status, 400);
}

#[tokio::test]
async fn previous_response_id_continues_a_stored_response() {
    let h = start().await;
    let mut body = request(1200);
    body["store"] = json!(true);
    let first = h.post("/v1/responses", &body).await.json();
    let follow = json!({
        "model": "gpt-5.1-codex",
        "previous_response_id": first["id"],
        "instructions": body["instructions"],
        "tools": body["tools"],
        "prompt_cache_key": "session-1",
        "input": [{"role": "user", "content": "and then?"}],
    });
    let second = h.post("/v1/responses", &follow).await;
    assert_eq!(second.status, 200, "{}", second.text);
    assert!(
        second.json()["usage"]["input_tokens_details"]["cached_tokens"]
            .as_u64()
            .unwrap()
            >= 1024
    );
    let missing = h
        .post(
            "/v1/responses",
            &json!({"model": "gpt-5", "previous_response_id": "resp_nope", "input": "x"}),
        )
        .await;
    assert_eq!(missing.status, 400);
    assert_eq!(
        missing.json()["error"]["message"],
        "Previous response with id 'resp_nope' not found."
    );
}

#[tokio::test]
async fn prompt_cache_key_routes_to_separate_caches() {
    let h = start().await;
    let mut body = request(1200);
    h.post("/v1/responses", &body).await;
    let cached = |reply: &Value| reply["usage"]["input_tokens_details"]["cached_tokens"].clone();
    assert_ne!(
        cached(&h.post("/v1/responses", &body).await.json()),
        json!(0)
    );
    body["prompt_cache_key"] = json!("session-2");
    let other = h.post("/v1/responses", &body).await.json();
    assert_eq!(cached(&other), json!(0), "another key, another cache");
    assert_eq!(other["prompt_cache_key"], "session-2");
    assert_eq!(h.last_record().cache_key.as_deref(), Some("session-2"));
}

/// OpenAI's tool_search guide: a deferred function shows its name and description until a
/// tool_search_output loads it; its parameters are not billed before.
#[tokio::test]
async fn a_deferred_function_bills_its_name_and_description_only() {
    let h = start().await;
    let schema = json!({"type": "object", "properties": {"text": {"type": "string", "description": filler("argument", 600)}}});
    let body = |defer: bool| {
        let mut body = request(300);
        body["tools"] = json!([{"type": "tool_search"}, {"type": "function", "name": "mcp__big__one",
            "description": "One big tool", "parameters": schema, "defer_loading": defer}]);
        body
    };
    h.post("/v1/responses", &body(false)).await;
    let declared = h.last_record().cache.unwrap().tools;
    let reply = h.post("/v1/responses", &body(true)).await;
    assert_eq!(reply.status, 200, "{}", reply.text);
    let deferred = h.last_record().cache.unwrap().tools;
    let total = |c: strata_mock::Split| c.read + c.written + c.uncached;
    assert!(total(declared) > 600, "{declared:?}");
    assert!(
        total(deferred) < 40,
        "name and description only: {deferred:?}"
    );
}

/// The hosted tool search, played: a call to a deferred function no search loaded is preceded,
/// in the same response, by a `tool_search_call` and a `tool_search_output` carrying its
/// definition; they are billed as this response's input ("injected at the end of the context
/// window") and the next request, which carries them back, reads them from the cache.
#[tokio::test]
async fn a_deferred_function_is_found_by_the_hosted_search_in_the_same_response() {
    let h = start().await;
    h.server.load_scenario(
        strata_mock::Scenario::from_toml(
            "[[turn]]\n[[turn.tool_call]]\ntool = \"mcp__big__one\"\nargs = { text = \"x\" }\n[[turn]]\ntext = \"done\"\n",
            "inline",
        )
        .unwrap(),
    );
    let schema = json!({"type": "object", "properties": {"text": {"type": "string", "description": filler("argument", 600)}}});
    let mut body = request(1200);
    body["tools"] = json!([{"type": "tool_search"}, {"type": "function", "name": "mcp__big__one",
        "description": "One big tool", "parameters": schema, "defer_loading": true}]);
    body["stream"] = json!(true);
    let reply = h.post("/v1/responses", &body).await;
    assert_eq!(reply.status, 200, "{}", reply.text);
    let first_record = h.last_record();
    let first = first_record.cache.unwrap();
    let events = parse_sse(&reply.text);
    let done: Vec<Value> = events
        .iter()
        .map(|e| e.json())
        .filter(|d| d["type"] == "response.output_item.done")
        .map(|d| d["item"].clone())
        .collect();
    let kinds: Vec<&str> = done.iter().map(|i| i["type"].as_str().unwrap()).collect();
    assert_eq!(
        kinds,
        ["tool_search_call", "tool_search_output", "function_call"]
    );
    assert_eq!(done[0]["execution"], "server");
    assert_eq!(done[1]["tools"][0]["name"], "mcp__big__one");
    assert_eq!(done[1]["tools"][0]["parameters"], schema);

    // Without the search the same prompt is ~600 tokens smaller: the found definition is input.
    let mut plain = body.clone();
    plain["tools"] = json!([{"type": "tool_search"}]);
    plain["stream"] = json!(false);
    h.server.load_scenario(
        strata_mock::Scenario::from_toml("[[turn]]\ntext = \"ok\"\n", "inline").unwrap(),
    );
    h.post("/v1/responses", &plain).await;
    let baseline_record = h.last_record();
    let baseline = baseline_record.cache.unwrap();
    assert!(
        first.input_tokens > baseline.input_tokens + 600,
        "{first:?} vs {baseline:?}"
    );
    // The record says how much of the input the search loaded (the definition and the
    // search's items), beyond what the body holds.
    assert_eq!(baseline_record.search_loaded_tokens, 0);
    assert!(
        first_record.search_loaded_tokens > 600
            && first_record.search_loaded_tokens < first.input_tokens,
        "{first_record:?}"
    );

    // The next request carries the items back: they are read, not written again.
    h.server.load_scenario(
        strata_mock::Scenario::from_toml(
            "[[turn]]\ntext = \"x\"\n[[turn]]\n[[turn.tool_call]]\ntool = \"mcp__big__one\"\nargs = { text = \"y\" }\n",
            "inline",
        )
        .unwrap(),
    );
    let mut next = body.clone();
    next["stream"] = json!(false);
    let input = next["input"].as_array_mut().unwrap();
    input.extend(done.iter().cloned());
    input.push(
        json!({"type": "function_call_output", "call_id": done[2]["call_id"], "output": "ok"}),
    );
    let reply = h.post("/v1/responses", &next).await;
    assert_eq!(reply.status, 200, "{}", reply.text);
    let second = h.last_record().cache.unwrap();
    assert!(
        second.cache_read >= first.input_tokens / 128 * 128,
        "{second:?} after {first:?}"
    );
    // A loaded function is called again without a search.
    assert!(reply.text.contains("function_call"), "{}", reply.text);
    assert!(!reply.text.contains("tool_search_call"), "{}", reply.text);
}
