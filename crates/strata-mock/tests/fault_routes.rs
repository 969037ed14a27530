//! Every fault kind on every route, streamed and not: the provider's own status, error body
//! and stream shape, and the record of what was injected.

use std::time::{Duration, Instant};

use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use strata_mock::{Fault, FaultKind};

use crate::common::{Harness, Reply, parse_sse, start};

/// A provider route, as these tests and `bad_requests` drive it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Route {
    Anthropic,
    Chat,
    Responses,
    Gemini,
    Bedrock,
}

pub const ROUTES: [Route; 5] = [
    Route::Anthropic,
    Route::Chat,
    Route::Responses,
    Route::Gemini,
    Route::Bedrock,
];

const PROMPT: &str = "hello there, how are you today? Tell me something about caches.";

impl Route {
    pub fn path(self, stream: bool) -> &'static str {
        match (self, stream) {
            (Self::Anthropic, _) => "/v1/messages",
            (Self::Chat, _) => "/v1/chat/completions",
            (Self::Responses, _) => "/v1/responses",
            (Self::Gemini, true) => "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse",
            (Self::Gemini, false) => "/v1beta/models/gemini-2.5-flash:generateContent",
            (Self::Bedrock, true) => "/model/anthropic.claude-sonnet-4-5/converse-stream",
            (Self::Bedrock, false) => "/model/anthropic.claude-sonnet-4-5/converse",
        }
    }

    pub fn body(self, stream: bool) -> Value {
        match self {
            Self::Anthropic => {
                json!({"model": "claude-sonnet-4-5", "max_tokens": 64, "stream": stream, "messages": [{"role": "user", "content": PROMPT}]})
            }
            Self::Chat => {
                json!({"model": "gpt-5", "stream": stream, "messages": [{"role": "user", "content": PROMPT}]})
            }
            Self::Responses => json!({"model": "gpt-5", "stream": stream, "input": PROMPT}),
            Self::Gemini => json!({"contents": [{"role": "user", "parts": [{"text": PROMPT}]}]}),
            Self::Bedrock => {
                json!({"messages": [{"role": "user", "content": [{"text": PROMPT}]}]})
            }
        }
    }

    /// The provider's name for an error: Anthropic `error.type`, OpenAI `error.code` (else
    /// `error.type`), Google `error.status`, AWS the `x-amzn-errortype` header.
    pub fn error_name(self, reply: &Reply) -> String {
        let body = reply.json();
        let name = match self {
            Self::Anthropic => {
                assert_eq!(body["type"], "error", "{}", reply.text);
                body["error"]["type"].as_str()
            }
            Self::Chat | Self::Responses => body["error"]["code"]
                .as_str()
                .or_else(|| body["error"]["type"].as_str()),
            Self::Gemini => {
                assert_eq!(body["error"]["code"], json!(reply.status), "{}", reply.text);
                body["error"]["status"].as_str()
            }
            Self::Bedrock => {
                assert!(body["message"].is_string(), "{}", reply.text);
                reply.headers["x-amzn-errortype"].to_str().ok()
            }
        };
        name.unwrap_or_else(|| panic!("{self:?}: no error name in {}", reply.text))
            .to_owned()
    }

    /// Status and error name of a fault refused before the response.
    fn refusal(self, kind: &FaultKind) -> (u16, &'static str) {
        use Route::*;
        match (kind, self) {
            (FaultKind::RateLimit { .. }, Anthropic) => (429, "rate_limit_error"),
            (FaultKind::RateLimit { .. }, Chat | Responses) => (429, "rate_limit_exceeded"),
            (FaultKind::RateLimit { .. }, Gemini) => (429, "RESOURCE_EXHAUSTED"),
            (FaultKind::RateLimit { .. }, Bedrock) => (429, "ThrottlingException"),
            (FaultKind::ServerError, Anthropic) => (500, "api_error"),
            (FaultKind::ServerError, Chat | Responses) => (500, "server_error"),
            (FaultKind::ServerError, Gemini) => (500, "INTERNAL"),
            (FaultKind::ServerError, Bedrock) => (500, "InternalServerException"),
            (FaultKind::Overloaded, Anthropic) => (529, "overloaded_error"),
            (FaultKind::Overloaded, Chat | Responses) => (503, "server_error"),
            (FaultKind::Overloaded, Gemini) => (503, "UNAVAILABLE"),
            (FaultKind::Overloaded, Bedrock) => (503, "ServiceUnavailableException"),
            (FaultKind::ContextLength, Anthropic) => (400, "invalid_request_error"),
            (FaultKind::ContextLength, Chat | Responses) => (400, "context_length_exceeded"),
            (FaultKind::ContextLength, Gemini) => (400, "INVALID_ARGUMENT"),
            (FaultKind::ContextLength, Bedrock) => (400, "ValidationException"),
            (other, _) => panic!("{other:?} is not refused before the response"),
        }
    }

    /// Whether an event is the stream's terminal event.
    fn is_terminal(self, event: &Event) -> bool {
        match (self, event) {
            (Self::Chat, Event::Done) => true,
            (_, Event::Json { name, data, .. }) => match self {
                Self::Anthropic => name.as_deref() == Some("message_stop"),
                Self::Responses => name.as_deref() == Some("response.completed"),
                Self::Gemini => data["candidates"][0]["finishReason"].is_string(),
                Self::Bedrock => name.as_deref() == Some("metadata"),
                Self::Chat => false,
            },
            _ => false,
        }
    }

    /// Whether an event is the provider's in-stream error, `index` being its position.
    fn is_stream_error(self, event: &Event, index: usize) -> bool {
        let Event::Json {
            name,
            data,
            exception,
        } = event
        else {
            return false;
        };
        match self {
            Self::Anthropic => {
                name.as_deref() == Some("error") && data["error"]["type"] == "overloaded_error"
            }
            Self::Chat => data["error"]["type"] == "server_error",
            Self::Responses => {
                name.as_deref() == Some("error")
                    && data["type"] == "error"
                    && data["sequence_number"] == json!(index)
            }
            Self::Gemini => data["error"]["status"] == "UNAVAILABLE",
            Self::Bedrock => *exception && name.as_deref() == Some("serviceUnavailableException"),
        }
    }
}

