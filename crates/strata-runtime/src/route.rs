//! Where requests go: one value for the session's model and the summary model alike.

pub use strata_agent::ModelRoute;
use strata_bedrock::credentials::ResolvedAws;
use strata_provider::transport::{HttpClient, TransportConfig};
use strata_provider::{ApiKey, Catalog, Model, ProviderRow, StreamOptions};

use crate::adapter::{AdapterError, adapter_for};

/// A model by name: what [`crate::Op::SetModel`] carries and a [`Router`] resolves.
#[derive(Debug, Clone, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct ModelRef {
    /// Provider id (`anthropic`).
    pub provider: String,
    /// Model id (`claude-sonnet-4-5`).
    pub model: String,
}

impl ModelRef {
    /// `provider`/`model`.
    pub fn new(provider: impl Into<String>, model: impl Into<String>) -> Self {
        Self {
            provider: provider.into(),
            model: model.into(),
        }
    }
}

impl std::fmt::Display for ModelRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.provider, self.model)
    }
}

/// Turns a [`ModelRef`] into a live route: the front end's keys, configuration and catalog,
/// given to the runtime at [`crate::spawn`], so operations stay plain data.
pub trait Router: Send + Sync {
    /// The route to `model`, or why there is none (said as the operation's failure).
    fn route(&self, model: &ModelRef) -> Result<ModelRoute, String>;

    /// The route to the model a session file names ([`crate::Op::SwitchSession`] with
    /// `follow_model`); `None` keeps the current model. A router may refuse here what it
    /// would try for an explicit switch (a model its catalog does not know).
    fn session_route(&self, model: &ModelRef) -> Option<ModelRoute> {
        self.route(model).ok()
    }
}

/// A router that reaches no model: for runtimes that never switch (print mode, examples).
#[derive(Debug, Clone, Copy, Default)]
pub struct NoRoutes;

impl Router for NoRoutes {
    fn route(&self, model: &ModelRef) -> Result<ModelRoute, String> {
        Err(format!("this program switches to no other model ({model})"))
    }
}

/// One endpoint every request goes to ([`Routing::to_endpoint`]).
#[derive(Clone)]
pub struct Endpoint<'a> {
    /// The base URL.
    pub base_url: &'a str,
    /// The key sent to it.
    pub api_key: &'a str,
    /// The retry limit (`None`: the transport's default).
    pub max_retries: Option<u32>,
    /// Told about each retry.
    pub retries: Option<strata_provider::transport::RetryObserver>,
}

/// Builds a [`ModelRoute`] from the provider table, through the runtime's one registry of
/// adapters ([`adapter_for`]); the route type itself is the agent's, which only sends along it.
pub trait Routing: Sized {
    /// The route to `model` of `row`, through the adapter of the model's endpoint protocol.
    fn for_row(
        row: &ProviderRow,
        model: Model,
        client: HttpClient,
        aws: Option<ResolvedAws>,
        stream: StreamOptions,
    ) -> Result<Self, AdapterError>;

    /// The route to `provider`/`model_id` of `catalog`, over `client` with `stream`'s options.
    fn in_catalog(
        catalog: &Catalog,
        provider: &str,
        model_id: &str,
        client: HttpClient,
        stream: StreamOptions,
    ) -> Result<Self, RouteError>;

    /// The route to `provider`/`model_id` of `catalog` with every request sent to `base_url`
    /// with `api_key` — a gateway, a proxy or strata-mock — over a default HTTP client.
    fn to_base_url(
        catalog: &Catalog,
        provider: &str,
        model_id: &str,
        base_url: &str,
        api_key: &str,
    ) -> Result<Self, RouteError>;

    /// [`Self::to_base_url`] with the endpoint's retry limit and an observer of its retries.
    fn to_endpoint(
        catalog: &Catalog,
        provider: &str,
        model_id: &str,
        endpoint: Endpoint<'_>,
    ) -> Result<Self, RouteError>;
}

impl Routing for ModelRoute {
    fn for_row(
        row: &ProviderRow,
        model: Model,
        client: HttpClient,
        aws: Option<ResolvedAws>,
        stream: StreamOptions,
    ) -> Result<Self, AdapterError> {
        let protocol = row.endpoint(&model.id).protocol;
        Ok(Self {
            provider: adapter_for(row, protocol, client, aws)?,
            capabilities: row.capabilities(&model.id),
            protocol,
            model,
            stream,
        })
    }

    fn in_catalog(
        catalog: &Catalog,
        provider: &str,
        model_id: &str,
        client: HttpClient,
        stream: StreamOptions,
    ) -> Result<Self, RouteError> {
        let row = catalog
            .provider(provider)
            .ok_or_else(|| RouteError::UnknownProvider(provider.to_owned()))?;
        let model = catalog
            .model(provider, model_id)
            .ok_or_else(|| RouteError::UnknownModel(format!("{provider}/{model_id}")))?;
        Ok(Self::for_row(row, model, client, None, stream)?)
    }

    fn to_base_url(
        catalog: &Catalog,
        provider: &str,
        model_id: &str,
        base_url: &str,
        api_key: &str,
    ) -> Result<Self, RouteError> {
        let endpoint = Endpoint {
            base_url,
            api_key,
            max_retries: None,
            retries: None,
        };
        Self::to_endpoint(catalog, provider, model_id, endpoint)
    }

    fn to_endpoint(
        catalog: &Catalog,
        provider: &str,
        model_id: &str,
        endpoint: Endpoint<'_>,
    ) -> Result<Self, RouteError> {
        let mut client = HttpClient::new(&TransportConfig::default())
            .map_err(|e| RouteError::Client(e.to_string()))?;
        if let Some(observer) = endpoint.retries {
            client = client.with_retry_observer(observer);
        }
        let mut stream = StreamOptions {
            base_url: Some(endpoint.base_url.to_owned()),
            api_key: Some(ApiKey::new(endpoint.api_key)),
            ..StreamOptions::default()
        };
        if let Some(limit) = endpoint.max_retries {
            stream.max_retries = limit;
        }
        Self::in_catalog(catalog, provider, model_id, client, stream)
    }
}

/// Why [`Routing::to_base_url`] found no route.
#[derive(Debug, thiserror::Error)]
pub enum RouteError {
    /// The catalog has no such provider row.
    #[error("unknown provider `{0}`")]
    UnknownProvider(String),
    /// The provider row has no such model.
    #[error("unknown model `{0}`")]
    UnknownModel(String),
    /// The HTTP client could not be built.
    #[error("HTTP client: {0}")]
    Client(String),
    /// The row's protocol has no adapter here.
    #[error(transparent)]
    Adapter(#[from] AdapterError),
}
