//! Render speed on a 200k-token context with 40 tools and 30 patches.
//!
//! - `render/append_one/renderer`: with the previous request rendered, render the context one
//!   appended message later through [`Renderer`] (its serialized messages reused); target
//!   ≤ 2 ms per request.
//! - `render/append_one/pure`: the same request through the pure [`render_with`], for scale.
//!
//! `cargo bench -p strata-context --bench render`

use std::fmt::Write as _;
use std::hint::black_box;
use std::path::Path;

use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use serde_json::{Value, json};
use strata_context::{Assembler, RenderOptions, Renderer, render_with};
use strata_provider::{CacheStyle, Capabilities};
use strata_session::{EntryId, Tree};

/// A tool definition with a schema of realistic size.
fn tool(name: &str) -> Value {
    json!({"name": name, "description": format!("The {name} tool: does {name} things to files in the workspace."),
        "parameters": {"type": "object", "properties": {
            "path": {"type": "string", "description": "Path relative to the working directory."},
            "limit": {"type": "integer", "description": "Most lines to return."}},
        "required": ["path"]}})
}

/// JSONL of a linear session: a snapshot with 20 tools, then rounds of user prompt, tool call,
/// tool result and answer (about 1.4 kB a round) until `tokens` (at 4 bytes a token), with 30
/// patches spread over it that add 20 tools and withdraw 8.
fn session(tokens: usize) -> (String, Vec<String>) {
    let mut text = String::new();
    let _ = writeln!(
        text,
        "{}",
        json!({"type": "session", "version": 3, "id": "bench", "timestamp": "2026-01-01T00:00:00.000Z", "cwd": "/w"})
    );
    let filler = |bytes: usize| -> String {
        "lorem ipsum dolor sit amet "
            .chars()
            .cycle()
            .take(bytes)
            .collect()
    };
    let mut ids = Vec::new();
    let mut push = |text: &mut String, kind: &str, fields: Value| {
        let id = format!("{:08x}", ids.len() + 1);
        let mut entry = json!({"type": kind, "id": id, "parentId": ids.last(), "timestamp": "2026-01-01T00:00:00.000Z"});
        if let (Value::Object(entry), Value::Object(fields)) = (&mut entry, fields) {
            entry.extend(fields);
        }
        let _ = writeln!(text, "{entry}");
        ids.push(id);
    };
    let sections = json!({"intro": filler(2000), "tools": filler(1500), "rules": filler(3000), "docs": filler(2000), "skills": filler(800), "cwd": "Working directory: /w"});
    push(
        &mut text,
        "model_change",
        json!({"provider": "anthropic", "modelId": "claude-opus-4-8"}),
    );
    let initial: Vec<Value> = (0..20)
        .map(|index| tool(&format!("tool_{index:02}")))
        .collect();
    push(
        &mut text,
        "system",
        json!({"sections": sections, "toolsAdded": initial}),
    );
    let rounds = tokens * 4 / 1400;
    let mut patches = 0;
    for round in 0..rounds {
        push(
            &mut text,
            "message",
            json!({"message": {"role": "user", "content": filler(200), "timestamp": round}}),
        );
        let call = format!("call_{round}");
        push(
            &mut text,
            "message",
            json!({"message": {"role": "assistant", "api": "anthropic-messages", "provider": "anthropic", "model": "claude-opus-4-8",
            "content": [{"type": "toolCall", "id": call, "name": "tool_01", "arguments": {"path": "src/lib.rs"}}],
            "usage": {"input": 1, "output": 1, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 2, "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}},
            "stopReason": "toolUse", "timestamp": round}}),
        );
        push(
            &mut text,
            "message",
            json!({"message": {"role": "toolResult", "toolCallId": call, "toolName": "tool_01",
            "content": [{"type": "text", "text": filler(900)}], "isError": false, "timestamp": round}}),
        );
        push(
            &mut text,
            "message",
            json!({"message": {"role": "assistant", "api": "anthropic-messages", "provider": "anthropic", "model": "claude-opus-4-8",
            "content": [{"type": "text", "text": filler(100)}],
            "usage": {"input": 1, "output": 1, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 2, "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}},
            "stopReason": "stop", "timestamp": round}}),
        );
        if patches < 30 && round % (rounds / 30).max(1) == 0 {
            let added: Vec<Value> = if patches < 20 {
                vec![tool(&format!("late_{patches:02}"))]
            } else {
                Vec::new()
            };
            let removed: Vec<String> = if patches % 4 == 3 {
                vec![format!("tool_{:02}", patches / 4 + 10)]
            } else {
                Vec::new()
            };
            push(
                &mut text,
                "system",
                json!({"sections": {"rules": filler(3000 + patches)}, "toolsAdded": added, "toolsRemoved": removed}),
            );
            patches += 1;
        }
    }
    push(
        &mut text,
        "message",
        json!({"message": {"role": "user", "content": filler(200), "timestamp": 0}}),
    );
    (text, ids)
}

fn capabilities() -> Capabilities {
    Capabilities {
        cache_style: CacheStyle::ExplicitBreakpoints,
        max_breakpoints: 4,
        mid_conversation_system: true,
        tool_addition: true,
        tool_removal: true,
        deferred_tools: true,
        deferred_tool_placeholder: true,
        ..Capabilities::default()
    }
}

fn benches(c: &mut Criterion) {
    let (text, ids) = session(200_000);
    let Ok((tree, _)) = Tree::parse(Path::new("bench.jsonl"), text.into_bytes()) else {
        eprintln!("the generated session does not parse");
        return;
    };
    // Contexts as the agent gets them: one Assembler, the second extending the first, so
    // unchanged messages are shared.
    let mut assembler = Assembler::new();
    let before_leaf = ids
        .len()
        .checked_sub(2)
        .map(|at| EntryId::new(ids[at].clone()));
    let after_leaf = ids.last().map(|leaf| EntryId::new(leaf.clone()));
    let Ok((before, _)) = assembler.context(&tree, before_leaf.as_ref()) else {
        eprintln!("the generated session does not build");
        return;
    };
    let before = before.clone();
    let Ok((after, _)) = assembler.context(&tree, after_leaf.as_ref()) else {
        eprintln!("the generated session does not build");
        return;
    };
    let after = after.clone();
    let options = RenderOptions::new().cache_key("bench");
    let capabilities = capabilities();
    let rendered = render_with(&after, &capabilities, &options);
    eprintln!(
        "context: {} messages, {} tools, {} patches; request {} bytes ≈ {} tokens",
        after.messages.len(),
        rendered.request.tools.len(),
        after.system.patches.len(),
        rendered.bytes.len(),
        rendered.bytes.len() / 4
    );
    let mut warm = Renderer::new(capabilities.clone(), options.clone());
    warm.render(&before);

    let mut group = c.benchmark_group("render/append_one");
    group.bench_function("renderer", |b| {
        b.iter_batched(
            || warm.clone(),
            |mut renderer| {
                let (rendered, report) = renderer.render(black_box(&after));
                black_box((rendered.bytes.len(), report.divergence));
                renderer
            },
            BatchSize::LargeInput,
        );
    });
    group.bench_function("pure", |b| {
        b.iter(|| {
            let rendered = render_with(black_box(&after), &capabilities, &options);
            black_box(rendered.report(None))
        });
    });
    group.finish();
}

criterion_group!(render_benches, benches);
criterion_main!(render_benches);
