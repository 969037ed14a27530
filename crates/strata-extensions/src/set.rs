//! The extensions of one run: started together when the first prompt settles its tools,
//! asked about hooks (one responder each), their tools declared like an MCP server's, their
//! memory-slot claims made in configuration order, and their problems collected for the
//! front end.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};

use async_trait::async_trait;
use serde_json::Value;
use strata_hooks::{HookEvent, HookInput, HookResponder, HookRun, RunStatus};
use strata_session::Session;
use strata_tools::{Tool, ToolSource};
use tokio::sync::{OnceCell, mpsc};

use crate::host::{Extension, ExtensionReport, ExtensionSpec, Outlets, UiCall};
use crate::slots::{MemorySlots, Slot};
use crate::tools::ExtensionTools;
use strata_hooks::OpCall;

/// Where a configured extension is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ExtensionState {
    /// Not started yet (extensions start when the first prompt settles the tools).
    NotStarted,
    /// Running and answering.
    Running,
    /// It could not start, or it exited or was stopped; why.
    Failed(String),
}

impl ExtensionState {
    /// `not started`, `running` or `failed`.
    pub fn label(&self) -> &'static str {
        match self {
            ExtensionState::NotStarted => "not started",
            ExtensionState::Running => "running",
            ExtensionState::Failed(_) => "failed",
        }
    }
}

/// One configured extension as status lists show it.
#[derive(Debug, Clone, PartialEq)]
pub struct ExtensionStatus {
    /// How it is started.
    pub spec: ExtensionSpec,
    /// Where it is.
    pub state: ExtensionState,
    /// What it declared, once it answered the handshake.
    pub manifest: Option<strata_extension_client::Manifest>,
    /// The memory slots it holds now (none unless running).
    pub slots: Vec<Slot>,
}

/// The configured extensions of a run and what they hold.
pub struct ExtensionSet {
    specs: Vec<ExtensionSpec>,
    started: OnceCell<Vec<Result<Arc<Extension>, String>>>,
    /// Where UI requests go; a front end sets it before the extensions start.
    ui: Mutex<Option<mpsc::Sender<UiCall>>>,
    /// Where operations go; the session runtime sets it before the extensions start.
    ops: Mutex<Option<mpsc::Sender<OpCall>>>,
    reports_tx: mpsc::UnboundedSender<ExtensionReport>,
    reports: Mutex<mpsc::UnboundedReceiver<ExtensionReport>>,
    slots: Mutex<MemorySlots>,
}

impl std::fmt::Debug for ExtensionSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ExtensionSet")
            .field("specs", &self.specs)
            .finish_non_exhaustive()
    }
}

impl ExtensionSet {
    /// The extensions `specs` (started on [`ExtensionSet::start`], or when the first prompt
    /// settles [`ExtensionSet::tool_source`]); UI requests go to `ui` (`None`: no one to ask).
    pub fn new(specs: Vec<ExtensionSpec>, ui: Option<mpsc::Sender<UiCall>>) -> Self {
        let (reports_tx, reports) = mpsc::unbounded_channel();
        Self {
            specs,
            started: OnceCell::new(),
            ui: Mutex::new(ui),
            ops: Mutex::new(None),
            reports_tx,
            reports: Mutex::new(reports),
            slots: Mutex::new(MemorySlots::new()),
        }
    }

    /// Sends UI requests to `ui` (a front end that asks the user); extensions started before
    /// keep where they were started with.
    pub fn set_ui(&self, ui: mpsc::Sender<UiCall>) {
        *self.ui.lock().unwrap_or_else(PoisonError::into_inner) = Some(ui);
    }

    /// Sends the extensions' operations (`op`) to `ops`, the session runtime's; extensions
    /// started before keep where they were started with.
    pub fn set_ops(&self, ops: mpsc::Sender<OpCall>) {
        *self.ops.lock().unwrap_or_else(PoisonError::into_inner) = Some(ops);
    }

