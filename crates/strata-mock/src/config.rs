//! Settings of the simulator: which cache rules, usage dialect and context window apply to a
//! model on a route. Defaults follow `shared/research/PROVIDERS.md`; every fact that document
//! marks as uncertain is a field here.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::scenario::Scenario;

/// A wire protocol the mock speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Protocol {
    /// Anthropic Messages, `POST /v1/messages`.
    Anthropic,
    /// OpenAI Chat Completions, `POST /v1/chat/completions` (also the DeepSeek variant).
    Chat,
    /// OpenAI Responses, `POST /v1/responses`.
    Responses,
    /// Gemini `generateContent` / `streamGenerateContent`.
    Gemini,
    /// Bedrock Converse and ConverseStream.
    Bedrock,
}

impl Protocol {
    /// The short name used in records and settings.
    pub fn name(self) -> &'static str {
        match self {
            Self::Anthropic => "anthropic",
            Self::Chat => "chat",
            Self::Responses => "responses",
            Self::Gemini => "gemini",
            Self::Bedrock => "bedrock",
        }
    }
}

/// How a provider decides what part of a prompt is cached.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CacheStyle {
    /// Anthropic / Bedrock: entries are written only at marked breakpoints.
    Explicit,
    /// OpenAI: every prompt above a minimum is cached in fixed token increments.
    Automatic,
    /// DeepSeek: the automatic rule on a disk cache, in storage units, reported as hit/miss.
    DeepseekDisk,
    /// Gemini 2.5+: implicit prefix caching above a per-model minimum.
    GeminiImplicit,
    /// No caching at all.
    None,
}

/// What the explicit style does with more breakpoints than `max_breakpoints`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ExcessBreakpoints {
    /// Refuse the request with the provider's 400 error (what the Anthropic API does).
    Reject,
    /// Honour only the last `max_breakpoints` (what some third-party notes describe).
    KeepLast,
}

/// How long OpenAI keeps an automatic-prefix entry (`prompt_cache_retention`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum Retention {
    /// `in_memory`: cleared after 5–10 minutes of inactivity ([`CacheConfig::ttl_automatic`]).
    #[default]
    #[serde(rename = "in_memory")]
    InMemory,
    /// `24h`: extended retention ([`CacheConfig::ttl_extended`]).
    #[serde(rename = "24h")]
    Extended,
}

/// The parameters of one cache model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct CacheConfig {
    /// Which rule set applies.
    pub style: CacheStyle,
    /// A prefix shorter than this is never cached (tokens).
    pub min_tokens: u64,
    /// Automatic styles: hits and writes are counted in multiples of this (tokens).
    pub increment: u64,
    /// Explicit style: the default entry lifetime (`5m`), refreshed on each hit.
    #[serde(with = "secs")]
    pub ttl_short: Duration,
    /// Explicit style: the long lifetime (`1h`).
    #[serde(with = "secs")]
    pub ttl_long: Duration,
    /// Automatic styles: how long an unused entry lives, refreshed on each hit.
    #[serde(with = "secs")]
    pub ttl_automatic: Duration,
    /// Automatic style on the OpenAI routes: the lifetime of an entry written with
    /// `prompt_cache_retention: "24h"` (24 hours).
    #[serde(with = "secs")]
    pub ttl_extended: Duration,
    /// Automatic style on the OpenAI routes: the retention of a request that does not set
    /// `prompt_cache_retention`. OpenAI's default for models before gpt-5.5 is `24h` for
    /// organizations without zero data retention and `in_memory` for those with it; the mock
    /// takes `in_memory`, the conservative case. Models that support only `24h` (gpt-5.5 and
    /// later) default to [`Retention::Extended`] ([`ModelProfile::from_capabilities`]).
    pub default_retention: Retention,
    /// Explicit style: how many blocks a breakpoint looks back for an earlier entry.
    pub lookback_blocks: usize,
    /// Explicit style: the most breakpoints one request may carry.
    pub max_breakpoints: usize,
    /// Explicit style: what happens above `max_breakpoints`.
    pub excess_breakpoints: ExcessBreakpoints,
    /// Whether `prompt_cache_key` (or the session header) separates cache entries.
    pub keyed_by_cache_key: bool,
    /// Price of a cache read relative to an uncached input token.
    pub read_price: f64,
    /// Price of a 5-minute (or automatic) cache write relative to an uncached input token.
    pub write_price_5m: f64,
    /// Price of a 1-hour cache write relative to an uncached input token.
    pub write_price_1h: f64,
}

