//! The hand-kept capability table (`crates/strata-provider/data/providers.toml`): one row per provider.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::capabilities::{
    CacheKeyParam, CacheStyle, Capabilities, ExplicitCache, FeatureHeader, PeakPricing, Prewarm,
    Protocol, ReasoningStyle, SystemRole, WireQuirks,
};
use crate::model::Modality;
use crate::request::CacheTtl;
use crate::usage::PriceMultipliers;

/// The whole table as written in `providers.toml`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ProviderTable {
    /// Format version of the file (currently 1).
    pub schema_version: u32,
    /// Rows keyed by provider id.
    pub providers: BTreeMap<String, ProviderRow>,
}

/// How a provider authenticates.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum AuthScheme {
    /// `Authorization: Bearer <key>`.
    #[default]
    Bearer,
    /// `x-api-key: <key>` (Anthropic and Anthropic-format endpoints).
    XApiKey,
    /// `api-key: <key>` (Azure OpenAI).
    ApiKey,
    /// `x-goog-api-key: <key>` (Gemini).
    XGoogApiKey,
    /// AWS Signature V4 from the usual AWS credential chain (Bedrock).
    AwsSigv4,
    /// No credentials (local servers).
    None,
}

/// Where a row's models come from in the models.dev-format catalog.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CatalogSource {
    /// Provider key in the catalog (defaults to the row id).
    pub provider: String,
    /// Model id patterns to take (`*` matches any run of characters); empty takes all.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub include: Vec<String>,
    /// Model id patterns to leave out.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub exclude: Vec<String>,
}

/// The prompt-cache behaviour of a provider.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CacheSpec {
    /// Explicit breakpoints, automatic prefix, or none.
    pub style: CacheStyle,
    /// Most breakpoints per request.
    #[serde(default)]
    pub max_breakpoints: u8,
    /// Offered lifetimes.
    #[serde(default)]
    pub ttl: Vec<CacheTtl>,
    /// Parameter carrying the cache key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<CacheKeyParam>,
    /// Shortest cacheable prompt, in tokens.
    #[serde(default)]
    pub min_tokens: u32,
    /// Cache read price ÷ input price.
    #[serde(default = "one")]
    pub read_multiplier: f64,
    /// 5-minute (default-TTL) cache write price ÷ input price.
    #[serde(default = "one")]
    pub write_multiplier: f64,
    /// 1-hour cache write price ÷ input price (defaults to the 5-minute multiplier).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub write_1h_multiplier: Option<f64>,
    /// How the cache is warmed without output.
    #[serde(default, skip_serializing_if = "is_no_prewarm")]
    pub prewarm: Prewarm,
    /// Peak-hour prices (the catalog's prices are off-peak).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peak: Option<PeakPricing>,
    /// Explicit caches the provider offers (used only where `features.explicit_cache`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub explicit: Option<ExplicitCache>,
}

fn is_no_prewarm(p: &Prewarm) -> bool {
    *p == Prewarm::None
}

fn one() -> f64 {
    1.0
}

impl Default for CacheSpec {
    fn default() -> Self {
        Self {
            style: CacheStyle::None,
            max_breakpoints: 0,
            ttl: Vec::new(),
            key: None,
            min_tokens: 0,
            read_multiplier: 1.0,
            write_multiplier: 1.0,
            write_1h_multiplier: None,
            prewarm: Prewarm::None,
            peak: None,
            explicit: None,
        }
    }
}

impl CacheSpec {
    /// The multipliers as a price type.
    pub fn multipliers(&self) -> PriceMultipliers {
        PriceMultipliers {
            cache_read: self.read_multiplier,
            cache_write_5m: self.write_multiplier,
            cache_write_1h: self.write_1h_multiplier.unwrap_or(self.write_multiplier),
        }
    }
}

