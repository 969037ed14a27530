//! [`GoogleProvider`]: the [`Provider`] for rows whose protocol is `google-generative-ai`.

use std::collections::BTreeMap;
use std::sync::Arc;

use async_trait::async_trait;
use futures::StreamExt;
use strata_provider::transport::{
    HttpClient, HttpRequest, ParseError, StreamParser, auth_header, base_url, drive, join_url,
};
use strata_provider::{
    AuthScheme, Completion, Event, EventStream, Model, Protocol, Provider, ProviderError,
    ProviderRow, Request, StreamOptions,
};
use tracing::Instrument;

use crate::auth::GoogleCredentials;
use crate::request::build_body;
use crate::stream::GeminiParser;

/// Which Gemini API the row's base URL serves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GoogleApi {
    /// Google AI Studio: `{base}/models/{model}:streamGenerateContent`.
    AiStudio,
    /// Vertex AI: `{base}/v1/projects/{project}/locations/{location}/publishers/google/models/…`.
    Vertex {
        /// Google Cloud project id.
        project: String,
        /// Region, e.g. `us-central1` (also fills the row's `{GOOGLE_CLOUD_LOCATION}`).
        location: String,
    },
}

/// Streams requests to one Gemini row.
#[derive(Debug, Clone)]
pub struct GoogleProvider {
    row: ProviderRow,
    client: HttpClient,
    token_client: reqwest::Client,
    api: GoogleApi,
    credentials: Arc<GoogleCredentials>,
    url_vars: BTreeMap<String, String>,
}

impl GoogleProvider {
    /// An AI Studio provider for `row`, authenticating with `StreamOptions::api_key`.
    pub fn new(row: ProviderRow, client: HttpClient) -> Self {
        Self {
            row,
            client,
            token_client: reqwest::Client::new(),
            api: GoogleApi::AiStudio,
            credentials: Arc::new(GoogleCredentials::ApiKey),
            url_vars: BTreeMap::new(),
        }
    }

    /// Serves Vertex AI for `project` in `location`.
    pub fn vertex(mut self, project: impl Into<String>, location: impl Into<String>) -> Self {
        let location = location.into();
        self.url_vars
            .entry("GOOGLE_CLOUD_LOCATION".into())
            .or_insert_with(|| location.clone());
        self.api = GoogleApi::Vertex {
            project: project.into(),
            location,
        };
        self
    }

    /// Authenticates with a bearer token or refresh-token credentials instead of a key.
    pub fn with_credentials(mut self, credentials: GoogleCredentials) -> Self {
        self.credentials = Arc::new(credentials);
        self
    }

    /// Values for the `{VAR}` placeholders of the row's base URL (resolved by the caller).
    pub fn with_url_vars(mut self, vars: BTreeMap<String, String>) -> Self {
        self.url_vars.extend(vars);
        self
    }

    /// The URL of `model`'s `method` (`streamGenerateContent`, `generateContent`).
    pub fn url(
        &self,
        model: &Model,
        method: &str,
        options: &StreamOptions,
    ) -> Result<String, ProviderError> {
        let endpoint = self.row.endpoint(&model.id);
        let base = base_url(options.base_url.as_deref(), &endpoint, |k| {
            self.url_vars.get(k).cloned()
        })?;
        let path = match &self.api {
            GoogleApi::AiStudio => format!("models/{}:{method}", model.id),
            GoogleApi::Vertex { project, location } => format!(
                "v1/projects/{project}/locations/{location}/publishers/google/models/{}:{method}",
                model.id
            ),
        };
        let mut url = join_url(&base, &path);
        if method == "streamGenerateContent" {
            url.push_str("?alt=sse");
        }
        Ok(url)
    }

