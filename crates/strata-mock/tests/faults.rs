//! Every fault kind, on request and per scenario step.

use std::time::{Duration, Instant};

use futures::StreamExt;
use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use strata_mock::{Fault, FaultKind, Protocol};

use crate::bedrock::{decode_frames, header};
use crate::common::{parse_sse, start};

fn anthropic(stream: bool) -> Value {
    json!({"model": "claude-sonnet-4-5", "max_tokens": 10, "stream": stream, "messages": [{"role": "user", "content": "hello there, how are you today?"}]})
}

fn chat(stream: bool) -> Value {
    json!({"model": "gpt-5", "stream": stream, "messages": [{"role": "user", "content": "hello there, how are you today?"}]})
}

#[tokio::test]
async fn rate_limit_is_429_with_retry_after_then_the_request_succeeds() {
    let h = start().await;
    h.server.push_fault(Fault::next(FaultKind::RateLimit {
        retry_after_secs: 7,
    }));
    let limited = h.post("/v1/messages", &anthropic(false)).await;
    assert_eq!(limited.status, 429);
    assert_eq!(limited.headers["retry-after"], "7");
    assert_eq!(limited.json()["error"]["type"], "rate_limit_error");
    assert_eq!(h.post("/v1/messages", &anthropic(false)).await.status, 200);
    h.server.push_fault(Fault::next(FaultKind::RateLimit {
        retry_after_secs: 2,
    }));
    let openai = h.post("/v1/chat/completions", &chat(false)).await;
    assert_eq!(openai.status, 429);
    assert_eq!(openai.json()["error"]["code"], "rate_limit_exceeded");
}

