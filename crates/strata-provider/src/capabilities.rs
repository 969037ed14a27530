//! What one provider + model can do, resolved from the capability table.
//!
//! Render and adapters branch on these flags, never on provider names.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::request::CacheTtl;
use crate::usage::{PriceMultipliers, Prices};

/// The wire protocol a provider speaks; each maps to one protocol crate.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
pub enum Protocol {
    /// Anthropic Messages (`POST /v1/messages`).
    AnthropicMessages,
    /// OpenAI Chat Completions and every compatible server.
    OpenaiChat,
    /// OpenAI Responses.
    OpenaiResponses,
    /// Gemini `generateContent` / `streamGenerateContent` (AI Studio and Vertex).
    GoogleGenerativeAi,
    /// Amazon Bedrock `ConverseStream`.
    BedrockConverse,
}

impl Protocol {
    /// Every protocol, in declaration order.
    pub const ALL: [Protocol; 5] = [
        Self::AnthropicMessages,
        Self::OpenaiChat,
        Self::OpenaiResponses,
        Self::GoogleGenerativeAi,
        Self::BedrockConverse,
    ];

    /// The table spelling (`anthropic-messages`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::AnthropicMessages => "anthropic-messages",
            Self::OpenaiChat => "openai-chat",
            Self::OpenaiResponses => "openai-responses",
            Self::GoogleGenerativeAi => "google-generative-ai",
            Self::BedrockConverse => "bedrock-converse",
        }
    }

    /// The crate that implements this protocol.
    pub fn crate_name(self) -> &'static str {
        match self {
            Self::AnthropicMessages => "strata-anthropic",
            Self::OpenaiChat => "strata-openai",
            Self::OpenaiResponses => "strata-openai-responses",
            Self::GoogleGenerativeAi => "strata-google",
            Self::BedrockConverse => "strata-bedrock",
        }
    }
}

impl std::fmt::Display for Protocol {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for Protocol {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|p| p.as_str() == s)
            .ok_or_else(|| {
                let known: Vec<&str> = Self::ALL.iter().map(|p| p.as_str()).collect();
                format!("unknown protocol `{s}` (known: {})", known.join(", "))
            })
    }
}

/// How a provider's prompt cache is driven.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum CacheStyle {
    /// Nothing is cached unless the request marks breakpoints (Anthropic, Bedrock, DashScope explicit).
    ExplicitBreakpoints,
    /// The provider caches prefixes on its own (OpenAI, DeepSeek, Gemini implicit, …).
    AutomaticPrefix,
    /// No prompt cache, or none documented.
    #[default]
    None,
}

impl CacheStyle {
    /// The one word listings print: `explicit`, `automatic`, `none`.
    pub fn short_name(self) -> &'static str {
        match self {
            CacheStyle::ExplicitBreakpoints => "explicit",
            CacheStyle::AutomaticPrefix => "automatic",
            CacheStyle::None => "none",
        }
    }
}

/// Where the cache-routing key goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum ParamLocation {
    /// A top-level field of the JSON body.
    Body,
    /// An HTTP header.
    Header,
}

/// The parameter that carries the cache key (usually the session id).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CacheKeyParam {
    /// Body field or header.
    pub location: ParamLocation,
    /// Field or header name, e.g. `prompt_cache_key`, `x-grok-conv-id`.
    pub name: String,
}

/// How reasoning effort is expressed on the wire.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum ReasoningStyle {
    /// No reasoning parameter is sent.
    #[default]
    None,
    /// `thinking: {type: "enabled", budget_tokens}` (Anthropic before adaptive thinking).
    AnthropicBudget,
    /// `thinking: {type: "adaptive"}` plus `output_config.effort` (Claude 4.6+).
    AnthropicAdaptive,
    /// `reasoning_effort` (Chat) / `reasoning.effort` (Responses).
    OpenaiEffort,
    /// `reasoning: {effort}` object on a chat endpoint (OpenRouter style).
    ReasoningObject,
    /// Gemini `thinkingConfig.thinkingBudget`.
    GoogleBudget,
    /// Gemini 3 `thinkingConfig.thinkingLevel`.
    GoogleLevel,
    /// `thinking: {type: "enabled" | "disabled"}` (Z.ai, Moonshot, DeepSeek v4 toggles).
    ThinkingToggle,
    /// `enable_thinking: bool` plus optional `thinking_budget` (Qwen / DashScope, SiliconFlow).
    EnableThinking,
    /// Always reasons; nothing to send.
    AlwaysOn,
}

