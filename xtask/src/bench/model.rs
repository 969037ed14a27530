//! The cache models a workload runs against: which provider row, model and wire protocol, and
//! what the mock simulates. Prices come from the capability table's row for the model.

use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use async_trait::async_trait;
use strata_provider::transport::{HttpClient, RetryPolicy, TransportConfig};
use strata_provider::{
    Capabilities, Catalog, EventStream, Model, Protocol, Provider, ProviderError, Request,
    StreamOptions,
};

/// A provider's prompt cache, as strata-mock simulates it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CacheModel {
    /// Anthropic explicit breakpoints, 5-minute lifetime (claude-opus-4-8).
    AnthropicFiveMinutes,
    /// Anthropic explicit breakpoints asked for with the 1-hour lifetime.
    AnthropicOneHour,
    /// OpenAI's automatic prefix cache (gpt-5.5 on the Responses API).
    OpenAiAutomatic,
    /// DeepSeek's disk cache (deepseek-v4-flash on Chat Completions).
    DeepSeekDisk,
}

impl CacheModel {
    /// Every cache model, in table order.
    pub const ALL: [Self; 4] = [
        Self::AnthropicFiveMinutes,
        Self::AnthropicOneHour,
        Self::OpenAiAutomatic,
        Self::DeepSeekDisk,
    ];

    /// The name used in tables and on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Self::AnthropicFiveMinutes => "anthropic-5m",
            Self::AnthropicOneHour => "anthropic-1h",
            Self::OpenAiAutomatic => "openai",
            Self::DeepSeekDisk => "deepseek",
        }
    }

    /// Parses a name from [`Self::name`].
    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|model| model.name() == name)
    }

    /// `provider/model` of the representative model priced.
    pub fn qualified_model(self) -> (&'static str, &'static str) {
        match self {
            // The current models whose rows carry the providers' mid-conversation features
            // (Opus 4.8: system messages, tool additions and removals; GPT-5.5: tool
            // additions through deferred tools): where a row lacks them strata falls back to
            // naive's layout and the comparison says nothing.
            Self::AnthropicFiveMinutes | Self::AnthropicOneHour => ("anthropic", "claude-opus-4-8"),
            Self::OpenAiAutomatic => ("openai", "gpt-5.5"),
            Self::DeepSeekDisk => ("deepseek", "deepseek-v4-flash"),
        }
    }

    /// Granularity and minimum of the cache, for the ideal: `(increment, min_tokens)`.
    pub fn granularity(self, capabilities: &Capabilities) -> (u64, u64) {
        let protocol = self.protocol();
        let profile = strata_mock::ModelProfile::from_capabilities(
            protocol.into(),
            self.qualified_model().1,
            capabilities,
        );
        (profile.cache.increment.max(1), profile.cache.min_tokens)
    }

    fn protocol(self) -> Protocol {
        match self {
            Self::AnthropicFiveMinutes | Self::AnthropicOneHour => Protocol::AnthropicMessages,
            Self::OpenAiAutomatic => Protocol::OpenaiResponses,
            Self::DeepSeekDisk => Protocol::OpenaiChat,
        }
    }
}

/// A provider, its model and what render needs, ready to point at a mock server.
pub struct Endpoint {
    /// The adapter (wrapped: see [`BenchProvider`]).
    pub provider: Arc<dyn Provider>,
    /// The model, with the window the workload asks for.
    pub model: Model,
    /// The row's capabilities for the model.
    pub capabilities: Capabilities,
    /// The protocol name recorded on assistant messages.
    pub api: String,
}

/// Builds the adapter for `cache_model`, wrapped so that each request advances `clock` first.
pub fn endpoint(
    cache_model: CacheModel,
    context_window: u64,
    clock: Arc<dyn Fn() + Send + Sync>,
) -> Result<Endpoint> {
    let catalog = Catalog::builtin().context("loading the capability table")?;
    let (provider_id, model_id) = cache_model.qualified_model();
    let mut row = catalog
        .provider(provider_id)
        .with_context(|| format!("provider {provider_id} is not in the capability table"))?
        .clone();
    // The cache benches read whole request bodies (the ideal cache, the miss causes); the
    // WebSocket mode sends only each turn's new items and bills the same, so it is measured
    // on its own (`--only transport`).
    row.features.websocket_mode = false;
    let mut model = catalog.model(provider_id, model_id).with_context(|| {
        format!("model {provider_id}/{model_id} is not in the capability table")
    })?;
    model.context_window = context_window;
    let transport = TransportConfig {
        retry: RetryPolicy {
            max_retries: 2,
            base_delay: Duration::from_millis(5),
            max_delay: Duration::from_millis(50),
        },
        ..TransportConfig::default()
    };
    let client = HttpClient::new(&transport).context("building the HTTP client")?;
    let protocol = cache_model.protocol();
    let inner = strata_runtime::adapter_for(&row, protocol, client, None)
        .context("building the adapter")?;
    // The names the bench has always recorded (Pi's for Chat Completions).
    let api = match protocol {
        Protocol::OpenaiChat => "openai-completions",
        other => other.as_str(),
    };
    let provider = Arc::new(BenchProvider { inner, clock });
    Ok(Endpoint {
        provider,
        capabilities: row.capabilities(&model.id),
        model,
        api: api.to_owned(),
    })
}

/// The adapter, with the benchmark's one intervention: the virtual clock moves before each
/// request (time between requests). The lifetime strata asks for is the agent's
/// `CacheSettings::retention`, as a user sets it.
pub struct BenchProvider {
    inner: Arc<dyn Provider>,
    clock: Arc<dyn Fn() + Send + Sync>,
}

#[async_trait]
impl Provider for BenchProvider {
    fn protocol(&self) -> Protocol {
        self.inner.protocol()
    }

    async fn stream(
        &self,
        model: &Model,
        request: &Request,
        options: &StreamOptions,
    ) -> Result<EventStream, ProviderError> {
        (self.clock)();
        self.inner.stream(model, request, options).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_every_model_is_in_the_table() {
        for model in CacheModel::ALL {
            assert_eq!(CacheModel::parse(model.name()), Some(model));
            let endpoint = endpoint(model, 100_000, Arc::new(|| {})).unwrap();
            assert_eq!(endpoint.model.context_window, 100_000);
            assert!(endpoint.model.prices.cache_read > 0.0, "{model:?}");
        }
    }
}
