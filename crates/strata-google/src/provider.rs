//! [`GoogleProvider`]: the [`Provider`] for rows whose protocol is `google-generative-ai`.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

use async_trait::async_trait;
use futures::StreamExt;
use strata_provider::transport::{
    Driver, EnvLookup, HttpClient, HttpRequest, ParseError, StreamParser, auth_header, base_url,
    drive, endpoint_speaking, join_url, process_env_lookup, resolve_api_key,
};
use strata_provider::{
    ApiKey, AuthScheme, Completion, Endpoint, Event, EventStream, ExplicitCache, Model, Protocol,
    Provider, ProviderError, ProviderRow, Request, StreamOptions, Usage,
};
use tokio::sync::OnceCell;
use tracing::Instrument;

use crate::auth::{AdcFile, GoogleCredentials, adc_path};
use crate::explicit::{ExplicitCaches, Plan, create_usage, refused_for_cache, suffix_body};
use crate::request::build_body;
use crate::stream::GeminiParser;

/// Variables naming the Google Cloud project, in the order Google's tools read them.
pub const PROJECT_VARS: [&str; 2] = ["GOOGLE_CLOUD_PROJECT", "GCLOUD_PROJECT"];

/// The variable naming the Vertex region (also the row's `{GOOGLE_CLOUD_LOCATION}` host part).
pub const LOCATION_VAR: &str = "GOOGLE_CLOUD_LOCATION";

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

/// Whether `base_url` is a Vertex AI host (`*aiplatform.googleapis.com`), whose paths name a
/// project and a region; any other Gemini host takes AI Studio's `models/{model}` paths.
pub fn is_vertex_url(base_url: &str) -> bool {
    let rest = base_url.split_once("://").map_or(base_url, |(_, r)| r);
    let host = rest.split(['/', '?']).next().unwrap_or("");
    let host = host.rsplit_once(':').map_or(host, |(h, _)| h);
    host == "aiplatform.googleapis.com" || host.ends_with("-aiplatform.googleapis.com")
}

/// Streams requests to one Gemini row.
///
/// Built with [`GoogleProvider::new`], everything the row leaves open is read when a request
/// is sent: the key from `StreamOptions::api_key` or the row's variables; for a Vertex row
/// the project ([`PROJECT_VARS`]), the region ([`LOCATION_VAR`]) and, without a key, the
/// application-default credentials file. [`GoogleProvider::vertex`],
/// [`GoogleProvider::with_credentials`] and [`GoogleProvider::with_url_vars`] fix them instead.
#[derive(Clone)]
pub struct GoogleProvider {
    row: ProviderRow,
    client: HttpClient,
    token_client: reqwest::Client,
    api: Option<GoogleApi>,
    credentials: Option<Arc<GoogleCredentials>>,
    adc: Arc<OnceCell<Arc<GoogleCredentials>>>,
    /// The project the ADC file names, read once (every request asks for its URL).
    adc_project: Arc<OnceLock<Option<String>>>,
    url_vars: BTreeMap<String, String>,
    env: EnvLookup,
    /// Explicit caches created for this provider's requests (shared by its clones).
    explicit: Arc<ExplicitCaches>,
}

impl std::fmt::Debug for GoogleProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GoogleProvider")
            .field("row", &self.row.id)
            .field("api", &self.api)
            .field("credentials", &self.credentials)
            .finish_non_exhaustive()
    }
}

impl GoogleProvider {
    /// The provider for `row`; what the row leaves open comes from the process environment.
    pub fn new(row: ProviderRow, client: HttpClient) -> Self {
        Self {
            row,
            client,
            token_client: reqwest::Client::new(),
            api: None,
            credentials: None,
            adc: Arc::new(OnceCell::new()),
            adc_project: Arc::new(OnceLock::new()),
            url_vars: BTreeMap::new(),
            env: process_env_lookup(),
            explicit: Arc::new(ExplicitCaches::default()),
        }
    }

    /// Serves Vertex AI for `project` in `location`.
    pub fn vertex(mut self, project: impl Into<String>, location: impl Into<String>) -> Self {
        let location = location.into();
        self.url_vars
            .entry(LOCATION_VAR.into())
            .or_insert_with(|| location.clone());
        self.api = Some(GoogleApi::Vertex {
            project: project.into(),
            location,
        });
        self
    }

    /// Serves Google AI Studio paths whatever the base URL.
    pub fn ai_studio(mut self) -> Self {
        self.api = Some(GoogleApi::AiStudio);
        self
    }

    /// Authenticates with a bearer token or refresh-token credentials instead of a key.
    pub fn with_credentials(mut self, credentials: GoogleCredentials) -> Self {
        self.credentials = Some(Arc::new(credentials));
        self
    }

