//! Agent messages (`message` entries' payload) with Pi's field names.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::serde_util::{exact_vec, fields_deserialize, js_number, present, tagged_deserialize};
use crate::shape::{Kind, Shaped};

/// Fields a struct does not know, kept so that re-serializing it loses nothing.
pub type Extra = Map<String, Value>;

/// One message of the conversation, by `role`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "role")]
#[expect(
    clippy::large_enum_variant,
    reason = "messages are matched on far more than moved; boxing would only add indirection"
)]
pub enum AgentMessage {
    /// `role: "user"`.
    #[serde(rename = "user")]
    User(UserMessage),
    /// `role: "assistant"`.
    #[serde(rename = "assistant")]
    Assistant(AssistantMessage),
    /// `role: "toolResult"`.
    #[serde(rename = "toolResult")]
    ToolResult(ToolResultMessage),
    /// `role: "bashExecution"`: a `!cmd` run by the user.
    #[serde(rename = "bashExecution")]
    BashExecution(BashExecutionMessage),
    /// `role: "custom"` (legacy `hookMessage` in v2 files): an extension's message.
    #[serde(rename = "custom")]
    Custom(CustomMessage),
    /// `role: "system"` (Pi 1.x): the system prompt and tools, or a patch of them.
    #[serde(rename = "system")]
    System(SystemMessage),
    /// `role: "branchSummary"`: produced by context building, never stored by Pi.
    #[serde(rename = "branchSummary")]
    BranchSummary(BranchSummaryMessage),
    /// `role: "compactionSummary"`: produced by context building, never stored by Pi.
    #[serde(rename = "compactionSummary")]
    CompactionSummary(CompactionSummaryMessage),
    /// Any other role, kept as raw JSON (role included).
    #[serde(untagged)]
    Unknown(Map<String, Value>),
}

tagged_deserialize!(AgentMessage, "role", {
    "user" => User(UserMessage),
    "assistant" => Assistant(AssistantMessage),
    "toolResult" => ToolResult(ToolResultMessage),
    "bashExecution" => BashExecution(BashExecutionMessage),
    "custom" => Custom(CustomMessage),
    "system" => System(SystemMessage),
    "branchSummary" => BranchSummary(BranchSummaryMessage),
    "compactionSummary" => CompactionSummary(CompactionSummaryMessage),
});

impl AgentMessage {
    /// The `role` string as written in JSON.
    pub fn role(&self) -> &str {
        match self {
            Self::User(_) => "user",
            Self::Assistant(_) => "assistant",
            Self::ToolResult(_) => "toolResult",
            Self::BashExecution(_) => "bashExecution",
            Self::Custom(_) => "custom",
            Self::System(_) => "system",
            Self::BranchSummary(_) => "branchSummary",
            Self::CompactionSummary(_) => "compactionSummary",
            Self::Unknown(map) => map.get("role").and_then(Value::as_str).unwrap_or(""),
        }
    }

    /// The message's own `timestamp` (Unix milliseconds), when it has one.
    pub fn timestamp(&self) -> Option<i64> {
        match self {
            Self::User(m) => Some(m.timestamp),
            Self::Assistant(m) => Some(m.timestamp),
            Self::ToolResult(m) => Some(m.timestamp),
            Self::BashExecution(m) => Some(m.timestamp),
            Self::Custom(m) => Some(m.timestamp),
            Self::System(m) => Some(m.timestamp),
            Self::BranchSummary(m) => Some(m.timestamp),
            Self::CompactionSummary(m) => Some(m.timestamp),
            Self::Unknown(map) => map.get("timestamp").and_then(Value::as_i64),
        }
    }

    /// The message as a JSON value, exactly the fields it holds (Pi's shape).
    pub fn to_json(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }
}

/// Text or a list of blocks, as user and custom messages allow.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum MessageContent {
    /// Plain text.
    Text(String),
    /// Text and image blocks.
    Blocks(Vec<ContentBlock>),
}

/// By the JSON value's own type: `#[serde(untagged)]` would first copy the whole content into
/// serde's buffer and then try each variant on the copy, for every user message.
impl<'de> Deserialize<'de> for MessageContent {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct ContentVisitor;

        impl<'de> serde::de::Visitor<'de> for ContentVisitor {
            type Value = MessageContent;

            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a string or a list of content blocks")
            }

