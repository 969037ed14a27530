//! The one place a provider row and protocol become an adapter.

use std::sync::{Arc, OnceLock};

use strata_bedrock::credentials::ResolvedAws;
use strata_provider::transport::{EnvLookup, HttpClient};
use strata_provider::{LearnedCapabilities, Protocol, Provider, ProviderRow};

/// The learned capabilities every adapter of this process reads and records
/// ([`use_learned_capabilities`]).
static LEARNED: OnceLock<Arc<LearnedCapabilities>> = OnceLock::new();

/// Makes every adapter built from now on read and record learned capabilities in `learned`
/// (the host opens a file in the user's state): a feature a provider refused for a model is
/// left out from the next session on. Returns `false` when it was already set. Without it each
/// adapter learns for its own lifetime only.
pub fn use_learned_capabilities(learned: Arc<LearnedCapabilities>) -> bool {
    LEARNED.set(learned).is_ok()
}

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

/// How a Bedrock adapter authenticates.
#[derive(Debug, Clone, Default)]
pub enum BedrockAuth {
    /// Resolved AWS credentials and region (SigV4, or a Bedrock API key among them).
    Resolved(ResolvedAws),
    /// Only `StreamOptions::api_key`, for `region` (enough to build a request, e.g. to show it).
    ApiKeyOnly {
        /// The region the URL names.
        region: Option<String>,
    },
    /// None: building a Bedrock adapter fails.
    #[default]
    Missing,
}

/// What an adapter reads besides its row and client.
#[derive(Clone, Default)]
pub struct AdapterOptions {
    /// Bedrock's authentication (ignored by every other protocol).
    pub bedrock: BedrockAuth,
    /// Where URL variables (`{VAR}` in a row's base URL) are looked up; the process
    /// environment when `None`. Bedrock takes none.
    pub env: Option<EnvLookup>,
}

/// The adapter that speaks `protocol` for `row` over `client`. `aws` is used by Bedrock only
/// (the caller resolves it: this crate reads no environment).
pub fn adapter_for(
    row: &ProviderRow,
    protocol: Protocol,
    client: HttpClient,
    aws: Option<ResolvedAws>,
) -> Result<Arc<dyn Provider>, AdapterError> {
    let bedrock = aws.map_or(BedrockAuth::Missing, BedrockAuth::Resolved);
    adapter_with(row, protocol, client, AdapterOptions { bedrock, env: None })
}

/// [`adapter_for`] with every option: the one dispatch from protocol to adapter.
pub fn adapter_with(
    row: &ProviderRow,
    protocol: Protocol,
    client: HttpClient,
    options: AdapterOptions,
) -> Result<Arc<dyn Provider>, AdapterError> {
    let AdapterOptions { bedrock, env } = options;
    Ok(match protocol {
        Protocol::AnthropicMessages => {
            let mut adapter = strata_anthropic::AnthropicProvider::for_row(row, client);
            if let Some(learned) = LEARNED.get() {
                adapter = adapter.with_learned(learned.clone());
            }
            Arc::new(match env {
                Some(env) => adapter.with_env(env),
                None => adapter,
            })
        }
        Protocol::OpenaiChat => {
            let adapter = strata_openai::OpenAiChatProvider::for_row(row, client);
            Arc::new(match env {
                Some(env) => adapter.with_env(env),
                None => adapter,
            })
        }
        Protocol::OpenaiResponses => {
            let mut adapter = strata_openai_responses::ResponsesProvider::new(row.clone(), client);
            if let Some(learned) = LEARNED.get() {
                adapter = adapter.with_learned(learned.clone());
            }
            Arc::new(match env {
                Some(env) => adapter.with_env(env),
                None => adapter,
            })
        }
        Protocol::GoogleGenerativeAi => {
            let adapter = strata_google::GoogleProvider::new(row.clone(), client);
            Arc::new(match env {
                Some(env) => adapter.with_env(env),
                None => adapter,
            })
        }
        Protocol::BedrockConverse => match bedrock {
            BedrockAuth::Resolved(aws) => Arc::new(strata_bedrock::BedrockProvider::new(
                row.clone(),
                client,
                aws,
            )),
            BedrockAuth::ApiKeyOnly { region } => Arc::new(
                strata_bedrock::BedrockProvider::with_api_keys_only(row.clone(), client, region),
            ),
            BedrockAuth::Missing => {
                return Err(AdapterError::MissingAwsCredentials {
                    provider: row.id.clone(),
                });
            }
        },
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