/// Append-only context features of a provider (row defaults; models override).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct FeatureSpec {
    /// `role: system` messages mid-conversation are honoured.
    pub mid_conversation_system: bool,
    /// Tools can be added without rewriting the tools chapter.
    pub tool_addition: bool,
    /// Tools can be removed without rewriting the tools chapter.
    pub tool_removal: bool,
    /// `defer_loading` tools / tool search.
    pub deferred_tools: bool,
    /// A placeholder deferred tool must be present from the first request.
    pub deferred_tool_placeholder: bool,
    /// Server-side context editing.
    pub context_editing: bool,
    /// Without mid-conversation system messages, a system or tool change is said in a marked
    /// reminder after the next user message (the prefix survives) instead of folded into the
    /// system chapter (`false`: the fold). Default `true` for every row (it matters only where
    /// the row lacks mid-conversation system messages): a reminder in the conversation is how
    /// Claude Code tells its model of context changes (`<system-reminder>` blocks in user
    /// turns), every chat model reads user messages, and a fold rewrites the whole prefix.
    pub system_reminders: bool,
    /// The provider diagnoses cache misses against a named earlier response.
    pub cache_diagnostics: bool,
    /// Effort changes mid-conversation keep the prefix.
    pub mid_conversation_effort: bool,
    /// OpenAI Responses WebSocket mode: one socket per session, each turn sending only its new
    /// items after `previous_response_id`.
    pub websocket_mode: bool,
    /// OpenAI Responses `additional_tools` input items: a tool added mid-session is declared
    /// where it arrives, the `tools` prefix unchanged.
    pub additional_tools: bool,
    /// Later requests send only the new messages of a server-held conversation.
    pub message_threads: bool,
    /// Tools added mid-conversation are defined inline.
    pub inline_tools: bool,
    /// Mid-conversation system messages can be shown until the next user message only.
    pub system_clear_at: bool,
    /// The stable prefix goes into an explicit cache (`cache.explicit`) that requests name.
    pub explicit_cache: bool,
}

impl Default for FeatureSpec {
    fn default() -> Self {
        Self {
            mid_conversation_system: false,
            tool_addition: false,
            tool_removal: false,
            deferred_tools: false,
            deferred_tool_placeholder: false,
            context_editing: false,
            system_reminders: true,
            cache_diagnostics: false,
            mid_conversation_effort: false,
            websocket_mode: false,
            additional_tools: false,
            message_threads: false,
            inline_tools: false,
            system_clear_at: false,
            explicit_cache: false,
        }
    }
}

/// One provider of the table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ProviderRow {
    /// Provider id (the table key; filled in on load).
    #[serde(skip)]
    pub id: String,
    /// Display name.
    pub name: String,
    /// Wire protocol, hence the adapter crate.
    pub protocol: Protocol,
    /// Base URL; `{VAR}` placeholders are filled from the environment by the caller.
    pub base_url: String,
    /// Environment variables holding the key, in order of preference.
    #[serde(default)]
    pub auth_env: Vec<String>,
    /// How the key is sent.
    #[serde(default)]
    pub auth: AuthScheme,
    /// Static headers sent with every request.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub headers: BTreeMap<String, String>,
    /// Documentation URL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub docs: Option<String>,
    /// The model a run uses when the user chose none and this row has credentials (the host
    /// decides which row's default wins when several have keys).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_model: Option<String>,
    /// Where the generator takes this row's models from (default: the catalog key = row id).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub catalog: Option<CatalogSource>,
    /// Prompt-cache behaviour.
    #[serde(default)]
    pub cache: CacheSpec,
    /// Append-only context features.
    #[serde(default)]
    pub features: FeatureSpec,
    /// Reasoning parameter style.
    #[serde(default)]
    pub reasoning: ReasoningStyle,
    /// Role name for system instructions in `messages`.
    #[serde(default)]
    pub system_role: SystemRole,
    /// Opt-in headers needed by features.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub feature_headers: Vec<FeatureHeader>,
    /// Quirks within the protocol.
    #[serde(default)]
    pub wire: WireQuirks,
    /// Per-model capability overrides, applied in order (later wins).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub overrides: Vec<ModelOverride>,
    /// Hand-kept model facts merged over the catalog (new models or corrections).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub models: BTreeMap<String, ModelEntry>,
    /// A server that serves whatever models it has (local servers, gateways): any model id is
    /// accepted, and the server is asked for its list and context windows.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<ServerSpec>,
}

/// Which server software a row talks to, hence where it lists models and context windows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum ServerKind {
    /// llama.cpp `llama-server`: `GET /v1/models`, the window in `GET /props`
    /// (`default_generation_settings.n_ctx`).
    LlamaCpp,
    /// Ollama: `GET /v1/models`, the window from `POST /api/show` (`num_ctx`, else the
    /// model's `*.context_length`).
    Ollama,
    /// vLLM: `GET /v1/models` with `max_model_len` per model.
    Vllm,
    /// LM Studio: `GET /api/v0/models` with `loaded_context_length` / `max_context_length`.
    LmStudio,
    /// Any other OpenAI-compatible server: `GET /v1/models`, no window reported.
    OpenaiCompatible,
}

impl ServerKind {
    /// The table spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::LlamaCpp => "llama-cpp",
            Self::Ollama => "ollama",
            Self::Vllm => "vllm",
            Self::LmStudio => "lm-studio",
            Self::OpenaiCompatible => "openai-compatible",
        }
    }
}

