//! Anthropic message threads (beta `message-threads-2026-08-12`), simulated from
//! anthropic-python 2.17.0: `MessageCreateParams.thread` is `{type: "create"}` (hold this
//! conversation under the response's `id`) or `{type: "continue", previous_message_id}` (only
//! the new turn's messages are sent); `ThreadNotFoundError` (404, `error.details.error_code`
//! `thread_not_found`: "replay the full conversation with `thread: create`"),
//! `ThreadAlreadyContinuedError` (each response continues once) and
//! `ThreadFingerprintMismatchError` (a field that must stay the same across a thread's turns
//! differs). A thread expires five minutes after its last request on the mock's clock
//! (PEERS-2026-12 §4, the message-threads page).
//!
//! A continue is resolved here into the full request it stands for, which the cache and the
//! scripted model then see like any other.

use std::collections::HashMap;

use axum::http::{HeaderMap, HeaderValue, StatusCode};
use bytes::Bytes;
use serde_json::{Value, json};

use crate::protocol::ErrorResponse;

/// How long a thread is held after its last request, in milliseconds.
pub const LIFETIME_MS: u64 = 5 * 60 * 1000;

/// Fields the thread holds: a continue may leave them out, and may not change them.
const HELD: [&str; 3] = ["model", "system", "tools"];

/// One response's conversation, as a continue from it sees it.
#[derive(Debug, Clone)]
struct Held {
    /// The full request, its messages ending with the response's own assistant message.
    body: Value,
    /// When the request that produced the response arrived.
    at_ms: u64,
    /// A continue from this response was taken.
    continued: bool,
}

/// Why a thread request is refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ThreadError {
    /// No usable state for `previous_message_id` (unknown or expired).
    NotFound(String),
    /// The response was continued already.
    AlreadyContinued(String),
    /// Held fields differ from the thread's.
    FingerprintMismatch(Vec<&'static str>),
    /// The `thread` field is malformed.
    Invalid(String),
}

impl ThreadError {
    /// The Anthropic error response: status, `error.type`, and `error.details.error_code`.
    pub fn response(&self) -> ErrorResponse {
        let (status, kind, code, message) = match self {
            Self::NotFound(id) => (
                StatusCode::NOT_FOUND,
                "not_found_error",
                Some("thread_not_found"),
                format!("No usable thread state was found for previous_message_id {id}."),
            ),
            Self::AlreadyContinued(id) => (
                StatusCode::BAD_REQUEST,
                "invalid_request_error",
                Some("thread_already_continued"),
                format!("The response {id} has already been continued."),
            ),
            Self::FingerprintMismatch(fields) => (
                StatusCode::BAD_REQUEST,
                "invalid_request_error",
                Some("thread_fingerprint_mismatch"),
                format!(
                    "These fields differ from the thread's: {}.",
                    fields.join(", ")
                ),
            ),
            Self::Invalid(message) => (
                StatusCode::BAD_REQUEST,
                "invalid_request_error",
                None,
                message.clone(),
            ),
        };
        let mut error = json!({"type": kind, "message": message});
        if let Some(code) = code {
            error["details"] = json!({ "error_code": code });
        }
        let body = json!({"type": "error", "error": error, "request_id": "req_mock"});
        let mut headers = HeaderMap::new();
        headers.insert("content-type", HeaderValue::from_static("application/json"));
        headers.insert("request-id", HeaderValue::from_static("req_mock"));
        (status, headers, Bytes::from(body.to_string()))
    }
}

/// A request's thread: the full body it stands for, and whether to hold its response.
#[derive(Debug, Clone, PartialEq)]
pub struct Resolved {
    /// The full request (the `thread` field kept, for the feature check).
    pub body: Value,
    /// The response this request continues, when it is a continue.
    pub continues: Option<String>,
}

/// Every held response, by id.
#[derive(Debug, Default)]
pub struct Threads {
    held: HashMap<String, Held>,
}

fn without_markers(value: &Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .filter(|(key, _)| key.as_str() != "cache_control")
                .map(|(key, value)| (key.clone(), without_markers(value)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(without_markers).collect()),
        other => other.clone(),
    }
}

impl Threads {
    /// Forgets every thread.
    pub fn clear(&mut self) {
        self.held.clear();
    }

