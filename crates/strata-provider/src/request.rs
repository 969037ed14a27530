//! The provider-neutral request: three chapters (tools, system, messages) plus cache breakpoints.
//!
//! Field order in every type here is part of the contract: rendered requests are hashed and
//! compared byte for byte, so serde output must not depend on anything but the values.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// One request to a model, in the order a prefix cache sees it: tools, system, messages.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Request {
    /// Chapter 1: every tool declared so far, in declaration order.
    pub tools: Vec<ToolDefinition>,
    /// Chapter 2: the system prompt, as blocks in a fixed order.
    pub system: Vec<SystemBlock>,
    /// Chapter 3: the conversation, including mid-conversation system messages.
    pub messages: Vec<Message>,
    /// Where the prefix cache should be written; adapters map or drop these.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub breakpoints: Vec<Breakpoint>,
    /// Routing key for providers with a cache-key parameter (usually the session id).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_key: Option<String>,
    /// Model id as the provider knows it (without the `provider/` prefix).
    pub model: String,
    /// Requested reasoning effort.
    #[serde(default)]
    pub thinking: ThinkingLevel,
    /// Output token cap; `None` lets the adapter use the model's maximum.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u32>,
    /// Whose wire shape the adapter writes: strata's, or the harness's that wrote the session.
    #[serde(default, skip_serializing_if = "Dialect::is_strata")]
    pub dialect: Dialect,
    /// Indices into `messages` of system messages meant for one turn: shown until the next
    /// user message, kept in the array after it so the cached prefix holds (Anthropic
    /// `clear_at: "next_user_message"` where the row has `Capabilities::system_clear_at`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub transient: Vec<usize>,
}

/// Whose bytes a request is rendered in. A prefix cache is keyed by bytes, so a session
/// another harness wrote is read from the cache only if the request repeats that harness's
/// shapes for the same content (how the system prompt is split, the key order of a tool's
/// schema, a tool result's form); strata's own sessions keep strata's shapes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Dialect {
    /// strata's own shapes.
    #[default]
    Strata,
    /// Pi 1.x's: the system prompt as one block, and each adapter's own Pi wire forms.
    Pi,
}

impl Dialect {
    /// Whether this is strata's own dialect (the default, left out of serialized requests).
    pub fn is_strata(&self) -> bool {
        *self == Self::Strata
    }
}

impl Request {
    /// A request for `model` with empty chapters, no breakpoints and thinking off.
    pub fn new(model: impl Into<String>) -> Self {
        Self {
            tools: Vec::new(),
            system: Vec::new(),
            messages: Vec::new(),
            breakpoints: Vec::new(),
            cache_key: None,
            model: model.into(),
            thinking: ThinkingLevel::Off,
            max_tokens: None,
            dialect: Dialect::Strata,
            transient: Vec::new(),
        }
    }

    /// The whole system chapter as one string, blocks joined by a blank line.
    pub fn system_text(&self) -> String {
        let parts: Vec<&str> = self.system.iter().map(|b| b.text.as_str()).collect();
        parts.join("\n\n")
    }
}

/// A tool the model may call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ToolDefinition {
    /// Name the model calls the tool by.
    pub name: String,
    /// What the tool does, for the model.
    pub description: String,
    /// JSON Schema of the arguments object.
    pub parameters: serde_json::Value,
    /// Declared but loaded only on demand (tool search); keeps the tools chapter stable.
    #[serde(default, skip_serializing_if = "is_false")]
    pub defer_loading: bool,
}

/// Name of the tool entry that stands for the provider's own tool search (Anthropic's
/// `tool_search_tool_regex`, OpenAI's hosted `tool_search`): the renderer declares it from a
/// chain's first request when tools are deferred for search, and each wire writes the
/// provider's search tool in its place.
pub const TOOL_SEARCH_TOOL: &str = "__strata_tool_search__";

impl ToolDefinition {
    /// The entry standing for the provider's tool search ([`TOOL_SEARCH_TOOL`]).
    pub fn tool_search() -> Self {
        Self {
            name: TOOL_SEARCH_TOOL.to_owned(),
            description:
                "The provider's tool search: finds deferred tools by name and description."
                    .to_owned(),
            parameters: serde_json::json!({"type": "object", "properties": {}}),
            defer_loading: false,
        }
    }

    /// Whether this is the entry standing for the provider's tool search.
    pub fn is_tool_search(&self) -> bool {
        self.name == TOOL_SEARCH_TOOL
    }
}