/// The role name used for system instructions inside the message list.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum SystemRole {
    /// `system`.
    #[default]
    System,
    /// `developer` (OpenAI o1 and newer).
    Developer,
}

impl SystemRole {
    /// The wire spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::System => "system",
            Self::Developer => "developer",
        }
    }
}

/// A request feature that needs an opt-in header.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
pub enum Feature {
    /// Mid-conversation system messages.
    MidConversationSystem,
    /// `tool_addition` / `tool_removal` blocks.
    ToolChanges,
    /// Server-side context editing.
    ContextEditing,
    /// Cache TTLs beyond the default.
    ExtendedCacheTtl,
    /// Deferred tools / tool search.
    DeferredTools,
    /// Interleaved thinking between tool calls.
    InterleavedThinking,
    /// The provider's cache diagnosis (Anthropic `diagnostics`).
    CacheDiagnostics,
    /// Effort changed by a mid-conversation message (Anthropic per-message `output_config`).
    MidConversationEffort,
    /// A server-held conversation: later requests send only the new messages (Anthropic
    /// message threads).
    MessageThreads,
    /// A tool added mid-conversation defined by value in its `tool_addition` block.
    InlineTools,
    /// A mid-conversation system message shown only until the next user message (Anthropic
    /// `clear_at`).
    SystemClearAt,
}

/// A header to send when a feature is used.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FeatureHeader {
    /// The feature that needs it.
    pub feature: Feature,
    /// Header name, e.g. `anthropic-beta`.
    pub header: String,
    /// Header value; several values for one header are comma-joined by the adapter.
    pub value: String,
}

/// How a chat-compatible server reports usage.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum UsageDialect {
    /// The protocol's own fields (OpenAI: `prompt_tokens_details.cached_tokens`, …).
    #[default]
    Standard,
    /// DeepSeek: `prompt_cache_hit_tokens` / `prompt_cache_miss_tokens`.
    DeepseekHitMiss,
    /// A top-level `usage.cached_tokens` (Moonshot v1 explicit cache).
    TopLevelCachedTokens,
}

/// Small differences between servers that speak the same protocol.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct WireQuirks {
    /// Name of the output-cap field (`max_completion_tokens` or `max_tokens`).
    pub max_tokens_field: String,
    /// The server accepts `store: false`.
    pub supports_store: bool,
    /// The server sends usage in the stream when asked (`stream_options.include_usage`).
    pub supports_usage_in_streaming: bool,
    /// The server accepts `strict` on function definitions.
    pub supports_strict_mode: bool,
    /// Tool results must carry the tool's name.
    pub requires_tool_result_name: bool,
    /// An assistant message must follow a tool result before the next user message.
    pub requires_assistant_after_tool_result: bool,
    /// Earlier thinking must be replayed as plain text.
    pub requires_thinking_as_text: bool,
    /// Assistant messages must carry their `reasoning_content` when replayed (DeepSeek thinking).
    pub requires_reasoning_content: bool,
    /// How cached tokens are reported.
    pub usage_dialect: UsageDialect,
}

impl Default for WireQuirks {
    fn default() -> Self {
        Self {
            max_tokens_field: "max_completion_tokens".to_owned(),
            supports_store: false,
            supports_usage_in_streaming: true,
            supports_strict_mode: false,
            requires_tool_result_name: false,
            requires_assistant_after_tool_result: false,
            requires_thinking_as_text: false,
            requires_reasoning_content: false,
            usage_dialect: UsageDialect::Standard,
        }
    }
}

/// How a row fills its prompt cache without generating output (a keep-warm ping, a warm-up
/// before the first turn).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Prewarm {
    /// No output-free warm-up: a ping asks for the fewest output tokens the API accepts.
    #[default]
    None,
    /// Anthropic: `max_tokens: 0` populates the cache without generating a response
    /// (anthropic-python 2.17.0, `MessageCreateParams.max_tokens`).
    ZeroMaxTokens,
    /// OpenAI Responses: `prompt_cache_options.prewarm: true` prepares the cache without
    /// generating output (openai-python 3.63.0, `PromptCacheOptions.prewarm`).
    PromptCacheOptions,
}

