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
    Ok(strata_runtime::adapter_for(row, protocol, client, aws)?)
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
