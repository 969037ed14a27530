//! The closed grammar of stream events, and an assembler that builds the assistant message.

use std::pin::Pin;

use futures::Stream;
use serde::Serialize;

use crate::diagnosis::CacheDiagnosis;
use crate::error::ProviderError;
use crate::request::{ContentBlock, Message, Role};
use crate::transport::parse_partial;
use crate::usage::Usage;

/// Why the model stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// The model finished its turn.
    EndTurn,
    /// The output cap was reached.
    MaxTokens,
    /// The model wants tool results.
    ToolUse,
    /// A stop sequence matched.
    StopSequence,
    /// The model declined (or a content filter stopped it).
    Refusal,
    /// A server-side tool loop paused; send the turn back to continue.
    PauseTurn,
    /// The context window filled up during generation.
    ContextWindowExceeded,
}

/// One event of a response stream.
///
/// A well-formed stream is `Start`, any deltas, any `Usage`, then exactly one `Done`;
/// or it ends with `Error`. `index` is the content block's position in the assembled message.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Event {
    /// The provider accepted the request.
    Start {
        /// Model id the provider reports.
        model: String,
        /// Provider message or response id.
        response_id: Option<String>,
    },
    /// A piece of answer text.
    TextDelta {
        /// Content block index.
        index: usize,
        /// The text piece.
        text: String,
    },
    /// A piece of reasoning, or the block's signature when it arrives.
    ThinkingDelta {
        /// Content block index.
        index: usize,
        /// The reasoning piece (may be empty when only a signature arrives).
        text: String,
        /// Opaque signature to replay with the block.
        signature: Option<String>,
    },
    /// The model started a tool call.
    ToolCallStart {
        /// Content block index.
        index: usize,
        /// Call id.
        id: String,
        /// Tool name.
        name: String,
    },
    /// A fragment of a tool call's JSON arguments.
    ToolCallDelta {
        /// Content block index.
        index: usize,
        /// Raw JSON fragment.
        arguments: String,
    },
    /// A tool call is complete; its arguments parsed.
    ToolCallEnd {
        /// Content block index.
        index: usize,
        /// Call id.
        id: String,
        /// Tool name.
        name: String,
        /// Parsed arguments.
        arguments: serde_json::Value,
    },
    /// Token counts so far (cumulative; the last one wins).
    Usage(Usage),
    /// The provider's own diagnosis of this request's cache reuse, where the row asks for it
    /// (`Capabilities::cache_diagnostics`); at most one per stream, before `Done`.
    CacheDiagnosis(CacheDiagnosis),
    /// The response is complete.
    Done {
        /// Why the model stopped.
        stop_reason: StopReason,
        /// The assembled assistant message.
        message: Message,
        /// Final token counts.
        usage: Usage,
    },
    /// The stream failed; nothing follows.
    ///
    /// When content had arrived, `partial` holds the assistant message as far as it got (text,
    /// thinking, finished tool calls, and unfinished ones with their best-effort arguments), so
    /// a caller can keep it instead of losing it silently.
    Error {
        /// Why the stream failed.
        #[serde(serialize_with = "serialize_error")]
        error: ProviderError,
        /// The assistant message assembled before the failure; `None` if nothing arrived.
        #[serde(skip_serializing_if = "Option::is_none")]
        partial: Option<Message>,
    },
}

impl Event {
    /// An error event with no partial message (the stream failed before any content).
    pub fn error(error: ProviderError) -> Self {
        Self::Error {
            error,
            partial: None,
        }
    }
}

fn serialize_error<S: serde::Serializer>(e: &ProviderError, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&e.to_string())
}

/// The stream a provider returns.
pub type EventStream = Pin<Box<dyn Stream<Item = Event> + Send>>;

/// Builds the assistant message from deltas, for adapters that must emit `Done`.
#[derive(Debug, Default, Clone)]
pub struct MessageAssembler {
    blocks: Vec<Option<ContentBlock>>,
    partial_arguments: Vec<String>,
}

impl MessageAssembler {
    /// An empty assembler.
    pub fn new() -> Self {
        Self::default()
    }

    fn slot(&mut self, index: usize) -> &mut Option<ContentBlock> {
        if self.blocks.len() <= index {
            self.blocks.resize(index + 1, None);
            self.partial_arguments.resize(index + 1, String::new());
        }
        &mut self.blocks[index]
    }

