//! [`AnthropicProvider`]: one capability-table row speaking Anthropic Messages.

use async_trait::async_trait;
use std::sync::Arc;
use strata_provider::transport::{
    Driver, EnvLookup, HttpClient, HttpRequest, auth_header, base_url, drive, endpoint_speaking,
    join_url, missing_key, process_env_lookup, resolve_api_key,
};
use strata_provider::{
    ApiKey, AuthScheme, Capabilities, EffortChanges, EventStream, Feature, LastResponses,
    Learnable, LearnedCapabilities, Model, ParamLocation, Protocol, Provider, ProviderError,
    ProviderRow, ReasoningStyle, Request, StreamOptions,
};
use tracing::Instrument;

use crate::request::{
    ANTHROPIC_VERSION, adaptive_effort, build_body, uses_clear_at, uses_inline_tools,
    uses_tool_changes,
};
use crate::stream::AnthropicParser;
use crate::thread::{Pending, ThreadUse, Threads, replay_in_full};

/// One built request: the HTTP request, the learnable features it relies on, and how it
/// uses the session's message thread.
struct Built {
    http: HttpRequest,
    used: Vec<Learnable>,
    thread: ThreadUse,
    pending: Option<Pending>,
}

/// The Messages adapter for one provider row (Anthropic, MiniMax, Kimi, gateways, …).
#[derive(Clone)]
pub struct AnthropicProvider {
    row: ProviderRow,
    client: HttpClient,
    env: EnvLookup,
    /// Each session's last response id, named in the next request's `diagnostics`.
    last: LastResponses,
    /// Each session's effort changes, said in system messages where the row allows it.
    effort: EffortChanges,
    /// Features the provider refused for a model, left out from then on.
    learned: Arc<LearnedCapabilities>,
    /// Each session's message thread, where the row has them.
    threads: Threads,
}

impl std::fmt::Debug for AnthropicProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AnthropicProvider")
            .field("row", &self.row.id)
            .finish_non_exhaustive()
    }
}

impl AnthropicProvider {
    /// The adapter for `row`; keys and `{VAR}` URL parts come from the process environment.
    pub fn for_row(row: &ProviderRow, client: HttpClient) -> Self {
        Self {
            row: row.clone(),
            client,
            env: process_env_lookup(),
            last: LastResponses::new(),
            effort: EffortChanges::new(),
            learned: Arc::new(LearnedCapabilities::in_memory()),
            threads: Threads::new(),
        }
    }

    /// Reads and records learned capabilities in `learned` (a file in the user's state, shared
    /// by every adapter of a run) instead of this adapter's memory alone.
    pub fn with_learned(mut self, learned: Arc<LearnedCapabilities>) -> Self {
        self.learned = learned;
        self
    }

    /// Reads keys and URL variables through `env` instead of the process environment.
    pub fn with_env(mut self, env: EnvLookup) -> Self {
        self.env = env;
        self
    }

    /// The row this adapter serves.
    pub fn row(&self) -> &ProviderRow {
        &self.row
    }

    /// The HTTP request `stream` would send: URL, headers (auth included) and body.
    pub fn build_http_request(
        &self,
        model: &Model,
        request: &Request,
        options: &StreamOptions,
    ) -> Result<HttpRequest, ProviderError> {
        self.build(model, request, options).map(|built| built.http)
    }

