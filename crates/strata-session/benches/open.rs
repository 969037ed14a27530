//! `cargo bench -p strata-session --bench open`: open a 100,000-entry (~100 MB) Pi-format session
//! and read what context building needs from it; append one entry to an open session.
//!
//! Peak memory is measured by `cargo run --release -p strata-session --example session_bench`.

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use strata_session::{AgentMessage, MessageContent, Session, UserMessage, WriteOptions};

#[path = "support/workload.rs"]
#[allow(dead_code, reason = "shared with the session_bench example")]
mod workload;

fn bench(c: &mut Criterion) {
    let dir = match tempfile::tempdir() {
        Ok(dir) => dir,
        Err(error) => {
            eprintln!("no temp dir: {error}");
            return;
        }
    };
    let path = dir.path().join("large.jsonl");
    let generated = match workload::generate(&path, 100_000) {
        Ok(generated) => generated,
        Err(error) => {
            eprintln!("cannot generate the session: {error}");
            return;
        }
    };
    eprintln!(
        "generated {} entries, {:.1} MB",
        generated.entries,
        generated.bytes as f64 / 1e6
    );

    let mut group = c.benchmark_group("session");
    group.sample_size(20);
    group.bench_function("open_100k", |b| {
        b.iter(|| black_box(Session::open(&path).map(|o| o.session.tree().len())));
    });
    group.bench_function("open_100k_and_context_inputs", |b| {
        b.iter(|| {
            let opened = Session::open(&path).ok()?;
            let inputs = workload::context_inputs(opened.session.tree()).ok()?;
            Some(black_box(inputs.chain.len()))
        });
    });
    group.finish();

    let append_path = dir.path().join("append.jsonl");
    if std::fs::copy(&path, &append_path).is_err() {
        return;
    }
    let Ok(opened) = Session::open_writable(&append_path, WriteOptions::default()) else {
        return;
    };
    let mut session = opened.session;
    let message = AgentMessage::User(UserMessage {
        content: MessageContent::Text("one more question about the tree".into()),
        timestamp: 1_768_471_204_000,
        extra: Default::default(),
    });
    c.bench_function("append_one_entry_to_open_100k_session", |b| {
        b.iter(|| {
            // Append, then the incremental part of a context rebuild: the new leaf's typed entry.
            let id = session.append_message(message.clone()).ok()?;
            let entry = session.tree().entry(&id).ok()?;
            Some(black_box((entry, session.tree().parent_of(&id).cloned())))
        });
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
