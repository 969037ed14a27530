//! What the adapters' tests share (feature `testing`): the check that a cut stream's final
//! error event carries the partial message of exactly what arrived (the checks fail by
//! panicking, as test assertions do), the loop that cuts a stream at every event, a server
//! that refuses every request with a given status, the check of what a refusal becomes, and
//! the chunked feeding the parse benchmarks time.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::transport::{FrameDecoder, StreamDriver, StreamParser, parse_partial};
use crate::{ContentBlock, Event, Message, ProviderError};

/// What the partial message of a cut stream showed.
#[derive(Debug, Default, Clone, Copy)]
pub struct Seen {
    /// Some answer text.
    pub text: bool,
    /// Some reasoning text.
    pub thinking: bool,
    /// A finished tool call (its `ToolCallEnd` arrived).
    pub finished_call: bool,
    /// A tool call still open at the cut, with the arguments received so far.
    pub open_call: bool,
}

impl Seen {
    /// Folds in another cut's findings.
    pub fn merge(&mut self, other: Seen) {
        self.text |= other.text;
        self.thinking |= other.thinking;
        self.finished_call |= other.finished_call;
        self.open_call |= other.open_call;
    }
}

/// Cuts a stream after 1, 2, 3, … events until the cut falls past its end and the turn
/// completes (at most 499 cuts); every cut stream must pass [`check_cut_stream`].
/// `stream_cut_after(n)` arranges the cut after `n` events (once), streams, and returns the
/// events the adapter produced. A cut before any of the reply streamed is re-sent by the
/// transport, so such a stream completes, with one `Start`; the first completed stream after
/// a cut that showed content is the cut falling past the end. Returns what the partial
/// messages showed and how many cuts ended in an error.
pub async fn cut_after_every_event(
    mut stream_cut_after: impl AsyncFnMut(usize) -> Vec<Event>,
) -> (Seen, usize) {
    let mut seen = Seen::default();
    let mut cuts = 0;
    for events_before_cut in 1..500 {
        let events = stream_cut_after(events_before_cut).await;
        if matches!(events.last(), Some(Event::Done { .. })) {
            let starts = events
                .iter()
                .filter(|e| matches!(e, Event::Start { .. }))
                .count();
            assert_eq!(starts, 1, "a re-sent stream starts once: {events:?}");
            if cuts > 0 {
                break;
            }
            continue;
        }
        seen.merge(check_cut_stream(&events));
        cuts += 1;
    }
    (seen, cuts)
}

/// The text the stream's `TextDelta`s carried, joined.
pub fn streamed_text(events: &[Event]) -> String {
    events
        .iter()
        .filter_map(|e| match e {
            Event::TextDelta { text, .. } => Some(text.as_str()),
            _ => None,
        })
        .collect()
}

/// The reasoning the stream's `ThinkingDelta`s carried, joined.
pub fn streamed_thinking(events: &[Event]) -> String {
    events
        .iter()
        .filter_map(|e| match e {
            Event::ThinkingDelta { text, .. } => Some(text.as_str()),
            _ => None,
        })
        .collect()
}

/// The stream must end with a `Truncated` error whose partial message holds exactly what
/// streamed before it: the same text and reasoning, every tool call that started (finished
/// ones with their final arguments, open ones with the arguments so far), and no partial at all
/// when nothing arrived.
pub fn check_cut_stream(events: &[Event]) -> Seen {
    let last = events.last();
    assert!(
        matches!(last, Some(Event::Error { .. })),
        "a cut stream must end with an error event: {events:?}"
    );
    let Some(Event::Error { error, partial }) = last else {
        return Seen::default();
    };
    assert!(
        matches!(error, ProviderError::Truncated { .. }),
        "{error:?}"
    );
    assert!(
        !events.iter().any(|e| matches!(e, Event::Done { .. })),
        "never a completion for a cut stream"
    );
    let text = streamed_text(events);
    let thinking = streamed_thinking(events);
    let mut expected_calls = Vec::new();
    let mut seen = Seen::default();
    for event in events {
        let Event::ToolCallStart { index, id, name } = event else {
            continue;
        };
        let finished = events.iter().find_map(|e| match e {
            Event::ToolCallEnd {
                index: i,
                arguments,
                ..
            } if i == index => Some(arguments.clone()),
            _ => None,
        });
        let arguments = match finished {
            Some(arguments) => {
                seen.finished_call = true;
                arguments
            }
            None => {
                seen.open_call = true;
                let so_far: String = events
                    .iter()
                    .filter_map(|e| match e {
                        Event::ToolCallDelta {
                            index: i,
                            arguments,
                        } if i == index => Some(arguments.as_str()),
                        _ => None,
                    })
                    .collect();
                parse_partial(&so_far).unwrap_or(Value::Null)
            }
        };
        expected_calls.push((id.clone(), name.clone(), arguments));
    }
    let arrived = events.iter().any(|e| {
        matches!(
            e,
            Event::TextDelta { .. } | Event::ThinkingDelta { .. } | Event::ToolCallStart { .. }
        )
    });
    let Some(partial) = partial else {
        assert!(
            !arrived,
            "content arrived but the error has no partial: {events:?}"
        );
        return seen;
    };
    assert!(
        arrived,
        "a partial message without content events: {partial:?}"
    );
    assert_eq!(partial.text(), text, "partial text");
    assert_eq!(thinking_text(partial), thinking, "partial thinking");
    let calls: Vec<(String, String, Value)> = partial
        .tool_calls()
        .map(|(id, name, arguments)| (id.to_owned(), name.to_owned(), arguments.clone()))
        .collect();
    assert_eq!(calls, expected_calls, "partial tool calls");
    seen.text = !text.is_empty();
    seen.thinking = !thinking.is_empty();
    seen
}