    /// The HTTP request, the learnable features it relies on and its use of the thread.
    fn build(
        &self,
        model: &Model,
        request: &Request,
        options: &StreamOptions,
    ) -> Result<Built, ProviderError> {
        let endpoint = endpoint_speaking(&self.row, &model.id, Protocol::AnthropicMessages)?;
        let caps = self
            .learned
            .apply(&self.row.id, &model.id, &self.row.capabilities(&model.id));
        let env = |name: &str| (self.env)(name);
        let base = base_url(options.base_url.as_deref(), &endpoint, env)?;
        let base = base.trim_end_matches('/');
        let url = if base.ends_with("/v1") {
            join_url(base, "messages")
        } else {
            join_url(base, "v1/messages")
        };

        let mut request = request.clone();
        if let Some(key) = options.cache_key.clone() {
            request.cache_key = Some(key);
        }
        let mut body = build_body(&request, model, &caps);
        let effort_said = self.say_effort_changes(&mut body, &request, model, &caps, options);
        if caps.cache_diagnostics
            && let Some(fields) = body.as_object_mut()
        {
            // `null` on a session's first request opts in with nothing to compare
            // (anthropic-python 2.17.0 `BetaDiagnosticsParam.previous_message_id`).
            let previous = self.last.get(options.session_id.as_deref());
            fields.insert(
                "diagnostics".into(),
                serde_json::json!({ "previous_message_id": previous }),
            );
        }
        // A warm-up ping (at most one token) leaves the thread alone, as Pi's warming does.
        let warm_up = request.max_tokens.is_some_and(|cap| cap <= 1);
        let (thread, pending) = if caps.message_threads && !warm_up {
            self.threads.apply(options.session_id.as_deref(), &mut body)
        } else {
            (ThreadUse::Off, None)
        };
        let mut http = HttpRequest::json_of(url, &body)?
            .header("accept", "text/event-stream")
            .header("anthropic-version", ANTHROPIC_VERSION);

        let key = resolve_api_key(options.api_key.as_ref(), &endpoint.auth_env, env);
        match (&key, endpoint.auth) {
            (Some(key), scheme) => {
                // OAuth tokens (Claude subscriptions) go as Bearer whatever the row says.
                let scheme = if key.expose().starts_with("sk-ant-oat") {
                    AuthScheme::Bearer
                } else {
                    scheme
                };
                if let Some((name, value)) = auth_header(scheme, key) {
                    http = http.header(name, value);
                }
            }
            (None, AuthScheme::None) => {}
            (None, _) => return Err(missing_key(&self.row.id, &endpoint.auth_env)),
        }
        for (name, value) in &endpoint.headers {
            http = http.header(name.clone(), value.clone());
        }

        let mut betas: Vec<&str> = Vec::new();
        let mut wanted = Vec::new();
        if uses_tool_changes(&request, &caps) {
            wanted.push(Feature::ToolChanges);
        }
        if body.get("thinking").is_some() && !request.tools.is_empty() {
            wanted.push(Feature::InterleavedThinking);
        }
        if body.get("diagnostics").is_some() {
            wanted.push(Feature::CacheDiagnostics);
        }
        if effort_said {
            wanted.push(Feature::MidConversationEffort);
        }
        if thread != ThreadUse::Off {
            wanted.push(Feature::MessageThreads);
        }
        if uses_inline_tools(&request, &caps) {
            wanted.push(Feature::InlineTools);
        }
        if uses_clear_at(&request, &caps) {
            wanted.push(Feature::SystemClearAt);
        }
        for feature in wanted {
            for h in caps.headers_for(feature) {
                if h.header.eq_ignore_ascii_case("anthropic-beta") {
                    betas.push(&h.value);
                } else {
                    http = http.header(h.header.clone(), h.value.clone());
                }
            }
        }
        if !betas.is_empty() {
            http = http.header("anthropic-beta", betas.join(","));
        }
        if let (Some(param), Some(key)) = (&caps.cache_key, &request.cache_key)
            && param.location == ParamLocation::Header
        {
            http = http.header(param.name.clone(), key.clone());
        }
        for (name, value) in &options.headers {
            http = http.header(name.clone(), value.clone());
        }
        http.secrets = key.into_iter().collect::<Vec<ApiKey>>();
        http.max_retries = Some(options.max_retries);
        let mut used = Vec::new();
        if body.get("diagnostics").is_some() {
            used.push(Learnable::CacheDiagnostics);
        }
        if effort_said {
            used.push(Learnable::MidConversationEffort);
        }
        if body.get("max_tokens").and_then(serde_json::Value::as_u64) == Some(0) {
            used.push(Learnable::Prewarm);
        }
        if thread != ThreadUse::Off {
            used.push(Learnable::MessageThreads);
        }
        Ok(Built {
            http,
            used,
            thread,
            pending,
        })
    }
}

