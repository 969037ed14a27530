//! Builds the assistant message while emitting the matching [`Event`]s, for every protocol.
//!
//! Protocols name content blocks their own way (Anthropic's block index, OpenAI's tool-call
//! index, Gemini's part order); the builder maps each provider key to a dense position in the
//! assembled message, in order of first appearance, so `Event` indexes are message positions.

use serde_json::Value;

use super::partial_json::{ArgumentsError, parse_arguments, parse_partial};
use crate::event::Event;
use crate::request::{ContentBlock, Message, Role};

#[derive(Debug, Clone)]
enum Block {
    Text(String),
    Thinking {
        text: String,
        signature: Option<String>,
        redacted: bool,
    },
    ToolCall {
        id: String,
        name: String,
        arguments: String,
        parsed: Option<Value>,
    },
    /// A block kept whole for its provider ([`ContentBlock::ProviderItem`]); `input` collects
    /// streamed JSON input (a server tool's), set into the block when it ends.
    Item {
        api: &'static str,
        item: Value,
        input: String,
    },
}

/// The assistant message under construction, keyed by the provider's block keys.
#[derive(Debug, Clone, Default)]
pub struct MessageBuilder {
    keys: Vec<u64>,
    blocks: Vec<Block>,
}

impl MessageBuilder {
    /// An empty message.
    pub fn new() -> Self {
        Self::default()
    }

    /// Message position of provider key `key`, if a block was opened for it.
    pub fn position(&self, key: u64) -> Option<usize> {
        // Few blocks per message: a linear scan beats a map.
        self.keys.iter().rposition(|k| *k == key)
    }

    fn open(&mut self, key: u64, block: Block) -> usize {
        self.keys.push(key);
        self.blocks.push(block);
        self.blocks.len() - 1
    }

    /// Appends answer text to the text block of `key` (opening it if needed).
    pub fn text(&mut self, key: u64, delta: &str, out: &mut Vec<Event>) {
        let index = match self.position(key) {
            Some(i) if matches!(self.blocks[i], Block::Text(_)) => i,
            _ => self.open(key, Block::Text(String::new())),
        };
        if let Block::Text(text) = &mut self.blocks[index] {
            text.push_str(delta);
        }
        if !delta.is_empty() {
            out.push(Event::TextDelta {
                index,
                text: delta.to_owned(),
            });
        }
    }

    fn thinking_index(&mut self, key: u64) -> usize {
        match self.position(key) {
            Some(i) if matches!(self.blocks[i], Block::Thinking { .. }) => i,
            _ => self.open(
                key,
                Block::Thinking {
                    text: String::new(),
                    signature: None,
                    redacted: false,
                },
            ),
        }
    }

    /// Opens an (empty) thinking block for `key`, so it keeps its place before any delta.
    pub fn open_thinking(&mut self, key: u64) {
        self.thinking_index(key);
    }

    /// Opens an (empty) text block for `key`.
    pub fn open_text(&mut self, key: u64) {
        if !matches!(
            self.position(key).map(|i| &self.blocks[i]),
            Some(Block::Text(_))
        ) {
            self.open(key, Block::Text(String::new()));
        }
    }

    /// Appends reasoning text to the thinking block of `key`.
    pub fn thinking(&mut self, key: u64, delta: &str, out: &mut Vec<Event>) {
        let index = self.thinking_index(key);
        if let Block::Thinking { text, .. } = &mut self.blocks[index] {
            text.push_str(delta);
        }
        if !delta.is_empty() {
            out.push(Event::ThinkingDelta {
                index,
                text: delta.to_owned(),
                signature: None,
            });
        }
    }

    /// Sets the opaque signature of the thinking block of `key` (replayed unchanged later).
    pub fn thinking_signature(&mut self, key: u64, value: &str, out: &mut Vec<Event>) {
        let index = self.thinking_index(key);
        if let Block::Thinking { signature, .. } = &mut self.blocks[index] {
            *signature = Some(value.to_owned());
        }
        out.push(Event::ThinkingDelta {
            index,
            text: String::new(),
            signature: Some(value.to_owned()),
        });
    }

