//! The one place a provider row and protocol become an adapter.

use std::sync::Arc;

use strata_bedrock::credentials::ResolvedAws;
use strata_provider::transport::HttpClient;
use strata_provider::{Protocol, Provider, ProviderRow};

/// Why no adapter could be built.
#[derive(Debug, thiserror::Error)]
pub enum AdapterError {
    /// Bedrock signs every request; the caller resolved no AWS credentials.
    #[error("provider `{provider}` speaks Bedrock Converse and needs AWS credentials")]
    MissingAwsCredentials {
        /// The provider row.
        provider: String,
    },
}

/// The adapter that speaks `protocol` for `row` over `client`. `aws` is used by Bedrock only
/// (the caller resolves it: this crate reads no environment).
pub fn adapter_for(
    row: &ProviderRow,
    protocol: Protocol,
    client: HttpClient,
    aws: Option<ResolvedAws>,
) -> Result<Arc<dyn Provider>, AdapterError> {
    Ok(match protocol {
        Protocol::AnthropicMessages => {
            Arc::new(strata_anthropic::AnthropicProvider::for_row(row, client))
        }
        Protocol::OpenaiChat => Arc::new(strata_openai::OpenAiChatProvider::for_row(row, client)),
        Protocol::OpenaiResponses => Arc::new(strata_openai_responses::ResponsesProvider::new(
            row.clone(),
            client,
        )),
        Protocol::GoogleGenerativeAi => {
            Arc::new(strata_google::GoogleProvider::new(row.clone(), client))
        }
        Protocol::BedrockConverse => {
            let aws = aws.ok_or_else(|| AdapterError::MissingAwsCredentials {
                provider: row.id.clone(),
            })?;
            Arc::new(strata_bedrock::BedrockProvider::new(
                row.clone(),
                client,
                aws,
            ))
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use strata_provider::Catalog;
    use strata_provider::transport::TransportConfig;

    #[test]
    fn each_protocol_gets_the_adapter_that_speaks_it() {
        let catalog = Catalog::builtin().unwrap();
        for (provider, protocol) in [
            ("anthropic", Protocol::AnthropicMessages),
            ("openai", Protocol::OpenaiResponses),
            ("deepseek", Protocol::OpenaiChat),
            ("google", Protocol::GoogleGenerativeAi),
        ] {
            let row = catalog.provider(provider).unwrap();
            let client = HttpClient::new(&TransportConfig::default()).unwrap();
            let adapter = adapter_for(row, protocol, client, None).unwrap();
            assert_eq!(adapter.protocol(), protocol, "{provider}");
        }
        let row = catalog.provider("amazon-bedrock").unwrap();
        let client = HttpClient::new(&TransportConfig::default()).unwrap();
        let missing = adapter_for(row, Protocol::BedrockConverse, client, None);
        assert!(matches!(
            missing,
            Err(AdapterError::MissingAwsCredentials { .. })
        ));
    }
}
