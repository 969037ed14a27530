//! SSE transcripts in Anthropic's documented format, split at every byte offset.

use pretty_assertions::assert_eq;
use serde_json::json;
use strata_provider::{ContentBlock, Event, Message, ProviderError, Role, StopReason, Usage};

use crate::{drive_pieces, fixture};

fn expected_message() -> Message {
    Message {
        role: Role::Assistant,
        content: vec![
            ContentBlock::Thinking {
                text: "Lass mich die Datei lesen — und dann grep. 🤔".into(),
                signature: Some("EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds".into()),
                redacted: false,
            },
            ContentBlock::Thinking {
                text: String::new(),
                signature: Some(
                    "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpP".into(),
                ),
                redacted: true,
            },
            ContentBlock::text("Ich lese zwei Dateien."),
            ContentBlock::ToolCall {
                id: "toolu_01A".into(),
                name: "read".into(),
                arguments: json!({"path": "src/main.rs"}),
            },
            ContentBlock::ToolCall {
                id: "toolu_01B".into(),
                name: "bash".into(),
                arguments: json!({"command": "ls -la", "timeout": 30}),
            },
        ],
    }
}

fn expected_usage() -> Usage {
    Usage {
        input: 12,
        output: 87,
        cache_read: 4000,
        cache_write_5m: 100,
        cache_write_1h: 2000,
        cache_storage: 0,
        cache_create: 0,
    }
}

#[test]
fn a_full_turn_assembles_thinking_text_and_two_tool_calls() {
    let events = drive_pieces(&fixture("full_turn.sse"), &[]);
    assert_eq!(
        events.first(),
        Some(&Event::Start {
            model: "claude-sonnet-4-5".into(),
            response_id: Some("msg_01XYZ".into()),
        })
    );
    assert_eq!(
        events.last(),
        Some(&Event::Done {
            stop_reason: StopReason::ToolUse,
            message: expected_message(),
            usage: expected_usage(),
        })
    );
    // Both tool calls end with parsed arguments, at their message positions.
    let ends: Vec<(usize, String)> = events
        .iter()
        .filter_map(|e| match e {
            Event::ToolCallEnd { index, name, .. } => Some((*index, name.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(ends, vec![(3, "read".into()), (4, "bash".into())]);
    // Empty deltas produce no events; the unknown `tool_change` event is skipped.
    assert!(
        !events
            .iter()
            .any(|e| matches!(e, Event::TextDelta { text, .. } if text.is_empty()))
    );
    assert!(!events.iter().any(|e| matches!(e, Event::Error { .. })));
    // Raw argument fragments stream as they come.
    let fragments: Vec<&str> = events
        .iter()
        .filter_map(|e| match e {
            Event::ToolCallDelta {
                index: 3,
                arguments,
            } => Some(arguments.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(fragments, vec!["{\"path\": \"src/ma", "in.rs\"}"]);
}

#[test]
fn every_split_point_yields_the_same_events() {
    let bytes = fixture("full_turn.sse");
    let whole = drive_pieces(&bytes, &[]);
    for cut in 1..bytes.len() {
        assert_eq!(drive_pieces(&bytes, &[cut]), whole, "split at byte {cut}");
    }
    let every_byte: Vec<usize> = (1..bytes.len()).collect();
    assert_eq!(drive_pieces(&bytes, &every_byte), whole);
    // CRLF line endings mean the same stream.
    let crlf = String::from_utf8(bytes).unwrap().replace('\n', "\r\n");
    assert_eq!(drive_pieces(crlf.as_bytes(), &[777]), whole);
}

#[test]
fn an_error_event_mid_stream_ends_with_the_providers_error() {
    let events = drive_pieces(&fixture("error_mid_stream.sse"), &[]);
    assert!(matches!(
        events.last(),
        Some(Event::Error {
            error: ProviderError::Overloaded { status: 0, .. },
            ..
        })
    ));
    assert!(
        events
            .iter()
            .any(|e| matches!(e, Event::TextDelta { text, .. } if text == "Hal"))
    );
    assert!(!events.iter().any(|e| matches!(e, Event::Done { .. })));
}

#[test]
fn a_stream_without_message_stop_is_truncated_not_completed() {
    let events = drive_pieces(&fixture("cut_short.sse"), &[]);
    match events.last() {
        Some(Event::Error {
            error: ProviderError::Truncated { reason },
            ..
        }) => {
            assert!(reason.contains("content_block_delta"), "{reason}");
        }
        other => panic!("expected truncation, got {other:?}"),
    }
    assert!(!events.iter().any(|e| matches!(e, Event::Done { .. })));
}

#[test]
fn a_corrupt_frame_is_a_decode_error_naming_the_frame() {
    let events = drive_pieces(&fixture("corrupt.sse"), &[]);
    match events.last() {
        Some(Event::Error {
            error: ProviderError::Decode { message },
            ..
        }) => {
            assert!(message.contains("content_block_delta"), "{message}");
        }
        other => panic!("expected a decode error, got {other:?}"),
    }
}

#[test]
fn invalid_final_tool_arguments_name_the_call() {
    let sse = concat!(
        "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"model\":\"c\",\"usage\":{\"input_tokens\":1}}}\n\n",
        "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"tool_use\",\"id\":\"toolu_9\",\"name\":\"edit\",\"input\":{}}}\n\n",
        "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"path\\\": \"}}\n\n",
        "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n",
    );
    let events = drive_pieces(sse.as_bytes(), &[]);
    match events.last() {
        Some(Event::Error {
            error: ProviderError::Decode { message },
            ..
        }) => {
            assert!(message.contains("`edit` (toolu_9)"), "{message}");
        }
        other => panic!("expected an arguments error, got {other:?}"),
    }
}

#[test]
fn frames_without_event_lines_are_read_by_their_type() {
    let text = String::from_utf8(fixture("full_turn.sse")).unwrap();
    let stripped: String = text
        .lines()
        .filter(|l| !l.starts_with("event:"))
        .map(|l| format!("{l}\n"))
        .collect();
    let events = drive_pieces(stripped.as_bytes(), &[]);
    assert!(
        matches!(events.last(), Some(Event::Done { message, .. }) if *message == expected_message())
    );
}

#[test]
fn tool_arguments_can_be_shown_while_they_stream() {
    let events = drive_pieces(&fixture("full_turn.sse"), &[]);
    let mut assembler = strata_provider::MessageAssembler::new();
    let mut shown = Vec::new();
    for event in &events {
        assembler.push(event);
        if let Event::ToolCallDelta { index, .. } = event {
            let raw = assembler.partial_arguments(*index).unwrap_or("");
            shown.push((*index, strata_provider::transport::parse_partial(raw)));
        }
    }
    assert_eq!(
        shown,
        vec![
            (3, Some(json!({"path": "src/ma"}))),
            (3, Some(json!({"path": "src/main.rs"}))),
            (4, Some(json!({"command": "ls -la", "timeout": 30}))),
        ]
    );
}
