//! `--mode rpc`: Pi's RPC protocol ([`strata_rpc`]) on stdin and stdout, over the setup's
//! agent; this module only says which models the configuration reaches and how.

use std::path::{Path, PathBuf};

use strata_provider::Model;
use strata_provider::transport::RetryObserver;
use strata_rpc::{Host, ServeOptions};
use strata_runtime::{ModelRoute, SessionRouter};

use super::Setup;
use super::model::ModelChoice;

/// Serves RPC commands from stdin until it closes.
pub async fn serve(setup: Setup) -> anyhow::Result<()> {
    let built = setup.build_agent()?;
    let mcp = setup.mcp_manager();
    let options = ServeOptions {
        cwd: setup.cwd.clone(),
        global_dir: setup.sources.global_dir.clone(),
        project_trusted: setup.trust.trusted,
        max_retries: setup.config.max_retries,
        temp_dir: crate::exit::run_temp_dir(),
        mcp: Some(mcp.clone()),
    };
    let host = SetupHost { setup };
    let served = strata_rpc::serve(
        tokio::io::stdin(),
        tokio::io::stdout(),
        built.agent,
        built.retries,
        host,
        options,
    )
    .await;
    // Stdio MCP servers (and what they started) end with the session.
    mcp.shutdown().await;
    drop(built.temp);
    served?;
    Ok(())
}

/// The configuration, catalog and flags as the rpc server's [`Host`].
struct SetupHost {
    setup: Setup,
}

impl SetupHost {
    /// The provider chosen on the command line (its flags apply to it alone).
    fn initial_provider(&self) -> Option<String> {
        self.setup.model_choice().ok().map(|c| c.provider)
    }
}

impl Host for SetupHost {
    /// Models of providers strata has a key for (the command line's provider always).
    fn available_models(&self) -> Vec<Model> {
        let initial = self.initial_provider();
        let setup = &self.setup;
        setup
            .catalog
            .providers()
            .filter(|row| {
                initial.as_deref() == Some(row.id.as_str()) || {
                    let configured = setup.config.providers.get(&row.id);
                    super::factory::api_key(
                        None,
                        configured.and_then(|p| p.api_key.as_deref()),
                        row,
                    )
                    .is_some()
                }
            })
            .flat_map(|row| setup.catalog.models_of(&row.id).cloned())
            .collect()
    }

    fn model(&self, provider: &str, model_id: &str) -> Option<Model> {
        self.setup.catalog.model(provider, model_id)
    }

    fn endpoint(&self, model: &Model) -> Option<(String, String)> {
        let setup = &self.setup;
        let row = setup.catalog.provider(&model.provider)?;
        let api = row.endpoint(&model.id).protocol.as_str().to_owned();
        let flag_url = (self.initial_provider().as_deref() == Some(row.id.as_str()))
            .then(|| setup.run.base_url.clone())
            .flatten();
        let base_url = flag_url
            .or_else(|| {
                setup
                    .config
                    .providers
                    .get(&row.id)
                    .and_then(|p| p.base_url.clone())
            })
            .unwrap_or_else(|| row.base_url.clone());
        Some((api, base_url))
    }

    fn route(
        &self,
        provider: &str,
        model_id: &str,
        retries: RetryObserver,
    ) -> Result<ModelRoute, String> {
        let choice = ModelChoice {
            provider: provider.to_owned(),
            id: model_id.to_owned(),
            thinking: None,
        };
        self.setup
            .model_route(&choice, Some(retries))
            .map_err(|e| format!("{e:#}"))
    }

    fn session_router(&self, retries: RetryObserver) -> SessionRouter {
        self.setup.session_router(Some(retries))
    }

    fn set_max_retries(&mut self, limit: u32) {
        self.setup.config.max_retries = limit;
    }

    fn set_auto_compaction(&mut self, enabled: bool) {
        self.setup.config.compaction.enabled = enabled;
    }

    fn export_html(&self, session_file: &Path, output: Option<&Path>) -> Result<PathBuf, String> {
        crate::export::export_html(session_file, output, crate::export::Overwrite::Refuse)
            .map_err(|e| format!("{e:#}"))
    }
}
