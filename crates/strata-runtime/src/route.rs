//! Where requests go: one value for the session's model and the summary model alike.

use std::sync::Arc;

use strata_agent::{ModelSwitch, SummaryModel};
use strata_bedrock::credentials::ResolvedAws;
use strata_provider::transport::HttpClient;
use strata_provider::{Capabilities, Model, Protocol, Provider, ProviderRow, StreamOptions};

use crate::adapter::{AdapterError, adapter_for};

/// A provider row's adapter, a model, what render may use, and the options requests go with.
#[derive(Clone)]
pub struct ModelRoute {
    /// The adapter.
    pub provider: Arc<dyn Provider>,
    /// The model.
    pub model: Model,
    /// What the provider accepts for this model.
    pub capabilities: Capabilities,
    /// The wire protocol (recorded on assistant messages as Pi's `api`).
    pub protocol: Protocol,
    /// Base URL, key and retry limit.
    pub stream: StreamOptions,
}

impl std::fmt::Debug for ModelRoute {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ModelRoute")
            .field("model", &self.model.qualified_id())
            .field("protocol", &self.protocol)
            .finish_non_exhaustive()
    }
}

impl ModelRoute {
    /// The route to `model` of `row`, through the adapter of the model's endpoint protocol.
    pub fn for_row(
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

    /// What the agent takes to switch its model.
    pub fn switch(&self) -> ModelSwitch {
        ModelSwitch {
            provider: self.provider.clone(),
            model: self.model.clone(),
            capabilities: self.capabilities.clone(),
            api: self.protocol.as_str().to_owned(),
            stream: self.stream.clone(),
        }
    }

    /// What the agent takes to send its summaries here.
    pub fn summary(&self) -> SummaryModel {
        SummaryModel {
            provider: self.provider.clone(),
            model: self.model.clone(),
            stream: self.stream.clone(),
        }
    }
}