/// One streamed event as a client decodes it.
#[derive(Debug, Clone, PartialEq)]
enum Event {
    Json {
        /// SSE `event:` name, or the event-stream `:event-type` / `:exception-type`.
        name: Option<String>,
        data: Value,
        /// An AWS event-stream exception message.
        exception: bool,
    },
    /// Chat Completions' `data: [DONE]`.
    Done,
    /// Data that is not JSON, or a frame whose CRC does not match.
    Malformed,
}

/// Decodes AWS event-stream frames; a frame with a bad message CRC is reported and skipped
/// (its prelude, checked by its own CRC, still gives its length).
fn decode_event_stream(mut bytes: &[u8]) -> Vec<Event> {
    let mut events = Vec::new();
    while bytes.len() >= 16 {
        let be = |at: usize| u32::from_be_bytes(bytes[at..at + 4].try_into().unwrap());
        let (total, headers_len) = (be(0) as usize, be(4) as usize);
        assert_eq!(crc32fast::hash(&bytes[..8]), be(8), "prelude CRC");
        assert!(bytes.len() >= total, "a frame cut short");
        if crc32fast::hash(&bytes[..total - 4]) != be(total - 4) {
            events.push(Event::Malformed);
            bytes = &bytes[total..];
            continue;
        }
        let mut headers = Vec::new();
        let mut at = 12;
        while at < 12 + headers_len {
            let n = bytes[at] as usize;
            let name = String::from_utf8_lossy(&bytes[at + 1..at + 1 + n]).into_owned();
            at += 1 + n + 1;
            let len = u16::from_be_bytes([bytes[at], bytes[at + 1]]) as usize;
            let value = String::from_utf8_lossy(&bytes[at + 2..at + 2 + len]).into_owned();
            at += 2 + len;
            headers.push((name, value));
        }
        let header = |key: &str| {
            headers
                .iter()
                .find(|(n, _)| n == key)
                .map(|(_, v)| v.clone())
        };
        let exception = header(":message-type").as_deref() == Some("exception");
        events.push(Event::Json {
            name: header(":event-type").or_else(|| header(":exception-type")),
            data: serde_json::from_slice(&bytes[12 + headers_len..total - 4]).unwrap(),
            exception,
        });
        bytes = &bytes[total..];
    }
    assert!(bytes.is_empty(), "trailing bytes");
    events
}

async fn stream(h: &Harness, route: Route) -> (Vec<Event>, Duration) {
    let started = Instant::now();
    let (status, headers, bytes) = h.post_bytes(route.path(true), &route.body(true)).await;
    let elapsed = started.elapsed();
    assert_eq!(status, 200, "{route:?}");
    let content_type = headers["content-type"].to_str().unwrap();
    let events = if route == Route::Bedrock {
        assert_eq!(content_type, "application/vnd.amazon.eventstream");
        decode_event_stream(&bytes)
    } else {
        assert!(content_type.starts_with("text/event-stream"), "{route:?}");
        parse_sse(&String::from_utf8(bytes).unwrap())
            .into_iter()
            .map(
                |sse| match (sse.data.as_str(), serde_json::from_str(&sse.data)) {
                    ("[DONE]", _) => Event::Done,
                    (_, Ok(data)) => Event::Json {
                        name: sse.event,
                        data,
                        exception: false,
                    },
                    (_, Err(_)) => Event::Malformed,
                },
            )
            .collect()
    };
    (events, elapsed)
}

fn fault(h: &Harness, kind: FaultKind) {
    h.server.push_fault(Fault::next(kind));
}