            fn visit_str<E: serde::de::Error>(self, text: &str) -> Result<Self::Value, E> {
                Ok(MessageContent::Text(text.to_owned()))
            }

            fn visit_string<E: serde::de::Error>(self, text: String) -> Result<Self::Value, E> {
                Ok(MessageContent::Text(text))
            }

            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                access: A,
            ) -> Result<Self::Value, A::Error> {
                exact_vec(serde::de::value::SeqAccessDeserializer::new(access))
                    .map(MessageContent::Blocks)
            }
        }

        deserializer.deserialize_any(ContentVisitor)
    }
}

/// As its `Deserialize`: a string, or a list of blocks.
impl Shaped for MessageContent {
    const KIND: Kind = Kind::TextOrList {
        item: &ContentBlock::KIND,
    };
}

impl MessageContent {
    /// The text blocks joined with `sep` (the string itself for plain text).
    pub fn text_joined(&self, sep: &str) -> String {
        match self {
            Self::Text(text) => text.clone(),
            Self::Blocks(blocks) => join_text(blocks, sep),
        }
    }
}

/// The text blocks of `blocks` joined with `sep`.
pub fn join_text(blocks: &[ContentBlock], sep: &str) -> String {
    let mut out = String::new();
    for block in blocks {
        if let ContentBlock::Text(text) = block {
            if !out.is_empty() {
                out.push_str(sep);
            }
            out.push_str(&text.text);
        }
    }
    out
}

/// One block of message content, by `type`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type")]
pub enum ContentBlock {
    /// `type: "text"`.
    #[serde(rename = "text")]
    Text(TextContent),
    /// `type: "thinking"`.
    #[serde(rename = "thinking")]
    Thinking(ThinkingContent),
    /// `type: "image"`.
    #[serde(rename = "image")]
    Image(ImageContent),
    /// `type: "toolCall"`.
    #[serde(rename = "toolCall")]
    ToolCall(ToolCall),
    /// Any other block type, kept as raw JSON (type included).
    #[serde(untagged)]
    Unknown(Map<String, Value>),
}

tagged_deserialize!(ContentBlock, "type", checked {
    "text" => Text(TextContent),
    "thinking" => Thinking(ThinkingContent),
    "image" => Image(ImageContent),
    "toolCall" => ToolCall(ToolCall),
});

// The types a message line is made of, read without serde's flatten buffer (see
// `fields_deserialize`); the rest derive `Deserialize`.
fields_deserialize!(TextContent {
    text: String = "text" required,
    text_signature: Option<String> = "textSignature" default,
});
fields_deserialize!(ThinkingContent {
    thinking: String = "thinking" required,
    thinking_signature: Option<String> = "thinkingSignature" default,
    redacted: Option<bool> = "redacted" default,
});
fields_deserialize!(ImageContent {
    data: String = "data" required,
    mime_type: String = "mimeType" required,
});
fields_deserialize!(ToolCall {
    id: String = "id" required,
    name: String = "name" required,
    arguments: Value = "arguments" default,
    thought_signature: Option<String> = "thoughtSignature" default,
});
fields_deserialize!(UserMessage {
    content: MessageContent = "content" required,
    timestamp: i64 = "timestamp" default,
});
fields_deserialize!(Usage {
    input: u64 = "input" default,
    output: u64 = "output" default,
    cache_read: u64 = "cacheRead" default,
    cache_write: u64 = "cacheWrite" default,
    total_tokens: u64 = "totalTokens" default,
    cost: Cost = "cost" default,
});
fields_deserialize!(Cost {
    input: f64 = "input" default,
    output: f64 = "output" default,
    cache_read: f64 = "cacheRead" default,
    cache_write: f64 = "cacheWrite" default,
    total: f64 = "total" default,
});
fields_deserialize!(AssistantMessage {
    content: Vec<ContentBlock> = "content" required with exact_vec,
    api: String = "api" default,
    provider: String = "provider" default,
    model: String = "model" default,
    usage: Usage = "usage" default,
    stop_reason: StopReason = "stopReason" required,
    error_message: Option<String> = "errorMessage" default,
    thinking_level: Option<String> = "thinkingLevel" default,
    timestamp: i64 = "timestamp" default,
});
fields_deserialize!(BashExecutionMessage {
    command: String = "command" required,
    output: String = "output" default,
    exit_code: Option<Option<i64>> = "exitCode" default with present,
    cancelled: bool = "cancelled" default,
    truncated: bool = "truncated" default,
    full_output_path: Option<String> = "fullOutputPath" default,
    timestamp: i64 = "timestamp" default,
    exclude_from_context: Option<bool> = "excludeFromContext" default,
});
fields_deserialize!(CustomMessage {
    custom_type: String = "customType" required,
    content: MessageContent = "content" required,
    display: bool = "display" default,
    details: Option<Value> = "details" default with present,
    timestamp: i64 = "timestamp" default,
});
fields_deserialize!(ToolResultMessage {
    tool_call_id: String = "toolCallId" required,
    tool_name: String = "toolName" default,
    content: Vec<ContentBlock> = "content" required with exact_vec,
    details: Option<Value> = "details" default with present,
    is_error: bool = "isError" default,
    timestamp: i64 = "timestamp" default,
});

