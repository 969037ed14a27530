//! The Responses WebSocket mode (`Capabilities::websocket_mode`): one socket per session to the
//! same `/responses` URL, each turn a `response.create` message that, where the socket still
//! holds the previous response, carries only the new input items after `previous_response_id`.
//!
//! An optimisation, never the session's state: the session always renders the full
//! conversation, and this module only decides how much of it the socket still needs. A turn
//! that cannot be sent on a socket — no socket can be opened, the socket closed, or its first
//! answer is an error event (`previous_response_not_found`, `websocket_connection_limit_reached`,
//! anything else) — returns [`Fallback`], and the caller sends the whole body over HTTP; the
//! socket is dropped and the next turn opens a new one. A socket older than [`ROTATE_AFTER`] is
//! replaced before OpenAI's 60-minute limit. Facts from OpenAI's guide
//! (developers.openai.com/api/docs/guides/websocket-mode): the message is the create body plus
//! `"type": "response.create"` without the transport-only `stream` and `background`; events
//! come back as the HTTP stream's events, one JSON text message each.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::{SinkExt, StreamExt};
use serde_json::{Map, Value};
use strata_provider::transport::{ByteStream, Flow, Frame, FrameDecoder, HttpRequest, drive_with};
use strata_provider::{EventStream, ProviderError};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::http::{HeaderName, HeaderValue};
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};
use tokio_util::bytes::Bytes;
use tokio_util::sync::CancellationToken;

use crate::stream::ResponsesParser;

/// A socket is replaced once it is this old: OpenAI closes connections at 60 minutes.
pub const ROTATE_AFTER: Duration = Duration::from_secs(55 * 60);

/// The longest wait for a socket to open or for the first event of a turn before the turn goes
/// over HTTP instead.
const FIRST_EVENT_TIMEOUT: Duration = Duration::from_secs(30);

type Ws = WebSocketStream<MaybeTlsStream<TcpStream>>;

/// Why a turn did not go over the socket; the caller sends it in full over HTTP.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fallback {
    /// What happened, for the log.
    pub why: String,
    /// The error event's `error` object when the socket answered with one (the caller learns
    /// from a refused feature as from an HTTP 400).
    pub error: Option<String>,
}

impl Fallback {
    fn new(why: impl Into<String>) -> Self {
        Self {
            why: why.into(),
            error: None,
        }
    }
}

/// What the socket's connection holds after a turn: the full input that turn stood for, its
/// response id, and the calls its output made (to recognise the output's replay).
#[derive(Debug, Clone, PartialEq)]
struct Chain {
    input: Vec<Value>,
    response_id: String,
    output_calls: Vec<String>,
    output_items: usize,
}

/// An open socket of one session.
struct Socket {
    ws: Ws,
    opened: Instant,
    chain: Option<Chain>,
}

/// Every session's open socket. Cloning shares them.
#[derive(Clone, Default)]
pub struct Sockets {
    open: Arc<Mutex<HashMap<String, Socket>>>,
}

impl std::fmt::Debug for Sockets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sockets").finish_non_exhaustive()
    }
}

impl Sockets {
    /// No sockets open.
    pub fn new() -> Self {
        Self::default()
    }

    fn take(&self, session: &str) -> Option<Socket> {
        self.open
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(session)
    }

    fn put(&self, session: &str, socket: Socket) {
        self.open
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(session.to_owned(), socket);
    }

    /// Sends one turn of `session` on its socket (opening one when it has none or it is due
    /// for rotation): `body` is the full create body the HTTP request `http` carries. The
    /// stream's events once the first arrived, else why the turn must go over HTTP.
    pub async fn turn(
        &self,
        session: &str,
        http: &HttpRequest,
        body: &Value,
        cancel: CancellationToken,
    ) -> Result<EventStream, Fallback> {
        let socket = match self.take(session) {
            Some(socket) if socket.opened.elapsed() < ROTATE_AFTER => socket,
            _ => connect(http).await?,
        };
        let Socket {
            mut ws,
            opened,
            chain,
        } = socket;
        let input: Vec<Value> = body
            .get("input")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        let message = message(body, chain.as_ref(), &input);
        let sent = tokio::time::timeout(FIRST_EVENT_TIMEOUT, ws.send(Message::text(message)));
        match sent.await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => return Err(Fallback::new(format!("sending on the socket: {e}"))),
            Err(_) => return Err(Fallback::new("the socket did not take the message")),
        }
        let first = match tokio::time::timeout(FIRST_EVENT_TIMEOUT, next_text(&mut ws)).await {
            Ok(Some(text)) => text,
            Ok(None) => return Err(Fallback::new("the socket closed")),
            Err(_) => return Err(Fallback::new("no event on the socket")),
        };
        if event_type(&first).as_deref() == Some("error") {
            let error = serde_json::from_str::<Value>(&first)
                .ok()
                .and_then(|v| v.get("error").map(Value::to_string));
            return Err(Fallback {
                why: format!("the socket answered {first}"),
                error,
            });
        }
        let turn = Turn {
            ws: Some(ws),
            opened,
            input,
            sockets: self.clone(),
            session: session.to_owned(),
        };
        let body: ByteStream = Box::pin(futures::stream::unfold(turn, Turn::next));
        Ok(drive_with(
            Bytes::from(first),
            body,
            WholeMessages,
            ResponsesParser::new(),
            cancel,
        ))
    }
}

