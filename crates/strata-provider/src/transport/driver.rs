//! The one driver every protocol shares: bytes → frames → a protocol parser → [`Event`]s.
//!
//! Protocol crates write only a sans-IO [`StreamParser`]. The policy lives here, once: an
//! unknown frame is logged at debug and skipped; a corrupt one ends the stream with
//! [`ProviderError::Decode`]; an error event ends it with the provider's error; a stream that
//! closes (or breaks) before the protocol's terminal event ends with
//! [`ProviderError::Truncated`] — never with an invented completion. Cancellation ends the
//! stream with [`ProviderError::Cancelled`] and drops the response, which aborts the request.
//! Every error event the driver emits after content arrived carries the partial assistant
//! message ([`Event::Error`]'s `partial`), so nothing that streamed is lost silently.

use std::collections::VecDeque;

use bytes::Bytes;
use futures::StreamExt;
use tokio_util::sync::CancellationToken;

use super::client::{ByteStream, StreamingResponse};
use super::partial_json::ArgumentsError;
use super::sse::{Flow, Frame, FrameDecoder, SseDecoder};
use crate::error::ProviderError;
use crate::event::{Event, EventStream};
use crate::request::Message;

/// How a parser classified a frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FrameOutcome {
    /// Understood (events may or may not have been emitted).
    Known,
    /// Not part of the protocol as the parser knows it: logged and skipped.
    Unknown,
    /// The protocol's terminal event: `Done` has been emitted, the stream is over.
    Terminal,
}

/// Why a parser could not go on.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ParseError {
    /// The frame is not what the protocol promises (bad JSON, missing fields).
    #[error("{0}")]
    Corrupt(String),
    /// The provider reported an error inside the stream.
    #[error(transparent)]
    Provider(ProviderError),
    /// A finished tool call's arguments are not valid JSON.
    #[error(transparent)]
    Arguments(#[from] ArgumentsError),
}

impl From<serde_json::Error> for ParseError {
    fn from(e: serde_json::Error) -> Self {
        Self::Corrupt(e.to_string())
    }
}

/// A protocol's sans-IO stream interpreter.
pub trait StreamParser: Send {
    /// Interprets one frame, pushing the events it implies onto `out`.
    fn on_frame(
        &mut self,
        frame: Frame<'_>,
        out: &mut Vec<Event>,
    ) -> Result<FrameOutcome, ParseError>;

    /// The byte stream ended before a [`FrameOutcome::Terminal`] frame.
    ///
    /// Return `Terminal` (after emitting `Done`) for protocols whose end is the end of the
    /// body (Gemini); the default reports the stream as truncated.
    fn on_end(&mut self, out: &mut Vec<Event>) -> Result<FrameOutcome, ParseError> {
        let _ = out;
        Ok(FrameOutcome::Unknown)
    }

    /// The assistant message assembled so far (for a caller recovering from a truncation).
    fn partial_message(&self) -> Message;
}

/// The synchronous core of the driver: feed it chunks, collect events. Used by the async
/// stream, by fixture tests and by benchmarks.
#[derive(Debug)]
pub struct StreamDriver<P, D = SseDecoder> {
    decoder: D,
    parser: P,
    finished: bool,
    bytes: u64,
    frames: u64,
    last_event: String,
}

impl<P: StreamParser> StreamDriver<P, SseDecoder> {
    /// A driver reading SSE.
    pub fn sse(parser: P) -> Self {
        Self::new(SseDecoder::new(), parser)
    }
}

impl<P: StreamParser, D: FrameDecoder> StreamDriver<P, D> {
    /// A driver reading frames with `decoder`.
    pub fn new(decoder: D, parser: P) -> Self {
        Self {
            decoder,
            parser,
            finished: false,
            bytes: 0,
            frames: 0,
            last_event: String::new(),
        }
    }

    /// Whether the stream is over (terminal event, error, or end of input).
    pub fn is_finished(&self) -> bool {
        self.finished
    }

    /// The parser, e.g. to read what it assembled.
    pub fn parser(&self) -> &P {
        &self.parser
    }

    /// The assistant message assembled so far.
    pub fn partial_message(&self) -> Message {
        self.parser.partial_message()
    }

    /// An error event carrying the partial message, if any content arrived.
    fn error_event(&self, error: ProviderError) -> Event {
        error_event(&self.parser, error)
    }

    /// Feeds one chunk of the body.
    pub fn feed(&mut self, chunk: &[u8], out: &mut Vec<Event>) {
        if self.finished {
            return;
        }
        self.bytes += chunk.len() as u64;
        let Self {
            decoder,
            parser,
            finished,
            frames,
            last_event,
            ..
        } = self;
        let mut sink =
            |frame: Frame<'_>| on_frame(parser, frame, out, frames, last_event, finished);
        if let Err(e) = decoder.decode(chunk, &mut sink) {
            self.fail_with(e, out);
        }
    }