/// A text block.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TextContent {
    /// The text.
    pub text: String,
    /// Provider signature bound to this text (OpenAI Responses item id and similar).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text_signature: Option<String>,
    /// Unknown fields, kept.
    #[serde(flatten)]
    pub extra: Extra,
}

/// A reasoning block.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ThinkingContent {
    /// The reasoning text (empty when redacted).
    pub thinking: String,
    /// Provider signature that must ride back with this block.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub thinking_signature: Option<String>,
    /// Set when the provider redacted the reasoning (the signature holds the opaque payload).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub redacted: Option<bool>,
    /// Unknown fields, kept.
    #[serde(flatten)]
    pub extra: Extra,
}

/// An image block (base64 data).
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ImageContent {
    /// Base64-encoded bytes.
    pub data: String,
    /// MIME type, e.g. `image/png`.
    pub mime_type: String,
    /// Unknown fields, kept.
    #[serde(flatten)]
    pub extra: Extra,
}

/// A tool call made by the assistant.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolCall {
    /// The call id the result refers to.
    pub id: String,
    /// The tool's name.
    pub name: String,
    /// The arguments object.
    pub arguments: Value,
    /// Gemini's opaque signature for this call.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub thought_signature: Option<String>,
    /// Unknown fields, kept.
    #[serde(flatten)]
    pub extra: Extra,
}

/// A message from the user.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct UserMessage {
    /// Text or text/image blocks.
    pub content: MessageContent,
    /// Unix milliseconds.
    pub timestamp: i64,
    /// Unknown fields, kept.
    #[serde(flatten)]
    pub extra: Extra,
}

/// Why the assistant stopped.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum StopReason {
    /// `stop`: finished its turn.
    Stop,
    /// `length`: hit the output limit.
    Length,
    /// `toolUse`: wants tool results.
    ToolUse,
    /// `error`: the request failed (dropped from later requests).
    Error,
    /// `aborted`: the user stopped it (dropped from later requests).
    Aborted,
    /// Any other value, kept.
    Other(String),
}

impl StopReason {
    /// The JSON string.
    pub fn as_str(&self) -> &str {
        match self {
            Self::Stop => "stop",
            Self::Length => "length",
            Self::ToolUse => "toolUse",
            Self::Error => "error",
            Self::Aborted => "aborted",
            Self::Other(other) => other,
        }
    }
}

impl Serialize for StopReason {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

/// Any string is a stop reason.
impl Shaped for StopReason {
    const KIND: Kind = Kind::Str;
}

impl<'de> Deserialize<'de> for StopReason {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        Ok(match text.as_str() {
            "stop" => Self::Stop,
            "length" => Self::Length,
            "toolUse" => Self::ToolUse,
            "error" => Self::Error,
            "aborted" => Self::Aborted,
            _ => Self::Other(text),
        })
    }
}

/// Token counts and cost of one assistant response.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Usage {
    /// Uncached input tokens.
    pub input: u64,
    /// Output tokens.
    pub output: u64,
    /// Input tokens read from the cache.
    pub cache_read: u64,
    /// Input tokens written to the cache.
    pub cache_write: u64,
    /// Sum of the above as the provider reported it.
    pub total_tokens: u64,
    /// Cost in dollars.
    pub cost: Cost,
    /// Unknown fields, kept.
    #[serde(flatten)]
    pub extra: Extra,
}

