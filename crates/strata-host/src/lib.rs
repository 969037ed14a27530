//! strata's host: everything that turns a user's configuration into a session a view can run.
//!
//! - [`config`]: the layers (built-in defaults, the user's `config.toml`, the project's
//!   `.strata/config.toml`, `STRATA_*` variables, the program's [`Overrides`]), with the
//!   project's settings that change where a prompt goes, what it costs or what the model is
//!   told left out until the project is trusted.
//! - [`trust`]: whether a project is trusted, decided from the user's side only.
//! - [`rows`]: provider rows (built-in, Pi's `models.json`, configured) and the key policy:
//!   which hosts may receive each provider's key.
//! - [`mcp`]: which MCP servers a run starts, and editing `[mcp.servers]`.
//! - [`rules`]: the permission gate, the bash sandbox and file checkpoints of a run.
//! - [`extensions`]: the run's command hooks and extensions (trust-gated like MCP servers)
//!   and the memory slots extensions fill.
//! - [`wire`]: the next request of a session as a provider would get it (`strata context
//!   --format request`).
//! - [`model`], [`setup`]: model choice and routing; [`Setup`] builds the agent, its tools and
//!   its routes. The CLI, the rpc server and any embedding program start sessions through it,
//!   so trust and the key policy hold for every one of them.
//!
//! ```no_run
//! let overrides = strata_host::Overrides {
//!     model: Some("anthropic/claude-sonnet-4-5".into()),
//!     ..strata_host::Overrides::default()
//! };
//! let setup = strata_host::Setup::load(&overrides)?;
//! let built = setup.build_agent()?;
//! println!("session: {}", built.agent.session().path().display());
//! # Ok::<(), anyhow::Error>(())
//! ```

pub mod browser;
pub mod choose;
pub mod config;
pub mod config_edit;
#[cfg(test)]
mod config_props;
pub mod extensions;
/// The session as one HTML page (the TUI's `/export`, rpc's `export_html`, `strata export`),
/// strata-export's one implementation.
pub mod export {
    pub use strata_export::{ExportError, Exported, Overwrite, export_html, write_output};
}
pub mod factory;
pub mod loaded;
pub mod mcp;
pub mod model;
pub mod rows;
pub mod rules;
pub mod setup;
pub mod subagents;
pub mod trust;
pub mod wire;

use std::path::PathBuf;

pub use config::{Config, Layers, Sources};
pub use loaded::Loaded;
pub use model::ModelChoice;
pub use rules::{AskPolicy, SandboxHelper};
pub use setup::{Built, Setup, SetupRouter};
pub use trust::ProjectTrust;

/// What the program starting a session decides beside the configuration files: a CLI's
/// flags, an embedding program's choices. Every field is optional; none of them can widen
/// what an untrusted project may do.
#[derive(Debug, Clone, Default)]
pub struct Overrides {
    /// Model as `provider/id[:thinking]`.
    pub model: Option<String>,
    /// Provider, when `model` gives only an id.
    pub provider: Option<String>,
    /// A key for the chosen provider (the program's own choice, sent wherever `base_url` or
    /// the row points).
    pub api_key: Option<String>,
    /// A base URL for the chosen provider (the program's own choice).
    pub base_url: Option<String>,
    /// Use this session file (created when missing).
    pub session: Option<PathBuf>,
    /// Continue the most recent session of the working directory.
    pub continue_session: bool,
    /// Keep no session file (a temporary one, deleted afterwards).
    pub no_session: bool,
    /// Tools to enable.
    pub tools: Option<Vec<String>>,
    /// Replaces the built-in intro of the system prompt.
    pub system_prompt: Option<String>,
    /// Appended to the system prompt's rules.
    pub append_system_prompt: Option<String>,
    /// Trust the project for this run (`--trust`).
    pub trust: bool,
    /// The thinking level, over a `:level` suffix of the model.
    pub thinking: Option<String>,
    /// A screen is about to show damage and skipped entries itself: say nothing on stderr.
    pub interactive: bool,
    /// The run's temporary directory (tool output spills, `no_session` files), removed by the
    /// program when it ends.
    pub temp_dir: Option<PathBuf>,
    /// The permission mode asked for (`--permission-mode`), over the configuration's.
    pub permission_mode: Option<strata_permissions::Mode>,
    /// Who answers the calls the rules ask about.
    pub asks: AskPolicy,
    /// The program that applies the bash sandbox (`None`: `strata-sandbox` beside this
    /// program or on `PATH`).
    pub sandbox_helper: Option<SandboxHelper>,
}