#[tokio::test]
async fn server_error_and_overloaded_use_each_providers_status_and_body() {
    let h = start().await;
    h.server
        .push_fault(Fault::next(FaultKind::ServerError).on(Protocol::Chat));
    let reply = h.post("/v1/chat/completions", &chat(false)).await;
    assert_eq!(reply.status, 500);
    assert_eq!(reply.json()["error"]["type"], "server_error");
    h.server
        .push_fault(Fault::next(FaultKind::Overloaded).times(2));
    let reply = h.post("/v1/messages", &anthropic(false)).await;
    assert_eq!(reply.status, 529);
    assert_eq!(
        reply.json()["error"],
        json!({"type": "overloaded_error", "message": "Overloaded"})
    );
    let gemini = h
        .post(
            "/v1beta/models/gemini-2.5-flash:generateContent",
            &json!({"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}),
        )
        .await;
    assert_eq!(gemini.status, 503);
    assert_eq!(gemini.json()["error"]["status"], "UNAVAILABLE");
}

#[tokio::test]
async fn a_fault_for_one_route_waits_for_that_route() {
    let h = start().await;
    h.server
        .push_fault(Fault::next(FaultKind::ServerError).on(Protocol::Responses));
    assert_eq!(h.post("/v1/messages", &anthropic(false)).await.status, 200);
    let reply = h
        .post("/v1/responses", &json!({"model": "gpt-5", "input": "hi"}))
        .await;
    assert_eq!(reply.status, 500);
}

#[tokio::test]
async fn context_length_in_each_providers_wording() {
    let h = start().await;
    h.server
        .push_fault(Fault::next(FaultKind::ContextLength).times(5));
    let a = h.post("/v1/messages", &anthropic(false)).await;
    assert_eq!(a.status, 400);
    assert!(
        a.json()["error"]["message"]
            .as_str()
            .unwrap()
            .starts_with("prompt is too long")
    );
    let c = h.post("/v1/chat/completions", &chat(false)).await.json();
    assert_eq!(c["error"]["code"], "context_length_exceeded");
    assert!(
        c["error"]["message"]
            .as_str()
            .unwrap()
            .starts_with("This model's maximum context length is")
    );
    let r = h
        .post("/v1/responses", &json!({"model": "gpt-5", "input": "hi"}))
        .await
        .json();
    assert_eq!(r["error"]["code"], "context_length_exceeded");
    assert_eq!(r["error"]["param"], "input");
    let g = h
        .post(
            "/v1beta/models/gemini-2.5-flash:generateContent",
            &json!({"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}),
        )
        .await
        .json();
    assert!(
        g["error"]["message"]
            .as_str()
            .unwrap()
            .starts_with("The input token count")
    );
    let b = h
        .post(
            "/model/anthropic.claude-sonnet-4-5/converse",
            &json!({"messages": [{"role": "user", "content": [{"text": "hi"}]}]}),
        )
        .await;
    assert_eq!(b.headers["x-amzn-errortype"], "ValidationException");
    assert_eq!(
        b.json()["message"],
        "Input is too long for requested model."
    );
}

#[tokio::test]
async fn a_cut_stream_stops_after_n_events_without_its_terminal_event() {
    let h = start().await;
    h.server
        .push_fault(Fault::next(FaultKind::CutAfter { events: 3 }));
    let response = h
        .client
        .post(h.server.url("/v1/messages"))
        .json(&anthropic(true))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let mut body = Vec::new();
    let mut stream = response.bytes_stream();
    while let Some(chunk) = stream.next().await {
        body.extend_from_slice(&chunk.unwrap());
    }
    let events = parse_sse(&String::from_utf8(body).unwrap());
    assert_eq!(events.len(), 3);
    assert!(
        events
            .iter()
            .all(|e| e.event.as_deref() != Some("message_stop"))
    );
}

#[tokio::test]
async fn a_malformed_event_is_not_json_and_the_stream_goes_on() {
    let h = start().await;
    h.server
        .push_fault(Fault::next(FaultKind::Malformed { at_event: 1 }));
    let events = parse_sse(&h.post("/v1/chat/completions", &chat(true)).await.text);
    assert!(serde_json::from_str::<Value>(&events[1].data).is_err());
    assert_eq!(events.last().unwrap().data, "[DONE]");
    h.server
        .push_fault(Fault::next(FaultKind::Malformed { at_event: 2 }));
    let (_, _, bytes) = h
        .post_bytes(
            "/model/anthropic.claude-sonnet-4-5/converse-stream",
            &json!({"messages": [{"role": "user", "content": [{"text": "hi"}]}]}),
        )
        .await;
    let (frames, bad) = decode_frames(&bytes);
    assert!(bad, "a frame with a bad CRC");
    assert_eq!(frames.len(), 2);
}

#[tokio::test]
async fn a_stream_error_event_in_each_stream_shape() {
    let h = start().await;
    h.server
        .push_fault(Fault::next(FaultKind::StreamError { after_events: 2 }));
    let events = parse_sse(&h.post("/v1/messages", &anthropic(true)).await.text);
    assert_eq!(events.len(), 3);
    assert_eq!(events[2].event.as_deref(), Some("error"));
    assert_eq!(events[2].json()["error"]["type"], "overloaded_error");
    h.server
        .push_fault(Fault::next(FaultKind::StreamError { after_events: 1 }));
    let (_, _, bytes) = h
        .post_bytes(
            "/model/anthropic.claude-sonnet-4-5/converse-stream",
            &json!({"messages": [{"role": "user", "content": [{"text": "hi"}]}]}),
        )
        .await;
    let (frames, _) = decode_frames(&bytes);
    assert_eq!(header(&frames[1].0, ":message-type"), "exception");
    assert_eq!(
        header(&frames[1].0, ":exception-type"),
        "serviceUnavailableException"
    );
}

#[tokio::test]
async fn slow_streaming_delays_every_event() {
    let h = start().await;
    h.server
        .push_fault(Fault::next(FaultKind::Slow { delay_ms: 20 }));
    let started = Instant::now();
    let events = parse_sse(&h.post("/v1/messages", &anthropic(true)).await.text);
    assert!(started.elapsed() >= Duration::from_millis(20 * events.len() as u64));
    assert_eq!(
        events.last().unwrap().event.as_deref(),
        Some("message_stop")
    );
}

#[tokio::test]
async fn a_scenario_step_fault_fires_once_and_the_retry_gets_the_turn() {
    let h = start().await;
    h.server.load_scenario(
        strata_mock::Scenario::from_toml(
            "[[turn]]\ntext = \"first answer\"\nfault = { kind = \"overloaded\" }\n",
            "inline",
        )
        .unwrap(),
    );
    assert_eq!(h.post("/v1/messages", &anthropic(false)).await.status, 529);
    let retry = h.post("/v1/messages", &anthropic(false)).await.json();
    assert_eq!(retry["content"][0]["text"], "first answer");
    let records = h.server.requests();
    assert_eq!(records[0].fault, Some(FaultKind::Overloaded));
    assert_eq!(records[1].turn, Some(0));
}

#[tokio::test]
async fn faults_can_be_queued_over_http() {
    let h = start().await;
    let queued = h.post("/_mock/faults", &json!([{"kind": "server_error", "protocol": "anthropic"}, {"kind": "rate_limit", "retry_after_secs": 3}])).await;
    assert_eq!(queued.json(), json!({"queued": 2}));
    assert_eq!(h.post("/v1/messages", &anthropic(false)).await.status, 500);
    let limited = h.post("/v1/chat/completions", &chat(false)).await;
    assert_eq!(
        (
            limited.status,
            limited.headers["retry-after"].to_str().unwrap()
        ),
        (429, "3")
    );
    let bad = h.post("/_mock/faults", &json!({"kind": "nonsense"})).await;
    assert_eq!(bad.status, 400);
}