impl AnthropicProvider {
    /// On rows with per-message effort: keeps the session's first effort at the request level
    /// and says each change in a `role: "system"` message carrying only `output_config`
    /// (anthropic-python 2.17.0 `BetaSystemMessageParam`), where it happened. Returns whether
    /// the body holds such a message (the beta header is needed then).
    fn say_effort_changes(
        &self,
        body: &mut serde_json::Value,
        request: &Request,
        model: &Model,
        caps: &Capabilities,
        options: &StreamOptions,
    ) -> bool {
        if !(caps.mid_conversation_effort
            && caps.reasoning == ReasoningStyle::AnthropicAdaptive
            && model.reasoning)
        {
            return false;
        }
        let Some(messages) = body.get("messages").and_then(|m| m.as_array()) else {
            return false;
        };
        let plan = self
            .effort
            .plan(options.session_id.as_deref(), messages, request.thinking);
        if plan.base != request.thinking {
            let mut at_base = request.clone();
            at_base.thinking = plan.base;
            let rebuilt = build_body(&at_base, model, caps);
            *body = rebuilt;
        }
        let Some(messages) = body.get_mut("messages").and_then(|m| m.as_array_mut()) else {
            return false;
        };
        plan.insert(messages, |level| {
            serde_json::json!({
                "role": "system",
                "output_config": {"effort": adaptive_effort(level)},
            })
        });
        !plan.changes.is_empty()
    }
}

#[async_trait]
impl Provider for AnthropicProvider {
    fn protocol(&self) -> Protocol {
        Protocol::AnthropicMessages
    }

    fn http_request(
        &self,
        model: &Model,
        request: &Request,
        options: &StreamOptions,
    ) -> Result<HttpRequest, ProviderError> {
        self.build_http_request(model, request, options)
    }

    async fn stream(
        &self,
        model: &Model,
        request: &Request,
        options: &StreamOptions,
    ) -> Result<EventStream, ProviderError> {
        let span = tracing::debug_span!("anthropic", provider = %self.row.id, model = %model.id);
        let cancel = options.cancel.clone();
        let driver: Driver =
            Arc::new(move |response| drive(response, AnthropicParser::new(), cancel.clone()));
        // A 400 naming a feature the row claims: learn it, send the turn again without it.
        // A continue the provider holds no thread for: send the turn again in full.
        let session = options.session_id.as_deref();
        let mut left = 3;
        loop {
            let Built {
                http,
                used,
                thread,
                pending,
            } = self.build(model, request, options)?;
            let sent = self
                .client
                .stream_events(http, &options.cancel, driver.clone())
                .instrument(span.clone())
                .await;
            match sent {
                Ok(stream) => {
                    let stream = self.threads.track(pending, stream);
                    return Ok(self.last.track(session, stream));
                }
                Err(ProviderError::InvalidRequest {
                    status, ref body, ..
                }) if left > 0
                    && matches!(thread, ThreadUse::Continue { .. })
                    && replay_in_full(status, body) =>
                {
                    left -= 1;
                    tracing::debug!(provider = %self.row.id, "no usable message thread; replaying the request in full");
                    self.threads.forget(session);
                }
                Err(ProviderError::InvalidRequest {
                    status: 400,
                    ref body,
                    ..
                }) if left > 0
                    && let Some(feature) = Learnable::named_in(body, &used) =>
                {
                    left -= 1;
                    let table = self.row.capabilities(&model.id);
                    tracing::warn!(provider = %self.row.id, model = %model.id, feature = feature.as_str(), "the provider refused a feature the row claims; sending without it");
                    if let Err(e) =
                        self.learned
                            .learn(&self.row.id, &model.id, &table, feature, body)
                    {
                        tracing::warn!("could not save what was learned: {e}");
                    }
                }
                Err(e) => return Err(e),
            }
        }
    }
}
