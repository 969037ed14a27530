//! Gemini stream cost: MB/s of `alt=sse` chunks through decoder + parser (the mixed fixture,
//! and a 4,000-token text turn), and time per streamed token through the whole driver.

#![expect(clippy::unwrap_used, reason = "benchmark setup")]

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use strata_google::GeminiParser;
use strata_provider::transport::StreamDriver;

const TOKENS: usize = 4000;

/// A text turn as `streamGenerateContent?alt=sse` sends it, one token per chunk (Gemini
/// usually batches several; one per chunk is the costly case), usage on every chunk.
fn transcript() -> Vec<u8> {
    let mut s = String::new();
    for i in 0..TOKENS {
        s.push_str(&format!("data: {{\"candidates\": [{{\"content\": {{\"parts\": [{{\"text\": \" word{}\"}}],\"role\": \"model\"}},\"index\": 0}}],\"usageMetadata\": {{\"promptTokenCount\": 42000,\"cachedContentTokenCount\": 40960,\"candidatesTokenCount\": {},\"totalTokenCount\": {}}},\"modelVersion\": \"gemini-2.5-flash\",\"responseId\": \"resp-0123456789\"}}\r\n\r\n", i % 97, i + 1, 42001 + i));
    }
    s.push_str("data: {\"candidates\": [{\"content\": {\"parts\": [{\"text\": \"\"}],\"role\": \"model\"},\"finishReason\": \"STOP\",\"index\": 0}],\"usageMetadata\": {\"promptTokenCount\": 42000,\"cachedContentTokenCount\": 40960,\"candidatesTokenCount\": 4000,\"totalTokenCount\": 46000},\"modelVersion\": \"gemini-2.5-flash\",\"responseId\": \"resp-0123456789\"}\r\n\r\n");
    s.into_bytes()
}

fn run(bytes: &[u8], chunk: usize) -> usize {
    let mut driver = StreamDriver::sse(GeminiParser::new());
    let events = strata_provider::testing::feed_in_chunks(&mut driver, bytes, chunk);
    assert!(driver.is_finished());
    events
}

fn parse(c: &mut Criterion) {
    let fixture = std::fs::read(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/stream.sse"
    ))
    .unwrap();
    let mut group = c.benchmark_group("gemini");
    group.throughput(Throughput::Bytes(fixture.len() as u64));
    group.bench_function("parse_stream_fixture_in_512_byte_chunks", |b| {
        b.iter(|| run(&fixture, 512))
    });
    group.finish();

    let bytes = transcript();
    let mut group = c.benchmark_group("gemini_sse");
    group.throughput(Throughput::Bytes(bytes.len() as u64));
    group.bench_function("bytes_to_events_16k_chunks", |b| {
        b.iter(|| run(&bytes, 16 * 1024))
    });
    group.finish();
    let mut group = c.benchmark_group("gemini_per_token");
    group.throughput(Throughput::Elements(TOKENS as u64));
    group.bench_function("driver_per_token", |b| b.iter(|| run(&bytes, 4096)));
    group.finish();
}

criterion_group!(benches, parse);
criterion_main!(benches);
