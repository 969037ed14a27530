//! The request a provider would get for a session's context: its chapter report, and the
//! wire body the provider's adapter would send (`strata context FILE --format request`). Built
//! as a run builds it: the configuration's rows and models, its output cap and cache
//! retention, the adapter's own request builder; with a placeholder key, never sent.

use std::sync::Arc;

use anyhow::Context as _;
use serde_json::{Value, json};
use strata_context::{Context, ModelRef, RenderOptions, render_with};
use strata_provider::transport::{
    EnvLookup, HttpClient, HttpRequest, TransportConfig, process_env,
};
use strata_provider::{ApiKey, Model, Protocol, ProviderRow, Request, StreamOptions};
use strata_runtime::{AdapterOptions, BedrockAuth};
use strata_session::Session;

use crate::Overrides;
use crate::config::{Layers, Sources};

/// The next request of `context` (a context of `session`) as JSON: provider, model,
/// capabilities, the neutral request, its chapter report (against `against`'s, when given) and
/// the wire request (URL, headers with secrets redacted, body). `provider` and `model` default
/// to the context's. The second value is a warning for the user (a model outside the catalog
/// has no exact wire body).
pub fn next_request(
    overrides: &Overrides,
    session: &Session,
    context: &Context,
    against: Option<&Context>,
    provider: Option<String>,
    model: Option<String>,
) -> anyhow::Result<(Value, Option<String>)> {
    let layers = Layers::read(&Sources::from_environment(), overrides)?;
    let config = layers.config()?;
    // The table a run would use: built-in rows plus Pi's file and the config's own rows and
    // models, so every model `strata models` lists has a wire request.
    let catalog = crate::rows::Rows::load(&layers, &config)?.catalog;
    let provider = provider
        .or_else(|| context.model.as_ref().map(|m| m.provider.clone()))
        .context("the session names no model: pass --provider and --model")?;
    let model_id = model
        .or_else(|| context.model.as_ref().map(|m| m.model_id.clone()))
        .context("the session names no model: pass --model")?;
    let row = catalog
        .provider(&provider)
        .with_context(|| format!("unknown provider `{provider}` (see `strata providers`)"))?;
    let capabilities = row.capabilities(&model_id);
    // As a run renders (strata-agent's renderer): the configured output cap and the
    // breakpoint lifetime the `[cache] retention` setting picks for this row.
    // A run keeps a Pi session's prompt, in Pi's shapes, unless a prompt of one's own is asked.
    let adopting = config.system_prompt.is_none() && config.append_system_prompt.is_none();
    let options = RenderOptions {
        max_tokens: config.max_tokens,
        ttl: capabilities.cache_ttl(config.cache.retention),
        dialect: strata_agent::adopted_dialect(context, adopting),
        ..RenderOptions::new().cache_key(session.header().id.clone())
    };
    // Rendered as if the session had switched to this model: the request names it, and
    // assistant turns of another model convert as they would after a switch.
    let model_ref = ModelRef {
        provider: provider.clone(),
        model_id: model_id.clone(),
    };
    let for_model = |context: &Context| Context {
        model: Some(model_ref.clone()),
        ..context.clone()
    };
    let rendered = render_with(&for_model(context), &capabilities, &options);

    let previous = against.map(|other| render_with(&for_model(other), &capabilities, &options));
    let report = rendered.report(previous.as_ref());

    let mut out = json!({
        "provider": provider,
        "model": model_id,
        "capabilities": capabilities,
        "request": rendered.request,
        "report": report,
    });
    let protocol = row.endpoint(&model_id).protocol;
    match catalog.model(&provider, &model_id) {
        Some(model) => {
            let wire = wire_request(row, protocol, &model, &rendered.request)
                .map_err(|e| anyhow::anyhow!("building the {protocol} wire request: {e}"))?;
            let body: Value = serde_json::from_slice(&wire.body)
                .with_context(|| format!("the {protocol} adapter built a body that is not JSON"))?;
            out["wire"] = json!({
                "protocol": protocol,
                "url": wire.url,
                "headers": printable_headers(&wire),
                "bytes": wire.body.len(),
                "body": body,
            });
        }
        // The adapters size the body from the catalog entry (output cap, reasoning), so an
        // unlisted model has no exact wire body.
        None => {
            return Ok((
                out,
                Some(format!(
                    "`{provider}/{model_id}` is not in the model catalog; \
                     showing the provider-neutral request without a wire body"
                )),
            ));
        }
    }
    Ok((out, None))
}

/// The request's headers in sending order (so the beta headers a body needs can be checked),
/// with any header carrying a secret (the placeholder key, a signature) shown as `<redacted>`.
fn printable_headers(wire: &HttpRequest) -> Vec<[String; 2]> {
    wire.headers
        .iter()
        .map(|(name, value)| {
            let secret = wire.secrets.iter().any(|s| value.contains(s.expose()))
                || value.contains(PLACEHOLDER_KEY)
                || matches!(
                    name.to_ascii_lowercase().as_str(),
                    "authorization"
                        | "x-api-key"
                        | "api-key"
                        | "x-goog-api-key"
                        | "x-amz-security-token"
                );
            let value = if secret {
                "<redacted>".to_owned()
            } else {
                value.clone()
            };
            [name.clone(), value]
        })
        .collect()
}

/// The HTTP request the adapter for `protocol` builds for `request`: a placeholder key (printed
/// redacted), URL variables from the environment (unset: `{VAR}`), the session id (the cache
/// key) as in a run, so a threaded row prints the `thread: create` a fresh adapter sends.
fn wire_request(
    row: &ProviderRow,
    protocol: Protocol,
    model: &Model,
    request: &Request,
) -> anyhow::Result<HttpRequest> {
    let environment: EnvLookup = Arc::new(process_env);
    build_with(row, protocol, model, request, environment).or_else(|_| {
        let placeholders: EnvLookup =
            Arc::new(|name: &str| process_env(name).or_else(|| Some(format!("{{{name}}}"))));
        build_with(row, protocol, model, request, placeholders)
    })
}

/// Stands in for the key: a JWT (`{}` header, a payload naming the account `unused`) because
/// the ChatGPT backend's adapter reads the account from its key.
const PLACEHOLDER_KEY: &str = "e30.eyJodHRwczovL2FwaS5vcGVuYWkuY29tL2F1dGgiOnsiY2hhdGdwdF9hY2NvdW50X2lkIjoidW51c2VkIn19.unused";

fn build_with(
    row: &ProviderRow,
    protocol: Protocol,
    model: &Model,
    request: &Request,
    env: EnvLookup,
) -> anyhow::Result<HttpRequest> {
    let client = HttpClient::new(&TransportConfig::default())?;
    let stream = StreamOptions {
        api_key: Some(ApiKey::new(PLACEHOLDER_KEY)),
        session_id: request.cache_key.clone(),
        ..StreamOptions::default()
    };
    // Bedrock signs for the region a run would use; the URL names it. A placeholder key
    // stands in for credentials, so no AWS credentials are needed to show the request.
    let bedrock = match protocol {
        Protocol::BedrockConverse => BedrockAuth::ApiKeyOnly {
            region: crate::factory::bedrock_region(),
        },
        _ => BedrockAuth::Missing,
    };
    let options = AdapterOptions {
        bedrock,
        env: Some(env),
    };
    let provider = strata_runtime::adapter_with(row, protocol, client, options)?;
    // The adapter's own request builder, the one its `stream` sends.
    Ok(provider.http_request(model, request, &stream)?)
}
