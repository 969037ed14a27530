//! Gemini `alt=sse` transcripts (CRLF-separated `data:` lines) split at every byte.

use pretty_assertions::assert_eq;
use serde_json::json;
use strata_google::GeminiParser;
use strata_provider::transport::StreamDriver;
use strata_provider::{ContentBlock, Event, ProviderError, StopReason, Usage};

fn fixture(name: &str) -> Vec<u8> {
    let path = format!("{}/tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn run(bytes: &[u8], splits: &[usize]) -> Vec<Event> {
    let mut driver = StreamDriver::sse(GeminiParser::new());
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
fn full_stream_keeps_signatures_on_their_parts_and_subtracts_cached_tokens() {
    let events = run(&fixture("stream.sse"), &[]);
    assert!(matches!(&events[0], Event::Start { model, .. } if model == "gemini-2.5-flash"));
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
            input: 808,
            output: 100,
            cache_read: 8192,
            cache_write_5m: 0,
            cache_write_1h: 0,
            cache_storage: 0,
            cache_create: 0
        }
    );
    assert_eq!(
        message.content,
        vec![
            ContentBlock::Thinking {
                text: "Zwei Dateien, zwei Lesevorgänge.".into(),
                signature: None,
                redacted: false
            },
            ContentBlock::text("Ich lese beide 📄 Dateien."),
            ContentBlock::Thinking {
                text: String::new(),
                signature: Some("CiQB-sig-a".into()),
                redacted: false
            },
            ContentBlock::ToolCall {
                id: "read_resp-g1_1".into(),
                name: "read".into(),
                arguments: json!({"path": "a.txt"})
            },
            ContentBlock::ToolCall {
                id: "read_resp-g1_2".into(),
                name: "read".into(),
                arguments: json!({"path": "b.txt"})
            },
        ]
    );
    // Replaying the message puts the signature back on the first function call.
    let mut request = strata_provider::Request::new("gemini-2.5-flash");
    request
        .messages
        .push(strata_provider::Message::user_text("go"));
    request.messages.push(message.clone());
    let body = strata_google::build_body(
        &test_model(),
        &request,
        &strata_provider::Capabilities::default(),
    );
    let parts = &body["contents"][1]["parts"];
    assert_eq!(parts[2]["thoughtSignature"], "CiQB-sig-a");
    assert_eq!(parts[2]["functionCall"]["name"], "read");
    assert!(parts[3].get("thoughtSignature").is_none());
}

fn test_model() -> strata_provider::Model {
    strata_provider::Model {
        provider: "google".into(),
        id: "gemini-2.5-flash".into(),
        name: "Gemini 2.5 Flash".into(),
        context_window: 1_048_576,
        max_output: 65_536,
        input: vec![],
        reasoning: true,
        prices: strata_provider::Prices::default(),
    }
}

#[test]
fn every_split_point_gives_the_same_events() {
    let bytes = fixture("stream.sse");
    let whole = run(&bytes, &[]);
    for split in 1..bytes.len() {
        assert_eq!(run(&bytes, &[split]), whole, "split at byte {split}");
    }
}

#[test]
fn error_mid_stream_is_overloaded_and_a_cut_is_truncated() {
    let events = run(&fixture("error_mid_stream.sse"), &[]);
    assert!(matches!(events[1], Event::TextDelta { .. }));
    assert!(
        matches!(
            events.last(),
            Some(Event::Error {
                error: ProviderError::Overloaded { .. },
                ..
            })
        ),
        "{events:?}"
    );
    let bytes = fixture("stream.sse");
    let last_frame = std::str::from_utf8(&bytes).unwrap().rfind("data:").unwrap();
    let events = run(&bytes[..last_frame], &[]);
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
