//! Bedrock Converse / ConverseStream over HTTP, with the event-stream frames decoded here.

use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use crate::common::{filler, start};

const PATH: &str = "/model/us.anthropic.claude-sonnet-4-5-v1:0";

/// Decodes AWS event-stream frames, checking both CRCs; returns (headers, payload) per frame
/// and whether a bad frame was met.
/// A decoded frame: its string headers and payload.
pub type Frame = (Vec<(String, String)>, Vec<u8>);

pub fn decode_frames(mut bytes: &[u8]) -> (Vec<Frame>, bool) {
    let mut out = Vec::new();
    while bytes.len() >= 12 {
        let be = |b: &[u8], at: usize| u32::from_be_bytes(b[at..at + 4].try_into().unwrap());
        let total = be(bytes, 0) as usize;
        let headers_len = be(bytes, 4) as usize;
        if crc32fast::hash(&bytes[..8]) != be(bytes, 8) || bytes.len() < total {
            return (out, true);
        }
        if crc32fast::hash(&bytes[..total - 4]) != be(bytes, total - 4) {
            return (out, true);
        }
        let mut headers = Vec::new();
        let mut at = 12;
        while at < 12 + headers_len {
            let n = bytes[at] as usize;
            let name = String::from_utf8(bytes[at + 1..at + 1 + n].to_vec()).unwrap();
            at += 1 + n;
            assert_eq!(bytes[at], 7, "string header");
            let len = u16::from_be_bytes([bytes[at + 1], bytes[at + 2]]) as usize;
            let value = String::from_utf8(bytes[at + 3..at + 3 + len].to_vec()).unwrap();
            at += 3 + len;
            headers.push((name, value));
        }
        out.push((headers, bytes[12 + headers_len..total - 4].to_vec()));
        bytes = &bytes[total..];
    }
    (out, !bytes.is_empty())
}

pub fn header<'a>(headers: &'a [(String, String)], name: &str) -> &'a str {
    headers
        .iter()
        .find(|(n, _)| n == name)
        .map(|(_, v)| v.as_str())
        .unwrap_or("")
}

fn request() -> Value {
    json!({
        "system": [{"text": filler("system", 800)}, {"cachePoint": {"type": "default"}}],
        "toolConfig": {"tools": [{"toolSpec": {"name": "bash", "description": "run", "inputSchema": {"json": {"type": "object", "properties": {"command": {"type": "string"}}}}}}]},
        "messages": [{"role": "user", "content": [{"text": "list files"}]}],
    })
}

#[tokio::test]
async fn converse_stream_frames_carry_cache_usage() {
    let h = start().await;
    h.server.load_scenario(
        strata_mock::Scenario::from_toml("[[turn]]\ntext = \"ok\"\n[[turn.tool_call]]\ntool = \"bash\"\nargs = { command = \"ls\" }\n", "inline").unwrap(),
    );
    let path = format!("{PATH}/converse-stream");
    let (status, headers, bytes) = h.post_bytes(&path, &request()).await;
    assert_eq!(status, 200);
    assert_eq!(
        headers["content-type"],
        "application/vnd.amazon.eventstream"
    );
    let (frames, bad) = decode_frames(&bytes);
    assert!(!bad);
    let types: Vec<&str> = frames
        .iter()
        .map(|(h, _)| header(h, ":event-type"))
        .collect();
    let mut collapsed = types.clone();
    collapsed.dedup();
    assert_eq!(
        collapsed,
        [
            "messageStart",
            "contentBlockDelta",
            "contentBlockStop",
            "contentBlockStart",
            "contentBlockDelta",
            "contentBlockStop",
            "messageStop",
            "metadata"
        ]
    );
    for (headers, _) in &frames {
        assert_eq!(header(headers, ":message-type"), "event");
        assert_eq!(header(headers, ":content-type"), "application/json");
    }
    let payloads: Vec<Value> = frames
        .iter()
        .map(|(_, p)| serde_json::from_slice(p).unwrap())
        .collect();
    assert_eq!(
        payloads[types.iter().position(|t| *t == "messageStop").unwrap()],
        json!({"stopReason": "tool_use"})
    );
    let usage = &payloads.last().unwrap()["usage"];
    assert_eq!(usage["cacheReadInputTokens"], json!(0));
    let written = usage["cacheWriteInputTokens"].as_u64().unwrap();
    assert!(written > 1024);
    // The same request again reads everything up to the cache point.
    let (_, _, bytes) = h.post_bytes(&path, &request()).await;
    let (frames, _) = decode_frames(&bytes);
    let usage: Value = serde_json::from_slice(&frames.last().unwrap().1).unwrap();
    assert_eq!(usage["usage"]["cacheReadInputTokens"], json!(written));
    assert_eq!(usage["usage"]["cacheWriteInputTokens"], json!(0));
}