    /// Folds one event into the message; events other than deltas and tool calls are ignored.
    pub fn push(&mut self, event: &Event) {
        match event {
            Event::TextDelta { index, text } => match self.slot(*index) {
                Some(ContentBlock::Text { text: existing, .. }) => existing.push_str(text),
                slot => *slot = Some(ContentBlock::text(text.clone())),
            },
            Event::ThinkingDelta {
                index,
                text,
                signature,
            } => match self.slot(*index) {
                Some(ContentBlock::Thinking {
                    text: existing,
                    signature: existing_sig,
                    ..
                }) => {
                    existing.push_str(text);
                    if signature.is_some() {
                        existing_sig.clone_from(signature);
                    }
                }
                slot => {
                    *slot = Some(ContentBlock::Thinking {
                        text: text.clone(),
                        signature: signature.clone(),
                        redacted: false,
                    })
                }
            },
            Event::ToolCallStart { index, id, name } => {
                *self.slot(*index) = Some(ContentBlock::ToolCall {
                    id: id.clone(),
                    name: name.clone(),
                    arguments: serde_json::Value::Null,
                });
            }
            Event::ToolCallDelta { index, arguments } => {
                self.slot(*index);
                self.partial_arguments[*index].push_str(arguments);
            }
            Event::ToolCallEnd {
                index,
                id,
                name,
                arguments,
            } => {
                *self.slot(*index) = Some(ContentBlock::ToolCall {
                    id: id.clone(),
                    name: name.clone(),
                    arguments: arguments.clone(),
                });
            }
            Event::Start { .. }
            | Event::Usage(_)
            | Event::CacheDiagnosis(_)
            | Event::Done { .. }
            | Event::Error { .. } => {}
        }
    }

    /// Puts a finished block at `index`, for blocks that arrive whole (a provider's own items).
    pub fn put(&mut self, index: usize, block: ContentBlock) {
        *self.slot(index) = Some(block);
    }

    /// Raw argument text received so far for the tool call at `index`.
    pub fn partial_arguments(&self, index: usize) -> Option<&str> {
        self.partial_arguments.get(index).map(String::as_str)
    }

    /// The assistant message assembled so far; a tool call not yet ended carries the
    /// best-effort parse of the arguments received so far (`Null` if none parse yet).
    pub fn message(&self) -> Message {
        let content = self
            .blocks
            .iter()
            .zip(&self.partial_arguments)
            .filter_map(|(block, so_far)| match block {
                Some(ContentBlock::ToolCall {
                    id,
                    name,
                    arguments: serde_json::Value::Null,
                }) if !so_far.is_empty() => Some(ContentBlock::ToolCall {
                    id: id.clone(),
                    name: name.clone(),
                    arguments: parse_partial(so_far).unwrap_or(serde_json::Value::Null),
                }),
                block => block.clone(),
            })
            .collect();
        Message {
            role: Role::Assistant,
            content,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn an_error_event_serializes_with_its_partial_message() {
        let event = Event::Error {
            error: ProviderError::Truncated {
                reason: "connection reset".into(),
            },
            partial: Some(Message {
                role: Role::Assistant,
                content: vec![ContentBlock::text("Hel")],
            }),
        };
        let json = serde_json::to_value(&event).unwrap();
        assert_eq!(json["type"], "error");
        assert_eq!(json["error"], "stream truncated: connection reset");
        assert_eq!(json["partial"]["content"][0]["text"], "Hel");
        let bare = serde_json::to_value(Event::error(ProviderError::Cancelled)).unwrap();
        assert_eq!(
            bare,
            serde_json::json!({"type": "error", "error": "request cancelled"})
        );
    }

    #[test]
    fn assembler_builds_blocks_in_index_order() {
        let mut a = MessageAssembler::new();
        let events = [
            Event::ThinkingDelta {
                index: 0,
                text: "hm".into(),
                signature: None,
            },
            Event::ThinkingDelta {
                index: 0,
                text: String::new(),
                signature: Some("sig".into()),
            },
            Event::TextDelta {
                index: 1,
                text: "Hel".into(),
            },
            Event::TextDelta {
                index: 1,
                text: "lo".into(),
            },
            Event::ToolCallStart {
                index: 2,
                id: "c1".into(),
                name: "read".into(),
            },
            Event::ToolCallDelta {
                index: 2,
                arguments: "{\"pa".into(),
            },
            Event::ToolCallDelta {
                index: 2,
                arguments: "th\":\"a\"}".into(),
            },
        ];
        for e in &events {
            a.push(e);
        }
        assert_eq!(a.partial_arguments(2), Some("{\"path\":\"a\"}"));
        a.push(&Event::ToolCallStart {
            index: 3,
            id: "c2".into(),
            name: "bash".into(),
        });
        a.push(&Event::ToolCallDelta {
            index: 3,
            arguments: "{\"command\":\"l".into(),
        });
        assert_eq!(
            a.message().content.last(),
            Some(&ContentBlock::ToolCall {
                id: "c2".into(),
                name: "bash".into(),
                arguments: serde_json::json!({"command": "l"})
            }),
            "an open call shows its arguments so far"
        );
        a.push(&Event::ToolCallEnd {
            index: 2,
            id: "c1".into(),
            name: "read".into(),
            arguments: serde_json::json!({"path": "a"}),
        });
        assert_eq!(
            a.message().content,
            vec![
                ContentBlock::Thinking {
                    text: "hm".into(),
                    signature: Some("sig".into()),
                    redacted: false
                },
                ContentBlock::text("Hello"),
                ContentBlock::ToolCall {
                    id: "c1".into(),
                    name: "read".into(),
                    arguments: serde_json::json!({"path": "a"})
                },
                ContentBlock::ToolCall {
                    id: "c2".into(),
                    name: "bash".into(),
                    arguments: serde_json::json!({"command": "l"})
                },
            ]
        );
    }
}
