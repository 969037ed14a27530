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
