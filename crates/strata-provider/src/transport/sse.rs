//! A sans-IO Server-Sent Events decoder: bytes in, `(event, data)` frames out.
//!
//! Follows the WHATWG event-stream rules that matter for LLM APIs: lines end in `\n`, `\r\n`
//! or `\r` (also when split across chunks), `:` lines are comments (keep-alives), a field's
//! value loses one leading space, several `data:` lines join with `\n`, and a blank line
//! dispatches. Bytes are buffered until a line is complete, so a UTF-8 character split across
//! chunks is decoded whole. A last event that lacks its closing blank line is still delivered
//! at [`FrameDecoder::finish`]: some servers close right after `data: [DONE]`.

use crate::error::ProviderError;

/// Largest SSE event [`SseDecoder::new`] holds: the bytes of one event not yet dispatched
/// (its `event:` and `data:` values and an unfinished line). A reply's biggest event is one
/// tool call's arguments or one image, far below this; without a cap a server that never ends
/// an event (or a line) would grow the buffer without bound.
pub const MAX_EVENT_BYTES: usize = 16 * 1024 * 1024;

/// One decoded frame: the `event:` name (if any) and the joined `data:` payload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Frame<'a> {
    /// The event name, `None` when the frame had no `event:` line.
    pub event: Option<&'a str>,
    /// The payload (several `data:` lines joined by `\n`).
    pub data: &'a str,
}

/// What a frame consumer tells the decoder after each frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flow {
    /// Keep decoding.
    Continue,
    /// Stop: the protocol's terminal event arrived or an error ended the stream.
    Stop,
}

