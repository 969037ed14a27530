//! Where requests go: one value for the session's model, a switch to another and the model
//! summaries go to. The runtime builds routes from provider rows (`strata_runtime::Routing`);
//! the agent only sends along them.

use std::path::PathBuf;
use std::sync::Arc;

use strata_compaction::CompactionSettings;
use strata_context::RenderPolicy;
use strata_provider::{Capabilities, Model, Protocol, Provider, StreamOptions};

use crate::{AgentConfig, CacheSettings};

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
    /// An agent configuration that sends to this route and runs tools in `cwd`, with the
    /// library's defaults for everything else (compaction, cache, render policy, tool limits).
    pub fn agent_config(&self, cwd: impl Into<PathBuf>) -> AgentConfig {
        AgentConfig {
            cwd: cwd.into(),
            model: self.model.clone(),
            capabilities: self.capabilities.clone(),
            api: self.protocol.as_str().to_owned(),
            max_tokens: None,
            global_dir: None,
            custom_intro: None,
            append_system_prompt: None,
            stream: self.stream.clone(),
            render_policy: RenderPolicy::Strata,
            compaction: CompactionSettings::default(),
            summary_model: None,
            cache: CacheSettings::default(),
            tool_settings: Default::default(),
        }
    }
}
