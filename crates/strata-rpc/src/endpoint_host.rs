//! A [`Host`] for programs that send every model to one endpoint.

use strata_runtime::{Catalog, Endpoint, Model, ModelRoute, RetryObserver, Routing as _};

use crate::Host;

/// Sends every model of one provider row of a catalog to one base URL with one key: a gateway,
/// a local proxy or strata-mock. Programs with a configuration per provider (keys, base URLs,
/// cloud credentials) write their own [`Host`], as `strata --mode rpc` does.
#[derive(Debug, Clone)]
pub struct EndpointHost {
    catalog: Catalog,
    provider: String,
    base_url: String,
    api_key: String,
    max_retries: Option<u32>,
}

impl EndpointHost {
    /// Every model of `provider` in `catalog`, sent to `base_url` with `api_key`.
    pub fn new(
        catalog: Catalog,
        provider: impl Into<String>,
        base_url: impl Into<String>,
        api_key: impl Into<String>,
    ) -> Self {
        Self {
            catalog,
            provider: provider.into(),
            base_url: base_url.into(),
            api_key: api_key.into(),
            max_retries: None,
        }
    }

    /// The route to `provider`/`model_id`, reporting retries to `retries` where given.
    pub fn route_to(
        &self,
        provider: &str,
        model_id: &str,
        retries: Option<RetryObserver>,
    ) -> Result<ModelRoute, String> {
        if provider != self.provider {
            return Err(format!(
                "this host sends only `{}` models; `{provider}` has no endpoint",
                self.provider
            ));
        }
        let endpoint = Endpoint {
            base_url: &self.base_url,
            api_key: &self.api_key,
            max_retries: self.max_retries,
            retries,
        };
        ModelRoute::to_endpoint(&self.catalog, provider, model_id, endpoint)
            .map_err(|e| e.to_string())
    }
}

impl Host for EndpointHost {
    fn available_models(&self) -> Vec<Model> {
        self.catalog.models_of(&self.provider).cloned().collect()
    }

    fn model(&self, provider: &str, model_id: &str) -> Option<Model> {
        self.catalog.model(provider, model_id)
    }

    fn endpoint(&self, model: &Model) -> Option<(String, String)> {
        if model.provider != self.provider {
            return None;
        }
        let row = self.catalog.provider(&self.provider)?;
        let protocol = row.endpoint(&model.id).protocol;
        Some((protocol.as_str().to_owned(), self.base_url.clone()))
    }

    fn route(
        &self,
        provider: &str,
        model_id: &str,
        retries: RetryObserver,
    ) -> Result<ModelRoute, String> {
        self.route_to(provider, model_id, Some(retries))
    }

    fn set_max_retries(&mut self, limit: u32) {
        self.max_retries = Some(limit);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn host() -> EndpointHost {
        let catalog = Catalog::builtin().expect("the built-in catalog");
        EndpointHost::new(catalog, "anthropic", "http://127.0.0.1:9", "k")
    }

    #[test]
    fn only_the_hosts_provider_has_an_endpoint_and_a_route() {
        let host = host();
        let sonnet = host.model("anthropic", "claude-sonnet-4-5").expect("model");
        assert_eq!(
            host.endpoint(&sonnet),
            Some((
                "anthropic-messages".to_owned(),
                "http://127.0.0.1:9".to_owned()
            ))
        );
        let other = host.available_models();
        assert!(other.iter().all(|m| m.provider == "anthropic") && !other.is_empty());
        let elsewhere = host
            .model("openai", "gpt-5")
            .expect("an OpenAI model in the catalog");
        assert_eq!(host.endpoint(&elsewhere), None);
        let refused = host.route_to("openai", "gpt-5", None).unwrap_err();
        assert!(refused.contains("`openai` has no endpoint"), "{refused}");
        assert!(host.route_to("anthropic", "no-such-model", None).is_err());
    }

    #[test]
    fn the_retry_limit_set_goes_with_later_routes() {
        let mut host = host();
        host.set_max_retries(7);
        let route = host
            .route_to("anthropic", "claude-sonnet-4-5", None)
            .expect("route");
        assert_eq!(route.stream.max_retries, 7);
        assert_eq!(route.stream.base_url.as_deref(), Some("http://127.0.0.1:9"));
    }
}
