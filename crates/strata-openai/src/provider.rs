//! [`OpenAiChatProvider`]: one capability-table row speaking Chat Completions.

use async_trait::async_trait;
use std::sync::Arc;
use strata_provider::transport::{
    Driver, EnvLookup, HttpClient, HttpRequest, auth_header, base_url, drive, endpoint_speaking,
    join_url, missing_key, process_env_lookup, resolve_api_key,
};
use strata_provider::{
    AuthScheme, EventStream, Model, ParamLocation, Protocol, Provider, ProviderError, ProviderRow,
    Request, StreamOptions,
};
use tracing::Instrument;

use crate::request::build_body;
use crate::stream::ChatParser;

/// The Chat Completions adapter for one provider row (OpenAI-compatible vendors and servers).
#[derive(Clone)]
pub struct OpenAiChatProvider {
    row: ProviderRow,
    client: HttpClient,
    env: EnvLookup,
}

impl std::fmt::Debug for OpenAiChatProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenAiChatProvider")
            .field("row", &self.row.id)
            .finish_non_exhaustive()
    }
}

impl OpenAiChatProvider {
    /// The adapter for `row`; keys and `{VAR}` URL parts come from the process environment.
    pub fn for_row(row: &ProviderRow, client: HttpClient) -> Self {
        Self {
            row: row.clone(),
            client,
            env: process_env_lookup(),
        }
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
        let endpoint = endpoint_speaking(&self.row, &model.id, Protocol::OpenaiChat)?;
        let caps = self.row.capabilities(&model.id);
        let env = |name: &str| (self.env)(name);
        let base = base_url(options.base_url.as_deref(), &endpoint, env)?;
        let url = join_url(&base, "chat/completions");

        let mut request = request.clone();
        if let Some(key) = options.cache_key.clone() {
            request.cache_key = Some(key);
        }
        let body = build_body(&request, model, &caps);
        let mut http = HttpRequest::json_of(url, &body)?.header("accept", "text/event-stream");
        let key = resolve_api_key(options.api_key.as_ref(), &endpoint.auth_env, env);
        match (&key, endpoint.auth) {
            (Some(key), scheme) => {
                if let Some((name, value)) = auth_header(scheme, key) {
                    http = http.header(name, value);
                }
            }
            (None, AuthScheme::None) => {}
            // Self-hosted servers (vLLM, llama.cpp) take a key only when started with one.
            (None, _) if is_loopback(&base) => {}
            (None, _) => return Err(missing_key(&self.row.id, &endpoint.auth_env)),
        }
        for (name, value) in &endpoint.headers {
            http = http.header(name.clone(), value.clone());
        }
        if let (Some(param), Some(key)) = (&caps.cache_key, &request.cache_key)
            && param.location == ParamLocation::Header
        {
            http = http.header(param.name.clone(), key.clone());
        }
        for (name, value) in &options.headers {
            http = http.header(name.clone(), value.clone());
        }
        http.secrets = key.into_iter().collect();
        http.max_retries = Some(options.max_retries);
        Ok(http)
    }
}

fn is_loopback(url: &str) -> bool {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    rest.starts_with("127.") || rest.starts_with("localhost") || rest.starts_with("[::1]")
}

#[async_trait]
impl Provider for OpenAiChatProvider {
    fn protocol(&self) -> Protocol {
        Protocol::OpenaiChat
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
        let http = self.http_request(model, request, options)?;
        let dialect = self.row.capabilities(&model.id).wire.usage_dialect;
        let span = tracing::debug_span!("openai-chat", provider = %self.row.id, model = %model.id);
        let cancel = options.cancel.clone();
        let driver: Driver =
            Arc::new(move |response| drive(response, ChatParser::new(dialect), cancel.clone()));
        self.client
            .stream_events(http, &options.cancel, driver)
            .instrument(span)
            .await
    }
}
