//! The OpenAI Responses WebSocket mode: `GET /v1/responses` upgraded to a socket on which each
//! `response.create` message is answered with the same stream events as a streamed HTTP request,
//! one JSON text frame each.
//!
//! From OpenAI's guide (developers.openai.com/api/docs/guides/websocket-mode) and the errors its
//! SDKs name: a message is the Responses create body plus `"type": "response.create"`, without
//! the transport-only `stream` and `background`; the connection keeps the latest response of
//! each lane (`stream_id`, default one lane) in memory, so the next message can send
//! `previous_response_id` and only its new input items — with `store: false` too; an id the
//! connection does not hold (and no stored response has) is refused with
//! `previous_response_not_found`; a connection lasts at most 60 minutes, after which a message
//! is refused with `websocket_connection_limit_reached` and the socket closes; at most 32 lanes.
//! Errors come as `{"type": "error", "status", "error": {type, code, message, param}}` events.

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

use axum::extract::State as AxumState;
use axum::extract::ws::{Message, WebSocket, WebSocketUpgrade};
use axum::http::Uri;
use axum::response::Response;
use bytes::Bytes;
use serde_json::{Value, json};

use crate::server::State;

/// A connection's lifetime on the virtual clock: 60 minutes.
pub const MAX_CONNECTION_AGE_MS: u64 = 60 * 60 * 1000;

/// The most lanes (`stream_id`s) one connection keeps.
pub const MAX_LANES: usize = 32;

/// What one open socket holds: the latest response of each lane, as its full item list.
#[derive(Debug, Default)]
pub struct Connection {
    lanes: Mutex<HashMap<String, (String, Vec<Value>)>>,
}

impl Connection {
    /// The items of `id` when it is the latest response of `lane`.
    pub(crate) fn previous(&self, lane: &str, id: &str) -> Option<Vec<Value>> {
        let lanes = self.lanes.lock().unwrap_or_else(|e| e.into_inner());
        lanes
            .get(lane)
            .filter(|(latest, _)| latest == id)
            .map(|(_, items)| items.clone())
    }

    /// `id` (its input and output items) is now the latest response of `lane`.
    pub(crate) fn remember(&self, lane: &str, id: &str, items: Vec<Value>) {
        let mut lanes = self.lanes.lock().unwrap_or_else(|e| e.into_inner());
        lanes.insert(lane.to_owned(), (id.to_owned(), items));
    }

    fn knows_lane(&self, lane: &str) -> bool {
        let lanes = self.lanes.lock().unwrap_or_else(|e| e.into_inner());
        lanes.contains_key(lane) || lanes.len() < MAX_LANES
    }
}

/// The lane a message names (`stream_id`; the default lane is "").
pub(crate) fn lane(message: &Value) -> String {
    message
        .get("stream_id")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned()
}

/// `GET /v1/responses` with an upgrade: the socket's session.
pub(crate) async fn upgrade(
    AxumState(state): AxumState<Arc<State>>,
    uri: Uri,
    ws: WebSocketUpgrade,
) -> Response {
    let path = uri.path().to_owned();
    ws.on_upgrade(move |socket| session(state, socket, path))
}

/// An error event, as the socket sends it.
fn error_event(status: u16, code: &str, message: &str, param: Option<&str>) -> String {
    json!({
        "type": "error",
        "status": status,
        "error": {"type": "invalid_request_error", "code": code, "message": message, "param": param},
    })
    .to_string()
}