/// Cost of one response in dollars, by part.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Cost {
    /// Uncached input.
    #[serde(serialize_with = "js_number")]
    pub input: f64,
    /// Output.
    #[serde(serialize_with = "js_number")]
    pub output: f64,
    /// Cache reads.
    #[serde(serialize_with = "js_number")]
    pub cache_read: f64,
    /// Cache writes.
    #[serde(serialize_with = "js_number")]
    pub cache_write: f64,
    /// Total.
    #[serde(serialize_with = "js_number")]
    pub total: f64,
    /// Unknown fields, kept.
    #[serde(flatten)]
    pub extra: Extra,
}

/// A response from the model.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AssistantMessage {
    /// Text, thinking and tool-call blocks.
    pub content: Vec<ContentBlock>,
    /// The wire API that produced it (`anthropic-messages`, `openai-responses`, …); empty
    /// when the file had none (written back without the field, as Pi does).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub api: String,
    /// Provider name (empty when the file had none: written back without it).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub provider: String,
    /// Model id (empty when the file had none: written back without it).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub model: String,
    /// Token counts and cost.
    pub usage: Usage,
    /// Why it stopped.
    pub stop_reason: StopReason,
    /// The error text for `error` and `aborted` stops.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error_message: Option<String>,
    /// The thinking level the agent asked for this response (`off` … `xhigh`); absent in
    /// files from before Pi 1.x.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub thinking_level: Option<String>,
    /// Unix milliseconds.
    pub timestamp: i64,
    /// Unknown fields (e.g. `responseId`, `diagnostics`), kept.
    #[serde(flatten)]
    pub extra: Extra,
}

impl AssistantMessage {
    /// The tool calls in this response, in order.
    pub fn tool_calls(&self) -> impl Iterator<Item = &ToolCall> {
        self.content.iter().filter_map(|block| match block {
            ContentBlock::ToolCall(call) => Some(call),
            _ => None,
        })
    }
}

/// The result of one tool call.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolResultMessage {
    /// The id of the call this answers.
    pub tool_call_id: String,
    /// The tool's name.
    pub tool_name: String,
    /// Text and image blocks.
    pub content: Vec<ContentBlock>,
    /// Tool-specific data for the UI, never sent to the model.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub details: Option<Value>,
    /// Whether the tool failed.
    pub is_error: bool,
    /// Unix milliseconds.
    pub timestamp: i64,
    /// Unknown fields, kept.
    #[serde(flatten)]
    pub extra: Extra,
}

/// A shell command the user ran with `!cmd`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct BashExecutionMessage {
    /// The command line.
    pub command: String,
    /// Its output.
    pub output: String,
    /// Exit code; `Some(None)` is a JSON `null` (cancelled), `None` an absent field.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<Option<i64>>,
    /// Whether the user cancelled it.
    pub cancelled: bool,
    /// Whether the output was cut.
    pub truncated: bool,
    /// Where the full output was saved.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub full_output_path: Option<String>,
    /// Unix milliseconds.
    pub timestamp: i64,
    /// Set for `!!cmd`: kept in the session but never sent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exclude_from_context: Option<bool>,
    /// Unknown fields, kept.
    #[serde(flatten)]
    pub extra: Extra,
}

/// An extension's message in the conversation.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CustomMessage {
    /// The extension's identifier.
    pub custom_type: String,
    /// Text or text/image blocks.
    pub content: MessageContent,
    /// Whether the UI shows it.
    pub display: bool,
    /// Extension data, never sent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub details: Option<Value>,
    /// Unix milliseconds.
    pub timestamp: i64,
    /// Unknown fields, kept.
    #[serde(flatten)]
    pub extra: Extra,
}

/// The summary of an abandoned branch, as context building emits it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BranchSummaryMessage {
    /// The summary text.
    pub summary: String,
    /// The `fromId` of the branch summary entry.
    pub from_id: String,
    /// Unix milliseconds.
    #[serde(default)]
    pub timestamp: i64,
    /// Unknown fields, kept.
    #[serde(flatten)]
    pub extra: Extra,
}

/// The summary of compacted history, as context building emits it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CompactionSummaryMessage {
    /// The summary text.
    pub summary: String,
    /// Context tokens before compaction.
    #[serde(default)]
    pub tokens_before: u64,
    /// Unix milliseconds.
    #[serde(default)]
    pub timestamp: i64,
    /// Unknown fields, kept.
    #[serde(flatten)]
    pub extra: Extra,
}

/// A tool named by a system message's `toolsRemoved`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ToolReference {
    /// The tool's name.
    pub name: String,
    /// Unknown fields, kept.
    #[serde(flatten)]
    pub extra: Extra,
}

