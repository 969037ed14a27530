//! Message threads (beta `message-threads-2026-08-12`; anthropic-python 2.17.0
//! `MessageCreateParams.thread`): the provider holds a conversation between requests, so a
//! request that follows a response sends only the messages after it, with `thread: {type:
//! "continue", previous_message_id}` and without `system` and `tools`.
//!
//! Only an optimisation of upload and time to first token: strata renders every request in
//! full, and [`Threads`] cuts it down only when it extends, byte for byte, the full request
//! the thread holds (same fields besides the messages, the same messages before the reply).
//! Anything else — the first request, a compaction, a tool-list change, a refused continue —
//! is sent in full with `thread: {type: "create"}`. A request that extends the thread but
//! whose breakpoints all sit in the held messages (the summary request) is sent in full
//! without `thread`, so that it reads what the full request would. Nothing of a thread is in
//! the session.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use futures::StreamExt;
use serde_json::{Map, Value, json};
use strata_provider::{Event, EventStream};

/// What a full request holds of a thread once its response completes.
#[derive(Debug, Clone)]
struct Held {
    /// The response that continues the thread.
    response_id: String,
    /// The body's fields besides `messages`, compared without markers.
    rest: Value,
    /// The messages the full request carried, without cache markers.
    messages: Vec<Value>,
}

/// How one request uses the session's thread.
#[derive(Debug, Clone, PartialEq)]
pub enum ThreadUse {
    /// No thread: a warm-up ping, a request without a session, or one whose message
    /// breakpoints all sit in the messages a continue would leave out.
    Off,
    /// The full request, opening a thread.
    Create,
    /// Only the messages after the held response's reply.
    Continue {
        /// The held response's id.
        previous_message_id: String,
    },
}

/// The full request a sent body stands for, kept until its response completes.
#[derive(Debug, Clone)]
pub struct Pending {
    session: String,
    rest: Value,
    messages: Vec<Value>,
}

/// Each session's thread, shared by the clones of one adapter.
#[derive(Debug, Clone, Default)]
pub struct Threads {
    held: Arc<Mutex<HashMap<String, Held>>>,
}

/// Fields a thread's requests may change without a new thread: the diagnosis names the
/// previous response, the beta field itself, and the output cap.
const PER_REQUEST: [&str; 3] = ["thread", "diagnostics", "max_tokens"];

/// Fields the provider holds with a thread, left out of a continue.
const HELD_FIELDS: [&str; 2] = ["system", "tools"];

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

fn split(body: &Value) -> (Value, Vec<Value>) {
    let mut rest = Map::new();
    let mut messages = Vec::new();
    if let Value::Object(fields) = body {
        for (key, value) in fields {
            match key.as_str() {
                "messages" => {
                    messages = value
                        .as_array()
                        .map(|m| m.iter().map(without_markers).collect())
                        .unwrap_or_default();
                }
                key if PER_REQUEST.contains(&key) => {}
                _ => {
                    rest.insert(key.to_owned(), without_markers(value));
                }
            }
        }
    }
    (Value::Object(rest), messages)
}

/// Whether `value` holds a `cache_control` marker.
fn has_marker(value: &Value) -> bool {
    match value {
        Value::Object(map) => map
            .iter()
            .any(|(key, value)| key == "cache_control" || has_marker(value)),
        Value::Array(items) => items.iter().any(has_marker),
        _ => false,
    }
}

/// Whether the body's messages carry a cache marker before index `from` and none from it on.
fn marks_only_before(body: &Value, from: usize) -> bool {
    let Some(messages) = body.get("messages").and_then(Value::as_array) else {
        return false;
    };
    let (held, sent) = messages.split_at(from.min(messages.len()));
    held.iter().any(has_marker) && !sent.iter().any(has_marker)
}