    /// Values for the `{VAR}` placeholders of the row's base URL (resolved by the caller).
    pub fn with_url_vars(mut self, vars: BTreeMap<String, String>) -> Self {
        self.url_vars.extend(vars);
        self
    }

    /// Reads keys, project, region and the ADC path through `env` instead of the process
    /// environment.
    pub fn with_env(mut self, env: EnvLookup) -> Self {
        self.env = env;
        self
    }

    /// The row this provider serves.
    pub fn row(&self) -> &ProviderRow {
        &self.row
    }

    /// A URL variable: the caller's value, else the environment's (empty counts as unset).
    fn var(&self, name: &str) -> Option<String> {
        self.url_vars
            .get(name)
            .cloned()
            .or_else(|| (self.env)(name))
            .filter(|v| !v.trim().is_empty())
    }

    fn endpoint(&self, model: &Model) -> Result<Endpoint, ProviderError> {
        endpoint_speaking(&self.row, &model.id, Protocol::GoogleGenerativeAi)
    }

    /// The API `model`'s endpoint serves: the configured one, else Vertex for a Vertex host
    /// (region from the environment; project from the environment, else from the
    /// credentials), else AI Studio.
    pub fn api(&self, model: &Model) -> Result<GoogleApi, ProviderError> {
        if let Some(api) = &self.api {
            return Ok(api.clone());
        }
        let endpoint = self.endpoint(model)?;
        if !is_vertex_url(&endpoint.base_url) {
            return Ok(GoogleApi::AiStudio);
        }
        let missing = |what: &str, vars: &[&str]| ProviderError::InvalidRequest {
            status: 0,
            request_id: None,
            body: format!(
                "provider `{}` (Vertex AI) needs the Google Cloud {what}: set {}",
                self.row.id,
                vars.join(" or ")
            ),
        };
        let project = PROJECT_VARS
            .iter()
            .find_map(|v| self.var(v))
            .or_else(|| self.credentials_project())
            .ok_or_else(|| {
                missing(
                    "project",
                    &[
                        PROJECT_VARS[0],
                        PROJECT_VARS[1],
                        "use credentials whose file names one (`project_id`, `quota_project_id`)",
                    ],
                )
            })?;
        let location = self
            .var(LOCATION_VAR)
            .ok_or_else(|| missing("region", &[LOCATION_VAR]))?;
        Ok(GoogleApi::Vertex { project, location })
    }

    /// The project named by the configured credentials, else by the application-default
    /// credentials file (read once). A file that cannot be read or parsed names none here;
    /// asking for a token reports it.
    fn credentials_project(&self) -> Option<String> {
        if let Some(credentials) = &self.credentials {
            return credentials.project().map(str::to_owned);
        }
        self.adc_project
            .get_or_init(|| {
                let home = self.var("HOME").map(PathBuf::from);
                let path = adc_path(|n| self.var(n), home.as_deref())?;
                let text = std::fs::read_to_string(&path).ok()?;
                let file = AdcFile::parse(&text, &path.display().to_string()).ok()?;
                file.project().map(str::to_owned)
            })
            .clone()
    }

    /// The key for `model`: `StreamOptions::api_key`, else the first set variable of the row.
    fn api_key(&self, endpoint: &Endpoint, options: &StreamOptions) -> Option<ApiKey> {
        resolve_api_key(options.api_key.as_ref(), &endpoint.auth_env, |n| {
            self.var(n)
        })
    }