    /// Records a redacted thinking block: no text, the encrypted payload kept as signature.
    pub fn redacted_thinking(&mut self, key: u64, data: &str, out: &mut Vec<Event>) {
        let index = self.open(
            key,
            Block::Thinking {
                text: String::new(),
                signature: Some(data.to_owned()),
                redacted: true,
            },
        );
        out.push(Event::ThinkingDelta {
            index,
            text: String::new(),
            signature: Some(data.to_owned()),
        });
    }

    /// Opens a block kept whole for `api` (a provider's own item, e.g. a server tool's use or
    /// result), replayed to that API as it came.
    pub fn item_start(&mut self, key: u64, api: &'static str, item: Value) {
        self.open(
            key,
            Block::Item {
                api,
                item,
                input: String::new(),
            },
        );
    }

    /// Whether `key` is a block kept whole.
    pub fn has_item(&self, key: u64) -> bool {
        self.position(key)
            .is_some_and(|i| matches!(self.blocks[i], Block::Item { .. }))
    }

    /// Appends streamed JSON input to the whole block of `key`.
    pub fn item_input_delta(&mut self, key: u64, delta: &str) {
        if let Some(i) = self.position(key)
            && let Block::Item { input, .. } = &mut self.blocks[i]
        {
            input.push_str(delta);
        }
    }

    /// Ends the whole block of `key`: streamed input, if any, becomes its `input` field.
    pub fn item_end(&mut self, key: u64) -> Result<(), ArgumentsError> {
        let Some(i) = self.position(key) else {
            return Ok(());
        };
        if let Block::Item { item, input, .. } = &mut self.blocks[i]
            && !input.is_empty()
        {
            let name = item
                .get("name")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned();
            let id = item
                .get("id")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned();
            item["input"] = parse_arguments(&id, &name, input)?;
            input.clear();
        }
        Ok(())
    }

    /// Opens a tool call for `key`.
    pub fn tool_call_start(&mut self, key: u64, id: &str, name: &str, out: &mut Vec<Event>) {
        let index = self.open(
            key,
            Block::ToolCall {
                id: id.to_owned(),
                name: name.to_owned(),
                arguments: String::new(),
                parsed: None,
            },
        );
        out.push(Event::ToolCallStart {
            index,
            id: id.to_owned(),
            name: name.to_owned(),
        });
    }

    /// Whether a tool call is open for `key`.
    pub fn has_tool_call(&self, key: u64) -> bool {
        self.position(key)
            .is_some_and(|i| matches!(self.blocks[i], Block::ToolCall { .. }))
    }

    /// Appends a raw argument fragment to the tool call of `key`; ignored if none is open.
    pub fn tool_call_delta(&mut self, key: u64, fragment: &str, out: &mut Vec<Event>) {
        let Some(index) = self.position(key) else {
            return;
        };
        if let Block::ToolCall { arguments, .. } = &mut self.blocks[index] {
            arguments.push_str(fragment);
            if !fragment.is_empty() {
                out.push(Event::ToolCallDelta {
                    index,
                    arguments: fragment.to_owned(),
                });
            }
        }
    }

    /// Fills in a late id or name of the tool call of `key` (some servers send them late).
    pub fn tool_call_identity(&mut self, key: u64, new_id: Option<&str>, new_name: Option<&str>) {
        if let Some(Block::ToolCall { id, name, .. }) =
            self.position(key).map(|i| &mut self.blocks[i])
        {
            if let Some(v) = new_id.filter(|v| !v.is_empty()) {
                v.clone_into(id);
            }
            if let Some(v) = new_name.filter(|v| !v.is_empty()) {
                name.push_str(v);
            }
        }
    }

    /// Closes the tool call of `key`: parses its arguments and emits `ToolCallEnd`.
    pub fn tool_call_end(&mut self, key: u64, out: &mut Vec<Event>) -> Result<(), ArgumentsError> {
        let Some(index) = self.position(key) else {
            return Ok(());
        };
        if let Block::ToolCall {
            id,
            name,
            arguments,
            parsed,
        } = &mut self.blocks[index]
        {
            if parsed.is_some() {
                return Ok(());
            }
            let value = parse_arguments(id, name, arguments)?;
            *parsed = Some(value.clone());
            out.push(Event::ToolCallEnd {
                index,
                id: id.clone(),
                name: name.clone(),
                arguments: value,
            });
        }
        Ok(())
    }

