//! Recorded-format SSE transcripts fed through the shared driver, split at every byte.

use pretty_assertions::assert_eq;
use serde_json::json;
use strata_openai_responses::ResponsesParser;
use strata_provider::transport::StreamDriver;
use strata_provider::{ContentBlock, Event, ProviderError, StopReason, Usage};

fn fixture(name: &str) -> Vec<u8> {
    let path = format!("{}/tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn run_split(bytes: &[u8], splits: &[usize]) -> Vec<Event> {
    let mut driver = StreamDriver::sse(ResponsesParser::new());
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
fn full_stream_assembles_reasoning_text_and_parallel_calls() {
    let bytes = fixture("stream.sse");
    let events = run_split(&bytes, &[]);
    assert!(
        matches!(&events[0], Event::Start { model, response_id } if model == "gpt-5.2" && response_id.as_deref() == Some("resp_1"))
    );
    let Some(Event::Done {
        stop_reason,
        message,
        usage,
    }) = events.last()
    else {
        panic!("no done: {events:?}")
    };
    assert_eq!(*stop_reason, StopReason::ToolUse);
    assert_eq!(
        *usage,
        Usage {
            input: 904,
            output: 300,
            cache_read: 4096,
            cache_write_5m: 0,
            cache_write_1h: 0,
            cache_storage: 0,
            cache_create: 0
        }
    );
    let reasoning_item = json!({"type":"reasoning","id":"rs_1","summary":[{"type":"summary_text","text":"Read both files."},{"type":"summary_text","text":"Then answer."}],"encrypted_content":"gAAAA-opaque=="});
    assert_eq!(
        message.content,
        vec![
            ContentBlock::Thinking {
                text: "Read both files.\n\nThen answer.".into(),
                signature: Some(reasoning_item.to_string()),
                redacted: false
            },
            ContentBlock::text("Héllo wörld 世界 🌍!"),
            ContentBlock::ToolCall {
                id: "call_a".into(),
                name: "read".into(),
                arguments: json!({"path": "a.txt"})
            },
            ContentBlock::ToolCall {
                id: "call_b".into(),
                name: "read".into(),
                arguments: json!({"path": "b.txt"})
            },
        ]
    );
    // Empty deltas produce no events; arguments stream as fragments per call.
    assert!(
        !events
            .iter()
            .any(|e| matches!(e, Event::TextDelta { text, .. } if text.is_empty()))
    );
    let fragments: Vec<(usize, &str)> = events
        .iter()
        .filter_map(|e| match e {
            Event::ToolCallDelta { index, arguments } => Some((*index, arguments.as_str())),
            _ => None,
        })
        .collect();
    assert_eq!(
        fragments,
        vec![
            (2, "{\"pa"),
            (2, "th\":\"a."),
            (2, "txt\"}"),
            (3, "{\"path\":"),
            (3, "\"b.txt\"}")
        ]
    );
}

#[test]
fn every_split_point_gives_the_same_events() {
    let bytes = fixture("stream.sse");
    let whole = run_split(&bytes, &[]);
    // Every offset around the multi-byte text, every fifth elsewhere (debug builds are slow).
    let text_start = bytes.windows(2).position(|w| w == "é".as_bytes()).unwrap() - 64;
    for split in
        (1..bytes.len()).filter(|s| s % 5 == 0 || (text_start..text_start + 400).contains(s))
    {
        assert_eq!(run_split(&bytes, &[split]), whole, "split at byte {split}");
    }
    // Three-way splits inside multi-byte characters.
    let emoji = bytes.windows(4).position(|w| w == "🌍".as_bytes()).unwrap();
    assert_eq!(run_split(&bytes, &[emoji + 1, emoji + 2, emoji + 3]), whole);
}

#[test]
fn error_event_mid_stream_ends_with_the_classified_error() {
    let events = run_split(&fixture("error_mid_stream.sse"), &[]);
    assert!(matches!(events[1], Event::TextDelta { .. }));
    assert!(
        matches!(
            events.last(),
            Some(Event::Error {
                error: ProviderError::Server { status: 0, .. },
                ..
            })
        ),
        "{events:?}"
    );
    assert_eq!(events.len(), 3);
}

#[test]
fn failed_response_with_overflow_is_context_overflow() {
    let events = run_split(&fixture("failed_overflow.sse"), &[]);
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
fn incomplete_response_stops_at_max_tokens() {
    let events = run_split(&fixture("incomplete.sse"), &[]);
    assert!(
        matches!(events.last(), Some(Event::Done { stop_reason: StopReason::MaxTokens, message, .. }) if message.text() == "cut"),
        "{events:?}"
    );
}

#[test]
fn a_stream_cut_between_frames_is_truncated_never_completed() {
    let bytes = fixture("stream.sse");
    let text = std::str::from_utf8(&bytes).unwrap();
    // Cut right after a whole frame in the middle of the transcript.
    let cut = text[..bytes.len() / 2].rfind("\n\n").unwrap() + 2;
    let mut driver = StreamDriver::sse(ResponsesParser::new());
    let mut out = Vec::new();
    driver.feed(&bytes[..cut], &mut out);
    driver.end(&mut out);
    assert!(
        matches!(
            out.last(),
            Some(Event::Error {
                error: ProviderError::Truncated { .. },
                ..
            })
        ),
        "{out:?}"
    );
    assert!(!out.iter().any(|e| matches!(e, Event::Done { .. })));
    assert!(!driver.partial_message().content.is_empty());
}

#[test]
fn a_stream_cut_anywhere_never_completes() {
    let bytes = fixture("stream.sse");
    for cut in (0..bytes.len() - 1).step_by(7) {
        let mut driver = StreamDriver::sse(ResponsesParser::new());
        let mut out = Vec::new();
        driver.feed(&bytes[..cut], &mut out);
        driver.end(&mut out);
        assert!(
            matches!(out.last(), Some(Event::Error { .. })),
            "cut at {cut}: {:?}",
            out.last()
        );
        assert!(
            !out.iter().any(|e| matches!(e, Event::Done { .. })),
            "cut at {cut}"
        );
    }
}