impl Default for CacheConfig {
    fn default() -> Self {
        Self::anthropic(1024)
    }
}

impl CacheConfig {
    /// Anthropic's explicit breakpoints with the given model minimum.
    pub fn anthropic(min_tokens: u64) -> Self {
        Self {
            style: CacheStyle::Explicit,
            min_tokens,
            increment: 1,
            ttl_short: Duration::from_secs(5 * 60),
            ttl_long: Duration::from_secs(60 * 60),
            ttl_automatic: Duration::from_secs(5 * 60),
            ttl_extended: Duration::from_secs(24 * 60 * 60),
            default_retention: Retention::InMemory,
            lookback_blocks: 20,
            max_breakpoints: 4,
            excess_breakpoints: ExcessBreakpoints::Reject,
            keyed_by_cache_key: false,
            // "5-minute cache writes cost 1.25x … 1-hour 2x … hits 0.1x base input".
            read_price: 0.1,
            write_price_5m: 1.25,
            write_price_1h: 2.0,
        }
    }

    /// OpenAI's automatic prefix cache: 1024-token minimum, 128-token increments.
    pub fn openai() -> Self {
        Self {
            style: CacheStyle::Automatic,
            min_tokens: 1024,
            increment: 128,
            // In-memory retention: "cleared within 5 to 10 minutes of inactivity".
            ttl_automatic: Duration::from_secs(10 * 60),
            keyed_by_cache_key: true,
            // GPT-5 family reads at 0.1x; writes are free before GPT-5.6.
            read_price: 0.1,
            write_price_5m: 1.0,
            write_price_1h: 1.0,
            ..Self::anthropic(1024)
        }
    }

    /// DeepSeek's disk cache: 64-token storage units, nothing under 64 tokens.
    pub fn deepseek() -> Self {
        Self {
            style: CacheStyle::DeepseekDisk,
            min_tokens: 64,
            increment: 64,
            // "cleared usually within a few hours to a few days".
            ttl_automatic: Duration::from_secs(6 * 60 * 60),
            keyed_by_cache_key: false,
            // V4 pricing: a hit costs about 0.02x a miss.
            read_price: 0.02,
            ..Self::openai()
        }
    }

    /// Gemini implicit caching with the given model minimum.
    pub fn gemini(min_tokens: u64) -> Self {
        Self {
            style: CacheStyle::GeminiImplicit,
            min_tokens,
            // Google does not document a granularity; a modelling choice.
            increment: 128,
            ttl_automatic: Duration::from_secs(60 * 60),
            keyed_by_cache_key: false,
            ..Self::openai()
        }
    }

    /// No cache.
    pub fn none() -> Self {
        Self {
            style: CacheStyle::None,
            read_price: 1.0,
            ..Self::openai()
        }
    }

    /// The rules for one request asking for `requested` retention (`None` when it does not
    /// say): under the automatic style, entries it writes live [`Self::ttl_extended`] when
    /// the retention (or else [`Self::default_retention`]) is `24h`. Other styles ignore it.
    pub fn with_retention(&self, requested: Option<Retention>) -> Self {
        let extended = self.style == CacheStyle::Automatic
            && requested.unwrap_or(self.default_retention) == Retention::Extended;
        Self {
            ttl_automatic: if extended {
                self.ttl_extended
            } else {
                self.ttl_automatic
            },
            ..self.clone()
        }
    }

    /// Cost of a request's input in units of one uncached input token.
    pub fn input_cost_units(&self, uncached: u64, read: u64, write_5m: u64, write_1h: u64) -> f64 {
        uncached as f64
            + read as f64 * self.read_price
            + write_5m as f64 * self.write_price_5m
            + write_1h as f64 * self.write_price_1h
    }
}

/// How usage is spelled on the Chat Completions route.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum UsageDialect {
    /// `prompt_tokens_details.cached_tokens`.
    Openai,
    /// `prompt_cache_hit_tokens` / `prompt_cache_miss_tokens` (plus the OpenAI field).
    Deepseek,
}

