//! Parse throughput of the Gemini SSE fixture through the shared driver.

#![expect(clippy::unwrap_used, reason = "benchmark setup")]

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use strata_google::GeminiParser;
use strata_provider::transport::StreamDriver;

fn parse(c: &mut Criterion) {
    let bytes = std::fs::read(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/stream.sse"
    ))
    .unwrap();
    let mut group = c.benchmark_group("gemini");
    group.throughput(Throughput::Bytes(bytes.len() as u64));
    group.bench_function("parse_stream_fixture_in_512_byte_chunks", |b| {
        b.iter(|| {
            let mut driver = StreamDriver::sse(GeminiParser::new());
            let mut out = Vec::new();
            for chunk in bytes.chunks(512) {
                driver.feed(chunk, &mut out);
            }
            driver.end(&mut out);
            out.len()
        })
    });
    group.finish();
}

criterion_group!(benches, parse);
criterion_main!(benches);
