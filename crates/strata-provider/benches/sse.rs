//! SSE decoding throughput: Anthropic-style event streams through the frame decoder alone,
//! and through the shared driver with a parser that deserializes every frame's JSON.
//! The full Anthropic parser is measured in `strata-anthropic`'s `stream` bench.
//!
//! The `eventsource-stream` crate was measured here against this decoder (commit 3ff54e6,
//! docs/providers.md "SSE framing"): 3-6x slower, so the line decoder stays.

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use serde::Deserialize;
use strata_provider::transport::{
    Flow, Frame, FrameDecoder, FrameOutcome, MessageBuilder, ParseError, SseDecoder, StreamDriver,
    StreamParser,
};
use strata_provider::{Event, Message};

fn transcript(tokens: usize) -> Vec<u8> {
    let mut s = String::new();
    s.push_str("event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"model\":\"claude-sonnet-4-5\",\"usage\":{\"input_tokens\":12}}}\n\n");
    for i in 0..tokens {
        if i % 500 == 0 {
            s.push_str("event: ping\ndata: {\"type\": \"ping\"}\n\n");
        }
        s.push_str(&format!("event: content_block_delta\ndata: {{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{{\"type\":\"text_delta\",\"text\":\" token{}\"}}}}\n\n", i % 97));
    }
    s.push_str("event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n");
    s.into_bytes()
}

/// Deserializes each delta like a protocol parser would, and assembles the text.
#[derive(Default)]
struct TextParser {
    builder: MessageBuilder,
}

#[derive(Deserialize)]
struct Delta<'a> {
    index: u64,
    #[serde(borrow)]
    delta: Inner<'a>,
}

#[derive(Deserialize)]
struct Inner<'a> {
    #[serde(borrow)]
    text: std::borrow::Cow<'a, str>,
}

impl StreamParser for TextParser {
    fn on_frame(
        &mut self,
        frame: Frame<'_>,
        out: &mut Vec<Event>,
    ) -> Result<FrameOutcome, ParseError> {
        match frame.event {
            Some("content_block_delta") => {
                let d: Delta<'_> = serde_json::from_str(frame.data)?;
                self.builder.text(d.index, &d.delta.text, out);
                Ok(FrameOutcome::Known)
            }
            Some("message_stop") => Ok(FrameOutcome::Terminal),
            Some("ping" | "message_start") => Ok(FrameOutcome::Known),
            _ => Ok(FrameOutcome::Unknown),
        }
    }

    fn partial_message(&self) -> Message {
        self.builder.message()
    }
}

fn decode_all(mut decoder: impl FrameDecoder, bytes: &[u8], chunk: usize) -> usize {
    let mut frames = 0usize;
    let mut sink = |_: Frame<'_>| {
        frames += 1;
        Flow::Continue
    };
    for piece in bytes.chunks(chunk) {
        let _ = decoder.decode(piece, &mut sink);
    }
    let _ = decoder.finish(&mut sink);
    frames
}

fn drive_all<D: FrameDecoder>(decoder: D, bytes: &[u8], chunk: usize) -> bool {
    let mut driver = StreamDriver::new(decoder, TextParser::default());
    let mut out = Vec::with_capacity(1024);
    for piece in bytes.chunks(chunk) {
        driver.feed(piece, &mut out);
        out.clear();
    }
    driver.end(&mut out);
    driver.is_finished()
}

fn bench(c: &mut Criterion) {
    let bytes = transcript(20_000);
    let mut group = c.benchmark_group("sse");
    group.throughput(Throughput::Bytes(bytes.len() as u64));
    // 16 KiB is a typical read off a fast connection, 256 B a slow token-by-token one.
    for chunk in [16 * 1024, 256] {
        group.bench_function(format!("line_decoder_{chunk}b_chunks"), |b| {
            b.iter(|| decode_all(SseDecoder::new(), &bytes, chunk))
        });
        group.bench_function(format!("line_decoder_and_json_{chunk}b_chunks"), |b| {
            b.iter(|| drive_all(SseDecoder::new(), &bytes, chunk))
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