/// Everything the simulator needs to know about one model on one route.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelProfile {
    /// The cache rules.
    pub cache: CacheConfig,
    /// The largest prompt accepted, in tokens; above it the provider's context-length error.
    pub context_window: u64,
    /// The usage field names on the Chat Completions route.
    pub dialect: UsageDialect,
    /// Bedrock: whether `inputTokens` includes cache reads and writes (unverified upstream;
    /// off follows the Anthropic convention pi assumes).
    #[serde(default)]
    pub input_includes_cache: bool,
    /// Request features this model refuses with a 400, as a provider that withdrew one (or
    /// never had it) does: `diagnostics`, `system-output-config`, `max-tokens-zero`
    /// (Anthropic); `comparison-response-id`, `configuration-update`, `prewarm` (Responses).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rejects: Vec<String>,
}

impl From<strata_provider::Protocol> for Protocol {
    fn from(protocol: strata_provider::Protocol) -> Self {
        match protocol {
            strata_provider::Protocol::AnthropicMessages => Self::Anthropic,
            strata_provider::Protocol::OpenaiChat => Self::Chat,
            strata_provider::Protocol::OpenaiResponses => Self::Responses,
            strata_provider::Protocol::GoogleGenerativeAi => Self::Gemini,
            strata_provider::Protocol::BedrockConverse => Self::Bedrock,
        }
    }
}

impl ModelProfile {
    /// The profile a capability-table row implies for `model` on `protocol`: cache style,
    /// minimum, breakpoint limit, cache key and usage dialect from the row; what the table does
    /// not hold (increments, lookback, lifetimes, window) from the built-in profile.
    pub fn from_capabilities(
        protocol: Protocol,
        model: &str,
        caps: &strata_provider::Capabilities,
    ) -> Self {
        use strata_provider::{CacheStyle as Style, UsageDialect as Dialect};
        let builtin = builtin_profile(protocol, model);
        let min = u64::from(caps.min_cacheable_tokens);
        let deepseek = caps.wire.usage_dialect == Dialect::DeepseekHitMiss;
        let mut cache = match caps.cache_style {
            Style::None => CacheConfig::none(),
            Style::ExplicitBreakpoints => {
                let mut cache = CacheConfig::anthropic(if min > 0 {
                    min
                } else {
                    builtin.cache.min_tokens
                });
                if caps.max_breakpoints > 0 {
                    cache.max_breakpoints = usize::from(caps.max_breakpoints);
                }
                cache
            }
            Style::AutomaticPrefix if deepseek => CacheConfig::deepseek(),
            Style::AutomaticPrefix => {
                let mut cache = match protocol {
                    Protocol::Gemini => CacheConfig::gemini(builtin.cache.min_tokens),
                    _ => CacheConfig::openai(),
                };
                if min > 0 {
                    cache.min_tokens = min;
                }
                cache
            }
        };
        if caps.cache_style == Style::AutomaticPrefix {
            cache.keyed_by_cache_key = caps.cache_key.is_some();
        }
        // A model that offers only 24-hour retention (gpt-5.5 and later) keeps entries that
        // long without being asked.
        let only_extended = !caps.ttl_options.is_empty()
            && caps
                .ttl_options
                .iter()
                .all(|ttl| *ttl == strata_provider::CacheTtl::TwentyFourHours);
        if cache.style == CacheStyle::Automatic && only_extended {
            cache.default_retention = Retention::Extended;
        }
        let prices = &caps.price_multipliers;
        if caps.cache_style != Style::None
            && *prices != strata_provider::PriceMultipliers::default()
        {
            cache.read_price = prices.cache_read;
            cache.write_price_5m = prices.cache_write_5m;
            cache.write_price_1h = prices.cache_write_1h;
        }
        Self {
            cache,
            dialect: if deepseek {
                UsageDialect::Deepseek
            } else {
                UsageDialect::Openai
            },
            ..builtin
        }
    }
}

/// Overrides the profile of every model whose id matches `pattern` on `protocol`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelRule {
    /// The route it applies to; any route when absent.
    #[serde(default)]
    pub protocol: Option<Protocol>,
    /// A model id, or a prefix ending in `*`, or `*` for every model.
    pub pattern: String,
    /// The profile used when the rule matches.
    pub profile: ModelProfile,
}

impl ModelRule {
    fn matches(&self, protocol: Protocol, model: &str) -> bool {
        if self.protocol.is_some_and(|p| p != protocol) {
            return false;
        }
        match self.pattern.strip_suffix('*') {
            Some(prefix) => model.starts_with(prefix),
            None => self.pattern == model,
        }
    }
}

