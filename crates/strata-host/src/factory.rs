//! The HTTP client and credentials a provider row needs; the adapter comes from the library's
//! registry (`strata_runtime::adapter_for`).

use std::sync::Arc;

use anyhow::Context as _;
use strata_provider::transport::{
    HttpClient, RetryObserver, TransportConfig, process_env, resolve_api_key,
};
use strata_provider::{ApiKey, Protocol, Provider, ProviderRow};

/// The adapter that speaks `protocol` for `row`; its retries are reported through `retries`.
pub fn provider_for(
    row: &ProviderRow,
    protocol: Protocol,
    max_retries: u32,
    retries: Option<RetryObserver>,
) -> anyhow::Result<Arc<dyn Provider>> {
    let mut transport = TransportConfig::default();
    transport.retry.max_retries = max_retries;
    let mut client = HttpClient::new(&transport)
        .map_err(|e| anyhow::anyhow!("creating the HTTP client: {e}"))?;
    if let Some(observer) = retries {
        client = client.with_retry_observer(observer);
    }
    // Bedrock signs requests: only it needs the process's AWS credentials resolved.
    let aws = match protocol {
        Protocol::BedrockConverse => Some(
            strata_bedrock::credentials::resolve_from_process()
                .map_err(|e| anyhow::anyhow!("{e}"))
                .context("resolving AWS credentials for Bedrock")?,
        ),
        _ => None,
    };
    use_learned_capabilities();
    Ok(strata_runtime::adapter_for(row, protocol, client, aws)?)
}

/// The file of capabilities learned from providers' refusals: `learned-capabilities.json` in
/// the user's state (`$XDG_STATE_HOME/strata`, else `~/.local/state/strata`).
pub fn learned_capabilities_file() -> Option<std::path::PathBuf> {
    let dir = match process_env("XDG_STATE_HOME") {
        Some(state) => std::path::PathBuf::from(state),
        None => std::path::PathBuf::from(process_env("HOME")?).join(".local/state"),
    };
    Some(dir.join("strata").join("learned-capabilities.json"))
}

/// The lessons of [`learned_capabilities_file`] still in force under `catalog` (a table
/// refresh that changed a row forgot its lessons), for the listings; an unreadable file is a
/// warning on stderr and no lessons (the listing still runs).
pub fn learned_in_force(catalog: &strata_provider::Catalog) -> Vec<strata_provider::Lesson> {
    let Some(path) = learned_capabilities_file() else {
        return Vec::new();
    };
    match strata_provider::LearnedCapabilities::open(&path) {
        Ok(learned) => learned.in_force(|provider, model| catalog.capabilities(provider, model)),
        Err(e) => {
            eprintln!("strata: warning: learned capabilities not shown: {e}");
            Vec::new()
        }
    }
}

/// Opens the learned-capabilities file once per process for every adapter; an unreadable
/// file is reported and learning stays in memory.
fn use_learned_capabilities() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let Some(path) = learned_capabilities_file() else {
            return;
        };
        match strata_provider::LearnedCapabilities::open(&path) {
            Ok(learned) => {
                strata_runtime::use_learned_capabilities(Arc::new(learned));
            }
            Err(e) => eprintln!("strata: warning: learned capabilities not used: {e}"),
        }
    });
}

/// The key from `--api-key`, else from the first of the row's environment variables that is
/// set, else from the provider's `api_key` in config.
pub fn api_key(flag: Option<&str>, configured: Option<&str>, row: &ProviderRow) -> Option<ApiKey> {
    let flag = flag.map(ApiKey::new);
    resolve_api_key(flag.as_ref(), &row.auth_env, process_env)
        .or_else(|| configured.map(ApiKey::new))
}

/// The AWS region a Bedrock request would be signed for: the process's AWS configuration,
/// else `AWS_REGION` / `AWS_DEFAULT_REGION`.
pub fn bedrock_region() -> Option<String> {
    strata_bedrock::credentials::resolve_from_process()
        .ok()
        .and_then(|aws| aws.region)
        .or_else(|| process_env("AWS_REGION"))
        .or_else(|| process_env("AWS_DEFAULT_REGION"))
}
