//! Responses stream cost: MB/s of SSE through decoder + parser (the mixed fixture, and a
//! 4,000-token text turn), and time per streamed token through the whole driver.

#![expect(clippy::unwrap_used, reason = "benchmark setup")]

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use strata_openai_responses::ResponsesParser;
use strata_provider::transport::StreamDriver;

const TOKENS: usize = 4000;

/// A text turn as the Responses API streams it: one short token per delta event, with the
/// fields the real events carry (sequence numbers, item ids, logprobs, obfuscation).
fn transcript() -> Vec<u8> {
    let mut s = String::new();
    s.push_str("event: response.created\ndata: {\"type\":\"response.created\",\"sequence_number\":0,\"response\":{\"id\":\"resp_1\",\"object\":\"response\",\"status\":\"in_progress\",\"model\":\"gpt-5.2\",\"output\":[],\"usage\":null}}\n\n");
    s.push_str("event: response.output_item.added\ndata: {\"type\":\"response.output_item.added\",\"sequence_number\":1,\"output_index\":0,\"item\":{\"type\":\"message\",\"id\":\"msg_0123456789abcdef\",\"role\":\"assistant\",\"status\":\"in_progress\",\"content\":[]}}\n\n");
    s.push_str("event: response.content_part.added\ndata: {\"type\":\"response.content_part.added\",\"sequence_number\":2,\"item_id\":\"msg_0123456789abcdef\",\"output_index\":0,\"content_index\":0,\"part\":{\"type\":\"output_text\",\"text\":\"\",\"annotations\":[]}}\n\n");
    for i in 0..TOKENS {
        s.push_str(&format!("event: response.output_text.delta\ndata: {{\"type\":\"response.output_text.delta\",\"sequence_number\":{},\"item_id\":\"msg_0123456789abcdef\",\"output_index\":0,\"content_index\":0,\"delta\":\" word{}\",\"logprobs\":[],\"obfuscation\":\"Xy7q\"}}\n\n", i + 3, i % 97));
    }
    s.push_str("event: response.output_item.done\ndata: {\"type\":\"response.output_item.done\",\"sequence_number\":4004,\"output_index\":0,\"item\":{\"type\":\"message\",\"id\":\"msg_0123456789abcdef\",\"role\":\"assistant\",\"status\":\"completed\",\"content\":[]}}\n\n");
    s.push_str("event: response.completed\ndata: {\"type\":\"response.completed\",\"sequence_number\":4005,\"response\":{\"id\":\"resp_1\",\"object\":\"response\",\"status\":\"completed\",\"model\":\"gpt-5.2\",\"output\":[],\"usage\":{\"input_tokens\":42000,\"input_tokens_details\":{\"cached_tokens\":40960},\"output_tokens\":4000,\"output_tokens_details\":{\"reasoning_tokens\":0},\"total_tokens\":46000}}}\n\n");
    s.into_bytes()
}

fn run(bytes: &[u8], chunk: usize) -> usize {
    let mut driver = StreamDriver::sse(ResponsesParser::new());
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
    let mut group = c.benchmark_group("responses");
    group.throughput(Throughput::Bytes(fixture.len() as u64));
    group.bench_function("parse_stream_fixture_in_512_byte_chunks", |b| {
        b.iter(|| run(&fixture, 512))
    });
    group.finish();

    let bytes = transcript();
    let mut group = c.benchmark_group("responses_sse");
    group.throughput(Throughput::Bytes(bytes.len() as u64));
    group.bench_function("bytes_to_events_16k_chunks", |b| {
        b.iter(|| run(&bytes, 16 * 1024))
    });
    group.finish();
    let mut group = c.benchmark_group("responses_per_token");
    group.throughput(Throughput::Elements(TOKENS as u64));
    group.bench_function("driver_per_token", |b| b.iter(|| run(&bytes, 4096)));
    group.finish();
}

criterion_group!(benches, parse);
criterion_main!(benches);