/// Time-of-day prices: the model's prices are the off-peak ones, multiplied inside the peak
/// windows (DeepSeek from 2026-08-16: peak is twice off-peak).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PeakPricing {
    /// Peak price ÷ off-peak price, for every bucket.
    pub multiplier: f64,
    /// Peak windows as `[from, to)` whole hours UTC, e.g. `[[1, 4], [6, 10]]`.
    pub hours_utc: Vec<[u8; 2]>,
}

impl PeakPricing {
    /// Whether `unix_secs` falls inside a peak window.
    pub fn is_peak(&self, unix_secs: u64) -> bool {
        let hour = ((unix_secs / 3600) % 24) as u8;
        self.hours_utc
            .iter()
            .any(|[from, to]| *from <= hour && hour < *to)
    }
}

/// Explicit caches as a row offers them (Gemini `cachedContents`): a resource created ahead of
/// the requests that name it, billed at the input price when created plus storage per hour.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ExplicitCache {
    /// Fewest tokens a cache may hold (the model's documented minimum).
    pub min_tokens: u32,
    /// Lifetime asked for at creation, in seconds.
    pub ttl_secs: u32,
    /// Storage, USD per million tokens per hour.
    pub storage_price: f64,
}

/// Everything render and adapters need to know about one provider + model.
///
/// `Default` is the conservative answer for an unknown provider: no cache, no
/// mid-conversation system messages, no tool changes, `system` role, no reasoning.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Capabilities {
    /// How the prompt cache is driven.
    pub cache_style: CacheStyle,
    /// Most breakpoints one request may carry (0 when breakpoints are not used).
    pub max_breakpoints: u8,
    /// Cache lifetimes the provider offers, shortest first.
    pub ttl_options: Vec<CacheTtl>,
    /// Parameter carrying the cache key, if the provider has one.
    pub cache_key: Option<CacheKeyParam>,
    /// Prompts shorter than this are not cached.
    pub min_cacheable_tokens: u32,
    /// `role: system` messages after the first user message are honoured.
    pub mid_conversation_system: bool,
    /// Tools can be added mid-conversation without rewriting the tools chapter.
    pub tool_addition: bool,
    /// Tools can be removed mid-conversation without rewriting the tools chapter.
    pub tool_removal: bool,
    /// Tools may be declared with `defer_loading` (tool search).
    pub deferred_tools: bool,
    /// A placeholder deferred tool must be declared from the first request on.
    pub deferred_tool_placeholder: bool,
    /// The server can edit context (clear tool uses / thinking) itself.
    pub context_editing: bool,
    /// Without mid-conversation system messages: say a system or tool change in a marked
    /// reminder after the next user message instead of folding it into the system chapter
    /// (the table's default for its rows; `false` here, the conservative fold, for an unknown
    /// provider).
    #[serde(default)]
    pub system_reminders: bool,
    /// How reasoning effort is sent.
    pub reasoning: ReasoningStyle,
    /// Role name for system instructions inside `messages`.
    pub system_role: SystemRole,
    /// Headers required by the features above.
    pub feature_headers: Vec<FeatureHeader>,
    /// Cache prices relative to the input price.
    pub price_multipliers: PriceMultipliers,
    /// Server quirks within the protocol.
    pub wire: WireQuirks,
    /// How the cache is warmed without output.
    #[serde(default)]
    pub prewarm: Prewarm,
    /// Time-of-day prices, when the provider bills peak hours differently.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peak_pricing: Option<PeakPricing>,
    /// The provider says why a request missed the cache when the request names the previous
    /// response (Anthropic `diagnostics.previous_message_id`, OpenAI
    /// `prompt_cache_options.comparison_response_id`).
    #[serde(default)]
    pub cache_diagnostics: bool,
    /// Reasoning effort can change mid-conversation without touching the prefix (Anthropic
    /// per-message `output_config.effort` on a system message, OpenAI `configuration_update`
    /// input item).
    #[serde(default)]
    pub mid_conversation_effort: bool,
    /// OpenAI Responses WebSocket mode: a persistent socket to `/responses` on which each turn
    /// sends only its new input items after `previous_response_id`. An optimisation only: the
    /// session's state stays the full conversation, and any socket failure falls back to a full
    /// HTTP request for that turn.
    #[serde(default)]
    pub websocket_mode: bool,
    /// OpenAI Responses `additional_tools` input items: a tool added mid-session is declared
    /// where it arrives in the input, and the `tools` array (the cached prefix) is unchanged.
    #[serde(default)]
    pub additional_tools: bool,
    /// The provider holds a session's conversation between requests, so a request after a
    /// response sends only the messages that follow it (Anthropic message threads: `thread:
    /// {type: "create"}`, then `{type: "continue", previous_message_id}` without system and
    /// tools). An optimisation of upload and time to first token, never the session's state:
    /// an expired thread is replayed in full.
    #[serde(default)]
    pub message_threads: bool,
    /// A tool added mid-conversation may be defined in its `tool_addition` block (Anthropic
    /// `tool_definition`), so it needs no deferred declaration in the tools chapter.
    #[serde(default)]
    pub inline_tools: bool,
    /// A mid-conversation system message can be shown only until the next user message and
    /// still stay in the cached prefix (Anthropic `clear_at: "next_user_message"`).
    #[serde(default)]
    pub system_clear_at: bool,
    /// Use explicit caches ([`Capabilities::explicit_cache_offer`]) for the stable prefix.
    /// Off by default: it pays storage and create requests where implicit caching is free.
    #[serde(default)]
    pub explicit_cache: bool,
    /// The explicit caches the row offers, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub explicit_cache_offer: Option<ExplicitCache>,
}

