//! One adapter per wire protocol, chosen by the capability row.

use std::sync::Arc;

use strata_provider::transport::{HttpClient, TransportConfig};
use strata_provider::{Protocol, Provider, ProviderRow};

/// The adapter that speaks `protocol` for `row`.
pub fn provider_for(
    row: &ProviderRow,
    protocol: Protocol,
    max_retries: u32,
) -> anyhow::Result<Arc<dyn Provider>> {
    let mut transport = TransportConfig::default();
    transport.retry.max_retries = max_retries;
    let client = HttpClient::new(&transport)
        .map_err(|e| anyhow::anyhow!("creating the HTTP client: {e}"))?;
    Ok(match protocol {
        Protocol::AnthropicMessages => {
            Arc::new(strata_anthropic::AnthropicProvider::for_row(row, client))
        }
        other => anyhow::bail!(
            "provider `{}` speaks {other}, whose adapter is not built into this strata yet",
            row.id
        ),
    })
}