#[tokio::test]
async fn refusals_carry_each_providers_status_and_error_body_on_every_route() {
    let kinds = [
        FaultKind::RateLimit {
            retry_after_secs: 3,
        },
        FaultKind::ServerError,
        FaultKind::Overloaded,
        FaultKind::ContextLength,
    ];
    for route in ROUTES {
        let h = start().await;
        for kind in &kinds {
            for streamed in [false, true] {
                fault(&h, kind.clone());
                let reply = h.post(route.path(streamed), &route.body(streamed)).await;
                let (status, name) = route.refusal(kind);
                assert_eq!(
                    (reply.status, route.error_name(&reply).as_str()),
                    (status, name),
                    "{route:?} {kind:?} stream={streamed}"
                );
                if let FaultKind::RateLimit { .. } = kind {
                    assert_eq!(reply.headers["retry-after"], "3", "{route:?}");
                }
                let record = h.last_record();
                assert_eq!((record.status, record.fault.as_ref()), (status, Some(kind)));
                assert!(record.cache.is_none(), "refused before the cache");
                // The fault is spent: the retry succeeds.
                let retry = h.post(route.path(streamed), &route.body(streamed)).await;
                assert_eq!(retry.status, 200, "{route:?} {kind:?}: {}", retry.text);
            }
        }
    }
}

#[tokio::test]
async fn an_untouched_stream_ends_with_its_terminal_event_on_every_route() {
    for route in ROUTES {
        let h = start().await;
        let (events, _) = stream(&h, route).await;
        assert!(events.len() >= 3, "{route:?}: {events:?}");
        assert!(
            route.is_terminal(events.last().unwrap()),
            "{route:?}: {events:?}"
        );
        assert!(events.iter().all(|e| *e != Event::Malformed), "{route:?}");
    }
}

#[tokio::test]
async fn a_cut_stream_ends_after_n_events_without_its_terminal_event_on_every_route() {
    for route in ROUTES {
        let h = start().await;
        fault(&h, FaultKind::CutAfter { events: 2 });
        let (events, _) = stream(&h, route).await;
        assert_eq!(events.len(), 2, "{route:?}: {events:?}");
        assert!(!events.iter().any(|e| route.is_terminal(e)), "{route:?}");
        assert_eq!(
            h.last_record().fault,
            Some(FaultKind::CutAfter { events: 2 })
        );
    }
}

#[tokio::test]
async fn a_malformed_event_breaks_one_event_and_the_stream_goes_on_on_every_route() {
    for route in ROUTES {
        let h = start().await;
        let (clean, _) = stream(&h, route).await;
        fault(&h, FaultKind::Malformed { at_event: 1 });
        let (events, _) = stream(&h, route).await;
        assert_eq!(events.len(), clean.len(), "{route:?}");
        assert_eq!(events[1], Event::Malformed, "{route:?}");
        assert!(
            events.iter().filter(|e| **e == Event::Malformed).count() == 1,
            "{route:?}: only the one event is broken"
        );
        assert!(route.is_terminal(events.last().unwrap()), "{route:?}");
    }
}

#[tokio::test]
async fn a_stream_error_is_the_providers_own_error_event_on_every_route() {
    for route in ROUTES {
        let h = start().await;
        fault(&h, FaultKind::StreamError { after_events: 2 });
        let (events, _) = stream(&h, route).await;
        assert_eq!(events.len(), 3, "{route:?}: {events:?}");
        assert!(
            route.is_stream_error(&events[2], 2),
            "{route:?}: {:?}",
            events[2]
        );
        assert!(!events.iter().any(|e| route.is_terminal(e)), "{route:?}");
    }
}

#[tokio::test]
async fn slow_streaming_delays_every_event_on_every_route() {
    for route in ROUTES {
        let h = start().await;
        fault(&h, FaultKind::Slow { delay_ms: 15 });
        let (events, elapsed) = stream(&h, route).await;
        assert!(
            elapsed >= Duration::from_millis(15 * events.len() as u64),
            "{route:?}: {} events in {elapsed:?}",
            events.len()
        );
        assert!(route.is_terminal(events.last().unwrap()), "{route:?}");
    }
}

#[tokio::test]
async fn a_cut_or_malformed_json_reply_is_not_json_and_a_slow_one_waits_on_every_route() {
    for route in ROUTES {
        let h = start().await;
        for kind in [
            FaultKind::CutAfter { events: 1 },
            FaultKind::Malformed { at_event: 0 },
        ] {
            fault(&h, kind.clone());
            let reply = h.post(route.path(false), &route.body(false)).await;
            assert_eq!(reply.status, 200, "{route:?} {kind:?}");
            assert!(
                serde_json::from_str::<Value>(&reply.text).is_err(),
                "{route:?} {kind:?}: {}",
                reply.text
            );
        }
        fault(&h, FaultKind::Slow { delay_ms: 120 });
        let started = Instant::now();
        let reply = h.post(route.path(false), &route.body(false)).await;
        assert!(started.elapsed() >= Duration::from_millis(120), "{route:?}");
        assert_eq!(reply.status, 200);
        reply.json();
    }
}