    /// The HTTP request [`Provider::stream`] would send, given the bearer token (if any).
    pub fn prepare(
        &self,
        model: &Model,
        request: &Request,
        options: &StreamOptions,
        bearer: Option<&strata_provider::ApiKey>,
    ) -> Result<HttpRequest, ProviderError> {
        let endpoint = self.row.endpoint(&model.id);
        let caps = self.row.capabilities(&model.id);
        let url = self.url(model, "streamGenerateContent", options)?;
        let mut http = HttpRequest::json_of(url, &build_body(model, request, &caps))?
            .header("accept", "text/event-stream");
        http.max_retries = Some(options.max_retries);
        match (bearer, &options.api_key, endpoint.auth) {
            (Some(token), _, _) => {
                http = http.header("authorization", format!("Bearer {}", token.expose()));
                http.secrets.push(token.clone());
            }
            (None, Some(key), scheme) => {
                if let Some((name, value)) = auth_header(scheme, key) {
                    http = http.header(name, value);
                }
                http.secrets.push(key.clone());
            }
            (None, None, AuthScheme::None) => {}
            (None, None, _) => {
                return Err(ProviderError::Auth {
                    status: 0,
                    request_id: None,
                    body: format!(
                        "no credentials for provider `{}`: set {} or configure a key or token",
                        self.row.id,
                        if self.row.auth_env.is_empty() {
                            "a key".to_owned()
                        } else {
                            self.row.auth_env.join(" or ")
                        }
                    ),
                });
            }
        }
        for (name, value) in &endpoint.headers {
            http = http.header(name, value);
        }
        for (name, value) in &options.headers {
            http = http.header(name, value);
        }
        Ok(http)
    }
}

impl GoogleProvider {
    /// Sends `request` to the non-streaming `:generateContent` method and returns the answer.
    ///
    /// The same parser reads the single response, so usage, signatures and stop reasons are
    /// normalized exactly as in [`Provider::stream`].
    pub async fn generate(
        &self,
        model: &Model,
        request: &Request,
        options: &StreamOptions,
    ) -> Result<Completion, ProviderError> {
        let bearer = tokio::select! {
            biased;
            () = options.cancel.cancelled() => return Err(ProviderError::Cancelled),
            token = self.credentials.bearer(&self.token_client) => token?,
        };
        let mut http = self.prepare(model, request, options, bearer.as_ref())?;
        http.url = self.url(model, "generateContent", options)?;
        http.headers
            .retain(|(name, _)| !name.eq_ignore_ascii_case("accept"));
        let response = self.client.post_json(&http, &options.cancel).await?;
        let mut body = response.first_chunk.to_vec();
        let mut rest = response.body;
        loop {
            let next = tokio::select! {
                biased;
                () = options.cancel.cancelled() => return Err(ProviderError::Cancelled),
                next = rest.next() => next,
            };
            match next {
                Some(chunk) => body.extend_from_slice(&chunk?),
                None => break,
            }
        }
        let text = String::from_utf8(body).map_err(|_| ProviderError::Decode {
            message: "generateContent answered with a body that is not UTF-8".into(),
        })?;
        let mut parser = GeminiParser::new();
        let mut events = Vec::new();
        let decode = |e: ParseError| match e {
            ParseError::Provider(e) => e,
            other => ProviderError::Decode {
                message: other.to_string(),
            },
        };
        parser.chunk(&text, &mut events).map_err(decode)?;
        parser.on_end(&mut events).map_err(decode)?;
        match events.pop() {
            Some(Event::Done {
                stop_reason,
                message,
                usage,
            }) => Ok(Completion {
                message,
                stop_reason,
                cost: usage.cost(&model.prices),
                usage,
            }),
            _ => Err(ProviderError::Truncated {
                reason: "generateContent answered without a finishReason".into(),
            }),
        }
    }
}

#[async_trait]
impl Provider for GoogleProvider {
    fn protocol(&self) -> Protocol {
        Protocol::GoogleGenerativeAi
    }

    async fn stream(
        &self,
        model: &Model,
        request: &Request,
        options: &StreamOptions,
    ) -> Result<EventStream, ProviderError> {
        let bearer = tokio::select! {
            biased;
            () = options.cancel.cancelled() => return Err(ProviderError::Cancelled),
            token = self.credentials.bearer(&self.token_client) => token?,
        };
        let http = self.prepare(model, request, options, bearer.as_ref())?;
        let span =
            tracing::debug_span!("provider_request", provider = %self.row.id, model = %model.id);
        let response = self
            .client
            .post_json(&http, &options.cancel)
            .instrument(span)
            .await?;
        Ok(drive(response, GeminiParser::new(), options.cancel.clone()))
    }
}