    /// Closes every tool call still open, in message order.
    pub fn end_all_tool_calls(&mut self, out: &mut Vec<Event>) -> Result<(), ArgumentsError> {
        for i in 0..self.blocks.len() {
            if matches!(self.blocks[i], Block::ToolCall { parsed: None, .. }) {
                let key = self.keys[i];
                self.tool_call_end(key, out)?;
            }
        }
        Ok(())
    }

    /// Raw arguments received so far for the tool call at message position `index`.
    pub fn partial_arguments(&self, index: usize) -> Option<&str> {
        match self.blocks.get(index) {
            Some(Block::ToolCall { arguments, .. }) => Some(arguments),
            _ => None,
        }
    }

    /// Best-effort parse of the arguments so far at message position `index`, for display.
    pub fn partial_arguments_value(&self, index: usize) -> Option<Value> {
        self.partial_arguments(index).and_then(parse_partial)
    }

    /// Whether any tool call was made.
    pub fn has_tool_calls(&self) -> bool {
        self.blocks
            .iter()
            .any(|b| matches!(b, Block::ToolCall { .. }))
    }

    /// The message so far; a tool call not yet closed carries its best-effort arguments.
    pub fn message(&self) -> Message {
        let content = self
            .blocks
            .iter()
            .filter_map(|b| match b {
                Block::Text(text) if text.is_empty() => None,
                Block::Text(text) => Some(ContentBlock::text(text.clone())),
                Block::Thinking {
                    text,
                    signature,
                    redacted,
                } => {
                    if text.is_empty() && signature.is_none() {
                        return None;
                    }
                    Some(ContentBlock::Thinking {
                        text: text.clone(),
                        signature: signature.clone(),
                        redacted: *redacted,
                    })
                }
                Block::ToolCall {
                    id,
                    name,
                    arguments,
                    parsed,
                } => Some(ContentBlock::ToolCall {
                    id: id.clone(),
                    name: name.clone(),
                    arguments: parsed
                        .clone()
                        .or_else(|| parse_partial(arguments))
                        .unwrap_or(Value::Null),
                }),
                Block::Item { api, item, .. } => Some(ContentBlock::ProviderItem {
                    api: (*api).to_owned(),
                    item: item.clone(),
                }),
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
    use serde_json::json;

    #[test]
    fn interleaved_keys_get_dense_positions() {
        let mut b = MessageBuilder::new();
        let mut out = Vec::new();
        b.thinking(0, "hm", &mut out);
        b.thinking_signature(0, "sig", &mut out);
        b.redacted_thinking(1, "enc", &mut out);
        b.tool_call_start(7, "c1", "read", &mut out);
        b.tool_call_start(9, "c2", "bash", &mut out);
        b.tool_call_delta(7, "{\"path\":", &mut out);
        b.tool_call_delta(9, "{\"command\":\"ls\"}", &mut out);
        b.tool_call_delta(7, "\"a\"}", &mut out);
        assert_eq!(b.partial_arguments_value(2), Some(json!({"path": "a"})));
        b.end_all_tool_calls(&mut out).unwrap();
        b.text(20, "", &mut out);
        assert_eq!(
            b.message().content,
            vec![
                ContentBlock::Thinking {
                    text: "hm".into(),
                    signature: Some("sig".into()),
                    redacted: false
                },
                ContentBlock::Thinking {
                    text: String::new(),
                    signature: Some("enc".into()),
                    redacted: true
                },
                ContentBlock::ToolCall {
                    id: "c1".into(),
                    name: "read".into(),
                    arguments: json!({"path": "a"})
                },
                ContentBlock::ToolCall {
                    id: "c2".into(),
                    name: "bash".into(),
                    arguments: json!({"command": "ls"})
                },
            ]
        );
        let ends: Vec<usize> = out
            .iter()
            .filter_map(|e| match e {
                Event::ToolCallEnd { index, .. } => Some(*index),
                _ => None,
            })
            .collect();
        assert_eq!(ends, vec![2, 3]);
    }

    #[test]
    fn invalid_final_arguments_name_the_call() {
        let mut b = MessageBuilder::new();
        let mut out = Vec::new();
        b.tool_call_start(0, "c9", "edit", &mut out);
        b.tool_call_delta(0, "{\"path\": \"x", &mut out);
        let err = b.tool_call_end(0, &mut out).unwrap_err();
        assert_eq!(err.name, "edit");
        assert_eq!(err.id, "c9");
    }
}
