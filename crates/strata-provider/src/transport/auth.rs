//! Credentials and URLs: which key, in which header, sent to which address.

use std::sync::Arc;

use crate::capabilities::Protocol;
use crate::error::{ApiKey, ProviderError};
use crate::table::{AuthScheme, Endpoint, ProviderRow};

/// Reads a variable by name: [`process_env`] in binaries, a map in tests.
pub type EnvLookup = Arc<dyn Fn(&str) -> Option<String> + Send + Sync>;

/// An [`EnvLookup`] over the process environment.
pub fn process_env_lookup() -> EnvLookup {
    Arc::new(process_env)
}

/// The key to use: the explicit one (config, options), else the first non-empty variable of
/// `env_vars` as `lookup` reports it. `lookup` is injected so libraries and tests never
/// touch the process environment; binaries pass [`process_env`].
pub fn resolve_api_key(
    explicit: Option<&ApiKey>,
    env_vars: &[String],
    lookup: impl Fn(&str) -> Option<String>,
) -> Option<ApiKey> {
    if let Some(key) = explicit.filter(|k| !k.expose().is_empty()) {
        return Some(key.clone());
    }
    env_vars
        .iter()
        .filter_map(|name| lookup(name))
        .map(|v| v.trim().to_owned())
        .find(|v| !v.is_empty())
        .map(ApiKey::new)
}

/// The error for a provider that needs a key and has none, naming where one can come from.
pub fn missing_key(provider: &str, env_vars: &[String]) -> ProviderError {
    let body = if env_vars.is_empty() {
        format!("no API key for provider `{provider}`: set one in the config")
    } else {
        format!(
            "no API key for provider `{provider}`: set {} or configure a key",
            env_vars.join(" or ")
        )
    };
    ProviderError::Auth {
        status: 0,
        request_id: None,
        body,
    }
}

/// Reads a variable from the process environment (for binaries; empty counts as unset).
pub fn process_env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

/// The header that carries `key` under `scheme`; `None` for schemes that sign or send nothing.
pub fn auth_header(scheme: AuthScheme, key: &ApiKey) -> Option<(&'static str, String)> {
    match scheme {
        AuthScheme::Bearer => Some(("authorization", format!("Bearer {}", key.expose()))),
        AuthScheme::XApiKey => Some(("x-api-key", key.expose().to_owned())),
        AuthScheme::ApiKey => Some(("api-key", key.expose().to_owned())),
        AuthScheme::XGoogApiKey => Some(("x-goog-api-key", key.expose().to_owned())),
        AuthScheme::AwsSigv4 | AuthScheme::None => None,
    }
}