/// Why a message is refused before it is read as a request, if it is.
fn refusal(state: &State, connection: &Connection, message: &Value) -> Option<String> {
    if message.get("type").and_then(Value::as_str) != Some("response.create") {
        let kind = message.get("type").and_then(Value::as_str).unwrap_or("");
        return Some(error_event(
            400,
            "invalid_type",
            &format!("Invalid value: '{kind}'. Supported values are: 'response.create'."),
            Some("type"),
        ));
    }
    for field in ["stream", "background"] {
        if message.get(field).is_some() {
            return Some(error_event(
                400,
                "unknown_parameter",
                &format!(
                    "Unknown parameter: '{field}'. Responses on a WebSocket are always streamed."
                ),
                Some(field),
            ));
        }
    }
    let lane = lane(message);
    if !connection.knows_lane(&lane) {
        return Some(error_event(
            400,
            "websocket_stream_limit_reached",
            &format!("A connection holds at most {MAX_LANES} streams."),
            Some("stream_id"),
        ));
    }
    let id = message
        .get("previous_response_id")
        .and_then(Value::as_str)?;
    if connection.previous(&lane, id).is_some() || state.stored(id) {
        return None;
    }
    Some(error_event(
        400,
        "previous_response_not_found",
        &format!("Previous response with id '{id}' not found."),
        Some("previous_response_id"),
    ))
}

/// The JSON of an SSE frame's `data:` line.
fn frame_data(frame: &Bytes) -> Option<String> {
    let text = std::str::from_utf8(frame).ok()?;
    text.lines()
        .find_map(|line| line.strip_prefix("data: "))
        .map(str::to_owned)
}

/// The error event for an HTTP-style error body (`{"error": {...}}`).
fn error_from_body(status: u16, body: &Bytes) -> String {
    let error = serde_json::from_slice::<Value>(body)
        .ok()
        .and_then(|v| v.get("error").cloned())
        .unwrap_or_else(|| json!({"message": String::from_utf8_lossy(body)}));
    json!({"type": "error", "status": status, "error": error}).to_string()
}

async fn session(state: Arc<State>, mut socket: WebSocket, path: String) {
    let opened_ms = state.clock.now_ms();
    let epoch = state.socket_epoch.load(Ordering::Relaxed);
    let connection = Arc::new(Connection::default());
    while let Some(Ok(frame)) = socket.recv().await {
        let text = match frame {
            Message::Text(text) => text.to_string(),
            Message::Close(_) => break,
            _ => continue,
        };
        if state.socket_epoch.load(Ordering::Relaxed) != epoch {
            // Closed from the admin side: the message is dropped unanswered.
            break;
        }
        if state.clock.now_ms().saturating_sub(opened_ms) >= MAX_CONNECTION_AGE_MS {
            let event = error_event(
                400,
                "websocket_connection_limit_reached",
                "Responses websocket connection limit reached (60 minutes). Create a new websocket connection to continue.",
                None,
            );
            state.record_socket_refusal(path.clone(), text.len(), event.clone());
            let _ = socket.send(Message::Text(event.into())).await;
            break;
        }
        let message = match serde_json::from_str::<Value>(&text) {
            Ok(message) => message,
            Err(e) => {
                let event = error_event(400, "invalid_json", &e.to_string(), None);
                let _ = socket.send(Message::Text(event.into())).await;
                continue;
            }
        };
        if let Some(event) = refusal(&state, &connection, &message) {
            state.record_socket_refusal(path.clone(), text.len(), event.clone());
            if socket.send(Message::Text(event.into())).await.is_err() {
                break;
            }
            continue;
        }
        let worker = state.clone();
        let (turn_path, turn_connection) = (path.clone(), connection.clone());
        let answered = tokio::task::spawn_blocking(move || {
            worker.socket_turn(turn_path, text.as_bytes(), &turn_connection)
        })
        .await;
        let (frames, closes) = match answered {
            Ok(Ok(answer)) => answer,
            Ok(Err((status, body))) => {
                let event = error_from_body(status, &body);
                if socket.send(Message::Text(event.into())).await.is_err() {
                    break;
                }
                continue;
            }
            Err(_) => break,
        };
        for frame in &frames {
            if let Some(data) = frame_data(frame)
                && socket.send(Message::Text(data.into())).await.is_err()
            {
                return;
            }
        }
        if closes {
            break;
        }
    }
}
