//! The admin endpoints under `/_mock/`.

use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use strata_mock::RequestRecord;

use crate::common::{filler, start};

fn body() -> Value {
    json!({"model": "claude-sonnet-4-5", "max_tokens": 5, "system": [{"type": "text", "text": filler("s", 800), "cache_control": {"type": "ephemeral"}}],
        "messages": [{"role": "user", "content": "hi"}]})
}

#[tokio::test]
async fn requests_are_json_lines_with_their_cache_accounting() {
    let h = start().await;
    h.post("/v1/messages", &body()).await;
    h.post("/v1/messages", &body()).await;
    let text = h
        .client
        .get(h.server.url("/_mock/requests"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let records: Vec<RequestRecord> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(records, h.server.requests());
    assert_eq!(records.len(), 2);
    let (first, second) = (records[0].cache.unwrap(), records[1].cache.unwrap());
    assert_eq!(second.cache_read, first.cache_write);
    assert_eq!(second.system.read, first.system.written);
    assert_eq!(
        records[1].body.as_ref().unwrap()["model"],
        "claude-sonnet-4-5"
    );
    assert_eq!(records[1].path, "/v1/messages");
}

#[tokio::test]
async fn the_clock_advances_over_http_and_expires_entries() {
    let h = start().await;
    h.post("/v1/messages", &body()).await;
    let advanced = h
        .post("/_mock/clock/advance", &json!({"seconds": 301}))
        .await
        .json();
    assert!(advanced["now_ms"].as_u64().unwrap() >= 301_000);
    h.post("/v1/messages", &body()).await;
    assert_eq!(h.last_record().cache.unwrap().cache_read, 0);
    assert_eq!(
        h.post("/_mock/clock/advance", &json!({"minutes": 1}))
            .await
            .status,
        400
    );
}

#[tokio::test]
async fn scenario_and_reset_over_http() {
    let h = start().await;
    let loaded = h
        .client
        .post(h.server.url("/_mock/scenario"))
        .body("[[turn]]\ntext = \"scripted\"\n")
        .send()
        .await
        .unwrap();
    assert_eq!(loaded.json::<Value>().await.unwrap(), json!({"turns": 1}));
    assert_eq!(
        h.post("/v1/messages", &body()).await.json()["content"][0]["text"],
        "scripted"
    );
    let bad = h
        .client
        .post(h.server.url("/_mock/scenario"))
        .body("[[turn]]\ntext = ")
        .send()
        .await
        .unwrap();
    assert_eq!(bad.status(), 400);
    h.post("/_mock/reset", &json!({})).await;
    assert!(h.server.requests().is_empty());
    h.post("/v1/messages", &body()).await;
    assert_eq!(
        h.last_record().cache.unwrap().cache_read,
        0,
        "reset forgot the cache"
    );
}

#[tokio::test]
async fn unknown_routes_are_404_json() {
    let h = start().await;
    let reply = h.post("/v2/nothing", &json!({})).await;
    assert_eq!(reply.status, 404);
    assert!(
        reply.json()["error"]["message"]
            .as_str()
            .unwrap()
            .contains("/v2/nothing")
    );
}
