//! Context assembly speed on generated sessions.
//!
//! - `full_build/5k_chain`: branch + project + flatten of a 5,000-entry chain, cold (every entry
//!   parsed).
//! - `append_one_and_rebuild/5k_chain`: with the session open and its context built, append one
//!   entry and rebuild through the [`Assembler`] (target ≤ 1 ms).
//! - `open_and_context/100k_entries_100MB`: open a 100 MB, 100,000-entry session (compacted
//!   every 2,000 entries, as a session that size always is) and build its context
//!   (target ≤ 150 ms together).
//! - `open_and_context/given_file`: the same on the file named by `CONTEXT_BENCH_FILE`, when set.
//!
//! `cargo bench -p strata-context --bench context`

use std::fmt::Write as _;
use std::hint::black_box;
use std::path::Path;

use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use serde_json::json;
use strata_context::{Assembler, build};
use strata_session::{AgentMessage, MessageContent, Session, UserMessage, WriteOptions};

/// Writes a linear session of `entries` entries of about `entry_bytes` each, with a compaction
/// every `compact_every` entries (0: never), and a system snapshot first.
fn write_session(path: &Path, entries: usize, entry_bytes: usize, compact_every: usize) {
    let mut text = String::with_capacity(entries * (entry_bytes + 200));
    let header = json!({"type": "session", "version": 3, "id": "bench", "timestamp": "2026-01-01T00:00:00.000Z", "cwd": "/w"});
    let _ = writeln!(text, "{header}");
    let filler: String = "lorem ipsum dolor sit amet "
        .chars()
        .cycle()
        .take(entry_bytes)
        .collect();
    let mut parent: Option<String> = None;
    let mut last_user = String::new();
    for index in 0..entries {
        let id = format!("{index:08x}");
        let timestamp = format!(
            "2026-01-01T{:02}:{:02}:{:02}.000Z",
            index / 3600 % 24,
            index / 60 % 60,
            index % 60
        );
        let entry = if index == 0 {
            json!({"type": "system", "id": id, "parentId": parent, "timestamp": timestamp,
                   "sections": {"intro": "You are a coding agent.", "tools": "read, bash", "cwd": "/w"},
                   "toolsAdded": [{"name": "read", "description": "read a file", "parameters": {"type": "object"}}]})
        } else if compact_every > 0 && index % compact_every == 0 {
            json!({"type": "compaction", "id": id, "parentId": parent, "timestamp": timestamp,
                   "summary": format!("summary up to {index}"), "firstKeptEntryId": last_user, "tokensBefore": 150_000,
                   "system": {"intro": "You are a coding agent.", "tools": "read, bash", "cwd": "/w"},
                   "tools": [{"name": "read", "description": "read a file", "parameters": {"type": "object"}}]})
        } else if index % 2 == 1 {
            last_user = id.clone();
            json!({"type": "message", "id": id, "parentId": parent, "timestamp": timestamp,
                   "message": {"role": "user", "content": filler, "timestamp": index}})
        } else {
            json!({"type": "message", "id": id, "parentId": parent, "timestamp": timestamp,
                   "message": {"role": "assistant", "content": [{"type": "text", "text": filler}],
                               "api": "anthropic-messages", "provider": "anthropic", "model": "claude-sonnet-4-5",
                               "usage": {"input": 10, "output": 10, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 20,
                                         "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}},
                               "stopReason": "stop", "timestamp": index}})
        };
        let _ = writeln!(text, "{entry}");
        parent = Some(id);
    }
    if let Err(error) = std::fs::write(path, text) {
        eprintln!("cannot write {}: {error}", path.display());
    }
}

fn user(text: &str) -> AgentMessage {
    AgentMessage::User(UserMessage {
        content: MessageContent::Text(text.to_owned()),
        timestamp: 0,
        extra: serde_json::Map::new(),
    })
}

fn benches(c: &mut Criterion) {
    let Ok(dir) = tempfile::tempdir() else {
        eprintln!("no temporary directory");
        return;
    };

    let chain = dir.path().join("chain-5k.jsonl");
    write_session(&chain, 5_000, 1_000, 0);
    let Ok(opened) = Session::open(&chain) else {
        eprintln!("cannot open {}", chain.display());
        return;
    };
    let tree = opened.session.tree();
    c.bench_function("full_build/5k_chain", |b| {
        b.iter(|| black_box(build(tree, tree.leaf()).map(|context| context.messages.len())))
    });

    let Ok(opened) = Session::open_writable(&chain, WriteOptions::default()) else {
        eprintln!("cannot open {} for writing", chain.display());
        return;
    };
    let mut session = opened.session;
    let mut assembler = Assembler::new();
    if let Err(error) = assembler.context(session.tree(), session.leaf()) {
        eprintln!("cannot build: {error}");
        return;
    }
    c.bench_function("append_one_and_rebuild/5k_chain", |b| {
        b.iter(|| {
            if session.append_message(user("one more question")).is_ok() {
                let built = assembler.context(session.tree(), session.leaf());
                black_box(
                    built
                        .map(|(context, how)| (context.messages.len(), how))
                        .ok(),
                );
            }
        })
    });

    let big = dir.path().join("big-100k.jsonl");
    write_session(&big, 100_000, 1_000, 2_000);
    let mut group = c.benchmark_group("open_and_context");
    group.sample_size(10);
    group.bench_function("100k_entries_100MB", |b| {
        b.iter_batched(
            || (),
            // The session and its context are returned, so criterion frees them outside the
            // timing: a user waits for open + context, not for the session to be dropped.
            |()| {
                let opened = Session::open(&big).ok()?;
                let tree = opened.session.tree();
                let context = build(tree, tree.leaf()).ok()?;
                Some((context, opened))
            },
            BatchSize::PerIteration,
        )
    });
    // The same measurement on a given file, e.g. the one Pi's SessionManager is timed on
    // (`session_bench --generate`), for a like-for-like ratio.
    if let Some(file) = std::env::var_os("CONTEXT_BENCH_FILE") {
        let file = std::path::PathBuf::from(file);
        group.bench_function("given_file", |b| {
            b.iter_batched(
                || (),
                |()| {
                    let opened = Session::open(&file).ok()?;
                    let tree = opened.session.tree();
                    let context = build(tree, tree.leaf()).ok()?;
                    Some((context, opened))
                },
                BatchSize::PerIteration,
            )
        });
        // Appending to that session while it is open and rebuilding its context: incremental,
        // whatever the file's size (on a copy: the file is shared with the other benches).
        let copy = dir.path().join("given-copy.jsonl");
        let writable = std::fs::copy(&file, &copy)
            .ok()
            .and_then(|_| Session::open_writable(&copy, WriteOptions::default()).ok());
        if let Some(opened) = writable {
            let mut session = opened.session;
            let mut assembler = Assembler::new();
            if assembler.context(session.tree(), session.leaf()).is_ok() {
                group.bench_function("append_one_and_rebuild/given_file", |b| {
                    b.iter(|| {
                        if session.append_message(user("one more question")).is_ok() {
                            let built = assembler.context(session.tree(), session.leaf());
                            black_box(built.map(|(context, _)| context.messages.len()).ok());
                        }
                    })
                });
            }
        }
    }
    group.finish();
}

criterion_group!(context, benches);
criterion_main!(context);