/// Opens a socket to the URL `http` posts to, with its headers (the key among them).
async fn connect(http: &HttpRequest) -> Result<Socket, Fallback> {
    let url = match http.url.split_once("://") {
        Some(("https", rest)) => format!("wss://{rest}"),
        Some(("http", rest)) => format!("ws://{rest}"),
        _ => return Err(Fallback::new(format!("no socket URL for {}", http.url))),
    };
    let mut request = url
        .into_client_request()
        .map_err(|e| Fallback::new(format!("socket request: {e}")))?;
    for (name, value) in &http.headers {
        // The body's own headers belong to the HTTP request only.
        if name.eq_ignore_ascii_case("content-type") || name.eq_ignore_ascii_case("accept") {
            continue;
        }
        let (Ok(name), Ok(value)) = (
            HeaderName::from_bytes(name.as_bytes()),
            HeaderValue::from_str(value),
        ) else {
            continue;
        };
        request.headers_mut().append(name, value);
    }
    let opened = tokio::time::timeout(
        FIRST_EVENT_TIMEOUT,
        tokio_tungstenite::connect_async(request),
    )
    .await;
    match opened {
        Ok(Ok((ws, _))) => Ok(Socket {
            ws,
            opened: Instant::now(),
            chain: None,
        }),
        Ok(Err(e)) => Err(Fallback::new(format!("opening the socket: {e}"))),
        Err(_) => Err(Fallback::new("opening the socket timed out")),
    }
}

/// The `response.create` message for `body`: only the items after the previous response's
/// replay when `chain` is what the connection holds and `input` extends it, else the whole
/// input.
fn message(body: &Value, chain: Option<&Chain>, input: &[Value]) -> String {
    let mut message = Map::new();
    message.insert("type".into(), "response.create".into());
    if let Some(fields) = body.as_object() {
        for (name, value) in fields {
            if name != "stream" && name != "background" {
                message.insert(name.clone(), value.clone());
            }
        }
    }
    if let Some((chain, new)) = chain.and_then(|c| Some((c, new_items(c, input)?))) {
        message.insert(
            "previous_response_id".into(),
            chain.response_id.clone().into(),
        );
        message.insert("input".into(), Value::Array(new.to_vec()));
    }
    Value::Object(message).to_string()
}

/// Whether an input item replays model output (what the connection already holds).
fn is_output_replay(item: &Value) -> bool {
    item.get("role").and_then(Value::as_str) == Some("assistant")
        || matches!(
            item.get("type").and_then(Value::as_str),
            Some(
                "reasoning"
                    | "function_call"
                    | "custom_tool_call"
                    | "tool_search_call"
                    | "tool_search_output"
            )
        )
}

/// The items of `input` after the previous request's input and its output's replay, when
/// `input` is exactly that extended by at least one item; `None` when anything before differs
/// (a compaction, a move in the tree, a cut), so the whole input is sent.
fn new_items<'a>(chain: &Chain, input: &'a [Value]) -> Option<&'a [Value]> {
    let rest = input.strip_prefix(chain.input.as_slice())?;
    let replayed = rest
        .iter()
        .take_while(|item| is_output_replay(item))
        .count();
    let calls: Vec<&str> = rest[..replayed]
        .iter()
        .filter(|item| item.get("type").and_then(Value::as_str) == Some("function_call"))
        .filter_map(|item| item.get("call_id").and_then(Value::as_str))
        .collect();
    let same_output = calls
        == chain
            .output_calls
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>()
        && (replayed > 0) == (chain.output_items > 0);
    let new = &rest[replayed..];
    (same_output && !new.is_empty()).then_some(new)
}

/// The `type` of an event's JSON.
fn event_type(text: &str) -> Option<String> {
    serde_json::from_str::<Value>(text)
        .ok()?
        .get("type")?
        .as_str()
        .map(str::to_owned)
}

/// The next text message, skipping pings; `None` when the socket closed or failed.
async fn next_text(ws: &mut Ws) -> Option<String> {
    loop {
        match ws.next().await? {
            Ok(Message::Text(text)) => return Some(text.to_string()),
            Ok(Message::Binary(bytes)) => return String::from_utf8(bytes.to_vec()).ok(),
            Ok(Message::Close(_)) | Err(_) => return None,
            Ok(_) => continue,
        }
    }
}

/// One turn's reading of the socket. At the turn's terminal event the socket goes back to the
/// session with what the connection now holds; a turn dropped early drops its socket, whose
/// state is then unknown.
struct Turn {
    ws: Option<Ws>,
    opened: Instant,
    input: Vec<Value>,
    sockets: Sockets,
    session: String,
}

