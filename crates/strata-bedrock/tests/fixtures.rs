//! AWS event-stream transcripts (written with a CRC32 of their own) through the shared
//! driver, split at every byte.

use pretty_assertions::assert_eq;
use serde_json::json;
use strata_bedrock::{ConverseParser, EventStreamFrames};
use strata_provider::transport::StreamDriver;
use strata_provider::{ContentBlock, Event, ProviderError, StopReason, Usage};

fn fixture(name: &str) -> Vec<u8> {
    let path = format!("{}/tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn run(bytes: &[u8], splits: &[usize]) -> Vec<Event> {
    let mut driver = StreamDriver::new(EventStreamFrames::new(), ConverseParser::new("claude"));
    let mut out = Vec::new();
    let mut start = 0;
    for &s in splits {
        driver.feed(&bytes[start..s], &mut out);
        start = s;
    }
    driver.feed(&bytes[start..], &mut out);
    driver.end(&mut out);
    out
}

#[test]
fn full_stream_assembles_reasoning_text_and_two_tool_calls() {
    let events = run(&fixture("converse_stream.bin"), &[]);
    let Some(Event::Done {
        stop_reason,
        message,
        usage,
    }) = events.last()
    else {
        panic!("{events:?}")
    };
    assert_eq!(*stop_reason, StopReason::ToolUse);
    assert_eq!(
        *usage,
        Usage {
            input: 25,
            output: 80,
            cache_read: 4000,
            cache_write_5m: 500,
            cache_write_1h: 1500,
            cache_storage: 0,
            cache_create: 0
        }
    );
    assert_eq!(
        message.content,
        vec![
            ContentBlock::Thinking {
                text: "Lire les deux fichiers — d'abord a.".into(),
                signature: Some("EqQBCkYIBxgCKkD-signature".into()),
                redacted: false
            },
            ContentBlock::text("Je lis les fichiers 📂."),
            ContentBlock::ToolCall {
                id: "tooluse_a".into(),
                name: "read".into(),
                arguments: json!({"path": "a.txt"})
            },
            ContentBlock::ToolCall {
                id: "tooluse_b".into(),
                name: "read".into(),
                arguments: json!({"path": "b.txt"})
            },
        ]
    );
    assert!(
        !events
            .iter()
            .any(|e| matches!(e, Event::TextDelta { text, .. } if text.is_empty()))
    );
}

#[test]
fn every_split_point_gives_the_same_events() {
    let bytes = fixture("converse_stream.bin");
    let whole = run(&bytes, &[]);
    for split in 1..bytes.len() {
        assert_eq!(run(&bytes, &[split]), whole, "split at byte {split}");
    }
    let emoji = bytes.windows(4).position(|w| w == "📂".as_bytes()).unwrap();
    assert_eq!(run(&bytes, &[emoji + 1, emoji + 2, emoji + 3]), whole);
}

#[test]
fn exception_mid_stream_is_classified() {
    let events = run(&fixture("throttled_mid_stream.bin"), &[]);
    assert!(matches!(events[1], Event::TextDelta { .. }));
    assert!(
        matches!(
            events.last(),
            Some(Event::Error {
                error: ProviderError::RateLimited { .. },
                ..
            })
        ),
        "{events:?}"
    );
    let events = run(&fixture("too_long.bin"), &[]);
    assert!(
        matches!(
            events.last(),
            Some(Event::Error {
                error: ProviderError::ContextOverflow { .. },
                ..
            })
        ),
        "{events:?}"
    );
}

#[test]
fn a_cut_stream_is_truncated_and_a_bad_crc_is_a_decode_error() {
    let bytes = fixture("converse_stream.bin");
    for cut in (1..bytes.len()).step_by(13) {
        let events = run(&bytes[..cut], &[]);
        assert!(
            matches!(
                events.last(),
                Some(Event::Error {
                    error: ProviderError::Truncated { .. },
                    ..
                })
            ),
            "cut at {cut}: {:?}",
            events.last()
        );
    }
    let mut corrupt = bytes.clone();
    corrupt[200] ^= 0x20;
    let events = run(&corrupt, &[]);
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
fn redacted_reasoning_becomes_a_redacted_thinking_block() {
    use strata_bedrock::eventstream::encode_message;
    let event = |kind: &str, payload: &str| {
        encode_message(
            &[
                (":event-type", kind),
                (":content-type", "application/json"),
                (":message-type", "event"),
            ],
            payload.as_bytes(),
        )
    };
    let mut bytes = event("messageStart", r#"{"role":"assistant"}"#);
    bytes.extend(event(
        "contentBlockDelta",
        r#"{"contentBlockIndex":0,"delta":{"reasoningContent":{"redactedContent":"RW5jcnlwdGVk"}}}"#,
    ));
    bytes.extend(event("contentBlockStop", r#"{"contentBlockIndex":0}"#));
    bytes.extend(event(
        "contentBlockDelta",
        r#"{"contentBlockIndex":1,"delta":{"text":"Done."}}"#,
    ));
    bytes.extend(event("contentBlockStop", r#"{"contentBlockIndex":1}"#));
    bytes.extend(event("messageStop", r#"{"stopReason":"end_turn"}"#));
    bytes.extend(event(
        "metadata",
        r#"{"usage":{"inputTokens":3,"outputTokens":2,"totalTokens":5}}"#,
    ));
    let events = run(&bytes, &[]);
    let Some(Event::Done { message, .. }) = events.last() else {
        panic!("{events:?}")
    };
    assert_eq!(
        message.content,
        vec![
            ContentBlock::Thinking {
                text: String::new(),
                signature: Some("RW5jcnlwdGVk".into()),
                redacted: true
            },
            ContentBlock::text("Done."),
        ]
    );
}