impl Default for Capabilities {
    fn default() -> Self {
        Self {
            cache_style: CacheStyle::None,
            max_breakpoints: 0,
            ttl_options: Vec::new(),
            cache_key: None,
            min_cacheable_tokens: 0,
            mid_conversation_system: false,
            tool_addition: false,
            tool_removal: false,
            deferred_tools: false,
            deferred_tool_placeholder: false,
            system_reminders: false,
            context_editing: false,
            reasoning: ReasoningStyle::None,
            system_role: SystemRole::System,
            feature_headers: Vec::new(),
            price_multipliers: PriceMultipliers::default(),
            wire: WireQuirks::default(),
            prewarm: Prewarm::None,
            peak_pricing: None,
            cache_diagnostics: false,
            mid_conversation_effort: false,
            websocket_mode: false,
            additional_tools: false,
            message_threads: false,
            inline_tools: false,
            system_clear_at: false,
            explicit_cache: false,
            explicit_cache_offer: None,
        }
    }
}

/// How long a user wants cached prefixes to live (`[cache] retention`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum CacheRetention {
    /// The longest lifetime that costs no more to write than the shortest: OpenAI's 24-hour
    /// retention (writes are free either way), Anthropic's 5 minutes (its hour writes at 2x
    /// against 1.25x).
    #[default]
    Auto,
    /// The shortest lifetime the provider offers.
    Short,
    /// The longest lifetime the provider offers, whatever its writes cost.
    Long,
}

impl Capabilities {
    /// The breakpoint lifetime to ask for under `retention` (5 minutes for a row that lists
    /// none).
    pub fn cache_ttl(&self, retention: CacheRetention) -> CacheTtl {
        let Some(&shortest) = self.ttl_options.iter().min() else {
            return CacheTtl::FiveMinutes;
        };
        let longest_where = |keep: &dyn Fn(CacheTtl) -> bool| {
            self.ttl_options
                .iter()
                .copied()
                .filter(|ttl| keep(*ttl))
                .max()
                .unwrap_or(shortest)
        };
        match retention {
            CacheRetention::Short => shortest,
            CacheRetention::Long => longest_where(&|_| true),
            CacheRetention::Auto => {
                let base = self.cache_write_multiplier(shortest);
                longest_where(&|ttl| self.cache_write_multiplier(ttl) <= base)
            }
        }
    }

    /// Price of writing a prefix with lifetime `ttl`, relative to an uncached input token.
    pub fn cache_write_multiplier(&self, ttl: CacheTtl) -> f64 {
        match ttl {
            CacheTtl::OneHour => self.price_multipliers.cache_write_1h,
            _ => self.price_multipliers.cache_write_5m,
        }
    }