/// The default context window when no rule names one: large, so only tests that ask hit it.
pub const DEFAULT_CONTEXT_WINDOW: u64 = 1_000_000;

/// Settings of a mock server.
#[derive(Debug, Clone, Default)]
pub struct MockConfig {
    /// Model rules, first match wins; unmatched models get the built-in profile.
    pub models: Vec<ModelRule>,
    /// The scripted model; without one every request gets the echo reply.
    pub scenario: Option<Scenario>,
    /// Keep request bodies in the records (the newest 256 keep theirs).
    pub record_bodies: bool,
    /// The most records kept in memory; the oldest are dropped first. 0 means 10 000.
    pub max_records: usize,
    /// Characters per text delta in streams; 0 means 24.
    pub delta_chars: usize,
    /// The largest request body read, in bytes; a larger one gets the provider's
    /// request-too-large error. 0 means 64 MiB.
    pub max_body_bytes: usize,
    /// Models listed at `GET /v1/models` and `GET /props`, as a local server lists them.
    pub served: Vec<crate::served::ServedModel>,
}

impl MockConfig {
    /// Defaults with request bodies recorded.
    pub fn new() -> Self {
        Self {
            record_bodies: true,
            ..Self::default()
        }
    }

    /// Lists `id` at `GET /v1/models` (with `context_window` as vLLM's `max_model_len` and
    /// llama.cpp's `/props` `n_ctx`), as a local server lists what it serves.
    pub fn with_served(mut self, id: &str, context_window: Option<u64>) -> Self {
        self.served.push(crate::served::ServedModel {
            id: id.to_owned(),
            context_window,
        });
        self
    }

    /// Adds a model rule in front of the built-in profiles.
    pub fn with_model(mut self, rule: ModelRule) -> Self {
        self.models.push(rule);
        self
    }

    /// Adds the cache profiles of the capability table's row `provider`: one rule per model
    /// the catalog lists for it, on the protocol that model is served over, with its context
    /// window. Models the catalog does not list keep the built-in profiles. `None` when the
    /// catalog has no such row.
    pub fn with_provider(
        mut self,
        catalog: &strata_provider::Catalog,
        provider: &str,
    ) -> Option<Self> {
        let row = catalog.provider(provider)?;
        for model in catalog.models_of(provider) {
            let protocol = Protocol::from(row.endpoint(&model.id).protocol);
            let mut profile =
                ModelProfile::from_capabilities(protocol, &model.id, &row.capabilities(&model.id));
            if model.context_window > 0 {
                profile.context_window = model.context_window;
            }
            self.models.push(ModelRule {
                protocol: Some(protocol),
                pattern: model.id.clone(),
                profile,
            });
        }
        Some(self)
    }

    /// Sets the scenario played by the scripted model.
    pub fn with_scenario(mut self, scenario: Scenario) -> Self {
        self.scenario = Some(scenario);
        self
    }

    /// The profile of `model` on `protocol`: the first matching rule, else the built-in one.
    pub fn profile(&self, protocol: Protocol, model: &str) -> ModelProfile {
        self.models
            .iter()
            .find(|rule| rule.matches(protocol, model))
            .map(|rule| rule.profile.clone())
            .unwrap_or_else(|| builtin_profile(protocol, model))
    }
}

/// The built-in profile of a model, from the minimums and styles in PROVIDERS.md.
pub fn builtin_profile(protocol: Protocol, model: &str) -> ModelProfile {
    let id = model.to_ascii_lowercase();
    let (cache, dialect) = match protocol {
        Protocol::Anthropic | Protocol::Bedrock => (
            CacheConfig::anthropic(claude_minimum(&id)),
            UsageDialect::Openai,
        ),
        Protocol::Chat if id.contains("deepseek") => {
            (CacheConfig::deepseek(), UsageDialect::Deepseek)
        }
        Protocol::Chat | Protocol::Responses => (
            CacheConfig {
                read_price: openai_read_price(&id),
                ..CacheConfig::openai()
            },
            UsageDialect::Openai,
        ),
        Protocol::Gemini => (gemini_cache(&id), UsageDialect::Openai),
    };
    ModelProfile {
        cache,
        context_window: DEFAULT_CONTEXT_WINDOW,
        dialect,
        input_includes_cache: false,
        rejects: Vec::new(),
    }
}