impl Turn {
    async fn next(mut self) -> Option<(Result<Bytes, ProviderError>, Self)> {
        let ws = self.ws.as_mut()?;
        let Some(text) = next_text(ws).await else {
            self.ws = None;
            return Some((
                Err(ProviderError::Transport {
                    message: "the Responses socket closed mid-response".into(),
                }),
                self,
            ));
        };
        let value: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
        let kind = value.get("type").and_then(Value::as_str).unwrap_or("");
        if matches!(
            kind,
            "response.completed" | "response.incomplete" | "response.failed" | "error"
        ) && let Some(ws) = self.ws.take()
        {
            let chain = (kind == "response.completed" || kind == "response.incomplete")
                .then(|| chain_of(&value, std::mem::take(&mut self.input)))
                .flatten();
            self.sockets.put(
                &self.session,
                Socket {
                    ws,
                    opened: self.opened,
                    chain,
                },
            );
        }
        Some((Ok(Bytes::from(text)), self))
    }
}

/// What the connection holds after the terminal event `event` of a turn whose full input was
/// `input`.
fn chain_of(event: &Value, input: Vec<Value>) -> Option<Chain> {
    let response = event.get("response")?;
    let output = response.get("output").and_then(Value::as_array)?;
    Some(Chain {
        input,
        response_id: response.get("id")?.as_str()?.to_owned(),
        output_calls: output
            .iter()
            .filter(|item| item.get("type").and_then(Value::as_str) == Some("function_call"))
            .filter_map(|item| item.get("call_id").and_then(Value::as_str))
            .map(str::to_owned)
            .collect(),
        output_items: output.len(),
    })
}

/// Frames of a socket: each message is one event's JSON.
struct WholeMessages;

impl FrameDecoder for WholeMessages {
    fn decode(
        &mut self,
        chunk: &[u8],
        sink: &mut dyn FnMut(Frame<'_>) -> Flow,
    ) -> Result<Flow, ProviderError> {
        let data = std::str::from_utf8(chunk).map_err(|e| ProviderError::Decode {
            message: format!("a socket message is not UTF-8: {e}"),
        })?;
        Ok(sink(Frame { event: None, data }))
    }

    fn finish(&mut self, _: &mut dyn FnMut(Frame<'_>) -> Flow) -> Result<Flow, ProviderError> {
        Ok(Flow::Continue)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn chain(input: Vec<Value>, calls: &[&str], items: usize) -> Chain {
        Chain {
            input,
            response_id: "resp_1".into(),
            output_calls: calls.iter().map(|c| (*c).to_owned()).collect(),
            output_items: items,
        }
    }

    #[test]
    fn only_the_items_after_the_replayed_output_are_new() {
        let user = json!({"role": "user", "content": "hi"});
        let call =
            json!({"type": "function_call", "call_id": "c1", "name": "ls", "arguments": "{}"});
        let result = json!({"type": "function_call_output", "call_id": "c1", "output": "a"});
        let before = chain(vec![user.clone()], &["c1"], 1);
        let input = vec![user.clone(), call.clone(), result.clone()];
        assert_eq!(new_items(&before, &input), Some(&input[2..]));
        // A different call in the replay: the connection's output is not what strata holds.
        let other = chain(vec![user.clone()], &["c9"], 1);
        assert_eq!(new_items(&other, &input), None);
        // A changed earlier item (a compaction): the whole input goes.
        let moved = chain(
            vec![json!({"role": "user", "content": "other"})],
            &["c1"],
            1,
        );
        assert_eq!(new_items(&moved, &input), None);
        // Nothing new after the replay: nothing to send incrementally.
        assert_eq!(new_items(&before, &input[..2]), None);
    }

    #[test]
    fn a_message_drops_the_transport_fields_and_names_the_previous_response() {
        let user = json!({"role": "user", "content": "hi"});
        let call =
            json!({"type": "function_call", "call_id": "c1", "name": "ls", "arguments": "{}"});
        let result = json!({"type": "function_call_output", "call_id": "c1", "output": "a"});
        let body =
            json!({"model": "m", "stream": true, "store": false, "input": [user, call, result]});
        let input = body["input"].as_array().cloned().unwrap_or_default();
        let sent: Value = serde_json::from_str(&message(
            &body,
            Some(&chain(vec![input[0].clone()], &["c1"], 1)),
            &input,
        ))
        .unwrap_or(Value::Null);
        assert_eq!(sent["type"], "response.create");
        assert_eq!(sent["previous_response_id"], "resp_1");
        assert_eq!(sent["input"], json!([input[2]]));
        assert!(sent.get("stream").is_none());
        let full: Value =
            serde_json::from_str(&message(&body, None, &input)).unwrap_or(Value::Null);
        assert_eq!(full["input"], body["input"]);
        assert!(full.get("previous_response_id").is_none());
    }
}