    /// Headers to send when `feature` is used (empty when none is needed).
    pub fn headers_for(&self, feature: Feature) -> impl Iterator<Item = &FeatureHeader> {
        self.feature_headers
            .iter()
            .filter(move |h| h.feature == feature)
    }

    /// The prices billed for a response at `unix_secs`: `prices` (the off-peak ones) times the
    /// peak multiplier inside a peak window. The time is the caller's clock, so tests can pick
    /// the hour.
    pub fn prices_at(&self, prices: &Prices, unix_secs: u64) -> Prices {
        match &self.peak_pricing {
            Some(peak) if peak.is_peak(unix_secs) => {
                let m = peak.multiplier;
                Prices {
                    input: prices.input * m,
                    output: prices.output * m,
                    cache_read: prices.cache_read * m,
                    cache_write_5m: prices.cache_write_5m * m,
                    cache_write_1h: prices.cache_write_1h * m,
                    cache_storage: prices.cache_storage * m,
                }
            }
            _ => *prices,
        }
    }

    /// The explicit caches to use, when the row offers them and uses them.
    pub fn explicit_cache(&self) -> Option<&ExplicitCache> {
        self.explicit_cache_offer
            .as_ref()
            .filter(|_| self.explicit_cache)
    }

    /// The output cap of a request that only warms the cache: 0 where the row has an
    /// output-free warm-up, else one token (an adapter raises it to the API's minimum).
    pub fn warm_up_max_tokens(&self) -> u32 {
        match self.prewarm {
            Prewarm::None => 1,
            Prewarm::ZeroMaxTokens | Prewarm::PromptCacheOptions => 0,
        }
    }

    /// Whether the provider offers this cache lifetime.
    pub fn supports_ttl(&self, ttl: CacheTtl) -> bool {
        self.ttl_options.contains(&ttl)
    }

    /// Whether breakpoints in a request have any effect.
    pub fn uses_breakpoints(&self) -> bool {
        self.cache_style == CacheStyle::ExplicitBreakpoints && self.max_breakpoints > 0
    }