/// The minimum cacheable prefix of a Claude model (PROVIDERS.md §1.3; conflicts take the
/// larger documented figure).
fn claude_minimum(id: &str) -> u64 {
    const TABLE: &[(&str, u64)] = &[
        ("opus-5", 512),
        ("fable-5", 512),
        ("mythos-5", 512),
        ("opus-4-7", 4096),
        ("opus-4-6", 4096),
        ("opus-4-5", 4096),
        ("haiku-4-5", 4096),
        ("3-5-haiku", 2048),
        ("3-haiku", 2048),
        ("haiku-3", 2048),
    ];
    TABLE
        .iter()
        .find(|(needle, _)| id.contains(needle))
        .map_or(1024, |(_, min)| *min)
}

/// Cached-input ratio of an OpenAI model family (PROVIDERS.md §2.3, models.dev ratios).
fn openai_read_price(id: &str) -> f64 {
    if ["gpt-4o", "o1", "o3-mini"]
        .iter()
        .any(|f| id.starts_with(f))
    {
        0.5
    } else if ["gpt-4.1", "o3", "o4-mini"]
        .iter()
        .any(|f| id.starts_with(f))
    {
        0.25
    } else {
        0.1
    }
}

/// Gemini implicit caching: 2.5 at 2,048, newer at 4,096, 2.0 and older none.
fn gemini_cache(id: &str) -> CacheConfig {
    if id.contains("gemini-2.0") || id.contains("gemini-1.") {
        CacheConfig::none()
    } else if id.contains("gemini-2.5") {
        CacheConfig::gemini(2048)
    } else {
        CacheConfig::gemini(4096)
    }
}