/// `url` with every `{VAR}` placeholder filled from `lookup`; names the missing variable.
pub fn expand_url(
    url: &str,
    lookup: impl Fn(&str) -> Option<String>,
) -> Result<String, ProviderError> {
    let mut out = String::with_capacity(url.len());
    let mut rest = url;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        let Some(close) = after.find('}') else {
            out.push_str(&rest[open..]);
            return Ok(out);
        };
        let name = &after[..close];
        let value = lookup(name).ok_or_else(|| ProviderError::InvalidRequest {
            status: 0,
            request_id: None,
            body: format!("base URL `{url}` needs the environment variable {name}"),
        })?;
        out.push_str(&value);
        rest = &after[close + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

/// The row's endpoint for `model_id`, refused when the table routes that model to another
/// protocol (an adapter must not send a request its wire format cannot carry).
pub fn endpoint_speaking(
    row: &ProviderRow,
    model_id: &str,
    protocol: Protocol,
) -> Result<Endpoint, ProviderError> {
    let endpoint = row.endpoint(model_id);
    if endpoint.protocol != protocol {
        return Err(ProviderError::InvalidRequest {
            status: 0,
            request_id: None,
            body: format!(
                "model `{model_id}` of provider `{}` speaks {}, not {protocol}",
                row.id, endpoint.protocol
            ),
        });
    }
    Ok(endpoint)
}

/// The base URL a request goes to: the caller's override (a proxy, strata-mock), else the
/// endpoint's with its `{VAR}` placeholders filled from `lookup`.
pub fn base_url(
    override_url: Option<&str>,
    endpoint: &Endpoint,
    lookup: impl Fn(&str) -> Option<String>,
) -> Result<String, ProviderError> {
    match override_url {
        Some(url) => Ok(url.to_owned()),
        None => expand_url(&endpoint.base_url, lookup),
    }
}

/// `base` and `path` joined with exactly one `/`.
pub fn join_url(base: &str, path: &str) -> String {
    format!(
        "{}/{}",
        base.trim_end_matches('/'),
        path.trim_start_matches('/')
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_adapter_gets_the_endpoint_only_for_its_own_protocol() {
        let catalog = crate::Catalog::builtin_shared().unwrap();
        let row = catalog.provider("anthropic").unwrap();
        let endpoint =
            endpoint_speaking(row, "claude-sonnet-4-5", Protocol::AnthropicMessages).unwrap();
        assert_eq!(endpoint.protocol, Protocol::AnthropicMessages);
        let refused = endpoint_speaking(row, "claude-sonnet-4-5", Protocol::OpenaiChat)
            .unwrap_err()
            .to_string();
        assert!(
            refused.contains(
                "model `claude-sonnet-4-5` of provider `anthropic` speaks anthropic-messages, not openai-chat"
            ),
            "{refused}"
        );
    }

    #[test]
    fn the_base_url_override_wins_and_placeholders_are_filled_otherwise() {
        let catalog = crate::Catalog::builtin_shared().unwrap();
        let mut endpoint = catalog
            .provider("anthropic")
            .unwrap()
            .endpoint("claude-sonnet-4-5");
        endpoint.base_url = "https://{HOST}/api".to_owned();
        let lookup = |name: &str| (name == "HOST").then(|| "proxy.test".to_owned());
        assert_eq!(
            base_url(Some("http://127.0.0.1:9"), &endpoint, lookup).unwrap(),
            "http://127.0.0.1:9"
        );
        assert_eq!(
            base_url(None, &endpoint, lookup).unwrap(),
            "https://proxy.test/api"
        );
        assert!(base_url(None, &endpoint, |_| None).is_err());
    }

    #[test]
    fn explicit_key_wins_then_env_in_order() {
        let env = |name: &str| match name {
            "EMPTY" => Some("  ".to_owned()),
            "SECOND" => Some("sk-2".to_owned()),
            _ => None,
        };
        let vars = [
            "MISSING".to_owned(),
            "EMPTY".to_owned(),
            "SECOND".to_owned(),
        ];
        assert_eq!(resolve_api_key(None, &vars, env).unwrap().expose(), "sk-2");
        let explicit = ApiKey::new("sk-cfg");
        assert_eq!(
            resolve_api_key(Some(&explicit), &vars, env)
                .unwrap()
                .expose(),
            "sk-cfg"
        );
        assert!(resolve_api_key(None, &vars[..2], env).is_none());
    }

    #[test]
    fn headers_per_scheme() {
        let k = ApiKey::new("k");
        assert_eq!(
            auth_header(AuthScheme::Bearer, &k),
            Some(("authorization", "Bearer k".to_owned()))
        );
        assert_eq!(auth_header(AuthScheme::XApiKey, &k).unwrap().0, "x-api-key");
        assert_eq!(auth_header(AuthScheme::None, &k), None);
    }

    #[test]
    fn urls_expand_and_join() {
        let env = |n: &str| (n == "ACCT").then(|| "42".to_owned());
        assert_eq!(
            expand_url("https://x/{ACCT}/ai", env).unwrap(),
            "https://x/42/ai"
        );
        let err = expand_url("https://x/{GW}/ai", env).unwrap_err();
        assert!(err.to_string().contains("GW"));
        assert_eq!(join_url("http://h/v1/", "/chat"), "http://h/v1/chat");
    }
}