    /// The URL of `model`'s `method` (`streamGenerateContent`, `generateContent`).
    pub fn url(
        &self,
        model: &Model,
        method: &str,
        options: &StreamOptions,
    ) -> Result<String, ProviderError> {
        let endpoint = self.endpoint(model)?;
        let api = self.api(model)?;
        let base = base_url(options.base_url.as_deref(), &endpoint, |k| self.var(k))?;
        let path = match &api {
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

    /// The bearer token to send for `model`, if any: the configured credentials' token; else,
    /// on Vertex without a key, one from the application-default credentials file (read once).
    pub async fn bearer(
        &self,
        model: &Model,
        options: &StreamOptions,
    ) -> Result<Option<ApiKey>, ProviderError> {
        if let Some(credentials) = &self.credentials {
            return credentials.bearer(&self.token_client).await;
        }
        let endpoint = self.endpoint(model)?;
        if self.api_key(&endpoint, options).is_some()
            || !matches!(self.api(model)?, GoogleApi::Vertex { .. })
        {
            return Ok(None);
        }
        let home = self.var("HOME").map(PathBuf::from);
        let Some(path) = adc_path(|n| self.var(n), home.as_deref()) else {
            return Err(self.missing_credentials(&endpoint));
        };
        let credentials = self
            .adc
            .get_or_try_init(|| async { GoogleCredentials::from_adc_file(&path).map(Arc::new) })
            .await?;
        credentials.bearer(&self.token_client).await
    }

    fn missing_credentials(&self, endpoint: &Endpoint) -> ProviderError {
        let vars = if endpoint.auth_env.is_empty() {
            "a key".to_owned()
        } else {
            endpoint.auth_env.join(" or ")
        };
        ProviderError::Auth {
            status: 0,
            request_id: None,
            body: format!(
                "no credentials for provider `{}`: set {vars} or configure a key or token",
                self.row.id
            ),
        }
    }

    /// The HTTP request [`Provider::stream`] would send, given the bearer token (if any).
    pub fn prepare(
        &self,
        model: &Model,
        request: &Request,
        options: &StreamOptions,
        bearer: Option<&ApiKey>,
    ) -> Result<HttpRequest, ProviderError> {
        let caps = self.row.capabilities(&model.id);
        let url = self.url(model, "streamGenerateContent", options)?;
        let http = self.prepare_body(
            model,
            &build_body(model, request, &caps),
            url,
            options,
            bearer,
        )?;
        Ok(http.header("accept", "text/event-stream"))
    }

    /// The HTTP request posting `body` to `url`, authenticated for `model`.
    fn prepare_body(
        &self,
        model: &Model,
        body: &serde_json::Value,
        url: String,
        options: &StreamOptions,
        bearer: Option<&ApiKey>,
    ) -> Result<HttpRequest, ProviderError> {
        let endpoint = self.endpoint(model)?;
        let mut http = HttpRequest::json_of(url, body)?;
        http.max_retries = Some(options.max_retries);
        let key = self.api_key(&endpoint, options);
        match (bearer, key, endpoint.auth) {
            (Some(token), _, _) => {
                http = http.header("authorization", format!("Bearer {}", token.expose()));
                http.secrets.push(token.clone());
            }
            (None, Some(key), scheme) => {
                if let Some((name, value)) = auth_header(scheme, &key) {
                    http = http.header(name, value);
                }
                http.secrets.push(key);
            }
            (None, None, AuthScheme::None) => {}
            (None, None, _) => return Err(self.missing_credentials(&endpoint)),
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
    /// Posts `http` and reads the whole answer as text (`method` names it in errors).
    async fn post_whole(
        &self,
        http: &HttpRequest,
        options: &StreamOptions,
        method: &str,
    ) -> Result<String, ProviderError> {
        let response = self.client.post_json(http, &options.cancel).await?;
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
        String::from_utf8(body).map_err(|_| ProviderError::Decode {
            message: format!("{method} answered with a body that is not UTF-8"),
        })
    }

    /// The `cachedContents` collection URL and the model's resource name there.
    fn cache_urls(
        &self,
        model: &Model,
        options: &StreamOptions,
    ) -> Result<(String, String), ProviderError> {
        let endpoint = self.endpoint(model)?;
        let base = base_url(options.base_url.as_deref(), &endpoint, |k| self.var(k))?;
        Ok(match self.api(model)? {
            GoogleApi::AiStudio => (
                join_url(&base, "cachedContents"),
                format!("models/{}", model.id),
            ),
            GoogleApi::Vertex { project, location } => {
                let parent = format!("projects/{project}/locations/{location}");
                (
                    join_url(&base, &format!("v1/{parent}/cachedContents")),
                    format!("{parent}/publishers/google/models/{}", model.id),
                )
            }
        })
    }

    /// Creates the explicit cache `create` describes; its name and the tokens it holds.
    async fn create_cache(
        &self,
        model: &Model,
        create: &serde_json::Value,
        options: &StreamOptions,
        bearer: Option<&ApiKey>,
    ) -> Result<(String, u64), ProviderError> {
        let (url, model_name) = self.cache_urls(model, options)?;
        let mut create = create.clone();
        create["model"] = serde_json::Value::String(model_name);
        let http = self.prepare_body(model, &create, url, options, bearer)?;
        let text = self
            .post_whole(&http, options, "cachedContents.create")
            .await?;
        let resource: serde_json::Value =
            serde_json::from_str(&text).map_err(|e| ProviderError::Decode {
                message: format!("cachedContents.create answered with invalid JSON: {e}"),
            })?;
        let name = resource
            .get("name")
            .and_then(serde_json::Value::as_str)
            .ok_or_else(|| ProviderError::Decode {
                message: "cachedContents.create answered without a name".into(),
            })?;
        let tokens = resource
            .pointer("/usageMetadata/totalTokenCount")
            .and_then(serde_json::Value::as_u64)
            .unwrap_or(0);
        Ok((name.to_owned(), tokens))
    }

    /// Streams `body` through the explicit cache the plan picks. `Err(extra)` when the turn
    /// must go out in full instead, with the usage already spent on a cache (a create whose
    /// cache was then refused is still billed).
    async fn stream_cached(
        &self,
        model: &Model,
        body: &serde_json::Value,
        spec: &ExplicitCache,
        options: &StreamOptions,
        bearer: Option<&ApiKey>,
    ) -> Result<Result<EventStream, Usage>, ProviderError> {
        let (sent, spent) = match self.explicit.plan(&model.id, body, spec) {
            Plan::Full => return Ok(Err(Usage::default())),
            Plan::Use { body, .. } => (body, Usage::default()),
            Plan::Create { create, cached } => {
                match self.create_cache(model, &create, options, bearer).await {
                    Ok((name, tokens)) => {
                        self.explicit
                            .created(&model.id, &create, &name, tokens, spec);
                        (suffix_body(body, &name, cached), create_usage(tokens, spec))
                    }
                    Err(ProviderError::Cancelled) => return Err(ProviderError::Cancelled),
                    Err(error) => {
                        // A cache is an optimisation: without a new one the turn uses the
                        // one still held, else goes out in full.
                        tracing::warn!(provider = %self.row.id, model = %model.id, %error, "explicit cache not created");
                        match self.explicit.reuse(&model.id, body) {
                            Some(sent) => (sent, Usage::default()),
                            None => return Ok(Err(Usage::default())),
                        }
                    }
                }
            }
        };
        let url = self.url(model, "streamGenerateContent", options)?;
        let http = self
            .prepare_body(model, &sent, url, options, bearer)?
            .header("accept", "text/event-stream");
        match self.events(model, http, options).await {
            Ok(stream) => Ok(Ok(with_extra_usage(stream, spent))),
            Err(e) if refused_for_cache(e.status(), e.body()) => {
                tracing::info!(provider = %self.row.id, model = %model.id, error = %e, "explicit cache refused; sending in full");
                self.explicit.drop_cache(&model.id);
                Ok(Err(spent))
            }
            Err(e) => Err(e),
        }
    }

    async fn events(
        &self,
        model: &Model,
        http: HttpRequest,
        options: &StreamOptions,
    ) -> Result<EventStream, ProviderError> {
        let span =
            tracing::debug_span!("provider_request", provider = %self.row.id, model = %model.id);
        let cancel = options.cancel.clone();
        let driver: Driver =
            Arc::new(move |response| drive(response, GeminiParser::new(), cancel.clone()));
        self.client
            .stream_events(http, &options.cancel, driver)
            .instrument(span)
            .await
    }
}

/// `stream` with `extra` (a cache's create and storage) added to every usage it reports.
fn with_extra_usage(stream: EventStream, extra: Usage) -> EventStream {
    if extra == Usage::default() {
        return stream;
    }
    Box::pin(stream.map(move |event| match event {
        Event::Usage(usage) => Event::Usage(usage + extra),
        Event::Done {
            stop_reason,
            message,
            usage,
        } => Event::Done {
            stop_reason,
            message,
            usage: usage + extra,
        },
        other => other,
    }))
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
            token = self.bearer(model, options) => token?,
        };
        let mut http = self.prepare(model, request, options, bearer.as_ref())?;
        http.url = self.url(model, "generateContent", options)?;
        http.headers
            .retain(|(name, _)| !name.eq_ignore_ascii_case("accept"));
        let text = self.post_whole(&http, options, "generateContent").await?;
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

    fn http_request(
        &self,
        model: &Model,
        request: &Request,
        options: &StreamOptions,
    ) -> Result<HttpRequest, ProviderError> {
        self.prepare(model, request, options, None)
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
            token = self.bearer(model, options) => token?,
        };
        let caps = self.row.capabilities(&model.id);
        let mut spent = Usage::default();
        if let Some(spec) = caps.explicit_cache() {
            let body = build_body(model, request, &caps);
            match self
                .stream_cached(model, &body, spec, options, bearer.as_ref())
                .await?
            {
                Ok(stream) => return Ok(stream),
                Err(extra) => spent = extra,
            }
        }
        let http = self.prepare(model, request, options, bearer.as_ref())?;
        let stream = self.events(model, http, options).await?;
        Ok(with_extra_usage(stream, spent))
    }
}