    /// What is configured.
    pub fn specs(&self) -> &[ExtensionSpec] {
        &self.specs
    }

    /// Starts every extension (once; concurrently, each within its timeout). One that cannot
    /// start is reported by name and left out; the others run.
    pub async fn start(&self) {
        self.started
            .get_or_init(|| async {
                let outlets = Outlets {
                    ui: self
                        .ui
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .clone(),
                    ops: self
                        .ops
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .clone(),
                };
                let starts = self.specs.iter().map(|spec| {
                    let reports = self.reports_tx.clone();
                    let outlets = outlets.clone();
                    async move {
                        match Extension::start_with(spec.clone(), outlets, Some(reports.clone()))
                            .await
                        {
                            Ok(extension) => Ok(Arc::new(extension)),
                            Err(error) => {
                                let problem = error.to_string();
                                let _ = reports.send(ExtensionReport {
                                    extension: spec.name.clone(),
                                    problem: problem.clone(),
                                });
                                // Kept for status lists after the report is taken.
                                Err(problem)
                            }
                        }
                    }
                });
                futures::future::join_all(starts).await
            })
            .await;
    }

    /// The extensions that started (none before [`ExtensionSet::start`]).
    pub fn running(&self) -> Vec<Arc<Extension>> {
        self.started
            .get()
            .into_iter()
            .flatten()
            .filter_map(|started| started.as_ref().ok())
            .cloned()
            .collect()
    }

    /// What each configured extension is doing, in configuration order, with the memory
    /// slots it holds now.
    pub fn status(&self) -> Vec<ExtensionStatus> {
        let slots = self.slots();
        self.specs
            .iter()
            .enumerate()
            .map(|(index, spec)| {
                let started = self.started.get().and_then(|all| all.get(index));
                let (state, manifest) = match started {
                    None => (ExtensionState::NotStarted, None),
                    Some(Err(why)) => (ExtensionState::Failed(why.clone()), None),
                    Some(Ok(extension)) if extension.is_alive() => {
                        (ExtensionState::Running, Some(extension.manifest().clone()))
                    }
                    Some(Ok(extension)) => (
                        ExtensionState::Failed(
                            extension
                                .last_problem()
                                .unwrap_or_else(|| "stopped".to_owned()),
                        ),
                        Some(extension.manifest().clone()),
                    ),
                };
                let held = if matches!(state, ExtensionState::Running) {
                    Slot::ALL
                        .into_iter()
                        .filter(|slot| slots.owner(*slot) == spec.name)
                        .collect()
                } else {
                    Vec::new()
                };
                ExtensionStatus {
                    spec: spec.clone(),
                    state,
                    manifest,
                    slots: held,
                }
            })
            .collect()
    }

    /// One hook responder per configured extension, answering once it has started and while
    /// it runs: pass each to `HookRunner::with_responder`.
    pub fn responders(self: &Arc<Self>) -> Vec<Arc<dyn HookResponder>> {
        (0..self.specs.len())
            .map(|index| {
                Arc::new(Responder {
                    set: Arc::clone(self),
                    index,
                }) as Arc<dyn HookResponder>
            })
            .collect()
    }

    fn extension(&self, index: usize) -> Option<&Arc<Extension>> {
        self.started.get()?.get(index)?.as_ref().ok()
    }

    /// Gives each memory slot the running extensions claim to its first claimant, in
    /// configuration order, recording each claim in `session`; returns the refusals.
    pub fn claim_slots(&self, session: &mut Session) -> Vec<String> {
        let mut slots = self.slots.lock().unwrap_or_else(PoisonError::into_inner);
        let mut refused = Vec::new();
        for extension in self.running() {
            for slot in &extension.manifest().slots {
                if let Err(error) = slots.claim(slot, extension.name(), session) {
                    refused.push(error.to_string());
                }
            }
        }
        refused
    }

