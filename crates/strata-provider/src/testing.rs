//! Checks the adapters' tests share (feature `testing`): a cut stream's final error event must
//! carry the partial message of exactly what arrived. The checks fail by panicking, as test
//! assertions do.

use crate::transport::parse_partial;
use crate::{ContentBlock, Event, Message, ProviderError};
use serde_json::Value;

/// What the partial message of a cut stream showed.
#[derive(Debug, Default, Clone, Copy)]
pub struct Seen {
    /// Some answer text.
    pub text: bool,
    /// Some reasoning text.
    pub thinking: bool,
    /// A finished tool call (its `ToolCallEnd` arrived).
    pub finished_call: bool,
    /// A tool call still open at the cut, with the arguments received so far.
    pub open_call: bool,
}

impl Seen {
    /// Folds in another cut's findings.
    pub fn merge(&mut self, other: Seen) {
        self.text |= other.text;
        self.thinking |= other.thinking;
        self.finished_call |= other.finished_call;
        self.open_call |= other.open_call;
    }
}

/// The stream must end with a `Truncated` error whose partial message holds exactly what
/// streamed before it: the same text and reasoning, every tool call that started (finished
/// ones with their final arguments, open ones with the arguments so far), and no partial at all
/// when nothing arrived.
pub fn check_cut_stream(events: &[Event]) -> Seen {
    let last = events.last();
    assert!(
        matches!(last, Some(Event::Error { .. })),
        "a cut stream must end with an error event: {events:?}"
    );
    let Some(Event::Error { error, partial }) = last else {
        return Seen::default();
    };
    assert!(
        matches!(error, ProviderError::Truncated { .. }),
        "{error:?}"
    );
    assert!(
        !events.iter().any(|e| matches!(e, Event::Done { .. })),
        "never a completion for a cut stream"
    );
    let text: String = events
        .iter()
        .filter_map(|e| match e {
            Event::TextDelta { text, .. } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    let thinking: String = events
        .iter()
        .filter_map(|e| match e {
            Event::ThinkingDelta { text, .. } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    let mut expected_calls = Vec::new();
    let mut seen = Seen::default();
    for event in events {
        let Event::ToolCallStart { index, id, name } = event else {
            continue;
        };
        let finished = events.iter().find_map(|e| match e {
            Event::ToolCallEnd {
                index: i,
                arguments,
                ..
            } if i == index => Some(arguments.clone()),
            _ => None,
        });
        let arguments = match finished {
            Some(arguments) => {
                seen.finished_call = true;
                arguments
            }
            None => {
                seen.open_call = true;
                let so_far: String = events
                    .iter()
                    .filter_map(|e| match e {
                        Event::ToolCallDelta {
                            index: i,
                            arguments,
                        } if i == index => Some(arguments.as_str()),
                        _ => None,
                    })
                    .collect();
                parse_partial(&so_far).unwrap_or(Value::Null)
            }
        };
        expected_calls.push((id.clone(), name.clone(), arguments));
    }
    let arrived = events.iter().any(|e| {
        matches!(
            e,
            Event::TextDelta { .. } | Event::ThinkingDelta { .. } | Event::ToolCallStart { .. }
        )
    });
    let Some(partial) = partial else {
        assert!(
            !arrived,
            "content arrived but the error has no partial: {events:?}"
        );
        return seen;
    };
    assert!(
        arrived,
        "a partial message without content events: {partial:?}"
    );
    assert_eq!(partial.text(), text, "partial text");
    assert_eq!(thinking_text(partial), thinking, "partial thinking");
    let calls: Vec<(String, String, Value)> = partial
        .tool_calls()
        .map(|(id, name, arguments)| (id.to_owned(), name.to_owned(), arguments.clone()))
        .collect();
    assert_eq!(calls, expected_calls, "partial tool calls");
    seen.text = !text.is_empty();
    seen.thinking = !thinking.is_empty();
    seen
}

fn thinking_text(message: &Message) -> String {
    message
        .content
        .iter()
        .filter_map(|b| match b {
            ContentBlock::Thinking { text, .. } => Some(text.as_str()),
            _ => None,
        })
        .collect()
}