/// `[providers.<id>.server]`: the row serves models the table does not list.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ServerSpec {
    /// The server software.
    pub kind: ServerKind,
    /// Context window assumed when the server reports none (a warning says so); default
    /// [`crate::catalog::DEFAULT_SERVER_CONTEXT_WINDOW`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_context_window: Option<u64>,
}

impl ServerSpec {
    /// The window assumed when the server reports none.
    pub fn fallback_context_window(&self) -> u64 {
        self.default_context_window
            .unwrap_or(crate::catalog::DEFAULT_SERVER_CONTEXT_WINDOW)
    }
}

/// Capability changes for the models whose ids match `models`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ModelOverride {
    /// Model id patterns (`*` matches any run of characters).
    pub models: Vec<String>,
    /// Protocol for these models (multi-protocol gateways).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protocol: Option<Protocol>,
    /// Base URL for these models.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_url: Option<String>,
    /// Cache style.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_style: Option<CacheStyle>,
    /// Breakpoint limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_breakpoints: Option<u8>,
    /// Offered cache lifetimes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl: Option<Vec<CacheTtl>>,
    /// Cache-key parameter.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_key: Option<CacheKeyParam>,
    /// Shortest cacheable prompt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_cacheable_tokens: Option<u32>,
    /// Cache read multiplier.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_multiplier: Option<f64>,
    /// 5-minute cache write multiplier.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub write_multiplier: Option<f64>,
    /// 1-hour cache write multiplier.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub write_1h_multiplier: Option<f64>,
    /// Output-free warm-up.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prewarm: Option<Prewarm>,
    /// Peak-hour prices.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peak: Option<PeakPricing>,
    /// Mid-conversation system messages.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mid_conversation_system: Option<bool>,
    /// Tool addition.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_addition: Option<bool>,
    /// Tool removal.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_removal: Option<bool>,
    /// Deferred tools.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deferred_tools: Option<bool>,
    /// Deferred-tool placeholder.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deferred_tool_placeholder: Option<bool>,
    /// Server-side context editing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_editing: Option<bool>,
    /// Reminders instead of the fold.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system_reminders: Option<bool>,
    /// Provider cache diagnostics.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_diagnostics: Option<bool>,
    /// Effort changes that keep the prefix.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mid_conversation_effort: Option<bool>,
    /// Responses WebSocket mode.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub websocket_mode: Option<bool>,
    /// Responses `additional_tools` items.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub additional_tools: Option<bool>,
    /// Message threads.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message_threads: Option<bool>,
    /// Inline tool definitions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inline_tools: Option<bool>,
    /// `clear_at` on system messages.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system_clear_at: Option<bool>,
    /// Use explicit caches.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub explicit_cache: Option<bool>,
    /// Explicit caches offered (replace the row's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub explicit: Option<ExplicitCache>,
    /// Reasoning style.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<ReasoningStyle>,
    /// System role name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system_role: Option<SystemRole>,
    /// Feature headers (replace the row's list).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub feature_headers: Option<Vec<FeatureHeader>>,
    /// Wire quirks (replace the row's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wire: Option<WireQuirks>,
}

impl ModelOverride {
    /// Whether this override applies to `model_id`.
    pub fn matches(&self, model_id: &str) -> bool {
        self.models.iter().any(|p| glob_match(p, model_id))
    }
}

/// Hand-kept facts about one model; every field is optional so it can patch the catalog.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ModelEntry {
    /// Display name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Context window in tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_window: Option<u64>,
    /// Largest output in tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_output: Option<u64>,
    /// Accepted inputs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input: Option<Vec<Modality>>,
    /// Whether the model reasons.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<bool>,
    /// Prices in USD per million tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prices: Option<PricesPatch>,
}

/// Prices to set, each optional.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PricesPatch {
    /// Uncached input.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input: Option<f64>,
    /// Output.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<f64>,
    /// Cache read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_read: Option<f64>,
    /// 5-minute cache write.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_write_5m: Option<f64>,
    /// 1-hour cache write.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_write_1h: Option<f64>,
}

/// The endpoint to call for one provider + model.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Endpoint {
    /// Wire protocol.
    pub protocol: Protocol,
    /// Base URL (may hold `{VAR}` placeholders).
    pub base_url: String,
    /// How the key is sent.
    pub auth: AuthScheme,
    /// Environment variables that may hold the key.
    pub auth_env: Vec<String>,
    /// Static headers.
    pub headers: BTreeMap<String, String>,
}