    /// The full request `body` stands for at `now_ms`; `None` when it names no thread.
    pub fn resolve(&mut self, body: &Value, now_ms: u64) -> Result<Option<Resolved>, ThreadError> {
        self.held
            .retain(|_, held| now_ms.saturating_sub(held.at_ms) <= LIFETIME_MS);
        let thread = match body.get("thread") {
            None | Some(Value::Null) => return Ok(None),
            Some(thread) => thread,
        };
        match thread.get("type").and_then(Value::as_str) {
            Some("create") => Ok(Some(Resolved {
                body: body.clone(),
                continues: None,
            })),
            Some("continue") => {
                let id = thread
                    .get("previous_message_id")
                    .and_then(Value::as_str)
                    .ok_or_else(|| {
                        ThreadError::Invalid(
                            "thread.continue.previous_message_id: Field required".into(),
                        )
                    })?;
                let held = self
                    .held
                    .get(id)
                    .ok_or_else(|| ThreadError::NotFound(id.to_owned()))?;
                if held.continued {
                    return Err(ThreadError::AlreadyContinued(id.to_owned()));
                }
                let differ: Vec<&'static str> = HELD
                    .into_iter()
                    .filter(|field| {
                        body.get(*field).is_some_and(|sent| {
                            held.body.get(*field).map(without_markers) != Some(without_markers(sent))
                        })
                    })
                    .collect();
                if !differ.is_empty() {
                    return Err(ThreadError::FingerprintMismatch(differ));
                }
                let mut full = body.clone();
                for field in HELD {
                    if let (None, Some(value)) = (full.get(field), held.body.get(field)) {
                        full[field] = value.clone();
                    }
                }
                let mut messages = held.body["messages"]
                    .as_array()
                    .cloned()
                    .unwrap_or_default();
                messages.extend(
                    body.get("messages")
                        .and_then(Value::as_array)
                        .cloned()
                        .unwrap_or_default(),
                );
                full["messages"] = Value::Array(messages);
                Ok(Some(Resolved {
                    body: full,
                    continues: Some(id.to_owned()),
                }))
            }
            _ => Err(ThreadError::Invalid(
                "thread: Input tag found using 'type' does not match any of the expected tags: 'create', 'continue'".into(),
            )),
        }
    }

    /// Holds the conversation of response `id` (the request `resolved` answered with
    /// `content`) for continues, and marks the response it continued as continued.
    pub fn hold(&mut self, id: String, resolved: &Resolved, content: Value, now_ms: u64) {
        if let Some(previous) = resolved
            .continues
            .as_ref()
            .and_then(|p| self.held.get_mut(p))
        {
            previous.continued = true;
        }
        let mut body = resolved.body.clone();
        // Earlier markers are spent: the next request's markers say where to cache.
        let mut messages: Vec<Value> = body["messages"]
            .as_array()
            .map(|m| m.iter().map(without_markers).collect())
            .unwrap_or_default();
        messages.push(json!({"role": "assistant", "content": content}));
        body["messages"] = Value::Array(messages);
        if let Some(fields) = body.as_object_mut() {
            fields.remove("thread");
        }
        self.held.insert(
            id,
            Held {
                body,
                at_ms: now_ms,
                continued: false,
            },
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn create() -> Value {
        json!({"model": "m", "max_tokens": 5, "thread": {"type": "create"},
            "system": [{"type": "text", "text": "s"}], "tools": [{"name": "t"}],
            "messages": [{"role": "user", "content": "a"}]})
    }

    fn cont(id: &str) -> Value {
        json!({"model": "m", "max_tokens": 5,
            "thread": {"type": "continue", "previous_message_id": id},
            "messages": [{"role": "user", "content": "c"}]})
    }

    #[test]
    fn a_continue_stands_for_the_held_conversation_its_reply_and_the_new_messages() {
        let mut threads = Threads::default();
        let first = threads.resolve(&create(), 0).unwrap().unwrap();
        threads.hold(
            "msg_1".into(),
            &first,
            json!([{"type": "text", "text": "b"}]),
            0,
        );
        let second = threads
            .resolve(&cont("msg_1"), LIFETIME_MS)
            .unwrap()
            .unwrap();
        assert_eq!(second.continues.as_deref(), Some("msg_1"));
        assert_eq!(second.body["system"], create()["system"]);
        assert_eq!(second.body["tools"], create()["tools"]);
        assert_eq!(
            second.body["messages"],
            json!([{"role": "user", "content": "a"},
                {"role": "assistant", "content": [{"type": "text", "text": "b"}]},
                {"role": "user", "content": "c"}])
        );
        threads.hold("msg_2".into(), &second, json!([]), LIFETIME_MS);
        // Each response continues once.
        assert_eq!(
            threads.resolve(&cont("msg_1"), LIFETIME_MS),
            Err(ThreadError::AlreadyContinued("msg_1".into()))
        );
        // Five minutes after its last request the thread is gone.
        assert_eq!(
            threads.resolve(&cont("msg_2"), 2 * LIFETIME_MS + 1),
            Err(ThreadError::NotFound("msg_2".into()))
        );
        assert_eq!(threads.resolve(&json!({"messages": []}), 0), Ok(None));
    }

    #[test]
    fn a_continue_may_not_change_what_the_thread_holds() {
        let mut threads = Threads::default();
        let first = threads.resolve(&create(), 0).unwrap().unwrap();
        threads.hold("msg_1".into(), &first, json!([]), 0);
        let mut changed = cont("msg_1");
        changed["tools"] = json!([{"name": "u"}]);
        assert_eq!(
            threads.resolve(&changed, 1),
            Err(ThreadError::FingerprintMismatch(vec!["tools"]))
        );
        let (status, _, body) = ThreadError::NotFound("msg_9".into()).response();
        assert_eq!(status, StatusCode::NOT_FOUND);
        let body: Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(body["error"]["details"]["error_code"], "thread_not_found");
        assert_eq!(body["error"]["type"], "not_found_error");
    }
}
