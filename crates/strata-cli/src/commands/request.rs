//! `strata context FILE --format request`: the request a provider would get, its chapter
//! report, and the wire body where the adapter is built in.

use std::io::Write as _;

use anyhow::Context as _;
use serde_json::{Value, json};
use strata_context::{Context, RenderOptions, render_with};
use strata_provider::{ApiKey, Catalog, Protocol, StreamOptions};
use strata_session::Session;

use super::open::resolve_leaf;
use crate::args::ContextArgs;

pub fn print(args: &ContextArgs, session: &Session, context: &Context) -> anyhow::Result<()> {
    let catalog = Catalog::builtin().context("loading the capability table")?;
    let provider = args
        .provider
        .clone()
        .or_else(|| context.model.as_ref().map(|m| m.provider.clone()))
        .context("the session names no model: pass --provider and --model")?;
    let model_id = args
        .model
        .clone()
        .or_else(|| context.model.as_ref().map(|m| m.model_id.clone()))
        .context("the session names no model: pass --model")?;
    let row = catalog
        .provider(&provider)
        .with_context(|| format!("unknown provider `{provider}` (see `strata providers`)"))?;
    let capabilities = row.capabilities(&model_id);
    let options = RenderOptions::new().cache_key(session.header().id.clone());
    let rendered = render_with(context, &capabilities, &options);

    let previous = match &args.against {
        Some(other) => {
            let leaf = resolve_leaf(session, other)?;
            let other = strata_context::build(session.tree(), Some(&leaf))?;
            Some(render_with(&other, &capabilities, &options))
        }
        None => None,
    };
    let report = rendered.report(previous.as_ref());

    let mut out = json!({
        "provider": provider,
        "model": model_id,
        "capabilities": capabilities,
        "request": rendered.request,
        "report": report,
    });
    let endpoint = row.endpoint(&model_id);
    if endpoint.protocol == Protocol::AnthropicMessages
        && let Some(model) = catalog.model(&provider, &model_id)
    {
        let client = strata_provider::transport::HttpClient::new(&Default::default())
            .map_err(|e| anyhow::anyhow!("{e}"))?;
        let adapter = strata_anthropic::AnthropicProvider::for_row(row, client);
        // A placeholder key: headers are not printed, only the URL and the body.
        let stream = StreamOptions {
            api_key: Some(ApiKey::new("unused")),
            ..StreamOptions::default()
        };
        let wire = adapter
            .build_http_request(&model, &rendered.request, &stream)
            .map_err(|e| anyhow::anyhow!("building the wire request: {e}"))?;
        let body: Value = serde_json::from_slice(&wire.body).unwrap_or(Value::Null);
        out["wire"] = json!({ "url": wire.url, "body": body });
    }
    let mut stdout = std::io::stdout().lock();
    serde_json::to_writer_pretty(&mut stdout, &out)?;
    writeln!(stdout)?;
    Ok(())
}