#[tokio::test]
async fn converse_returns_the_message_and_errors_in_bedrock_shape() {
    let h = start().await;
    let reply = h.post(&format!("{PATH}/converse"), &request()).await;
    assert_eq!(reply.status, 200, "{}", reply.text);
    let body = reply.json();
    assert_eq!(
        body["output"]["message"]["content"][0]["text"],
        "list files"
    );
    assert_eq!(body["stopReason"], "end_turn");
    assert!(body["usage"]["cacheWriteInputTokens"].as_u64().unwrap() > 0);
    assert_eq!(body["usage"]["cacheDetails"][0]["ttl"], "5m");
    let bad = h
        .post(
            &format!("{PATH}/converse"),
            &json!({"messages": [{"role": "robot", "content": []}]}),
        )
        .await;
    assert_eq!(bad.status, 400);
    assert_eq!(bad.headers["x-amzn-errortype"], "ValidationException");
    assert!(
        bad.json()["message"]
            .as_str()
            .unwrap()
            .contains("Member must satisfy enum value set")
    );
}

#[tokio::test]
async fn one_hour_cache_points_are_listed_first_and_outlive_five_minutes() {
    let h = start().await;
    let mut body = request();
    body["system"] = json!([
        {"text": filler("system", 800)}, {"cachePoint": {"type": "default", "ttl": "1h"}},
        {"text": filler("rules", 800)}, {"cachePoint": {"type": "default"}},
    ]);
    let path = format!("{PATH}/converse");
    let first = h.post(&path, &body).await.json();
    let cache = h.last_record().cache.unwrap();
    assert!(cache.cache_write_1h > 1024 && cache.cache_write_5m > 1024);
    assert_eq!(
        first["usage"]["cacheDetails"],
        json!([
            {"ttl": "1h", "inputTokens": cache.cache_write_1h},
            {"ttl": "5m", "inputTokens": cache.cache_write_5m},
        ])
    );
    assert_eq!(
        first["usage"]["cacheWriteInputTokens"],
        json!(cache.cache_write_1h + cache.cache_write_5m)
    );
    h.server
        .advance_clock(std::time::Duration::from_secs(30 * 60));
    let later = h.post(&path, &body).await.json();
    assert_eq!(
        later["usage"]["cacheReadInputTokens"],
        json!(cache.cache_write_1h),
        "only the 1h entry survives 30 minutes"
    );
}

/// A `role: "system"` message mid-conversation (botocore's `ConversationRole` has it) with a
/// `toolRemoval` and a `toolAddition` naming tools of the configuration: accepted, and the
/// previous request's prompt is read from the cache; tool changes outside a system message,
/// other blocks inside one and tools not in the configuration are refused.
#[tokio::test]
async fn system_role_messages_keep_the_prefix_cached() {
    let h = start().await;
    let path = format!("{PATH}/converse");
    let mut first = request();
    first["messages"][0]["content"]
        .as_array_mut()
        .unwrap()
        .push(json!({"cachePoint": {"type": "default"}}));
    let one = h.post(&path, &first).await;
    assert_eq!(one.status, 200, "{}", one.text);
    let usage = &one.json()["usage"];
    let prompt = usage["cacheWriteInputTokens"].as_u64().unwrap()
        + usage["cacheReadInputTokens"].as_u64().unwrap();
    let mut second = first.clone();
    let messages = second["messages"].as_array_mut().unwrap();
    messages.push(json!({"role": "assistant", "content": [{"text": "done"}]}));
    messages.push(json!({"role": "system", "content": [
        {"text": "From now on answer in French."},
        {"toolRemoval": {"tool": {"name": "bash"}}},
        {"toolAddition": {"tool": {"name": "bash"}}},
    ]}));
    messages.push(json!({"role": "user", "content": [{"text": "again"}, {"cachePoint": {"type": "default"}}]}));
    let two = h.post(&path, &second).await;
    assert_eq!(two.status, 200, "{}", two.text);
    assert_eq!(two.json()["usage"]["cacheReadInputTokens"], json!(prompt));
    assert_eq!(
        two.json()["output"]["message"]["content"][0]["text"],
        "again"
    );

    let refused = |message: Value| {
        let mut body = first.clone();
        body["messages"].as_array_mut().unwrap().push(message);
        body
    };
    for (message, says) in [
        (
            json!({"role": "user", "content": [{"toolRemoval": {"tool": {"name": "bash"}}}]}),
            "only permitted in a message with role system",
        ),
        (
            json!({"role": "system", "content": [{"image": {"format": "png", "source": {"bytes": ""}}}]}),
            "may contain only text, toolAddition, toolRemoval and cachePoint",
        ),
        (
            json!({"role": "system", "content": [{"toolAddition": {"tool": {"name": "grep"}}}]}),
            "not in the tool configuration",
        ),
    ] {
        let bad = h.post(&path, &refused(message)).await;
        assert_eq!(bad.status, 400, "{}", bad.text);
        let text = bad.json()["message"].as_str().unwrap().to_owned();
        assert!(text.contains(says), "{text}");
    }
}