impl ProviderRow {
    /// The row's capabilities before any per-model override.
    pub fn base_capabilities(&self) -> Capabilities {
        Capabilities {
            cache_style: self.cache.style,
            max_breakpoints: self.cache.max_breakpoints,
            ttl_options: self.cache.ttl.clone(),
            cache_key: self.cache.key.clone(),
            min_cacheable_tokens: self.cache.min_tokens,
            mid_conversation_system: self.features.mid_conversation_system,
            tool_addition: self.features.tool_addition,
            tool_removal: self.features.tool_removal,
            deferred_tools: self.features.deferred_tools,
            deferred_tool_placeholder: self.features.deferred_tool_placeholder,
            context_editing: self.features.context_editing,
            system_reminders: self.features.system_reminders,
            reasoning: self.reasoning,
            system_role: self.system_role,
            feature_headers: self.feature_headers.clone(),
            price_multipliers: self.cache.multipliers(),
            wire: self.wire.clone(),
            prewarm: self.cache.prewarm,
            peak_pricing: self.cache.peak.clone(),
            cache_diagnostics: self.features.cache_diagnostics,
            mid_conversation_effort: self.features.mid_conversation_effort,
            websocket_mode: self.features.websocket_mode,
            additional_tools: self.features.additional_tools,
            message_threads: self.features.message_threads,
            inline_tools: self.features.inline_tools,
            system_clear_at: self.features.system_clear_at,
            explicit_cache: self.features.explicit_cache,
            explicit_cache_offer: self.cache.explicit,
        }
    }

    /// The overrides that apply to `model_id`, in application order.
    pub fn overrides_for<'a>(
        &'a self,
        model_id: &'a str,
    ) -> impl Iterator<Item = &'a ModelOverride> {
        self.overrides.iter().filter(move |o| o.matches(model_id))
    }

    /// Capabilities for `model_id`: the row, then every matching override in order.
    pub fn capabilities(&self, model_id: &str) -> Capabilities {
        let mut caps = self.base_capabilities();
        for o in self.overrides_for(model_id) {
            apply_override(&mut caps, o);
        }
        caps
    }

    /// Protocol, URL and auth for `model_id`, after overrides.
    pub fn endpoint(&self, model_id: &str) -> Endpoint {
        let mut endpoint = Endpoint {
            protocol: self.protocol,
            base_url: self.base_url.clone(),
            auth: self.auth,
            auth_env: self.auth_env.clone(),
            headers: self.headers.clone(),
        };
        for o in self.overrides_for(model_id) {
            if let Some(p) = o.protocol {
                endpoint.protocol = p;
            }
            if let Some(url) = &o.base_url {
                endpoint.base_url.clone_from(url);
            }
        }
        endpoint
    }

    /// Every protocol this row uses (its own and those of its overrides).
    pub fn protocols(&self) -> Vec<Protocol> {
        let mut all = vec![self.protocol];
        for p in self.overrides.iter().filter_map(|o| o.protocol) {
            if !all.contains(&p) {
                all.push(p);
            }
        }
        all
    }

    /// The catalog key and filters this row reads models from.
    pub fn catalog_source(&self) -> CatalogSource {
        self.catalog.clone().unwrap_or_else(|| CatalogSource {
            provider: self.id.clone(),
            include: Vec::new(),
            exclude: Vec::new(),
        })
    }
}

