//! Hooks and extensions of a run: command hooks from strata's, Claude Code's and Codex's
//! files, extensions from `[extensions.NAME]`, and the memory slots extensions fill. A
//! project's hook files and its `[extensions]` apply only when the project is trusted (the
//! same decision as for its MCP servers, [`crate::trust`]).

use std::collections::BTreeMap;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use strata_extensions::{ExtensionSet, ExtensionSpec, Slot};
pub use strata_extensions::{UiCall, UiRequest};
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

/// A run's extensions as where the agent collects their problems for the user.
pub struct ExtensionReports(pub Arc<ExtensionSet>);

impl strata_agent::ExtensionProblems for ExtensionReports {
    fn take_problems(&self) -> Vec<(String, String)> {
        self.0
            .take_reports()
            .into_iter()
            .map(|report| (report.extension, report.problem))
            .collect()
    }
}

/// How many UI requests wait for a front end at once (each extension has at most four in
/// flight; more are answered "no one to ask").
const UI_QUEUE: usize = 16;

/// The UI requests of a run's extensions, for the one front end that answers them: the TUI
/// (a picker, the editor, the footer), rpc (Pi's `extension_ui_request`) or print mode (the
/// unanswered default, said on stderr). Cloning shares it; [`ExtensionUi::take`] hands the
/// requests out once.
#[derive(Debug, Clone, Default)]
pub struct ExtensionUi(Arc<Mutex<Option<tokio::sync::mpsc::Receiver<UiCall>>>>);

impl ExtensionUi {
    /// Routes `set`'s UI requests here (call before the extensions start).
    pub fn for_set(set: Option<&Arc<ExtensionSet>>) -> Self {
        let Some(set) = set else {
            return Self::default();
        };
        let (tx, rx) = tokio::sync::mpsc::channel(UI_QUEUE);
        set.set_ui(tx);
        Self(Arc::new(Mutex::new(Some(rx))))
    }

    /// The requests (once; `None` with no extensions, or when taken already).
    pub fn take(&self) -> Option<tokio::sync::mpsc::Receiver<UiCall>> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).take()
    }
}

/// What print mode says of a UI request it cannot put to anyone, or `None` for one it drops
/// (a status text); the request is answered with its unanswered default.
pub fn unanswered_line(call: &UiCall) -> Option<String> {
    let name = &call.extension;
    Some(match &call.request {
        UiRequest::Confirm { title, message } => format!(
            "extension `{name}` asks \"{title}\": {message} — no one to ask in print mode: answered no"
        ),
        UiRequest::Select { title, .. } => format!(
            "extension `{name}` asks to choose \"{title}\" — no one to ask in print mode: nothing chosen"
        ),
        UiRequest::Input { title, .. } => format!(
            "extension `{name}` asks for text \"{title}\" — no one to ask in print mode: none given"
        ),
        UiRequest::Notify { message, level } => format!("extension `{name}` ({level}): {message}"),
        UiRequest::Status { .. } => return None,
    })
}
