//! The server over a [`strata_host::Setup`]: the user's configuration, project trust and the
//! key policy decide which models are reachable and where each key may go, for `strata --mode
//! rpc` and for any program that embeds the server through the host.

use std::path::{Path, PathBuf};

use strata_host::{ModelChoice, Setup};
use strata_runtime::{Model, ModelRoute, RetryObserver};
use tokio::io::{AsyncRead, AsyncWrite};

use crate::{Host, ServeError, ServeOptions};

/// Writes a session file as HTML (`export_html`) to the path given or a default one, and
/// says where: the embedding program's choice of exporter.
pub type HtmlExport = Box<dyn Fn(&Path, Option<&Path>) -> Result<PathBuf, String> + Send>;

/// Serves Pi's RPC commands from `input` on the session `setup` opens, until `input` ends;
/// MCP servers are shut down and a temporary session removed afterwards.
pub async fn serve_setup<R, W>(
    input: R,
    output: W,
    setup: Setup,
    export: Option<HtmlExport>,
) -> Result<(), ServeError>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let built = setup
        .build_agent()
        .map_err(|e| ServeError::Setup(format!("{e:#}")))?;
    let mcp = setup.mcp_manager();
    let options = ServeOptions {
        cwd: setup.cwd.clone(),
        global_dir: setup.sources.global_dir.clone(),
        project_trusted: setup.trust.trusted,
        max_retries: setup.config.max_retries,
        mcp: Some(mcp.clone()),
        loaded: Some(setup.loaded()),
        extension_ui: setup.extension_ui(),
    };
    let host = SetupHost { setup, export };
    let served = crate::serve(input, output, built.agent, built.retries, host, options).await;
    // Stdio MCP servers (and what they started) end with the session.
    mcp.shutdown().await;
    drop(built.temp);
    served.map(drop)
}

/// The configuration, catalog and overrides as the server's [`Host`].
pub struct SetupHost {
    setup: Setup,
    export: Option<HtmlExport>,
}

impl SetupHost {
    /// The host over `setup`, exporting HTML with `export` when given.
    pub fn new(setup: Setup, export: Option<HtmlExport>) -> Self {
        Self { setup, export }
    }

    /// The provider chosen by the overrides or config (its overrides apply to it alone).
    fn initial_provider(&self) -> Option<String> {
        self.setup.model_choice().ok().map(|c| c.provider)
    }
}

impl Host for SetupHost {
    /// Models of providers strata has a key for (the chosen provider always).
    fn available_models(&self) -> Vec<Model> {
        let initial = self.initial_provider();
        let setup = &self.setup;
        setup
            .catalog
            .providers()
            .filter(|row| {
                initial.as_deref() == Some(row.id.as_str()) || {
                    let configured = setup.config.providers.get(&row.id);
                    strata_host::factory::api_key(
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

    fn session_route(
        &self,
        provider: &str,
        model_id: &str,
        retries: RetryObserver,
    ) -> Option<ModelRoute> {
        let model = strata_runtime::ModelRef::new(provider, model_id);
        self.setup.session_route(&model, Some(retries))
    }

    fn set_max_retries(&mut self, limit: u32) {
        self.setup.config.max_retries = limit;
    }

    fn set_auto_compaction(&mut self, enabled: bool) {
        self.setup.config.compaction.enabled = enabled;
    }

    fn export_html(&self, session_file: &Path, output: Option<&Path>) -> Result<PathBuf, String> {
        match &self.export {
            Some(export) => export(session_file, output),
            None => Err("export_html is not available in this program".to_owned()),
        }
    }
}