/// Pi 1.x's system message: the prompt and tools at one point of the conversation.
///
/// The first one on a path declares every section and tool; later ones patch: `content`
/// adds instructions, `sections` replace sections by name (`null` removes one), and
/// `toolsAdded` / `toolsRemoved` change the tool set.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SystemMessage {
    /// Instruction text (Pi reads a missing or `null` one as empty).
    #[serde(default = "empty_text", deserialize_with = "text_or_null")]
    pub content: MessageContent,
    /// Section name → its full new text, `null` to remove it; in the order written.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sections: Option<Map<String, Value>>,
    /// Complete definitions of the tools that become available here.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools_added: Option<Vec<crate::entry::ToolDefinition>>,
    /// Tools that stop being available here.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools_removed: Option<Vec<ToolReference>>,
    /// Unix milliseconds.
    #[serde(default)]
    pub timestamp: i64,
    /// Unknown fields, kept.
    #[serde(flatten)]
    pub extra: Extra,
}

fn empty_text() -> MessageContent {
    MessageContent::Text(String::new())
}

fn text_or_null<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> Result<MessageContent, D::Error> {
    Ok(Option::<MessageContent>::deserialize(deserializer)?.unwrap_or_else(empty_text))
}

impl SystemMessage {
    /// A system message of sections and tool changes with no instruction text.
    pub fn new(
        sections: impl IntoIterator<Item = (String, Option<String>)>,
        tools_added: Vec<crate::entry::ToolDefinition>,
        tools_removed: Vec<String>,
        timestamp: i64,
    ) -> Self {
        let sections: Map<String, Value> = sections
            .into_iter()
            .map(|(name, text)| (name, text.map_or(Value::Null, Value::String)))
            .collect();
        Self {
            content: empty_text(),
            sections: (!sections.is_empty()).then_some(sections),
            tools_added: (!tools_added.is_empty()).then_some(tools_added),
            tools_removed: (!tools_removed.is_empty()).then(|| {
                tools_removed
                    .into_iter()
                    .map(|name| ToolReference {
                        name,
                        extra: Extra::new(),
                    })
                    .collect()
            }),
            timestamp,
            extra: Extra::new(),
        }
    }

    /// Each section it sets (`Some(text)`) or removes (`None`), in the order written. A
    /// value that is neither text nor `null` counts as its JSON text.
    pub fn section_changes(&self) -> impl Iterator<Item = (&str, Option<String>)> {
        self.sections.iter().flatten().map(|(name, value)| {
            let text = match value {
                Value::Null => None,
                Value::String(text) => Some(text.clone()),
                other => Some(other.to_string()),
            };
            (name.as_str(), text)
        })
    }

    /// The tools it declares.
    pub fn tools_added(&self) -> &[crate::entry::ToolDefinition] {
        self.tools_added.as_deref().unwrap_or_default()
    }

    /// The names of the tools it withdraws.
    pub fn tools_removed(&self) -> impl Iterator<Item = &str> {
        self.tools_removed
            .iter()
            .flatten()
            .map(|tool| tool.name.as_str())
    }

    /// Its instruction text (text blocks joined by newlines).
    pub fn instructions(&self) -> String {
        self.content.text_joined("\n")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_is_read_by_its_json_type() {
        let text: MessageContent = serde_json::from_str(r#""a \"b\"\nc""#).unwrap();
        assert_eq!(text, MessageContent::Text("a \"b\"\nc".into()));
        let blocks: MessageContent =
            serde_json::from_str(r#"[{"type":"text","text":"hi"},{"type":"x","y":1}]"#).unwrap();
        let MessageContent::Blocks(blocks) = &blocks else {
            panic!("blocks: {blocks:?}")
        };
        assert_eq!(blocks.len(), 2);
        assert_eq!(blocks.capacity(), 2, "no spare capacity kept");
        assert!(matches!(&blocks[1], ContentBlock::Unknown(map) if map["y"] == 1));
        // It writes back as it was read.
        let back = serde_json::to_string(&MessageContent::Blocks(blocks.clone())).unwrap();
        assert_eq!(back, r#"[{"type":"text","text":"hi"},{"type":"x","y":1}]"#);
        let error = serde_json::from_str::<MessageContent>("42").unwrap_err();
        assert!(
            error
                .to_string()
                .contains("expected a string or a list of content blocks"),
            "{error}"
        );
    }
}
