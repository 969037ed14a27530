//! Cost of the tools on large inputs: `cargo bench -p strata-tools`.

#![expect(
    clippy::unwrap_used,
    reason = "benchmark setup: a failure should stop the run"
)]

use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::json;
use strata_tools::truncate::{DEFAULT_MAX_BYTES, DEFAULT_MAX_LINES, truncate_tail};
use strata_tools::{ToolCall, ToolContext, ToolSet};

fn big_text(lines: usize) -> String {
    (0..lines)
        .map(|i| format!("{i:>8} the quick brown fox jumps over the lazy dog, again and again\n"))
        .collect()
}

fn bench_tools(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let ctx = ToolContext::new(dir.path());
    let tools = ToolSet::all();
    // 300,000 lines, about 22 MB.
    let text = big_text(300_000);
    std::fs::write(dir.path().join("big.txt"), &text).unwrap();

    c.bench_function("read first window of a 22 MB file", |b| {
        b.iter(|| {
            let call = ToolCall::new("b", "read", json!({"path": "big.txt"}));
            runtime.block_on(tools.execute(call, &ctx, None))
        });
    });
    c.bench_function("read a window at line 290000 of a 22 MB file", |b| {
        b.iter(|| {
            let call = ToolCall::new("b", "read", json!({"path": "big.txt", "offset": 290_000}));
            runtime.block_on(tools.execute(call, &ctx, None))
        });
    });

    let medium = big_text(15_000); // about 1 MB
    c.bench_function(
        "edit 3 replacements in a 1 MB file (atomic write + diff)",
        |b| {
            b.iter(|| {
                std::fs::write(dir.path().join("m.txt"), &medium).unwrap();
                let call = ToolCall::new(
                    "b",
                    "edit",
                    json!({"path": "m.txt", "edits": [
                        {"oldText": "       10 the quick", "newText": "       10 a slow"},
                        {"oldText": "     7000 the quick", "newText": "     7000 a slow"},
                        {"oldText": "    14999 the quick", "newText": "    14999 a slow"}
                    ]}),
                );
                runtime.block_on(tools.execute(call, &ctx, None))
            });
        },
    );

    c.bench_function("tail-truncate 22 MB of output", |b| {
        b.iter(|| truncate_tail(&text, DEFAULT_MAX_LINES, DEFAULT_MAX_BYTES));
    });

    c.bench_function("grep a 22 MB file", |b| {
        b.iter(|| {
            let call = ToolCall::new("b", "grep", json!({"pattern": "299999 the"}));
            runtime.block_on(tools.execute(call, &ctx, None))
        });
    });
}

criterion_group!(benches, bench_tools);
criterion_main!(benches);
