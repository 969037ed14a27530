//! Hooks and extensions of a run: command hooks from strata's, Claude Code's and Codex's
//! files, extensions from `[extensions.NAME]`, and the memory slots extensions fill. A
//! project's hook files and its `[extensions]` apply only when the project is trusted (the
//! same decision as for its MCP servers, [`crate::trust`]).

use std::collections::BTreeMap;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use strata_extensions::{ExtensionSet, ExtensionSpec, Slot};
use strata_hooks::{HookFiles, HookRunner, HookSet, HooksSettings};
use strata_session::Session;

/// `[extensions.NAME]`: one extension process.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ExtensionConfig {
    /// The program (a bare name is looked up in `PATH`; a relative path is the project's).
    pub command: String,
    /// Its arguments.
    pub args: Vec<String>,
    /// Seconds the handshake and each request may take.
    pub timeout: f64,
    /// `false`: configured but not started.
    pub enabled: bool,
}

impl Default for ExtensionConfig {
    fn default() -> Self {
        Self {
            command: String::new(),
            args: Vec::new(),
            timeout: 10.0,
            enabled: true,
        }
    }
}

/// The specs of the enabled extensions in `configured`, in name order, running in `cwd`.
pub fn extension_specs(
    configured: &BTreeMap<String, ExtensionConfig>,
    cwd: &Path,
) -> Vec<ExtensionSpec> {
    configured
        .iter()
        .filter(|(_, config)| config.enabled && !config.command.is_empty())
        .map(|(name, config)| {
            let program = PathBuf::from(&config.command);
            let program = if program.components().count() > 1 && program.is_relative() {
                cwd.join(program)
            } else {
                program
            };
            ExtensionSpec {
                name: name.clone(),
                program,
                args: config.args.clone(),
                cwd: cwd.to_path_buf(),
                timeout: Duration::from_secs_f64(config.timeout.clamp(0.1, 3600.0)),
            }
        })
        .collect()
}

/// The command hooks of a run: the user's files always, the project's when `trusted`. What
/// was skipped is in the set's `problems()`.
pub fn hook_set(
    settings: &HooksSettings,
    home: Option<&Path>,
    strata_dir: Option<&Path>,
    project_dir: &Path,
    trusted: bool,
) -> HookSet {
    let files = HookFiles::standard(settings, home, strata_dir, project_dir);
    HookSet::load(&files, settings, trusted)
}

/// The hook runner of an agent: `set`'s commands, then every extension of `extensions`.
pub fn hook_runner(
    set: HookSet,
    project_dir: &Path,
    extensions: Option<&Arc<ExtensionSet>>,
) -> Option<HookRunner> {
    let responders = extensions.map(ExtensionSet::responders).unwrap_or_default();
    if set.is_empty() && responders.is_empty() {
        return None;
    }
    let mut runner = HookRunner::new(set, project_dir);
    for responder in responders {
        runner = runner.with_responder(responder);
    }
    Some(runner)
}

/// A run's extensions as the agent's memory slots.
pub struct ExtensionMemory(pub Arc<ExtensionSet>);

impl strata_agent::MemoryPlays for ExtensionMemory {
    fn claim(&self, session: &mut Session) -> Vec<String> {
        self.0.claim_slots(session)
    }

    fn owner(&self, slot: &str) -> Option<String> {
        let slot = Slot::from_name(slot)?;
        self.0.slot_owner(slot).map(|e| e.name().to_owned())
    }

    fn ask<'a>(
        &'a self,
        slot: &'a str,
        params: Value,
    ) -> Pin<Box<dyn Future<Output = Option<Value>> + Send + 'a>> {
        Box::pin(async move {
            let slot = Slot::from_name(slot)?;
            self.0.ask_slot(slot, params).await
        })
    }
}