/// Durations as whole seconds in TOML and JSON.
mod secs {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(value: &Duration, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_u64(value.as_secs())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Duration, D::Error> {
        u64::deserialize(deserializer).map(Duration::from_secs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deepseek_models_on_chat_use_disk_cache_and_hit_miss_fields() {
        let profile = builtin_profile(Protocol::Chat, "deepseek-v4-flash");
        assert_eq!(profile.cache.style, CacheStyle::DeepseekDisk);
        assert_eq!(profile.cache.increment, 64);
        assert_eq!(profile.dialect, UsageDialect::Deepseek);
        assert_eq!(
            builtin_profile(Protocol::Chat, "gpt-5").cache.increment,
            128
        );
    }

    #[test]
    fn claude_minimums_follow_the_model_table() {
        assert_eq!(claude_minimum("claude-opus-5"), 512);
        assert_eq!(claude_minimum("claude-haiku-4-5-20251001"), 4096);
        assert_eq!(claude_minimum("claude-sonnet-4-5"), 1024);
    }

    #[test]
    fn capability_rows_set_style_minimum_and_dialect() {
        let caps = strata_provider::Capabilities {
            cache_style: strata_provider::CacheStyle::AutomaticPrefix,
            wire: strata_provider::WireQuirks {
                usage_dialect: strata_provider::UsageDialect::DeepseekHitMiss,
                ..strata_provider::WireQuirks::default()
            },
            ..strata_provider::Capabilities::default()
        };
        let profile = ModelProfile::from_capabilities(
            strata_provider::Protocol::OpenaiChat.into(),
            "any",
            &caps,
        );
        assert_eq!(
            (profile.cache.style, profile.dialect),
            (CacheStyle::DeepseekDisk, UsageDialect::Deepseek)
        );
        let caps = strata_provider::Capabilities {
            cache_style: strata_provider::CacheStyle::ExplicitBreakpoints,
            max_breakpoints: 4,
            min_cacheable_tokens: 2048,
            ..strata_provider::Capabilities::default()
        };
        let profile = ModelProfile::from_capabilities(Protocol::Anthropic, "claude-x", &caps);
        assert_eq!(
            (profile.cache.style, profile.cache.min_tokens),
            (CacheStyle::Explicit, 2048)
        );
        let none = ModelProfile::from_capabilities(
            Protocol::Chat,
            "m",
            &strata_provider::Capabilities::default(),
        );
        assert_eq!(none.cache.style, CacheStyle::None);
    }

    #[test]
    fn a_capability_table_row_sets_each_listed_models_profile() {
        let catalog = strata_provider::Catalog::builtin().unwrap();
        let config = MockConfig::new()
            .with_provider(&catalog, "anthropic")
            .unwrap();
        let models: Vec<&strata_provider::Model> = catalog.models_of("anthropic").collect();
        assert!(!models.is_empty());
        assert_eq!(config.models.len(), models.len());
        for model in models {
            let caps = catalog.capabilities("anthropic", &model.id);
            let profile = config.profile(Protocol::Anthropic, &model.id);
            assert_eq!(profile.cache.style, CacheStyle::Explicit, "{}", model.id);
            let builtin = builtin_profile(Protocol::Anthropic, &model.id);
            let min = match caps.min_cacheable_tokens {
                0 => builtin.cache.min_tokens,
                min => u64::from(min),
            };
            assert_eq!(profile.cache.min_tokens, min, "{}", model.id);
            let window = match model.context_window {
                0 => builtin.context_window,
                window => window,
            };
            assert_eq!(profile.context_window, window, "{}", model.id);
        }
        // A model the table does not list keeps the built-in profile.
        assert_eq!(
            config.profile(Protocol::Anthropic, "claude-unlisted"),
            builtin_profile(Protocol::Anthropic, "claude-unlisted")
        );
        assert!(
            MockConfig::new()
                .with_provider(&catalog, "no-such-provider")
                .is_none()
        );
    }

    #[test]
    fn only_24h_retention_in_the_row_makes_it_the_default() {
        let row = |ttl: Vec<strata_provider::CacheTtl>| strata_provider::Capabilities {
            cache_style: strata_provider::CacheStyle::AutomaticPrefix,
            ttl_options: ttl,
            ..strata_provider::Capabilities::default()
        };
        let only = row(vec![strata_provider::CacheTtl::TwentyFourHours]);
        let profile = ModelProfile::from_capabilities(Protocol::Responses, "gpt-5.5", &only);
        assert_eq!(profile.cache.default_retention, Retention::Extended);
        let both = row(vec![
            strata_provider::CacheTtl::FiveMinutes,
            strata_provider::CacheTtl::TwentyFourHours,
        ]);
        let profile = ModelProfile::from_capabilities(Protocol::Chat, "gpt-4.1", &both);
        assert_eq!(profile.cache.default_retention, Retention::InMemory);
        let none = ModelProfile::from_capabilities(Protocol::Chat, "gpt-4.1", &row(Vec::new()));
        assert_eq!(none.cache.default_retention, Retention::InMemory);
        // The lifetime follows the request, then the default.
        let cache = CacheConfig::openai();
        assert_eq!(
            cache
                .with_retention(Some(Retention::Extended))
                .ttl_automatic,
            Duration::from_secs(24 * 60 * 60)
        );
        assert_eq!(
            cache.with_retention(None).ttl_automatic,
            cache.ttl_automatic
        );
        assert_eq!(
            CacheConfig::deepseek()
                .with_retention(Some(Retention::Extended))
                .ttl_automatic,
            CacheConfig::deepseek().ttl_automatic
        );
    }

    #[test]
    fn retention_settings_read_from_a_models_file() {
        let cache: CacheConfig = toml::from_str(
            "style = \"automatic\"\ndefault_retention = \"24h\"\nttl_extended = 3600\n",
        )
        .unwrap();
        assert_eq!(cache.default_retention, Retention::Extended);
        assert_eq!(
            cache.with_retention(None).ttl_automatic,
            Duration::from_secs(3600)
        );
        let cache: CacheConfig = toml::from_str("style = \"automatic\"\n").unwrap();
        assert_eq!(cache.default_retention, Retention::InMemory);
        assert_eq!(cache.ttl_extended, Duration::from_secs(24 * 60 * 60));
    }

    #[test]
    fn rules_match_exact_ids_and_prefixes() {
        let rule = ModelRule {
            protocol: Some(Protocol::Chat),
            pattern: "local-*".into(),
            profile: builtin_profile(Protocol::Chat, "deepseek-chat"),
        };
        let config = MockConfig::new().with_model(rule);
        assert_eq!(
            config.profile(Protocol::Chat, "local-model").cache.style,
            CacheStyle::DeepseekDisk
        );
        assert_eq!(
            config
                .profile(Protocol::Responses, "local-model")
                .cache
                .style,
            CacheStyle::Automatic
        );
    }
}