    /// The body ended cleanly.
    pub fn end(&mut self, out: &mut Vec<Event>) {
        if self.finished {
            return;
        }
        let Self {
            decoder,
            parser,
            finished,
            frames,
            last_event,
            ..
        } = self;
        let mut sink =
            |frame: Frame<'_>| on_frame(parser, frame, out, frames, last_event, finished);
        if let Err(e) = decoder.finish(&mut sink) {
            self.fail_with(e, out);
            return;
        }
        if self.finished {
            return;
        }
        match self.parser.on_end(out) {
            Ok(FrameOutcome::Terminal) => self.finished = true,
            Ok(_) => {
                let reason = format!(
                    "the stream closed before its terminal event ({})",
                    self.position()
                );
                self.fail_with(ProviderError::Truncated { reason }, out);
            }
            Err(e) => {
                let error = parse_error_to_provider(e, None, "");
                self.fail_with(error, out);
            }
        }
    }

    /// The body broke (connection lost mid-stream): ends the stream as truncated.
    pub fn fail(&mut self, error: ProviderError, out: &mut Vec<Event>) {
        if self.finished {
            return;
        }
        let reason = format!("{error} ({})", self.position());
        self.fail_with(ProviderError::Truncated { reason }, out);
    }

    fn fail_with(&mut self, error: ProviderError, out: &mut Vec<Event>) {
        self.finished = true;
        out.push(self.error_event(error));
    }

    fn position(&self) -> String {
        if self.last_event.is_empty() {
            format!("after {} bytes, {} frames", self.bytes, self.frames)
        } else {
            format!(
                "after {} bytes, {} frames, last `{}`",
                self.bytes, self.frames, self.last_event
            )
        }
    }
}

/// `error` as an event, with the parser's message so far when it holds any content.
fn error_event<P: StreamParser>(parser: &P, error: ProviderError) -> Event {
    let message = parser.partial_message();
    Event::Error {
        error,
        partial: (!message.content.is_empty()).then_some(message),
    }
}

fn on_frame<P: StreamParser>(
    parser: &mut P,
    frame: Frame<'_>,
    out: &mut Vec<Event>,
    frames: &mut u64,
    last_event: &mut String,
    finished: &mut bool,
) -> Flow {
    *frames += 1;
    last_event.clear();
    last_event.push_str(frame.event.unwrap_or("message"));
    tracing::trace!(event = frame.event, data = frame.data, "stream frame");
    match parser.on_frame(frame, out) {
        Ok(FrameOutcome::Known) => Flow::Continue,
        Ok(FrameOutcome::Unknown) => {
            tracing::debug!(
                event = frame.event,
                data = %cut(frame.data, 200),
                "ignoring an unknown stream frame"
            );
            Flow::Continue
        }
        Ok(FrameOutcome::Terminal) => {
            *finished = true;
            Flow::Stop
        }
        Err(e) => {
            let error = parse_error_to_provider(e, frame.event, frame.data);
            out.push(error_event(parser, error));
            *finished = true;
            Flow::Stop
        }
    }
}

fn parse_error_to_provider(error: ParseError, event: Option<&str>, data: &str) -> ProviderError {
    match error {
        ParseError::Provider(e) => e,
        ParseError::Corrupt(message) => ProviderError::Decode {
            message: format!(
                "{message} in frame `{}`: {}",
                event.unwrap_or("message"),
                cut(data, 300)
            ),
        },
        ParseError::Arguments(e) => ProviderError::Decode {
            message: e.to_string(),
        },
    }
}

fn cut(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// Streams the events of an SSE response through `parser`.
pub fn drive<P: StreamParser + 'static>(
    response: StreamingResponse,
    parser: P,
    cancel: CancellationToken,
) -> EventStream {
    drive_with(
        response.first_chunk,
        response.body,
        SseDecoder::new(),
        parser,
        cancel,
    )
}

