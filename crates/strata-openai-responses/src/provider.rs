//! [`ResponsesProvider`]: the [`Provider`] for every row whose protocol is `openai-responses`.

use std::collections::BTreeMap;
use std::sync::Arc;

use async_trait::async_trait;
use strata_provider::transport::{
    Driver, EnvLookup, HttpClient, HttpRequest, auth_header, base_url, drive, endpoint_speaking,
    join_url, missing_key, process_env_lookup, resolve_api_key,
};
use strata_provider::{
    AuthScheme, EffortChanges, EventStream, LastResponses, Learnable, LearnedCapabilities, Model,
    Protocol, Provider, ProviderError, ProviderRow, ReasoningStyle, Request, StreamOptions,
};
use tracing::Instrument;

use crate::chatgpt;
use crate::request::{SystemPlacement, build_request};
use crate::stream::ResponsesParser;
use crate::websocket::{Fallback, Sockets};

/// Endpoint variations the capability table does not describe (yet).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResponsesConfig {
    /// Path appended to the base URL (`/responses`; the ChatGPT-plan Codex endpoint uses
    /// `/codex/responses`).
    pub path: String,
    /// Where the system chapter goes.
    pub system_placement: SystemPlacement,
    /// Header that carries the session id (Codex sends `session_id`), if any.
    pub session_header: Option<String>,
    /// Send the ChatGPT backend's headers: `chatgpt-account-id` (from the access token),
    /// `OpenAI-Beta: responses=experimental` and `originator`.
    pub chatgpt_headers: bool,
}

impl Default for ResponsesConfig {
    fn default() -> Self {
        Self {
            path: "/responses".into(),
            system_placement: SystemPlacement::Message,
            session_header: None,
            chatgpt_headers: false,
        }
    }
}

impl ResponsesConfig {
    /// The ChatGPT-plan Codex backend: `/codex/responses`, `instructions`, `session_id` header,
    /// and the account, beta and originator headers.
    pub fn codex() -> Self {
        Self {
            path: "/codex/responses".into(),
            system_placement: SystemPlacement::Instructions,
            session_header: Some("session_id".into()),
            chatgpt_headers: true,
        }
    }

    /// The variations a base URL implies: [`ResponsesConfig::codex`] for the ChatGPT backend
    /// (a base URL whose path ends in `/backend-api`, which serves Responses only under
    /// `/codex/responses`), the default for every other host.
    pub fn for_base_url(base_url: &str) -> Self {
        let rest = base_url.split_once("://").map_or(base_url, |(_, r)| r);
        let path = rest.split_once('/').map_or("", |(_, p)| p);
        if path.trim_end_matches('/').ends_with("backend-api") {
            Self::codex()
        } else {
            Self::default()
        }
    }
}

/// Streams requests to one provider row over the Responses API.
#[derive(Clone)]
pub struct ResponsesProvider {
    row: ProviderRow,
    client: HttpClient,
    config: Option<ResponsesConfig>,
    url_vars: BTreeMap<String, String>,
    env: EnvLookup,
    /// Each session's last response id, the next request's `comparison_response_id`.
    last: LastResponses,
    /// Each session's effort changes, said in `configuration_update` items where the row
    /// allows it.
    effort: EffortChanges,
    /// Features the provider refused for a model, left out from then on.
    learned: Arc<LearnedCapabilities>,
    /// Each session's Responses socket, where the row offers the WebSocket mode.
    sockets: Sockets,
    /// Send turns on sockets where the row offers it (off: HTTP only).
    websocket: bool,
}

/// A request ready to send: over HTTP, and as the body a socket message is made from.
struct Built {
    http: HttpRequest,
    used: Vec<Learnable>,
    body: serde_json::Value,
    /// The row offers the WebSocket mode for this model.
    websocket: bool,
}

impl std::fmt::Debug for ResponsesProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResponsesProvider")
            .field("row", &self.row.id)
            .field("config", &self.config)
            .field("url_vars", &self.url_vars)
            .finish_non_exhaustive()
    }
}

impl ResponsesProvider {
    /// A provider for `row`. The key comes from `StreamOptions::api_key`, else the row's
    /// variables; `{VAR}` placeholders in its base URL from [`ResponsesProvider::with_url_vars`],
    /// else the environment (or `StreamOptions::base_url` replaces the URL); the endpoint
    /// variations from the row's base URL ([`ResponsesConfig::for_base_url`]).
    pub fn new(row: ProviderRow, client: HttpClient) -> Self {
        Self {
            row,
            client,
            config: None,
            url_vars: BTreeMap::new(),
            env: process_env_lookup(),
            last: LastResponses::new(),
            effort: EffortChanges::new(),
            learned: Arc::new(LearnedCapabilities::in_memory()),
            sockets: Sockets::new(),
            websocket: true,
        }
    }