/// One block of the system chapter.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SystemBlock {
    /// Section name the block came from (`intro`, `tools`, `rules`, …), for diagnostics.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub section: Option<String>,
    /// The text sent to the provider.
    pub text: String,
}

impl SystemBlock {
    /// A block with text and no section name.
    pub fn text(text: impl Into<String>) -> Self {
        Self {
            section: None,
            text: text.into(),
        }
    }

    /// A block carrying a section name.
    pub fn section(section: impl Into<String>, text: impl Into<String>) -> Self {
        Self {
            section: Some(section.into()),
            text: text.into(),
        }
    }
}

/// Who said a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// The person (or a tool result, which providers count as user input).
    User,
    /// The model.
    Assistant,
    /// A mid-conversation system message (a system-prompt patch or tool change).
    System,
}

/// One message of the conversation chapter.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Message {
    /// Speaker.
    pub role: Role,
    /// Ordered content blocks.
    pub content: Vec<ContentBlock>,
}

impl Message {
    /// A user message holding one text block.
    pub fn user_text(text: impl Into<String>) -> Self {
        Self {
            role: Role::User,
            content: vec![ContentBlock::text(text)],
        }
    }

    /// An assistant message holding one text block.
    pub fn assistant_text(text: impl Into<String>) -> Self {
        Self {
            role: Role::Assistant,
            content: vec![ContentBlock::text(text)],
        }
    }

    /// A mid-conversation system message holding one text block.
    pub fn system_text(text: impl Into<String>) -> Self {
        Self {
            role: Role::System,
            content: vec![ContentBlock::text(text)],
        }
    }

    /// Concatenated text of the message's text blocks.
    pub fn text(&self) -> String {
        let mut out = String::new();
        for block in &self.content {
            if let ContentBlock::Text { text, .. } = block {
                out.push_str(text);
            }
        }
        out
    }

    /// The non-empty text blocks as one string, a blank line between blocks, so that separate
    /// blocks (a patch's sections, text before and after a tool call) do not run together
    /// where a wire takes a single string.
    pub fn joined_text(&self) -> String {
        let blocks: Vec<&str> = self
            .content
            .iter()
            .filter_map(|block| match block {
                ContentBlock::Text { text, .. } if !text.is_empty() => Some(text.as_str()),
                _ => None,
            })
            .collect();
        blocks.join("\n\n")
    }

    /// The tool calls in this message, in order.
    pub fn tool_calls(&self) -> impl Iterator<Item = (&str, &str, &serde_json::Value)> {
        self.content.iter().filter_map(|b| match b {
            ContentBlock::ToolCall {
                id,
                name,
                arguments,
            } => Some((id.as_str(), name.as_str(), arguments)),
            _ => None,
        })
    }
}

/// A piece of message content.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ContentBlock {
    /// Plain text.
    Text {
        /// The text.
        text: String,
        /// The provider's own id for the text, kept where a wire sends it back: Pi's
        /// `textSignature` (on OpenAI Responses, the output message's id, which Pi replays).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        signature: Option<String>,
    },
    /// An inline image.
    Image {
        /// MIME type, e.g. `image/png`.
        media_type: String,
        /// Base64-encoded bytes.
        data: String,
    },
    /// Model reasoning; the signature is opaque provider state that must ride along unchanged.
    Thinking {
        /// Reasoning text (empty when redacted).
        text: String,
        /// Provider signature (Anthropic signature, Gemini thoughtSignature, OpenAI encrypted reasoning).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        signature: Option<String>,
        /// The provider withheld the text; `signature` carries the encrypted payload.
        #[serde(default, skip_serializing_if = "is_false")]
        redacted: bool,
    },
    /// A call the model made to a tool.
    ToolCall {
        /// Provider-assigned call id.
        id: String,
        /// Tool name.
        name: String,
        /// Parsed arguments object.
        arguments: serde_json::Value,
    },
    /// The result of a tool call, sent back in a user message.
    ToolResult {
        /// Id of the call this answers.
        tool_call_id: String,
        /// Result content (text and images).
        content: Vec<ToolResultContent>,
        /// The tool failed; the content explains why.
        #[serde(default, skip_serializing_if = "is_false")]
        is_error: bool,
    },
    /// Tools offered from this point on (in a mid-conversation system message).
    ToolAddition {
        /// Full definitions; each is also declared in the tools chapter.
        tools: Vec<ToolDefinition>,
    },
    /// Tools withdrawn from this point on (in a mid-conversation system message).
    ToolRemoval {
        /// Names of the withdrawn tools.
        names: Vec<String>,
    },
    /// An item only its provider understands, replayed to that provider exactly as it came
    /// and to no other: a provider's own tool search (OpenAI Responses `tool_search_call` /
    /// `tool_search_output` items, Anthropic `server_tool_use` / `tool_search_tool_result`
    /// blocks), whose results must stand in the conversation unchanged for the cache to hold.
    ProviderItem {
        /// The wire API it came from (`openai-responses`, `anthropic-messages`).
        api: String,
        /// The item or block as the provider sent it (key order kept).
        item: serde_json::Value,
    },
}