    /// Whether a system-prompt patch can go into the conversation instead of chapter 2.
    pub fn patches_in_conversation(&self) -> bool {
        self.mid_conversation_system
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retention_picks_the_lifetime_each_row_offers_at_its_price() {
        let catalog = crate::Catalog::builtin().unwrap();
        let anthropic = catalog.capabilities("anthropic", "claude-opus-4-8");
        // The hour costs 2x to write against 1.25x: auto stays at five minutes.
        assert_eq!(
            anthropic.cache_ttl(CacheRetention::Auto),
            CacheTtl::FiveMinutes
        );
        assert_eq!(anthropic.cache_ttl(CacheRetention::Long), CacheTtl::OneHour);
        // OpenAI writes are free at either retention: auto asks for 24 hours.
        let gpt = catalog.capabilities("openai", "gpt-5.4");
        assert_eq!(
            gpt.cache_ttl(CacheRetention::Auto),
            CacheTtl::TwentyFourHours
        );
        assert_eq!(gpt.cache_ttl(CacheRetention::Short), CacheTtl::FiveMinutes);
        // gpt-5.5 and later take only the 24-hour retention.
        let only_long = catalog.capabilities("openai", "gpt-5.5");
        assert_eq!(only_long.ttl_options, vec![CacheTtl::TwentyFourHours]);
        assert_eq!(
            only_long.cache_ttl(CacheRetention::Short),
            CacheTtl::TwentyFourHours
        );
        assert_eq!(
            Capabilities::default().cache_ttl(CacheRetention::Long),
            CacheTtl::FiveMinutes
        );
    }

    #[test]
    fn default_is_conservative() {
        let c = Capabilities::default();
        assert_eq!(c.cache_style, CacheStyle::None);
        assert!(!c.mid_conversation_system && !c.tool_addition && !c.tool_removal);
        assert!(!c.uses_breakpoints());
        assert_eq!(c.system_role.as_str(), "system");
    }

    #[test]
    fn protocol_names_round_trip() {
        for p in Protocol::ALL {
            assert_eq!(p.as_str().parse::<Protocol>().unwrap(), p);
            let json = serde_json::to_string(&p).unwrap();
            assert_eq!(json, format!("\"{}\"", p.as_str()));
        }
        let err = "openai-completions".parse::<Protocol>().unwrap_err();
        assert!(err.contains("openai-chat"), "{err}");
    }

    #[test]
    fn deepseek_bills_twice_the_off_peak_prices_inside_its_peak_windows() {
        let catalog = crate::Catalog::builtin().unwrap();
        let caps = catalog.capabilities("deepseek", "deepseek-v4-flash");
        let prices = catalog
            .model("deepseek", "deepseek-v4-flash")
            .unwrap()
            .prices;
        assert_eq!((prices.input, prices.cache_read), (0.15, 0.003));
        let day = 20_000 * 86_400; // a midnight, UTC
        let at = |hour: u64, minute: u64| caps.prices_at(&prices, day + hour * 3600 + minute * 60);
        // 00:59 is off-peak, 01:00 peak, 03:59 peak, 04:00 off, 05:30 off, 06:00–09:59 peak.
        assert_eq!(at(0, 59), prices);
        assert_eq!(at(1, 0).input, 0.30);
        assert_eq!(at(3, 59).output, 1.2);
        assert_eq!(at(4, 0), prices);
        assert_eq!(at(5, 30), prices);
        assert_eq!(at(9, 59).cache_read, 0.006);
        assert_eq!(at(10, 0), prices);
        // A row without peak prices is the same at every hour.
        let anthropic = catalog.capabilities("anthropic", "claude-opus-4-8");
        assert_eq!(anthropic.prices_at(&prices, day + 2 * 3600), prices);
    }

    #[test]
    fn pre_warm_rows_warm_with_no_output_and_gpt_5_6_writes_cost_1_25x() {
        let catalog = crate::Catalog::builtin().unwrap();
        let opus = catalog.capabilities("anthropic", "claude-opus-4-8");
        assert_eq!(opus.prewarm, Prewarm::ZeroMaxTokens);
        assert_eq!(opus.warm_up_max_tokens(), 0);
        assert_eq!(opus.cache_write_multiplier(CacheTtl::OneHour), 2.0);
        for id in ["gpt-5.6", "gpt-6"] {
            let gpt = catalog.capabilities("openai", id);
            assert_eq!(gpt.prewarm, Prewarm::PromptCacheOptions, "{id}");
            assert_eq!(gpt.cache_write_multiplier(CacheTtl::ThirtyMinutes), 1.25);
        }
        let older = catalog.capabilities("openai", "gpt-5.2");
        assert_eq!(older.prewarm, Prewarm::None);
        assert_eq!(older.warm_up_max_tokens(), 1);
    }

    #[test]
    fn anthropic_threads_on_the_row_inline_tools_and_clear_at_where_system_messages_are() {
        let catalog = crate::Catalog::builtin().unwrap();
        let header = |caps: &Capabilities, feature: Feature| {
            caps.headers_for(feature)
                .map(|h| h.value.clone())
                .collect::<Vec<_>>()
        };
        let opus = catalog.capabilities("anthropic", "claude-opus-4-8");
        assert!(opus.message_threads && opus.inline_tools && opus.system_clear_at);
        assert_eq!(
            header(&opus, Feature::MessageThreads),
            ["message-threads-2026-08-12"]
        );
        assert_eq!(
            header(&opus, Feature::InlineTools),
            ["inline-tools-2026-09-15"]
        );
        assert_eq!(
            header(&opus, Feature::SystemClearAt),
            ["mid-conversation-system-clear-at-2026-08-21"]
        );
        // Sonnet 5 has no mid-conversation system messages: threads only.
        let sonnet = catalog.capabilities("anthropic", "claude-sonnet-5");
        assert!(sonnet.message_threads && !sonnet.inline_tools && !sonnet.system_clear_at);
        // Another row speaking Messages does not claim Anthropic's threads.
        let minimax = catalog.capabilities("minimax", "MiniMax-M2");
        assert!(!minimax.message_threads && !minimax.inline_tools);
        assert!(!Capabilities::default().message_threads);
    }
}