pub(crate) fn apply_override(caps: &mut Capabilities, o: &ModelOverride) {
    if let Some(v) = o.cache_style {
        caps.cache_style = v;
    }
    if let Some(v) = o.max_breakpoints {
        caps.max_breakpoints = v;
    }
    if let Some(v) = &o.ttl {
        caps.ttl_options.clone_from(v);
    }
    if let Some(v) = &o.cache_key {
        caps.cache_key = Some(v.clone());
    }
    if let Some(v) = o.min_cacheable_tokens {
        caps.min_cacheable_tokens = v;
    }
    if let Some(v) = o.read_multiplier {
        caps.price_multipliers.cache_read = v;
    }
    if let Some(v) = o.write_multiplier {
        caps.price_multipliers.cache_write_5m = v;
    }
    if let Some(v) = o.write_1h_multiplier {
        caps.price_multipliers.cache_write_1h = v;
    }
    if let Some(v) = o.prewarm {
        caps.prewarm = v;
    }
    if let Some(v) = &o.peak {
        caps.peak_pricing = Some(v.clone());
    }
    let flags = [
        (o.mid_conversation_system, &mut caps.mid_conversation_system),
        (o.tool_addition, &mut caps.tool_addition),
        (o.tool_removal, &mut caps.tool_removal),
        (o.deferred_tools, &mut caps.deferred_tools),
        (
            o.deferred_tool_placeholder,
            &mut caps.deferred_tool_placeholder,
        ),
        (o.context_editing, &mut caps.context_editing),
        (o.system_reminders, &mut caps.system_reminders),
        (o.cache_diagnostics, &mut caps.cache_diagnostics),
        (o.mid_conversation_effort, &mut caps.mid_conversation_effort),
        (o.websocket_mode, &mut caps.websocket_mode),
        (o.additional_tools, &mut caps.additional_tools),
        (o.message_threads, &mut caps.message_threads),
        (o.inline_tools, &mut caps.inline_tools),
        (o.system_clear_at, &mut caps.system_clear_at),
        (o.explicit_cache, &mut caps.explicit_cache),
    ];
    if let Some(v) = o.explicit {
        caps.explicit_cache_offer = Some(v);
    }
    for (value, slot) in flags {
        if let Some(v) = value {
            *slot = v;
        }
    }
    if let Some(v) = o.reasoning {
        caps.reasoning = v;
    }
    if let Some(v) = o.system_role {
        caps.system_role = v;
    }
    if let Some(v) = &o.feature_headers {
        caps.feature_headers.clone_from(v);
    }
    if let Some(v) = &o.wire {
        caps.wire = v.clone();
    }
}

/// Matches `text` against `pattern`, where `*` matches any run of characters.
pub fn glob_match(pattern: &str, text: &str) -> bool {
    let parts: Vec<&str> = pattern.split('*').collect();
    if parts.len() == 1 {
        return pattern == text;
    }
    let (first, rest) = (parts[0], &parts[1..]);
    let Some(mut remaining) = text.strip_prefix(first) else {
        return false;
    };
    let last = rest.len() - 1;
    for (i, part) in rest.iter().enumerate() {
        if i == last {
            return remaining.ends_with(part);
        }
        match remaining.find(part) {
            Some(pos) => remaining = &remaining[pos + part.len()..],
            None => return false,
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(toml_text: &str) -> ProviderRow {
        let mut table = crate::catalog::parse_provider_table(toml_text, "test").unwrap();
        table.providers.remove("p").unwrap()
    }

    #[test]
    fn overrides_apply_in_order_and_later_ones_win() {
        let row = row(r#"
schema_version = 1
[providers.p]
name = "P"
protocol = "anthropic-messages"
base_url = "https://p"
[providers.p.cache]
style = "explicit-breakpoints"
min_tokens = 1024
[[providers.p.overrides]]
models = ["m-*"]
min_cacheable_tokens = 2048
mid_conversation_system = true
[[providers.p.overrides]]
models = ["m-old*"]
mid_conversation_system = false
[[providers.p.overrides]]
models = ["m-gw"]
protocol = "openai-chat"
base_url = "https://p/compat"
"#);
        let new = row.capabilities("m-new");
        assert_eq!(new.min_cacheable_tokens, 2048);
        assert!(new.mid_conversation_system);
        let old = row.capabilities("m-old-1");
        assert_eq!(
            old.min_cacheable_tokens, 2048,
            "earlier override still applies"
        );
        assert!(!old.mid_conversation_system, "later override wins");
        let other = row.capabilities("x");
        assert_eq!(other.min_cacheable_tokens, 1024);
        let gw = row.endpoint("m-gw");
        assert_eq!(gw.protocol, Protocol::OpenaiChat);
        assert_eq!(gw.base_url, "https://p/compat");
        assert_eq!(row.endpoint("m-new").protocol, Protocol::AnthropicMessages);
        assert_eq!(
            row.protocols(),
            vec![Protocol::AnthropicMessages, Protocol::OpenaiChat]
        );
    }

    #[test]
    fn glob_matches_stars_anywhere() {
        assert!(glob_match("claude-opus-4-8*", "claude-opus-4-8"));
        assert!(glob_match("claude-opus-4-8*", "claude-opus-4-8-20260528"));
        assert!(!glob_match("claude-opus-4-8*", "claude-opus-4-7"));
        assert!(glob_match("*", "anything"));
        assert!(glob_match("gpt-5.*-codex", "gpt-5.2-codex"));
        assert!(!glob_match("gpt-5.*-codex", "gpt-5.2-codex-max"));
        assert!(glob_match("*sonnet*", "anthropic.claude-sonnet-4-5-v1:0"));
        assert!(glob_match("exact", "exact"));
        assert!(!glob_match("exact", "exactly"));
    }
}