/// The session block type of a [`ContentBlock::ProviderItem`]: `{"type": "providerItem",
/// "api": …, "item": …}` in an assistant message's content. Pi 1.x has no such block and
/// skips block types it does not know, so a session with them still opens in Pi.
pub const PROVIDER_ITEM_TYPE: &str = "providerItem";

impl ContentBlock {
    /// The session's JSON for a [`ContentBlock::ProviderItem`] (see [`PROVIDER_ITEM_TYPE`]).
    pub fn provider_item_json(
        api: &str,
        item: &serde_json::Value,
    ) -> serde_json::Map<String, serde_json::Value> {
        let mut map = serde_json::Map::new();
        map.insert("type".into(), PROVIDER_ITEM_TYPE.into());
        map.insert("api".into(), api.into());
        map.insert("item".into(), item.clone());
        map
    }

    /// The [`ContentBlock::ProviderItem`] a session block of [`PROVIDER_ITEM_TYPE`] holds.
    pub fn from_provider_item_json(
        map: &serde_json::Map<String, serde_json::Value>,
    ) -> Option<Self> {
        if map.get("type").and_then(serde_json::Value::as_str) != Some(PROVIDER_ITEM_TYPE) {
            return None;
        }
        Some(Self::ProviderItem {
            api: map.get("api")?.as_str()?.to_owned(),
            item: map.get("item")?.clone(),
        })
    }

    /// The provider item for `api`, when this block is one.
    pub fn provider_item(&self, api: &str) -> Option<&serde_json::Value> {
        match self {
            Self::ProviderItem { api: from, item } if from == api => Some(item),
            _ => None,
        }
    }

    /// A text block.
    pub fn text(text: impl Into<String>) -> Self {
        Self::Text {
            text: text.into(),
            signature: None,
        }
    }
}

/// Content allowed inside a tool result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ToolResultContent {
    /// Plain text.
    Text {
        /// The text.
        text: String,
    },
    /// An inline image.
    Image {
        /// MIME type, e.g. `image/png`.
        media_type: String,
        /// Base64-encoded bytes.
        data: String,
    },
}

/// Where a cache breakpoint sits: the prefix up to and including this point is cached.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "after", rename_all = "snake_case")]
pub enum BreakpointPosition {
    /// After the last tool definition.
    Tools,
    /// After the last system block.
    System,
    /// After message `index` (0-based, in `Request::messages`).
    Message {
        /// Index into `Request::messages`.
        index: usize,
    },
}

/// A cache breakpoint and how long the cached prefix should live.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
pub struct Breakpoint {
    /// Which chapter (and message) the breakpoint follows.
    #[serde(flatten)]
    pub position: BreakpointPosition,
    /// Requested lifetime of the cache entry.
    #[serde(default)]
    pub ttl: CacheTtl,
}

/// Lifetime of a prompt-cache entry.
#[derive(
    Debug,
    Clone,
    Copy,
    Default,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    Serialize,
    Deserialize,
    JsonSchema,
)]
pub enum CacheTtl {
    /// Five minutes, refreshed on each hit (Anthropic, Bedrock default).
    #[default]
    #[serde(rename = "5m")]
    FiveMinutes,
    /// Thirty minutes (OpenAI explicit breakpoints).
    #[serde(rename = "30m")]
    ThirtyMinutes,
    /// One hour (Anthropic, Bedrock extended).
    #[serde(rename = "1h")]
    OneHour,
    /// Twenty-four hours (OpenAI extended retention).
    #[serde(rename = "24h")]
    TwentyFourHours,
}