    /// The running extension that owns `slot`; a stopped owner's slots go back to the
    /// built-ins.
    pub fn slot_owner(&self, slot: Slot) -> Option<Arc<Extension>> {
        let mut slots = self.slots.lock().unwrap_or_else(PoisonError::into_inner);
        let owner = slots.owner(slot).to_owned();
        let extension = self.running().into_iter().find(|e| e.name() == owner)?;
        if extension.is_alive() {
            Some(extension)
        } else {
            slots.release_all(&owner);
            None
        }
    }

    /// Who owns each slot now.
    pub fn slots(&self) -> MemorySlots {
        self.slots
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Asks `slot`'s owner (`memory/<slot>`); `None` when the built-in owns it or the owner
    /// failed.
    pub async fn ask_slot(&self, slot: Slot, params: Value) -> Option<Value> {
        let owner = self.slot_owner(slot)?;
        let method = format!("memory/{}", slot.name());
        match owner.request(&method, params).await {
            Ok(answer) => Some(answer),
            Err(error) => {
                // A hang or an exit was reported by the extension itself, once.
                tracing::warn!("{error}");
                None
            }
        }
    }

    /// Problems since the last call (each reported once per extension and kind).
    pub fn take_reports(&self) -> Vec<ExtensionReport> {
        let mut reports = self.reports.lock().unwrap_or_else(PoisonError::into_inner);
        let mut all = Vec::new();
        while let Ok(report) = reports.try_recv() {
            all.push(report);
        }
        all
    }

    /// Asks every running extension to exit.
    pub async fn shutdown(&self) {
        futures::future::join_all(self.running().iter().map(|e| e.shutdown())).await;
    }

    /// An agent's tool source: `inner`'s tools (MCP), then the running extensions'; settling
    /// it starts the extensions.
    pub fn tool_source(self: &Arc<Self>, inner: Option<Arc<dyn ToolSource>>) -> SetTools {
        SetTools {
            set: Arc::clone(self),
            inner,
        }
    }
}

/// [`ExtensionSet::tool_source`]: the extensions' tools after another source's.
pub struct SetTools {
    set: Arc<ExtensionSet>,
    inner: Option<Arc<dyn ToolSource>>,
}

impl SetTools {
    fn current(&self) -> ExtensionTools {
        ExtensionTools::new(self.set.running(), self.inner.clone())
    }
}

#[async_trait]
impl ToolSource for SetTools {
    async fn settle(&self) {
        let inner = async {
            if let Some(inner) = &self.inner {
                inner.settle().await;
            }
        };
        tokio::join!(inner, self.set.start());
    }

    fn tools(&self) -> Vec<Arc<dyn Tool>> {
        self.current().tools()
    }

    fn resolve(&self, name: &str) -> Option<Arc<dyn Tool>> {
        self.current().resolve(name)
    }

    fn origin(&self, name: &str) -> Option<String> {
        let extension = self
            .set
            .running()
            .into_iter()
            .find(|e| e.manifest().tools.iter().any(|t| t.name == name));
        match extension {
            Some(extension) => Some(format!("extension {}", extension.name())),
            None => self.inner.as_ref()?.origin(name),
        }
    }
}

/// The configured extension at `index`, as a hook responder.
#[derive(Debug)]
struct Responder {
    set: Arc<ExtensionSet>,
    index: usize,
}

impl HookResponder for Responder {
    fn answers(&self, event: HookEvent) -> bool {
        self.set
            .extension(self.index)
            .is_some_and(|e| e.answers(event))
    }

    fn answer<'a>(
        &'a self,
        input: &'a HookInput,
    ) -> Pin<Box<dyn Future<Output = HookRun> + Send + 'a>> {
        match self.set.extension(self.index) {
            Some(extension) => extension.answer(input),
            None => Box::pin(async move {
                HookRun {
                    command: "extension".into(),
                    file: Default::default(),
                    status: RunStatus::FailedToStart("not started".into()),
                    stdout: String::new(),
                    stderr: String::new(),
                    truncated: false,
                }
            }),
        }
    }
}
