//! Chat Completions chunk transcripts, split at every byte offset.

use pretty_assertions::assert_eq;
use serde_json::json;
use strata_provider::{
    ContentBlock, Event, Message, ProviderError, Role, StopReason, Usage, UsageDialect,
};

use crate::{drive_pieces, fixture};

fn expected_message() -> Message {
    Message {
        role: Role::Assistant,
        content: vec![
            ContentBlock::Thinking {
                text: "Zwei Dateien — lesen. 🤔".into(),
                signature: None,
                redacted: false,
            },
            ContentBlock::text("Ich lese beide."),
            ContentBlock::ToolCall {
                id: "call_a".into(),
                name: "read".into(),
                arguments: json!({"path": "src/main.rs"}),
            },
            ContentBlock::ToolCall {
                id: "call_b".into(),
                name: "bash".into(),
                arguments: json!({"command": "ls"}),
            },
        ],
    }
}

#[test]
fn parallel_tool_calls_interleaved_by_index_assemble() {
    let events = drive_pieces(
        &fixture("parallel_tools.sse"),
        &[],
        UsageDialect::DeepseekHitMiss,
    );
    assert!(matches!(&events[0], Event::Start { model, .. } if model == "deepseek-chat"));
    let usage = Usage {
        input: 200,
        output: 120,
        cache_read: 4800,
        cache_write_5m: 0,
        cache_write_1h: 0,
        cache_storage: 0,
        cache_create: 0,
    };
    assert_eq!(
        events.last(),
        Some(&Event::Done {
            stop_reason: StopReason::ToolUse,
            message: expected_message(),
            usage
        })
    );
    assert!(
        !events
            .iter()
            .any(|e| matches!(e, Event::TextDelta { text, .. } if text.is_empty()))
    );
}

#[test]
fn standard_dialect_subtracts_cached_tokens() {
    let events = drive_pieces(&fixture("parallel_tools.sse"), &[], UsageDialect::Standard);
    match events.last() {
        Some(Event::Done { usage, .. }) => {
            assert_eq!(
                (usage.input, usage.cache_read, usage.output),
                (200, 4800, 120)
            );
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn every_split_point_yields_the_same_events() {
    let bytes = fixture("parallel_tools.sse");
    let whole = drive_pieces(&bytes, &[], UsageDialect::DeepseekHitMiss);
    for cut in 1..bytes.len() {
        assert_eq!(
            drive_pieces(&bytes, &[cut], UsageDialect::DeepseekHitMiss),
            whole,
            "split at {cut}"
        );
    }
    let every: Vec<usize> = (1..bytes.len()).collect();
    assert_eq!(
        drive_pieces(&bytes, &every, UsageDialect::DeepseekHitMiss),
        whole
    );
}

#[test]
fn an_error_chunk_mid_stream_ends_with_the_providers_error() {
    let events = drive_pieces(&fixture("error_chunk.sse"), &[], UsageDialect::Standard);
    assert!(
        events
            .iter()
            .any(|e| matches!(e, Event::TextDelta { text, .. } if text == "Hal"))
    );
    assert!(
        matches!(
            events.last(),
            Some(
                Event::Error {
                    error: ProviderError::Overloaded { status: 0, .. },
                    ..
                } | Event::Error {
                    error: ProviderError::Server { status: 0, .. },
                    ..
                }
            )
        ),
        "{events:?}"
    );
}

#[test]
fn a_stream_without_done_is_truncated() {
    let events = drive_pieces(&fixture("no_done.sse"), &[], UsageDialect::Standard);
    assert!(
        matches!(
            events.last(),
            Some(Event::Error {
                error: ProviderError::Truncated { .. },
                ..
            })
        ),
        "{events:?}"
    );
}

#[test]
fn corrupt_chunks_are_decode_errors() {
    let events = drive_pieces(b"data: {\"choices\": [\n\n", &[], UsageDialect::Standard);
    assert!(
        matches!(
            events.last(),
            Some(Event::Error {
                error: ProviderError::Decode { .. },
                ..
            })
        ),
        "{events:?}"
    );
}

#[test]
fn interleaved_tool_arguments_can_be_shown_while_they_stream() {
    let events = drive_pieces(
        &fixture("parallel_tools.sse"),
        &[],
        UsageDialect::DeepseekHitMiss,
    );
    let mut assembler = strata_provider::MessageAssembler::new();
    let mut shown = Vec::new();
    for event in &events {
        assembler.push(event);
        if let Event::ToolCallDelta { index, .. } = event {
            let raw = assembler.partial_arguments(*index).unwrap_or("");
            shown.push((*index, strata_provider::transport::parse_partial(raw)));
        }
    }
    // Message positions: 0 reasoning, 1 text, 2 and 3 the two calls.
    assert_eq!(
        shown,
        vec![
            (3, Some(json!({}))),
            (2, Some(json!({"path": "src/ma"}))),
            (3, Some(json!({"command": "ls"}))),
            (2, Some(json!({"path": "src/main.rs"}))),
        ]
    );
}