impl CacheTtl {
    /// The wire spelling (`5m`, `30m`, `1h`, `24h`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::FiveMinutes => "5m",
            Self::ThirtyMinutes => "30m",
            Self::OneHour => "1h",
            Self::TwentyFourHours => "24h",
        }
    }

    /// Lifetime in seconds.
    pub fn seconds(self) -> u64 {
        match self {
            Self::FiveMinutes => 300,
            Self::ThirtyMinutes => 1800,
            Self::OneHour => 3600,
            Self::TwentyFourHours => 86_400,
        }
    }
}

/// Reasoning effort, with Pi's names.
#[derive(
    Debug,
    Clone,
    Copy,
    Default,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    Serialize,
    Deserialize,
    JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum ThinkingLevel {
    /// No reasoning requested.
    #[default]
    Off,
    /// Smallest budget.
    Minimal,
    /// Low effort.
    Low,
    /// Medium effort.
    Medium,
    /// High effort.
    High,
    /// Extra-high effort (only some models).
    Xhigh,
}

impl ThinkingLevel {
    /// All levels, lowest first.
    pub const ALL: [ThinkingLevel; 6] = [
        Self::Off,
        Self::Minimal,
        Self::Low,
        Self::Medium,
        Self::High,
        Self::Xhigh,
    ];

    /// Pi's spelling of the level.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Off => "off",
            Self::Minimal => "minimal",
            Self::Low => "low",
            Self::Medium => "medium",
            Self::High => "high",
            Self::Xhigh => "xhigh",
        }
    }

    /// Pi's default token budgets for budget-style reasoning (`None` when off).
    pub fn default_budget_tokens(self) -> Option<u32> {
        match self {
            Self::Off => None,
            Self::Minimal => Some(1024),
            Self::Low => Some(2048),
            Self::Medium => Some(8192),
            Self::High => Some(16_384),
            Self::Xhigh => Some(32_768),
        }
    }
}

impl std::fmt::Display for ThinkingLevel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for ThinkingLevel {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|l| l.as_str() == s)
            .ok_or_else(|| {
                format!("unknown thinking level `{s}` (expected off, minimal, low, medium, high or xhigh)")
            })
    }
}

fn is_false(b: &bool) -> bool {
    !*b
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn request_serializes_chapters_in_fixed_order() {
        let mut req = Request::new("claude-opus-4-7");
        req.tools.push(ToolDefinition {
            name: "read".into(),
            description: "Read a file".into(),
            parameters: serde_json::json!({"type": "object"}),
            defer_loading: false,
        });
        req.system
            .push(SystemBlock::section("intro", "You are strata."));
        req.messages.push(Message::user_text("hi"));
        req.breakpoints.push(Breakpoint {
            position: BreakpointPosition::Message { index: 0 },
            ttl: CacheTtl::OneHour,
        });
        let json = serde_json::to_string(&req).unwrap();
        assert_eq!(
            json,
            r#"{"tools":[{"name":"read","description":"Read a file","parameters":{"type":"object"}}],"system":[{"section":"intro","text":"You are strata."}],"messages":[{"role":"user","content":[{"type":"text","text":"hi"}]}],"breakpoints":[{"after":"message","index":0,"ttl":"1h"}],"model":"claude-opus-4-7","thinking":"off"}"#
        );
        let back: Request = serde_json::from_str(&json).unwrap();
        assert_eq!(back, req);
    }

    #[test]
    fn content_blocks_round_trip() {
        let blocks = vec![
            ContentBlock::Thinking {
                text: String::new(),
                signature: Some("sig".into()),
                redacted: true,
            },
            ContentBlock::ToolCall {
                id: "c1".into(),
                name: "bash".into(),
                arguments: serde_json::json!({"command": "ls"}),
            },
            ContentBlock::ToolResult {
                tool_call_id: "c1".into(),
                content: vec![ToolResultContent::Text { text: "ok".into() }],
                is_error: false,
            },
            ContentBlock::ToolAddition { tools: vec![] },
            ContentBlock::ToolRemoval {
                names: vec!["compress".into()],
            },
        ];
        let json = serde_json::to_value(&blocks).unwrap();
        assert_eq!(json[0]["type"], "thinking");
        assert_eq!(json[3]["type"], "tool_addition");
        assert_eq!(json[4]["names"][0], "compress");
        let back: Vec<ContentBlock> = serde_json::from_value(json).unwrap();
        assert_eq!(back, blocks);
    }

    #[test]
    fn thinking_level_parses_pi_names() {
        for level in ThinkingLevel::ALL {
            assert_eq!(level.as_str().parse::<ThinkingLevel>().unwrap(), level);
        }
        assert!("max".parse::<ThinkingLevel>().is_err());
    }
}