fn thinking_text(message: &Message) -> String {
    message
        .content
        .iter()
        .filter_map(|b| match b {
            ContentBlock::Thinking { text, .. } => Some(text.as_str()),
            _ => None,
        })
        .collect()
}

/// Feeds `bytes` to `driver` in pieces of `chunk` bytes and ends the stream, as the transport
/// does with a body; returns how many events came out. What the adapters' parse benchmarks
/// time.
pub fn feed_in_chunks<P: StreamParser, D: FrameDecoder>(
    driver: &mut StreamDriver<P, D>,
    bytes: &[u8],
    chunk: usize,
) -> usize {
    let mut out = Vec::with_capacity(64);
    let mut events = 0;
    for piece in bytes.chunks(chunk) {
        driver.feed(piece, &mut out);
        events += out.len();
        out.clear();
    }
    driver.end(&mut out);
    events + out.len()
}

/// What an adapter must make of a request [`refusing_server`] refused with `status` (e.g.
/// `"401 Unauthorized"`): `Auth` with that status for 401 and 403, `InvalidRequest` with it
/// otherwise; the provider's `wording` kept and the `secret` key shown nowhere in the error;
/// and the request sent once (`sends`, the server's count), not retried.
pub fn check_refusal(
    error: &ProviderError,
    status: &str,
    wording: &str,
    secret: &str,
    sends: &AtomicUsize,
) {
    let code: Option<u16> = status.get(..3).and_then(|code| code.parse().ok());
    assert!(code.is_some(), "not a status line: {status}");
    let code = code.unwrap_or_default();
    if matches!(code, 401 | 403) {
        assert!(
            matches!(error, ProviderError::Auth { status, .. } if *status == code),
            "{error:?}"
        );
    } else {
        assert!(
            matches!(error, ProviderError::InvalidRequest { status, .. } if *status == code),
            "{error:?}"
        );
    }
    let text = format!("{error} {error:?}");
    assert!(text.contains(wording), "{text}");
    assert!(!text.contains(secret), "{text}");
    assert_eq!(sends.load(Ordering::SeqCst), 1, "{status} is not retried");
}

/// A plain HTTP server on 127.0.0.1:0 that reads each whole request and answers it with
/// `status` (e.g. `"403 Forbidden"`) and the JSON `body`, for the refusals strata-mock has no
/// fault for (auth, bad request). Returns its base URL and the count of connections it took.
pub async fn refusing_server(
    status: &'static str,
    body: String,
) -> std::io::Result<(String, Arc<AtomicUsize>)> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}", listener.local_addr()?);
    let count = Arc::new(AtomicUsize::new(0));
    let seen = count.clone();
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            seen.fetch_add(1, Ordering::SeqCst);
            let body = body.clone();
            tokio::spawn(async move {
                if read_request_body(&mut socket).await.is_none() {
                    return;
                }
                let reply = format!(
                    "HTTP/1.1 {status}\r\ncontent-type: application/json\r\nrequest-id: req_refused\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = socket.write_all(reply.as_bytes()).await;
                let _ = socket.shutdown().await;
            });
        }
    });
    Ok((url, count))
}

/// Reads one HTTP request from `socket`: the head, then as many body bytes as its
/// content-length says. Returns the body, or `None` when the peer closed or failed first.
pub async fn read_request_body(socket: &mut tokio::net::TcpStream) -> Option<String> {
    let mut request = Vec::new();
    let mut buf = [0u8; 16 * 1024];
    loop {
        let n = socket.read(&mut buf).await.ok().filter(|n| *n > 0)?;
        request.extend_from_slice(&buf[..n]);
        let Some(head_end) = request.windows(4).position(|w| w == b"\r\n\r\n") else {
            continue;
        };
        let length = String::from_utf8_lossy(&request[..head_end])
            .to_ascii_lowercase()
            .lines()
            .find_map(|l| l.strip_prefix("content-length:").map(str::to_owned))
            .and_then(|v| v.trim().parse::<usize>().ok())
            .unwrap_or(0);
        if request.len() >= head_end + 4 + length {
            return Some(String::from_utf8_lossy(&request[head_end + 4..]).into_owned());
        }
    }
}
