//! [`ResponsesProvider`]: the [`Provider`] for every row whose protocol is `openai-responses`.

use std::collections::BTreeMap;

use async_trait::async_trait;
use strata_provider::transport::{
    HttpClient, HttpRequest, auth_header, base_url, drive, join_url, missing_key,
};
use strata_provider::{
    AuthScheme, EventStream, Model, Protocol, Provider, ProviderError, ProviderRow, Request,
    StreamOptions,
};
use tracing::Instrument;

use crate::request::{SystemPlacement, build_request};
use crate::stream::ResponsesParser;

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
}

impl Default for ResponsesConfig {
    fn default() -> Self {
        Self {
            path: "/responses".into(),
            system_placement: SystemPlacement::Message,
            session_header: None,
        }
    }
}

impl ResponsesConfig {
    /// The ChatGPT-plan Codex backend: `/codex/responses`, `instructions`, `session_id` header.
    pub fn codex() -> Self {
        Self {
            path: "/codex/responses".into(),
            system_placement: SystemPlacement::Instructions,
            session_header: Some("session_id".into()),
        }
    }
}

/// Streams requests to one provider row over the Responses API.
#[derive(Debug, Clone)]
pub struct ResponsesProvider {
    row: ProviderRow,
    client: HttpClient,
    config: ResponsesConfig,
    url_vars: BTreeMap<String, String>,
}

impl ResponsesProvider {
    /// A provider for `row`; `{VAR}` placeholders in its base URL are filled from
    /// [`ResponsesProvider::with_url_vars`] (or overridden by `StreamOptions::base_url`).
    pub fn new(row: ProviderRow, client: HttpClient) -> Self {
        Self {
            row,
            client,
            config: ResponsesConfig::default(),
            url_vars: BTreeMap::new(),
        }
    }

    /// Values for the `{VAR}` placeholders of the row's base URLs (resolved by the caller).
    pub fn with_url_vars(mut self, vars: BTreeMap<String, String>) -> Self {
        self.url_vars = vars;
        self
    }

    /// Replaces the endpoint variations.
    pub fn with_config(mut self, config: ResponsesConfig) -> Self {
        self.config = config;
        self
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
        let endpoint = self.row.endpoint(&model.id);
        let caps = self.row.capabilities(&model.id);
        let base = base_url(options.base_url.as_deref(), &endpoint, |k| {
            self.url_vars.get(k).cloned()
        })?;
        let cache_key = options
            .cache_key
            .as_deref()
            .or(request.cache_key.as_deref());
        let built = build_request(
            model,
            request,
            &caps,
            self.config.system_placement,
            cache_key,
        );
        let mut http = HttpRequest::json_of(join_url(&base, &self.config.path), &built.body)?
            .header("accept", "text/event-stream");
        http.max_retries = Some(options.max_retries);
        match (&options.api_key, endpoint.auth) {
            (Some(key), scheme) => {
                if let Some((name, value)) = auth_header(scheme, key) {
                    http = http.header(name, value);
                }
                http.secrets.push(key.clone());
            }
            (None, AuthScheme::None) => {}
            (None, _) => return Err(missing_key(&self.row.id, &self.row.auth_env)),
        }
        for (name, value) in &endpoint.headers {
            http = http.header(name, value);
        }
        for (name, value) in built.headers {
            http = http.header(name, value);
        }
        if let (Some(header), Some(session)) = (&self.config.session_header, &options.session_id) {
            http = http.header(header, session);
        }
        for (name, value) in &options.headers {
            http = http.header(name, value);
        }
        Ok(http)
    }
}

#[async_trait]
impl Provider for ResponsesProvider {
    fn protocol(&self) -> Protocol {
        Protocol::OpenaiResponses
    }

    async fn stream(
        &self,
        model: &Model,
        request: &Request,
        options: &StreamOptions,
    ) -> Result<EventStream, ProviderError> {
        let http = self.prepare(model, request, options)?;
        let span =
            tracing::debug_span!("provider_request", provider = %self.row.id, model = %model.id);
        let response = self
            .client
            .post_json(&http, &options.cancel)
            .instrument(span)
            .await?;
        Ok(drive(
            response,
            ResponsesParser::new(),
            options.cancel.clone(),
        ))
    }
}
