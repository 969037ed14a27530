//! Gemini generateContent / streamGenerateContent over HTTP.

use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use crate::common::{filler, gemini_text, parse_sse, start};

fn request(words: usize) -> Value {
    json!({
        "systemInstruction": {"parts": [{"text": filler("system", words)}]},
        "tools": [{"functionDeclarations": [{"name": "read_file", "parameters": {"type": "object", "properties": {"file_path": {"type": "string"}}}}]}],
        "contents": [{"role": "user", "parts": [{"text": "hello"}]}],
    })
}

#[tokio::test]
async fn implicit_caching_reports_cached_content_tokens() {
    let h = start().await;
    let path = "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse";
    let body = request(1500);
    let first = h.post(path, &body).await;
    assert_eq!(first.status, 200, "{}", first.text);
    assert!(first.text.contains("\r\n\r\n"));
    let events = parse_sse(&first.text);
    let last = events.last().unwrap().json();
    assert_eq!(last["candidates"][0]["finishReason"], "STOP");
    let prompt = last["usageMetadata"]["promptTokenCount"].as_u64().unwrap();
    assert!(
        last["usageMetadata"]
            .get("cachedContentTokenCount")
            .is_none()
    );
    let second = parse_sse(&h.post(path, &body).await.text)
        .last()
        .unwrap()
        .json();
    let cached = second["usageMetadata"]["cachedContentTokenCount"]
        .as_u64()
        .unwrap();
    assert_eq!(cached, prompt / 128 * 128);
    let text = gemini_text(&parse_sse(&h.post(path, &body).await.text));
    assert_eq!(text, "hello", "echo default");
}

#[tokio::test]
async fn below_the_minimum_nothing_is_cached() {
    let h = start().await;
    let path = "/v1beta/models/gemini-3-pro:generateContent";
    h.post(path, &request(1000)).await;
    let reply = h.post(path, &request(1000)).await.json();
    assert!(reply["usageMetadata"]["promptTokenCount"].as_u64().unwrap() < 4096);
    assert!(
        reply["usageMetadata"]
            .get("cachedContentTokenCount")
            .is_none()
    );
}

#[tokio::test]
async fn function_calls_resolve_to_declared_tools() {
    let h = start().await;
    h.server.load_scenario(
        strata_mock::Scenario::from_toml(
            "[[turn]]\n[[turn.tool_call]]\ntool = \"read\"\nargs = { path = \"a.txt\" }\n",
            "inline",
        )
        .unwrap(),
    );
    let reply = h
        .post("/v1beta/models/gemini-2.5-pro:generateContent", &request(5))
        .await
        .json();
    assert_eq!(
        reply["candidates"][0]["content"]["parts"][0],
        json!({"functionCall": {"name": "read_file", "args": {"file_path": "a.txt"}}})
    );
    // google-genai sends the JSON-schema form as `parameters_json_schema`.
    let mut snake = request(5);
    let declaration = &mut snake["tools"][0]["functionDeclarations"][0];
    let schema = declaration
        .as_object_mut()
        .unwrap()
        .remove("parameters")
        .unwrap();
    declaration["parameters_json_schema"] = schema;
    let reply = h
        .post("/v1beta/models/gemini-2.5-pro:generateContent", &snake)
        .await
        .json();
    assert_eq!(
        reply["candidates"][0]["content"]["parts"][0]["functionCall"]["args"],
        json!({"file_path": "a.txt"}),
        "the argument is renamed to the snake_case schema's property"
    );
    // Without alt=sse the stream is one JSON array.
    let array = h
        .post(
            "/v1beta/models/gemini-2.5-pro:streamGenerateContent",
            &request(5),
        )
        .await
        .json();
    assert!(array.is_array());
}

#[tokio::test]
async fn thought_signatures_are_base64_and_a_replayed_one_must_be() {
    use base64::Engine as _;
    let h = start().await;
    h.server.load_scenario(
        strata_mock::Scenario::from_toml(
            "[[turn]]\nthinking = \"look\"\n[[turn.tool_call]]\ntool = \"read\"\nargs = { path = \"a.txt\" }\n",
            "inline",
        )
        .unwrap(),
    );
    let path = "/v1beta/models/gemini-2.5-pro:generateContent";
    let reply = h.post(path, &request(5)).await.json();
    let parts = &reply["candidates"][0]["content"]["parts"];
    let signature = parts[1]["thoughtSignature"].as_str().unwrap();
    assert!(
        base64::engine::general_purpose::STANDARD
            .decode(signature)
            .is_ok(),
        "{signature}"
    );
    let mut replay = request(5);
    replay["contents"]
        .as_array_mut()
        .unwrap()
        .push(json!({"role": "model", "parts": [{"functionCall": {"name": "read_file", "args": {}}, "thoughtSignature": "not-base64!"}]}));
    let refused = h.post(path, &replay).await;
    assert_eq!(refused.status, 400, "{}", refused.text);
    assert!(
        refused.text.contains("Base64 decoding failed"),
        "{}",
        refused.text
    );
}