/// Streams the events of any framed body: `first` chunk, then `body`, through `decoder`.
pub fn drive_with<P, D>(
    first: Bytes,
    body: ByteStream,
    decoder: D,
    parser: P,
    cancel: CancellationToken,
) -> EventStream
where
    P: StreamParser + 'static,
    D: FrameDecoder + 'static,
{
    struct State<P, D> {
        driver: StreamDriver<P, D>,
        body: Option<ByteStream>,
        first: Option<Bytes>,
        out: Vec<Event>,
        pending: VecDeque<Event>,
        cancel: CancellationToken,
    }
    let state = State {
        driver: StreamDriver::new(decoder, parser),
        body: Some(body),
        first: Some(first),
        out: Vec::new(),
        pending: VecDeque::new(),
        cancel,
    };
    Box::pin(futures::stream::unfold(state, |mut st| async move {
        loop {
            // Cancellation wins over events already decoded but not yet delivered.
            if !st.driver.is_finished() && st.cancel.is_cancelled() {
                st.pending.clear();
                st.driver.finished = true;
                st.body = None;
                let event = st.driver.error_event(ProviderError::Cancelled);
                return Some((event, st));
            }
            if let Some(event) = st.pending.pop_front() {
                return Some((event, st));
            }
            if st.driver.is_finished() {
                // Dropping the state drops the body, which aborts the HTTP request if still open.
                drop(st);
                return None;
            }
            if let Some(first) = st.first.take() {
                st.driver.feed(&first, &mut st.out);
            } else if let Some(body) = st.body.as_mut() {
                let next = tokio::select! {
                    biased;
                    () = st.cancel.cancelled() => None,
                    item = body.next() => Some(item),
                };
                match next {
                    None => {
                        st.body = None;
                        st.driver.finished = true;
                        st.out.push(st.driver.error_event(ProviderError::Cancelled));
                    }
                    Some(Some(Ok(chunk))) => st.driver.feed(&chunk, &mut st.out),
                    Some(Some(Err(e))) => st.driver.fail(e, &mut st.out),
                    Some(None) => st.driver.end(&mut st.out),
                }
            } else {
                st.driver.end(&mut st.out);
            }
            st.pending.extend(st.out.drain(..));
        }
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::request::{ContentBlock, Role};
    use crate::transport::MessageBuilder;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    /// A toy protocol: the frame's event name says what its data is.
    #[derive(Default)]
    struct Toy {
        builder: MessageBuilder,
    }

    impl StreamParser for Toy {
        fn on_frame(
            &mut self,
            frame: Frame<'_>,
            out: &mut Vec<Event>,
        ) -> Result<FrameOutcome, ParseError> {
            match frame.event {
                Some("think") => self.builder.thinking(0, frame.data, out),
                Some("text") => self.builder.text(1, frame.data, out),
                Some("tool") => self.builder.tool_call_start(2, "c1", frame.data, out),
                Some("args") => self.builder.tool_call_delta(2, frame.data, out),
                Some("tool_end") => self.builder.tool_call_end(2, out)?,
                Some("tool2") => self.builder.tool_call_start(3, "c2", frame.data, out),
                Some("args2") => self.builder.tool_call_delta(3, frame.data, out),
                Some("fail") => {
                    return Err(ParseError::Provider(ProviderError::Overloaded {
                        retry_after: None,
                        status: 0,
                        request_id: None,
                        body: frame.data.to_owned(),
                    }));
                }
                Some("bad") => return Err(ParseError::Corrupt("bad frame".into())),
                Some("done") => return Ok(FrameOutcome::Terminal),
                _ => return Ok(FrameOutcome::Unknown),
            }
            Ok(FrameOutcome::Known)
        }

        fn partial_message(&self) -> Message {
            self.builder.message()
        }
    }

    const CONTENT: &str = "event: think\ndata: hm\n\nevent: text\ndata: Hel\n\nevent: text\ndata: lo\n\n\
        event: tool\ndata: read\n\nevent: args\ndata: {\"path\":\"a\"}\n\nevent: tool_end\ndata: x\n\n\
        event: tool2\ndata: bash\n\nevent: args2\ndata: {\"command\":\"l\n\n";

    /// What `CONTENT` assembles to: the unfinished second call keeps its arguments so far.
    fn content_message() -> Message {
        Message {
            role: Role::Assistant,
            content: vec![
                ContentBlock::Thinking {
                    text: "hm".into(),
                    signature: None,
                    redacted: false,
                },
                ContentBlock::text("Hello"),
                ContentBlock::ToolCall {
                    id: "c1".into(),
                    name: "read".into(),
                    arguments: json!({"path": "a"}),
                },
                ContentBlock::ToolCall {
                    id: "c2".into(),
                    name: "bash".into(),
                    arguments: json!({"command": "l"}),
                },
            ],
        }
    }

    fn last_error(out: &[Event]) -> (&ProviderError, Option<&Message>) {
        match out.last() {
            Some(Event::Error { error, partial }) => (error, partial.as_ref()),
            other => panic!("expected an error event last, got {other:?}"),
        }
    }

    #[test]
    fn a_broken_body_after_content_carries_the_partial_message() {
        let mut driver = StreamDriver::sse(Toy::default());
        let mut out = Vec::new();
        driver.feed(CONTENT.as_bytes(), &mut out);
        driver.fail(
            ProviderError::Transport {
                message: "connection reset".into(),
            },
            &mut out,
        );
        let (error, partial) = last_error(&out);
        assert!(matches!(error, ProviderError::Truncated { .. }), "{error}");
        assert_eq!(partial, Some(&content_message()));
    }

    #[test]
    fn a_body_closed_before_the_terminal_event_carries_the_partial_message() {
        let mut driver = StreamDriver::sse(Toy::default());
        let mut out = Vec::new();
        driver.feed(CONTENT.as_bytes(), &mut out);
        driver.end(&mut out);
        let (error, partial) = last_error(&out);
        assert!(matches!(error, ProviderError::Truncated { .. }), "{error}");
        assert_eq!(partial, Some(&content_message()));
    }

    #[test]
    fn a_provider_error_or_corrupt_frame_mid_stream_carries_the_partial_message() {
        for tail in [
            "event: fail\ndata: overloaded\n\n",
            "event: bad\ndata: ?\n\n",
        ] {
            let mut driver = StreamDriver::sse(Toy::default());
            let mut out = Vec::new();
            driver.feed(format!("{CONTENT}{tail}").as_bytes(), &mut out);
            assert!(driver.is_finished());
            let (_, partial) = last_error(&out);
            assert_eq!(partial, Some(&content_message()), "{tail}");
        }
    }

    #[test]
    fn an_error_before_any_content_has_no_partial_message() {
        let mut driver = StreamDriver::sse(Toy::default());
        let mut out = Vec::new();
        driver.feed(
            b"event: unknown\ndata: {}\n\nevent: text\ndata:\n\n",
            &mut out,
        );
        driver.end(&mut out);
        assert_eq!(last_error(&out).1, None);
        let mut driver = StreamDriver::sse(Toy::default());
        let mut out = Vec::new();
        driver.feed(b"event: fail\ndata: x\n\n", &mut out);
        assert!(matches!(
            last_error(&out),
            (ProviderError::Overloaded { .. }, None)
        ));
    }

    #[test]
    fn an_event_past_the_size_cap_ends_the_stream_naming_the_limit() {
        let decoder = SseDecoder::with_max_event_bytes(64);
        let mut driver = StreamDriver::new(decoder, Toy::default());
        let mut out = Vec::new();
        driver.feed(CONTENT.as_bytes(), &mut out);
        driver.feed(b"event: text\ndata: ", &mut out);
        for _ in 0..10 {
            driver.feed(b"0123456789", &mut out);
        }
        assert!(driver.is_finished());
        let (error, partial) = last_error(&out);
        assert!(matches!(error, ProviderError::Decode { .. }), "{error}");
        assert!(error.to_string().contains("64 byte limit"), "{error}");
        assert_eq!(partial, Some(&content_message()));
    }

    #[test]
    fn a_clean_terminal_event_emits_no_error() {
        let mut driver = StreamDriver::sse(Toy::default());
        let mut out = Vec::new();
        driver.feed(
            format!("{CONTENT}event: done\ndata: x\n\n").as_bytes(),
            &mut out,
        );
        driver.end(&mut out);
        assert!(!out.iter().any(|e| matches!(e, Event::Error { .. })));
    }

    fn body(chunks: Vec<Result<Bytes, ProviderError>>, hang: bool) -> ByteStream {
        let head = futures::stream::iter(chunks);
        if hang {
            Box::pin(head.chain(futures::stream::pending()))
        } else {
            Box::pin(head)
        }
    }

    #[tokio::test]
    async fn a_connection_cut_mid_stream_ends_with_the_partial_message() {
        let (first, rest) = CONTENT.split_at(20);
        let chunks = vec![
            Ok(Bytes::from(rest.to_owned())),
            Err(ProviderError::Transport {
                message: "connection reset by peer".into(),
            }),
        ];
        let events: Vec<Event> = drive_with(
            Bytes::from(first.to_owned()),
            body(chunks, false),
            SseDecoder::new(),
            Toy::default(),
            CancellationToken::new(),
        )
        .collect()
        .await;
        let (error, partial) = last_error(&events);
        assert!(
            error.to_string().contains("connection reset by peer"),
            "{error}"
        );
        assert_eq!(partial, Some(&content_message()));
        assert_eq!(
            events
                .iter()
                .filter(|e| matches!(e, Event::Error { .. }))
                .count(),
            1
        );
    }

    #[tokio::test]
    async fn cancelling_mid_stream_ends_with_the_partial_message() {
        let cancel = CancellationToken::new();
        let mut stream = drive_with(
            Bytes::from(CONTENT),
            body(Vec::new(), true),
            SseDecoder::new(),
            Toy::default(),
            cancel.clone(),
        );
        // Read up to the first text delta, then cancel while the body hangs.
        while let Some(event) = stream.next().await {
            if matches!(event, Event::TextDelta { .. }) {
                break;
            }
        }
        cancel.cancel();
        let rest: Vec<Event> = stream.collect().await;
        let (error, partial) = last_error(&rest);
        assert_eq!(error, &ProviderError::Cancelled);
        assert_eq!(partial, Some(&content_message()));
    }
}
