//! The one driver every protocol shares: bytes → frames → a protocol parser → [`Event`]s.
//!
//! Protocol crates write only a sans-IO [`StreamParser`]. The policy lives here, once: an
//! unknown frame is logged at debug and skipped; a corrupt one ends the stream with
//! [`ProviderError::Decode`]; an error event ends it with the provider's error; a stream that
//! closes (or breaks) before the protocol's terminal event ends with
//! [`ProviderError::Truncated`] — never with an invented completion. Cancellation ends the
//! stream with [`ProviderError::Cancelled`] and drops the response, which aborts the request.

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
        out.push(Event::Error(error));
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
            out.push(Event::Error(parse_error_to_provider(
                e,
                frame.event,
                frame.data,
            )));
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
                return Some((Event::Error(ProviderError::Cancelled), st));
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
                        st.out.push(Event::Error(ProviderError::Cancelled));
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