#[tokio::test]
async fn bad_requests_get_googles_error_shape() {
    let h = start().await;
    let reply = h
        .post("/v1beta/models/gemini-2.5-pro:generateContent", &json!({}))
        .await;
    assert_eq!(reply.status, 400);
    let error = &reply.json()["error"];
    assert_eq!(error["code"], 400);
    assert_eq!(error["status"], "INVALID_ARGUMENT");
    let unknown = h
        .post("/v1beta/models/gemini-2.5-pro:countTokens", &request(1))
        .await;
    assert_eq!(unknown.status, 404);
}

/// Gemini explicit caches: a cache of the system instruction, tools and first turn is
/// created (TTL asked or one hour), read whole by the requests naming it, billed per
/// token-hour of storage, gone once it expires (404 on get and on use), and refused with a
/// system instruction of the request's own.
#[tokio::test]
async fn explicit_caches_are_created_read_and_expire() {
    let h = start().await;
    let mut create = request(1500);
    create["model"] = json!("models/gemini-2.5-flash");
    create["ttl"] = json!("300s");
    let made = h.post("/v1beta/cachedContents", &create).await;
    assert_eq!(made.status, 200, "{}", made.text);
    let resource = made.json();
    let name = resource["name"].as_str().unwrap().to_owned();
    assert!(name.starts_with("cachedContents/"), "{resource}");
    assert_eq!(resource["model"], "models/gemini-2.5-flash");
    let tokens = resource["usageMetadata"]["totalTokenCount"]
        .as_u64()
        .unwrap();
    assert!(tokens > 1500, "{resource}");
    let hours = h.server.cached_content_storage_token_hours();
    assert!(
        (hours - tokens as f64 * 300.0 / 3600.0).abs() < 1e-6,
        "{hours}"
    );

    // The same conversation without a cache, and with it: the cache's part is read.
    let path = "/v1beta/models/gemini-2.5-flash:generateContent";
    let mut next = request(1500);
    next["contents"].as_array_mut().unwrap().extend([
        json!({"role": "model", "parts": [{"text": "hi"}]}),
        json!({"role": "user", "parts": [{"text": "again"}]}),
    ]);
    let plain = h.post(path, &next).await.json();
    let prompt = plain["usageMetadata"]["promptTokenCount"].as_u64().unwrap();
    let using = json!({
        "cachedContent": name,
        "contents": [{"role": "model", "parts": [{"text": "hi"}]}, {"role": "user", "parts": [{"text": "again"}]}],
    });
    let read = h.post(path, &using).await;
    assert_eq!(read.status, 200, "{}", read.text);
    let usage = &read.json()["usageMetadata"];
    assert_eq!(usage["promptTokenCount"].as_u64().unwrap(), prompt);
    assert_eq!(usage["cachedContentTokenCount"].as_u64().unwrap(), tokens);
    assert_eq!(
        read.json()["candidates"][0]["content"]["parts"][0]["text"],
        "again"
    );

    let get = h
        .client
        .get(h.server.url(&format!("/v1beta/{name}")))
        .send()
        .await
        .unwrap();
    assert_eq!(get.status().as_u16(), 200);
    let mut own_system = using.clone();
    own_system["systemInstruction"] = json!({"parts": [{"text": "x"}]});
    let refused = h.post(path, &own_system).await;
    assert_eq!(refused.status, 400, "{}", refused.text);
    assert!(
        refused.text.contains("CachedContent can not be used"),
        "{}",
        refused.text
    );

    h.server.advance_clock(std::time::Duration::from_secs(301));
    let get = h
        .client
        .get(h.server.url(&format!("/v1beta/{name}")))
        .send()
        .await
        .unwrap();
    assert_eq!(get.status().as_u16(), 404);
    let expired = h.post(path, &using).await;
    assert_eq!(expired.status, 404, "{}", expired.text);
    assert_eq!(expired.json()["error"]["status"], "NOT_FOUND");

    // No lifetime asked: one hour.
    create.as_object_mut().unwrap().remove("ttl");
    let hour = h.post("/v1beta/cachedContents", &create).await.json();
    let name = hour["name"].as_str().unwrap();
    h.server.advance_clock(std::time::Duration::from_secs(3599));
    let get = h
        .client
        .get(h.server.url(&format!("/v1beta/{name}")))
        .send()
        .await
        .unwrap();
    assert_eq!(get.status().as_u16(), 200);
    h.server.advance_clock(std::time::Duration::from_secs(2));
    let get = h
        .client
        .get(h.server.url(&format!("/v1beta/{name}")))
        .send()
        .await
        .unwrap();
    assert_eq!(get.status().as_u16(), 404);
}
