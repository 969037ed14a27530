//! Chat Completions stream cost: MB/s of chunks through decoder + parser, and time per
//! streamed token through the whole driver (bytes → `Event`s), in-process.

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use strata_openai::ChatParser;
use strata_provider::UsageDialect;
use strata_provider::transport::StreamDriver;

const TOKENS: usize = 4000;

fn transcript() -> Vec<u8> {
    let mut s = String::new();
    for i in 0..TOKENS {
        s.push_str(&format!("data: {{\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"gpt-4.1\",\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\" word{}\"}},\"finish_reason\":null}}],\"usage\":null}}\n\n", i % 97));
    }
    s.push_str("data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"gpt-4.1\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}],\"usage\":null}\n\n");
    s.push_str("data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"gpt-4.1\",\"choices\":[],\"usage\":{\"prompt_tokens\":5000,\"completion_tokens\":4000,\"prompt_tokens_details\":{\"cached_tokens\":4096}}}\n\ndata: [DONE]\n\n");
    s.into_bytes()
}

fn run(bytes: &[u8], chunk: usize) -> usize {
    let mut driver = StreamDriver::sse(ChatParser::new(UsageDialect::Standard));
    strata_provider::testing::feed_in_chunks(&mut driver, bytes, chunk)
}

fn bench(c: &mut Criterion) {
    let bytes = transcript();
    let mut group = c.benchmark_group("chat_sse");
    group.throughput(Throughput::Bytes(bytes.len() as u64));
    group.bench_function("bytes_to_events_16k_chunks", |b| {
        b.iter(|| run(&bytes, 16 * 1024))
    });
    group.finish();
    let mut group = c.benchmark_group("chat_per_token");
    group.throughput(Throughput::Elements(TOKENS as u64));
    group.bench_function("driver_per_token", |b| b.iter(|| run(&bytes, 4096)));
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