/// Splits a byte stream into frames; SSE here, AWS event-stream in the Bedrock crate.
pub trait FrameDecoder: Send {
    /// Decodes `chunk`, calling `sink` for every complete frame until it returns [`Flow::Stop`].
    fn decode(
        &mut self,
        chunk: &[u8],
        sink: &mut dyn FnMut(Frame<'_>) -> Flow,
    ) -> Result<Flow, ProviderError>;

    /// The byte stream ended: delivers a last frame that was still open, if any.
    fn finish(&mut self, sink: &mut dyn FnMut(Frame<'_>) -> Flow) -> Result<Flow, ProviderError>;
}

/// The SSE line decoder; reuses its buffers, so steady-state decoding does not allocate.
///
/// An event that grows past its cap ([`MAX_EVENT_BYTES`] unless set with
/// [`SseDecoder::with_max_event_bytes`]) ends the stream with [`ProviderError::Decode`] naming
/// the limit.
#[derive(Debug)]
pub struct SseDecoder {
    /// Bytes of an incomplete line carried over from the previous chunk.
    pending: Vec<u8>,
    /// The previous chunk ended in `\r`; a leading `\n` of the next one belongs to it.
    skip_lf: bool,
    event: String,
    data: String,
    has_data: bool,
    /// The UTF-8 byte-order mark is stripped once, at the very start.
    started: bool,
    max_event_bytes: usize,
}

impl Default for SseDecoder {
    fn default() -> Self {
        Self::with_max_event_bytes(MAX_EVENT_BYTES)
    }
}

impl SseDecoder {
    /// A decoder at the start of a stream, capping events at [`MAX_EVENT_BYTES`].
    pub fn new() -> Self {
        Self::default()
    }

    /// A decoder that fails the stream once one event holds more than `max_event_bytes`.
    pub fn with_max_event_bytes(max_event_bytes: usize) -> Self {
        Self {
            pending: Vec::new(),
            skip_lf: false,
            event: String::new(),
            data: String::new(),
            has_data: false,
            started: false,
            max_event_bytes,
        }
    }

    /// Fails once the event being read (values so far and the unfinished line) is too big.
    fn check_size(&self, flow: Flow) -> Result<Flow, ProviderError> {
        let open = self.pending.len() + self.data.len() + self.event.len();
        if flow == Flow::Continue && open > self.max_event_bytes {
            return Err(ProviderError::Decode {
                message: format!(
                    "a server-sent event grew past the {} byte limit without ending",
                    self.max_event_bytes
                ),
            });
        }
        Ok(flow)
    }

    fn line(&mut self, line: &[u8], sink: &mut dyn FnMut(Frame<'_>) -> Flow) -> Flow {
        if line.is_empty() {
            return self.dispatch(sink);
        }
        if line[0] == b':' {
            return Flow::Continue; // comment / keep-alive
        }
        let (field, value) = match memchr::memchr(b':', line) {
            Some(i) => {
                let v = &line[i + 1..];
                (&line[..i], v.strip_prefix(b" ").unwrap_or(v))
            }
            None => (line, &[][..]),
        };
        match field {
            b"data" => {
                if self.has_data {
                    self.data.push('\n');
                }
                self.data.push_str(&String::from_utf8_lossy(value));
                self.has_data = true;
            }
            b"event" => {
                self.event.clear();
                self.event.push_str(&String::from_utf8_lossy(value));
            }
            // `id` and `retry` only matter for auto-reconnect, which an SSE POST must never do.
            _ => {}
        }
        Flow::Continue
    }

    fn dispatch(&mut self, sink: &mut dyn FnMut(Frame<'_>) -> Flow) -> Flow {
        let flow = if self.has_data {
            let event = (!self.event.is_empty()).then_some(self.event.as_str());
            sink(Frame {
                event,
                data: &self.data,
            })
        } else {
            Flow::Continue
        };
        self.event.clear();
        self.data.clear();
        self.has_data = false;
        flow
    }

    /// Processes the complete lines of `bytes`; returns the offset of the unfinished tail.
    fn lines(&mut self, bytes: &[u8], sink: &mut dyn FnMut(Frame<'_>) -> Flow) -> (usize, Flow) {
        let mut start = 0;
        while let Some(rel) = memchr::memchr2(b'\n', b'\r', &bytes[start..]) {
            let end = start + rel;
            let flow = self.line(&bytes[start..end], sink);
            start = end + 1;
            if bytes[end] == b'\r' {
                if start < bytes.len() {
                    if bytes[start] == b'\n' {
                        start += 1;
                    }
                } else {
                    self.skip_lf = true;
                }
            }
            if flow == Flow::Stop {
                return (start, Flow::Stop);
            }
        }
        (start, Flow::Continue)
    }
}

impl FrameDecoder for SseDecoder {
    fn decode(
        &mut self,
        chunk: &[u8],
        sink: &mut dyn FnMut(Frame<'_>) -> Flow,
    ) -> Result<Flow, ProviderError> {
        let flow = self.decode_lines(chunk, sink);
        self.check_size(flow)
    }

    fn finish(&mut self, sink: &mut dyn FnMut(Frame<'_>) -> Flow) -> Result<Flow, ProviderError> {
        let tail = std::mem::take(&mut self.pending);
        let tail = if self.started {
            &tail[..]
        } else {
            tail.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(&tail)
        };
        if !tail.is_empty() && self.line(tail, sink) == Flow::Stop {
            return Ok(Flow::Stop);
        }
        Ok(self.dispatch(sink))
    }
}

impl SseDecoder {
    /// Decodes the complete lines of `chunk`, keeping an unfinished one for the next chunk.
    fn decode_lines(&mut self, mut chunk: &[u8], sink: &mut dyn FnMut(Frame<'_>) -> Flow) -> Flow {
        if self.skip_lf && !chunk.is_empty() {
            if chunk[0] == b'\n' {
                chunk = &chunk[1..];
            }
            self.skip_lf = false;
        }
        if !self.started && !chunk.is_empty() {
            if self.pending.len() + chunk.len() < 3 {
                self.pending.extend_from_slice(chunk);
                return Flow::Continue;
            }
            self.started = true;
            let mut head = std::mem::take(&mut self.pending);
            head.extend_from_slice(chunk);
            let body = head.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(&head);
            let (used, flow) = self.lines(body, sink);
            self.pending = body[used..].to_vec();
            return flow;
        }
        if self.pending.is_empty() {
            let (used, flow) = self.lines(chunk, sink);
            self.pending.extend_from_slice(&chunk[used..]);
            return flow;
        }
        // A line continues from the previous chunk: complete it first, then go on in place.
        let Some(first_end) = memchr::memchr2(b'\n', b'\r', chunk) else {
            self.pending.extend_from_slice(chunk);
            return Flow::Continue;
        };
        self.pending.extend_from_slice(&chunk[..=first_end]);
        let head = std::mem::take(&mut self.pending);
        let (used, mut flow) = self.lines(&head, sink);
        debug_assert_eq!(used, head.len());
        let mut rest = &chunk[first_end + 1..];
        if self.skip_lf {
            self.skip_lf = false;
            if let Some(r) = rest.strip_prefix(b"\n") {
                rest = r;
            } else if rest.is_empty() {
                self.skip_lf = true;
            }
        }
        if flow == Flow::Continue {
            let (used, f) = self.lines(rest, sink);
            self.pending.extend_from_slice(&rest[used..]);
            flow = f;
        }
        let mut reuse = head;
        reuse.clear();
        if self.pending.is_empty() {
            self.pending = reuse;
        }
        flow
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn decode_in_pieces(input: &[u8], cuts: &[usize]) -> Vec<(Option<String>, String)> {
        let mut decoder = SseDecoder::new();
        let mut frames = Vec::new();
        let mut sink = |f: Frame<'_>| {
            frames.push((f.event.map(str::to_owned), f.data.to_owned()));
            Flow::Continue
        };
        let mut last = 0;
        for &cut in cuts.iter().chain(std::iter::once(&input.len())) {
            decoder.decode(&input[last..cut], &mut sink).unwrap();
            last = cut;
        }
        decoder.finish(&mut sink).unwrap();
        frames
    }

    const STREAM: &str = "\u{feff}: keep-alive\r\nevent: message_start\r\ndata: {\"a\":\"h\u{e9}llo \u{1F600}\"}\r\n\r\nevent: ping\ndata: {}\n\ndata: line1\ndata:line2\nid: 7\nretry: 10\n\n\rdata: cr-only\r\rdata: [DONE]";

    fn expected() -> Vec<(Option<String>, String)> {
        vec![
            (
                Some("message_start".into()),
                "{\"a\":\"h\u{e9}llo \u{1F600}\"}".into(),
            ),
            (Some("ping".into()), "{}".into()),
            (None, "line1\nline2".into()),
            (None, "cr-only".into()),
            (None, "[DONE]".into()),
        ]
    }

    #[test]
    fn decodes_whole_input() {
        assert_eq!(decode_in_pieces(STREAM.as_bytes(), &[]), expected());
    }

    #[test]
    fn every_split_point_gives_the_same_frames() {
        let bytes = STREAM.as_bytes();
        for cut in 0..=bytes.len() {
            assert_eq!(decode_in_pieces(bytes, &[cut]), expected(), "cut at {cut}");
        }
    }

    #[test]
    fn byte_by_byte_gives_the_same_frames() {
        let bytes = STREAM.as_bytes();
        let cuts: Vec<usize> = (1..bytes.len()).collect();
        assert_eq!(decode_in_pieces(bytes, &cuts), expected());
    }

    #[test]
    fn stop_halts_delivery() {
        let mut decoder = SseDecoder::new();
        let mut seen = 0;
        let flow = decoder
            .decode(b"data: 1\n\ndata: 2\n\n", &mut |_| {
                seen += 1;
                Flow::Stop
            })
            .unwrap();
        assert_eq!((flow, seen), (Flow::Stop, 1));
    }

    #[test]
    fn event_without_data_is_not_dispatched() {
        assert_eq!(decode_in_pieces(b"event: x\n\n: c\n\n", &[]), vec![]);
    }

    /// Feeds `pieces` to `decoder`, returning the frames seen and the first error.
    fn feed_all(
        decoder: &mut impl FrameDecoder,
        pieces: impl IntoIterator<Item = Vec<u8>>,
    ) -> (usize, Option<ProviderError>) {
        let mut frames = 0;
        let mut sink = |_: Frame<'_>| {
            frames += 1;
            Flow::Continue
        };
        for piece in pieces {
            if let Err(e) = decoder.decode(&piece, &mut sink) {
                return (frames, Some(e));
            }
        }
        let error = decoder.finish(&mut sink).err();
        (frames, error)
    }

    #[test]
    fn an_event_that_never_ends_fails_at_the_default_cap() {
        let mut decoder = SseDecoder::new();
        let line = std::iter::once(b"data: ".to_vec());
        let body = std::iter::repeat_n(vec![b'x'; 64 * 1024], MAX_EVENT_BYTES / (64 * 1024) + 2);
        let (frames, error) = feed_all(&mut decoder, line.chain(body));
        assert_eq!(frames, 0);
        let message = error.expect("the cap ends the stream").to_string();
        assert!(
            message.contains(&format!("{MAX_EVENT_BYTES} byte limit")),
            "{message}"
        );
    }

    #[test]
    fn an_event_of_many_data_lines_fails_at_a_configured_cap() {
        let mut decoder = SseDecoder::with_max_event_bytes(4096);
        let lines = (0..600).map(|i| format!("data: line {i:04}\n").into_bytes());
        let (frames, error) = feed_all(&mut decoder, lines);
        assert_eq!(frames, 0);
        let message = error.expect("the cap ends the stream").to_string();
        assert!(message.contains("4096 byte limit"), "{message}");
    }

    #[test]
    fn many_small_events_past_the_cap_in_total_pass() {
        let mut decoder = SseDecoder::with_max_event_bytes(4096);
        let events = (0..2000).map(|i| format!("data: {i}\n\n").into_bytes());
        let (frames, error) = feed_all(&mut decoder, events);
        assert_eq!((frames, error), (2000, None));
    }
}
