//! Event-stream decoding + Converse parsing throughput, and the cost of one SigV4 signature.

#![expect(clippy::unwrap_used, reason = "benchmark setup")]

use std::time::SystemTime;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use strata_bedrock::credentials::AwsCredentials;
use strata_bedrock::sigv4::{SignableRequest, SigningScope, sign};
use strata_bedrock::{ConverseParser, EventStreamFrames};
use strata_provider::ApiKey;
use strata_provider::transport::StreamDriver;

fn parse(c: &mut Criterion) {
    let bytes = std::fs::read(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/converse_stream.bin"
    ))
    .unwrap();
    let mut group = c.benchmark_group("bedrock");
    group.throughput(Throughput::Bytes(bytes.len() as u64));
    group.bench_function("decode_and_parse_fixture_in_512_byte_chunks", |b| {
        b.iter(|| {
            let mut driver =
                StreamDriver::new(EventStreamFrames::new(), ConverseParser::new("claude"));
            let mut out = Vec::new();
            for chunk in bytes.chunks(512) {
                driver.feed(chunk, &mut out);
            }
            driver.end(&mut out);
            out.len()
        })
    });
    group.finish();

    let body = vec![b'x'; 100_000];
    let credentials = AwsCredentials {
        access_key_id: "AKIDEXAMPLE".into(),
        secret_access_key: ApiKey::new("secret"),
        session_token: Some(ApiKey::new("token")),
    };
    let mut group = c.benchmark_group("sigv4");
    group.throughput(Throughput::Bytes(body.len() as u64));
    group.bench_function("sign_100kb_body", |b| {
        b.iter(|| {
            sign(
                &SignableRequest {
                    method: "POST",
                    path: "/model/anthropic.claude-sonnet-4-5-20250929-v1%3A0/converse-stream",
                    query: &[],
                    headers: &[
                        ("host", "bedrock-runtime.us-east-1.amazonaws.com"),
                        ("content-type", "application/json"),
                    ],
                    body: &body,
                },
                &SigningScope {
                    region: "us-east-1",
                    service: "bedrock",
                    time: SystemTime::UNIX_EPOCH,
                },
                &credentials,
            )
        })
    });
    group.finish();
}

criterion_group!(benches, parse);
criterion_main!(benches);
