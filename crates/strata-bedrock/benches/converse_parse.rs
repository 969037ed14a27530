//! Event-stream decoding + Converse parsing throughput (the mixed fixture, and a 4,000-token
//! text turn), time per streamed token through the whole driver, and one SigV4 signature.

#![expect(clippy::unwrap_used, reason = "benchmark setup")]

use std::time::SystemTime;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use strata_bedrock::credentials::AwsCredentials;
use strata_bedrock::eventstream::encode_message;
use strata_bedrock::sigv4::{SignableRequest, SigningScope, sign};
use strata_bedrock::{ConverseParser, EventStreamFrames};
use strata_provider::ApiKey;
use strata_provider::transport::StreamDriver;

const TOKENS: usize = 4000;

fn event(kind: &str, payload: &str) -> Vec<u8> {
    encode_message(
        &[
            (":event-type", kind),
            (":content-type", "application/json"),
            (":message-type", "event"),
        ],
        payload.as_bytes(),
    )
}

/// A text turn as ConverseStream sends it: one token per `contentBlockDelta` message (with
/// the padding field `p` Bedrock adds), then stop and metadata with cache counts.
fn transcript() -> Vec<u8> {
    let mut out = event("messageStart", r#"{"role":"assistant","p":"abcdefghijkl"}"#);
    for i in 0..TOKENS {
        out.extend(event(
            "contentBlockDelta",
            &format!(
                r#"{{"contentBlockIndex":0,"delta":{{"text":" word{}"}},"p":"abcdefghijklmnopq"}}"#,
                i % 97
            ),
        ));
    }
    out.extend(event(
        "contentBlockStop",
        r#"{"contentBlockIndex":0,"p":"abc"}"#,
    ));
    out.extend(event(
        "messageStop",
        r#"{"stopReason":"end_turn","p":"abcdef"}"#,
    ));
    out.extend(event(
        "metadata",
        r#"{"usage":{"inputTokens":25,"outputTokens":4000,"totalTokens":46025,"cacheReadInputTokens":40960,"cacheWriteInputTokens":1040},"metrics":{"latencyMs":2100},"p":"ab"}"#,
    ));
    out
}

fn run(bytes: &[u8], chunk: usize) -> usize {
    let mut driver = StreamDriver::new(EventStreamFrames::new(), ConverseParser::new("claude"));
    let events = strata_provider::testing::feed_in_chunks(&mut driver, bytes, chunk);
    assert!(driver.is_finished());
    events
}

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

    let bytes = transcript();
    let mut group = c.benchmark_group("bedrock_eventstream");
    group.throughput(Throughput::Bytes(bytes.len() as u64));
    group.bench_function("bytes_to_events_16k_chunks", |b| {
        b.iter(|| run(&bytes, 16 * 1024))
    });
    group.finish();
    let mut group = c.benchmark_group("bedrock_per_token");
    group.throughput(Throughput::Elements(TOKENS as u64));
    group.bench_function("driver_per_token", |b| b.iter(|| run(&bytes, 4096)));
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