impl Threads {
    /// No threads yet.
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Held>> {
        self.held
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Rewrites the full `body` of `session`'s next request for its thread: a continue when
    /// it extends what the thread holds by a reply and at least one message, else a create.
    /// Returns how the body uses the thread and what to hold once its response completes.
    pub fn apply(&self, session: Option<&str>, body: &mut Value) -> (ThreadUse, Option<Pending>) {
        let Some(session) = session else {
            return (ThreadUse::Off, None);
        };
        let (rest, messages) = split(body);
        let pending = Pending {
            session: session.to_owned(),
            rest: rest.clone(),
            messages: messages.clone(),
        };
        let continued = self.lock().get(session).and_then(|held| {
            let held_len = held.messages.len();
            let extends = held.rest == rest
                && messages.len() > held_len + 1
                && messages[..held_len] == held.messages[..]
                && messages[held_len].get("role").and_then(Value::as_str) == Some("assistant");
            extends.then(|| (held.response_id.clone(), held_len + 1))
        });
        // A continue carries only the markers of the messages it sends. When the body's
        // message breakpoints all sit in the held part (a summary request reads the history up
        // to the last answer and writes nothing after it), a continue would read only the
        // tools and system chapters: such a request goes in full outside the thread, which
        // stays as it is for the next request.
        if let Some((_, from)) = &continued
            && marks_only_before(body, *from)
        {
            return (ThreadUse::Off, None);
        }
        let Some(fields) = body.as_object_mut() else {
            return (ThreadUse::Off, None);
        };
        let used = match continued {
            Some((previous_message_id, from)) => {
                for field in HELD_FIELDS {
                    fields.remove(field);
                }
                if let Some(Value::Array(sent)) = fields.get_mut("messages") {
                    sent.drain(..from);
                }
                fields.insert(
                    "thread".into(),
                    json!({"type": "continue", "previous_message_id": previous_message_id}),
                );
                ThreadUse::Continue {
                    previous_message_id,
                }
            }
            None => {
                fields.insert("thread".into(), json!({"type": "create"}));
                ThreadUse::Create
            }
        };
        (used, Some(pending))
    }

    /// Forgets `session`'s thread: its next request is sent in full.
    pub fn forget(&self, session: Option<&str>) {
        if let Some(session) = session {
            self.lock().remove(session);
        }
    }

    /// `stream`, holding `pending` under the response's id once the response completes (a
    /// response cut short continues nothing: the next request is sent in full).
    pub fn track(&self, pending: Option<Pending>, stream: EventStream) -> EventStream {
        let Some(pending) = pending else {
            return stream;
        };
        let this = self.clone();
        let mut response_id: Option<String> = None;
        Box::pin(stream.inspect(move |event| match event {
            Event::Start {
                response_id: Some(id),
                ..
            } => response_id = Some(id.clone()),
            Event::Done { .. } => {
                let mut held = this.lock();
                match response_id.take() {
                    Some(id) => {
                        held.insert(
                            pending.session.clone(),
                            Held {
                                response_id: id,
                                rest: pending.rest.clone(),
                                messages: pending.messages.clone(),
                            },
                        );
                    }
                    None => {
                        held.remove(&pending.session);
                    }
                }
            }
            _ => {}
        }))
    }
}

/// Whether a refused continue should be sent again in full: the provider has no usable
/// thread for it (anthropic-python 2.17.0 `ThreadNotFoundError` and the 400s that say to
/// replay with `thread: create`: already continued, continue in flight, fingerprint mismatch).
pub fn replay_in_full(status: u16, body: &str) -> bool {
    const CODES: [&str; 4] = [
        "thread_not_found",
        "thread_already_continued",
        "thread_continue_in_flight",
        "thread_fingerprint_mismatch",
    ];
    matches!(status, 400 | 404) && CODES.iter().any(|code| body.contains(code))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body(messages: Value) -> Value {
        json!({"model": "m", "max_tokens": 10, "system": [{"type": "text", "text": "s",
            "cache_control": {"type": "ephemeral"}}], "tools": [{"name": "t"}],
            "messages": messages})
    }

    fn hold(threads: &Threads, session: &str, body: &mut Value, id: &str) -> ThreadUse {
        let (used, pending) = threads.apply(Some(session), body);
        let pending = pending.unwrap();
        threads.lock().insert(
            pending.session.clone(),
            Held {
                response_id: id.into(),
                rest: pending.rest,
                messages: pending.messages,
            },
        );
        used
    }

    #[test]
    fn a_request_extending_the_held_one_sends_only_what_follows_the_reply() {
        let threads = Threads::new();
        let mut first = body(
            json!([{"role": "user", "content": [{"type": "text", "text": "a",
            "cache_control": {"type": "ephemeral"}}]}]),
        );
        assert_eq!(hold(&threads, "s", &mut first, "msg_1"), ThreadUse::Create);
        assert_eq!(first["thread"], json!({"type": "create"}));
        assert!(first.get("system").is_some());

        // The marker moved to the new last message; the held messages still match.
        let mut second = body(json!([
            {"role": "user", "content": [{"type": "text", "text": "a"}]},
            {"role": "assistant", "content": [{"type": "text", "text": "b"}]},
            {"role": "user", "content": [{"type": "text", "text": "c",
                "cache_control": {"type": "ephemeral"}}]},
        ]));
        second["max_tokens"] = json!(20);
        let (used, _) = threads.apply(Some("s"), &mut second);
        assert_eq!(
            used,
            ThreadUse::Continue {
                previous_message_id: "msg_1".into()
            }
        );
        assert_eq!(
            second,
            json!({"model": "m", "max_tokens": 20,
                "thread": {"type": "continue", "previous_message_id": "msg_1"},
                "messages": [{"role": "user", "content": [{"type": "text", "text": "c",
                    "cache_control": {"type": "ephemeral"}}]}]})
        );
    }

    #[test]
    fn a_changed_prefix_a_changed_field_or_another_session_is_sent_in_full() {
        let threads = Threads::new();
        let mut first = body(json!([{"role": "user", "content": "a"}]));
        hold(&threads, "s", &mut first, "msg_1");
        let next = |first_text: &str| {
            body(json!([
                {"role": "user", "content": first_text},
                {"role": "assistant", "content": "b"},
                {"role": "user", "content": "c"},
            ]))
        };
        // A compaction rewrote the start.
        let mut compacted = next("summary");
        assert_eq!(
            threads.apply(Some("s"), &mut compacted).0,
            ThreadUse::Create
        );
        assert!(compacted.get("tools").is_some());
        // The tool list changed.
        let mut retooled = next("a");
        retooled["tools"] = json!([{"name": "t"}, {"name": "u"}]);
        assert_eq!(threads.apply(Some("s"), &mut retooled).0, ThreadUse::Create);
        // Nothing new after the reply, or another session.
        let mut bare = body(json!([{"role": "user", "content": "a"},
            {"role": "assistant", "content": "b"}]));
        assert_eq!(threads.apply(Some("s"), &mut bare).0, ThreadUse::Create);
        assert_eq!(
            threads.apply(Some("other"), &mut next("a")).0,
            ThreadUse::Create
        );
        assert_eq!(threads.apply(None, &mut next("a")).0, ThreadUse::Off);
        // Forgotten: the extension is sent in full.
        threads.forget(Some("s"));
        assert_eq!(
            threads.apply(Some("s"), &mut next("a")).0,
            ThreadUse::Create
        );
    }

    #[test]
    fn a_request_whose_breakpoints_sit_in_the_held_part_goes_in_full_and_keeps_the_thread() {
        let threads = Threads::new();
        let mut first = body(json!([{"role": "user", "content": [{"type": "text", "text": "a"}]}]));
        hold(&threads, "s", &mut first, "msg_1");
        // A summary request: its read breakpoint on the held message, none after it.
        let summary = body(json!([
            {"role": "user", "content": [{"type": "text", "text": "a",
                "cache_control": {"type": "ephemeral"}}]},
            {"role": "assistant", "content": [{"type": "text", "text": "b"}]},
            {"role": "user", "content": [{"type": "text", "text": "summarise"}]},
        ]));
        let mut sent = summary.clone();
        let (used, pending) = threads.apply(Some("s"), &mut sent);
        assert_eq!(used, ThreadUse::Off);
        assert!(pending.is_none());
        assert_eq!(sent, summary, "sent as rendered, marker kept");
        // The thread is still there for a request that carries its own breakpoint.
        let mut next = body(json!([
            {"role": "user", "content": [{"type": "text", "text": "a",
                "cache_control": {"type": "ephemeral"}}]},
            {"role": "assistant", "content": [{"type": "text", "text": "b"}]},
            {"role": "user", "content": [{"type": "text", "text": "c",
                "cache_control": {"type": "ephemeral"}}]},
        ]));
        assert_eq!(
            threads.apply(Some("s"), &mut next).0,
            ThreadUse::Continue {
                previous_message_id: "msg_1".into()
            }
        );
    }

    #[test]
    fn only_refusals_that_say_to_replay_are_replayed() {
        let not_found = r#"{"type":"error","error":{"type":"not_found_error","message":"gone","details":{"error_code":"thread_not_found"}}}"#;
        assert!(replay_in_full(404, not_found));
        assert!(replay_in_full(
            400,
            r#"{"error":{"details":{"error_code":"thread_already_continued"}}}"#
        ));
        assert!(!replay_in_full(404, r#"{"error":{"message":"no model"}}"#));
        assert!(!replay_in_full(500, not_found));
    }
}