    /// Turns the WebSocket mode off (`false`) or back on where the row offers it: every turn
    /// then goes over HTTP (a bench's baseline, a network that blocks sockets).
    pub fn with_websocket(mut self, on: bool) -> Self {
        self.websocket = on;
        self
    }

    /// Reads and records learned capabilities in `learned` (a file in the user's state, shared
    /// by every adapter of a run) instead of this adapter's memory alone.
    pub fn with_learned(mut self, learned: Arc<LearnedCapabilities>) -> Self {
        self.learned = learned;
        self
    }

    /// Values for the `{VAR}` placeholders of the row's base URLs (resolved by the caller).
    pub fn with_url_vars(mut self, vars: BTreeMap<String, String>) -> Self {
        self.url_vars = vars;
        self
    }

    /// Replaces the endpoint variations the row's base URL implies.
    pub fn with_config(mut self, config: ResponsesConfig) -> Self {
        self.config = Some(config);
        self
    }

    /// Reads keys and URL variables through `env` instead of the process environment.
    pub fn with_env(mut self, env: EnvLookup) -> Self {
        self.env = env;
        self
    }

    /// The endpoint variations used for `model`.
    pub fn config(&self, model: &Model) -> ResponsesConfig {
        self.config.clone().unwrap_or_else(|| {
            ResponsesConfig::for_base_url(&self.row.endpoint(&model.id).base_url)
        })
    }

    /// A URL variable or key: the caller's value, else the environment's (empty is unset).
    fn var(&self, name: &str) -> Option<String> {
        self.url_vars
            .get(name)
            .cloned()
            .or_else(|| (self.env)(name))
            .filter(|v| !v.trim().is_empty())
    }

    /// The row this provider serves.
    pub fn row(&self) -> &ProviderRow {
        &self.row
    }

    /// The HTTP request [`Provider::stream`] would send: URL, headers and body.
    pub fn prepare(
        &self,
        model: &Model,
        request: &Request,
        options: &StreamOptions,
    ) -> Result<HttpRequest, ProviderError> {
        self.build(model, request, options).map(|built| built.http)
    }

    /// The HTTP request and the learnable features it relies on.
    fn build(
        &self,
        model: &Model,
        request: &Request,
        options: &StreamOptions,
    ) -> Result<Built, ProviderError> {
        let endpoint = endpoint_speaking(&self.row, &model.id, Protocol::OpenaiResponses)?;
        let caps = self
            .learned
            .apply(&self.row.id, &model.id, &self.row.capabilities(&model.id));
        let config = self.config(model);
        let base = base_url(options.base_url.as_deref(), &endpoint, |k| self.var(k))?;
        let cache_key = options
            .cache_key
            .as_deref()
            .or(request.cache_key.as_deref());
        let mut built = build_request(model, request, &caps, config.system_placement, cache_key);
        if caps.mid_conversation_effort
            && caps.reasoning == ReasoningStyle::OpenaiEffort
            && model.reasoning
            && let Some(input) = built.body.get("input").and_then(|i| i.as_array())
        {
            // The session's first effort stays at the request level; each change is a
            // `configuration_update` item where it happened (openai-python 3.63.0 beta
            // `BetaResponseConfigurationUpdateItemParam`: "for subsequent responses").
            let plan = self
                .effort
                .plan(options.session_id.as_deref(), input, request.thinking);
            if plan.base != request.thinking {
                let mut at_base = request.clone();
                at_base.thinking = plan.base;
                built = build_request(model, &at_base, &caps, config.system_placement, cache_key);
            }
            if let Some(input) = built.body.get_mut("input").and_then(|i| i.as_array_mut()) {
                plan.insert(input, |level| {
                    serde_json::json!({
                        "type": "configuration_update",
                        "reasoning": {"effort": level.as_str()},
                    })
                });
            }
        }
        if caps.cache_diagnostics
            && let Some(previous) = self.last.get(options.session_id.as_deref())
            && let Some(body) = built.body.as_object_mut()
        {
            // openai-python 3.63.0 `PromptCacheOptions.comparison_response_id`: "requests
            // prompt cache diagnostics"; the first request has nothing to compare.
            let options = body
                .entry("prompt_cache_options")
                .or_insert_with(|| serde_json::json!({}));
            if let Some(options) = options.as_object_mut() {
                options.insert("comparison_response_id".into(), previous.into());
            }
        }
        let mut used = Vec::new();
        let options_field = |name: &str| {
            built
                .body
                .get("prompt_cache_options")
                .and_then(|o| o.get(name))
                .is_some()
        };
        if options_field("comparison_response_id") {
            used.push(Learnable::CacheDiagnostics);
        }
        if options_field("prewarm") {
            used.push(Learnable::Prewarm);
        }
        if built
            .body
            .get("input")
            .and_then(|i| i.as_array())
            .is_some_and(|i| i.iter().any(|item| item["type"] == "configuration_update"))
        {
            used.push(Learnable::MidConversationEffort);
        }
        let mut http = HttpRequest::json_of(join_url(&base, &config.path), &built.body)?
            .header("accept", "text/event-stream");
        http.max_retries = Some(options.max_retries);
        let key = resolve_api_key(options.api_key.as_ref(), &endpoint.auth_env, |n| {
            self.var(n)
        });
        match (key, endpoint.auth) {
            (Some(key), scheme) => {
                if let Some((name, value)) = auth_header(scheme, &key) {
                    http = http.header(name, value);
                }
                if config.chatgpt_headers {
                    let account = chatgpt::account_id(key.expose(), &self.row.id)?;
                    http = http
                        .header("chatgpt-account-id", account)
                        .header("OpenAI-Beta", chatgpt::RESPONSES_BETA)
                        .header("originator", chatgpt::ORIGINATOR);
                }
                http.secrets.push(key);
            }
            (None, AuthScheme::None) => {}
            (None, _) => return Err(missing_key(&self.row.id, &endpoint.auth_env)),
        }
        for (name, value) in &endpoint.headers {
            http = http.header(name, value);
        }
        for (name, value) in built.headers {
            http = http.header(name, value);
        }
        if let (Some(header), Some(session)) = (&config.session_header, &options.session_id) {
            http = http.header(header, session);
        }
        for (name, value) in &options.headers {
            http = http.header(name, value);
        }
        Ok(Built {
            http,
            used,
            body: built.body,
            websocket: caps.websocket_mode,
        })
    }
}

