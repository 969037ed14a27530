//! Requests per second for 100k-token requests with caching, over real HTTP on loopback.
//!
//! Each iteration sends a batch of concurrent requests sharing a 100k-token prefix and differing
//! in their last user message, as an agent's consecutive turns do. Criterion's throughput line
//! (elem/s) is requests per second.

use std::time::Duration;

use bytes::Bytes;
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use serde_json::{Value, json};
use strata_mock::tokens::Tokenizer;
use strata_mock::{MockConfig, MockServer};

const BATCH: usize = 8;
const TURNS: usize = 40;

fn filler(seed: &str, words: usize) -> String {
    (0..words).map(|i| format!("{seed}{i} ")).collect()
}

fn conversation() -> Vec<(String, String)> {
    (0..TURNS)
        .map(|t| {
            (
                filler(&format!("u{t}w"), 500),
                filler(&format!("a{t}w"), 500),
            )
        })
        .collect()
}

fn anthropic_body(turns: &[(String, String)], last: usize) -> Value {
    let mut messages = Vec::new();
    for (user, assistant) in turns {
        messages.push(json!({"role": "user", "content": [{"type": "text", "text": user}]}));
        messages
            .push(json!({"role": "assistant", "content": [{"type": "text", "text": assistant}]}));
    }
    messages.push(json!({"role": "user", "content": [{"type": "text", "text": format!("question {last}"), "cache_control": {"type": "ephemeral"}}]}));
    json!({
        "model": "claude-sonnet-4-5",
        "max_tokens": 1024,
        "tools": [{"name": "read", "description": filler("tool", 300), "input_schema": {"type": "object"}, "cache_control": {"type": "ephemeral"}}],
        "system": [{"type": "text", "text": filler("system", 1500), "cache_control": {"type": "ephemeral"}}],
        "messages": messages,
    })
}

fn chat_body(turns: &[(String, String)], last: usize) -> Value {
    let mut messages = vec![json!({"role": "system", "content": filler("system", 1500)})];
    for (user, assistant) in turns {
        messages.push(json!({"role": "user", "content": user}));
        messages.push(json!({"role": "assistant", "content": assistant}));
    }
    messages.push(json!({"role": "user", "content": format!("question {last}")}));
    json!({"model": "gpt-5", "prompt_cache_key": "bench", "messages": messages})
}

fn bench_route(
    c: &mut Criterion,
    name: &str,
    path: &str,
    make: fn(&[(String, String)], usize) -> Value,
) {
    let mut config = MockConfig::new();
    config.record_bodies = false;
    config.max_records = 1000;
    let Ok(server) = MockServer::start_in_thread(config) else {
        return;
    };
    let Ok(runtime) = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    else {
        return;
    };
    let turns = conversation();
    let bodies: Vec<Bytes> = (0..256)
        .map(|i| Bytes::from(make(&turns, i).to_string()))
        .collect();
    let tokens = Tokenizer::new().count(&String::from_utf8_lossy(&bodies[0]));
    eprintln!(
        "{name}: request body {} bytes, about {tokens} tokens of JSON",
        bodies[0].len()
    );
    let client = reqwest::Client::new();
    let url = server.url(path);
    let send = |body: Bytes| {
        let request = client
            .post(&url)
            .header("content-type", "application/json")
            .body(body);
        async move {
            let response = request.send().await.ok()?;
            response.bytes().await.ok()
        }
    };
    // Warm the cache and the token memo with the shared prefix.
    runtime.block_on(send(bodies[0].clone()));
    let mut next = 0usize;
    let mut group = c.benchmark_group("throughput");
    group.throughput(Throughput::Elements(BATCH as u64));
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(8));
    group.bench_function(name, |b| {
        b.iter(|| {
            let batch: Vec<_> = (0..BATCH)
                .map(|_| {
                    next = (next + 1) % bodies.len();
                    send(bodies[next].clone())
                })
                .collect();
            runtime.block_on(futures::future::join_all(batch))
        });
    });
    group.finish();
    if let Some(record) = server.requests().last() {
        eprintln!("{name}: last request {:?}", record.cache);
    }
}

fn throughput(c: &mut Criterion) {
    bench_route(c, "anthropic_100k_tokens", "/v1/messages", anthropic_body);
    bench_route(c, "chat_100k_tokens", "/v1/chat/completions", chat_body);
}

criterion_group!(benches, throughput);
criterion_main!(benches);
