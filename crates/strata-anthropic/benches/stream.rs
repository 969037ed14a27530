//! Anthropic stream cost: MB/s of SSE through decoder + parser, and time per streamed token
//! through the whole driver (bytes → `Event`s), in-process without the network.

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use strata_anthropic::AnthropicParser;
use strata_provider::transport::StreamDriver;

const TOKENS: usize = 4000;

/// A realistic turn: thinking, text and a tool call, one short token per delta, pings.
fn transcript() -> Vec<u8> {
    let mut s = String::new();
    s.push_str("event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"claude-sonnet-4-5\",\"content\":[],\"usage\":{\"input_tokens\":12,\"cache_read_input_tokens\":40000,\"output_tokens\":1}}}\n\n");
    s.push_str("event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n");
    for i in 0..TOKENS {
        if i % 500 == 0 {
            s.push_str("event: ping\ndata: {\"type\": \"ping\"}\n\n");
        }
        s.push_str(&format!("event: content_block_delta\ndata: {{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{{\"type\":\"text_delta\",\"text\":\" word{}\"}}}}\n\n", i % 97));
    }
    s.push_str(
        "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n",
    );
    s.push_str("event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":4000}}\n\nevent: message_stop\ndata: {\"type\":\"message_stop\"}\n\n");
    s.into_bytes()
}

fn run(bytes: &[u8], chunk: usize) -> usize {
    let mut driver = StreamDriver::sse(AnthropicParser::new());
    strata_provider::testing::feed_in_chunks(&mut driver, bytes, chunk)
}

fn bench(c: &mut Criterion) {
    let bytes = transcript();
    let mut group = c.benchmark_group("anthropic_sse");
    group.throughput(Throughput::Bytes(bytes.len() as u64));
    group.bench_function("bytes_to_events_16k_chunks", |b| {
        b.iter(|| run(&bytes, 16 * 1024))
    });
    group.bench_function("bytes_to_events_1k_chunks", |b| {
        b.iter(|| run(&bytes, 1024))
    });
    group.finish();
    let mut group = c.benchmark_group("anthropic_per_token");
    group.throughput(Throughput::Elements(TOKENS as u64));
    group.bench_function("driver_per_token", |b| b.iter(|| run(&bytes, 4096)));
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