impl ResponsesProvider {
    /// Records that the provider refused `feature` for `model` (with `body`, the refusal), so
    /// the turn and those after it go without it.
    fn learn(&self, model: &Model, feature: Learnable, body: &str) {
        let table = self.row.capabilities(&model.id);
        tracing::warn!(provider = %self.row.id, model = %model.id, feature = feature.as_str(), "the provider refused a feature the row claims; sending without it");
        if let Err(e) = self
            .learned
            .learn(&self.row.id, &model.id, &table, feature, body)
        {
            tracing::warn!("could not save what was learned: {e}");
        }
    }
}

#[async_trait]
impl Provider for ResponsesProvider {
    fn protocol(&self) -> Protocol {
        Protocol::OpenaiResponses
    }

    fn http_request(
        &self,
        model: &Model,
        request: &Request,
        options: &StreamOptions,
    ) -> Result<HttpRequest, ProviderError> {
        self.prepare(model, request, options)
    }

    async fn stream(
        &self,
        model: &Model,
        request: &Request,
        options: &StreamOptions,
    ) -> Result<EventStream, ProviderError> {
        let span =
            tracing::debug_span!("provider_request", provider = %self.row.id, model = %model.id);
        let cancel = options.cancel.clone();
        let driver: Driver =
            Arc::new(move |response| drive(response, ResponsesParser::new(), cancel.clone()));
        // A 400 naming a feature the row claims: learn it, send the turn again without it.
        let mut left = 3;
        loop {
            let Built {
                http,
                used,
                body,
                websocket,
            } = self.build(model, request, options)?;
            if websocket
                && self.websocket
                && let Some(session) = options.session_id.as_deref()
            {
                // The socket is an optimisation: whatever fails there, this turn goes over
                // HTTP in full below, and the next one opens a new socket.
                match self
                    .sockets
                    .turn(session, &http, &body, options.cancel.clone())
                    .instrument(span.clone())
                    .await
                {
                    Ok(stream) => return Ok(self.last.track(Some(session), stream)),
                    // A feature the row claims, refused on the socket: learned as from HTTP.
                    Err(Fallback {
                        error: Some(body), ..
                    }) if left > 0
                        && let Some(feature) = Learnable::named_in(&body, &used) =>
                    {
                        left -= 1;
                        self.learn(model, feature, &body);
                        continue;
                    }
                    Err(Fallback { why, .. }) => {
                        tracing::debug!(provider = %self.row.id, "Responses socket not used for this turn ({why}); sending it in full over HTTP");
                    }
                }
            }
            let sent = self
                .client
                .stream_events(http, &options.cancel, driver.clone())
                .instrument(span.clone())
                .await;
            match sent {
                Ok(stream) => return Ok(self.last.track(options.session_id.as_deref(), stream)),
                Err(ProviderError::InvalidRequest {
                    status: 400,
                    ref body,
                    ..
                }) if left > 0
                    && let Some(feature) = Learnable::named_in(body, &used) =>
                {
                    left -= 1;
                    self.learn(model, feature, body);
                }
                Err(e) => return Err(e),
            }
        }
    }
}
