//! The agent task: a view over the session runtime, which owns the [`Agent`]. It runs what the
//! UI asks for one command at a time as runtime operations, and reports back on one channel,
//! agent events and replies in the order they happened.

use std::path::PathBuf;

use anyhow::Context as _;
use strata_agent::{Agent, AgentEvent, Control};
use strata_context::render::Divergence;
use strata_provider::{Prices, ThinkingLevel};
use strata_runtime::{Op, RuntimeClosed, RuntimeEvent, RuntimeHandle, UserInput};
use strata_session::{
    AgentMessage, ContentBlock, Entry, EntryId, EntryKind, Role, Session, SessionSummary,
};
use strata_tools::ToolSet;
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender};
use tokio::sync::oneshot;

use super::app::{Item, Level, Notice, ToolItem, ToolState, result_diff, tool_result_text};
use super::picker::PickerItem;
use super::stats::{self, Stats};
use strata_host::Setup;
use strata_host::model::ModelChoice;
use strata_host::setup::{Built, check_tool_names};

/// What the UI asks the agent task to do.
#[derive(Debug, Clone, PartialEq)]
pub enum Command {
    /// Run a prompt to the end.
    Prompt(String),
    /// Compact now, with optional focus instructions.
    Compact(Option<String>),
    /// Switch model (`provider/id[:thinking]`).
    Model(String),
    /// Set the thinking level.
    Thinking(String),
    /// Enable and disable tools.
    Tools {
        /// Tools to enable.
        enable: Vec<String>,
        /// Tools to disable.
        disable: Vec<String>,
    },
    /// Move in the tree.
    Navigate {
        /// The new position (`None`: before the first entry).
        target: Option<EntryId>,
        /// Summarize the branch left.
        summarize: bool,
        /// Focus of that summary.
        instructions: Option<String>,
    },
    /// The user messages of the current branch, to fork before one.
    ForkPoints,
    /// Continue in a new file holding the current branch, or the part before a user message.
    Fork(ForkAt),
    /// Start a new session.
    New,
    /// Switch to another session file.
    Resume(PathBuf),
    /// List the directory's sessions.
    Sessions,
    /// The tree, for the picker.
    Tree,
    /// Name the session.
    Name(String),
    /// Label the current entry (`None` clears).
    Label(Option<String>),
    /// Report the next request's chapters.
    Context,
    /// Write the session as HTML.
    Export(Option<PathBuf>),
    /// Run a shell command the user typed (`!cmd`; `exclude`: `!!cmd`, kept out of the
    /// context).
    Shell {
        /// The command line.
        command: String,
        /// Recorded but never sent to the model.
        exclude: bool,
    },
    /// The session's file, id, name, message counts, tokens and cost (`/session`).
    SessionInfo,
    /// Turn automatic compaction on or off.
    AutoCompaction(bool),
    /// What `/login` needs and where keys come from.
    LoginHelp,
    /// Store a provider's key in the user's config (`/login`).
    Login {
        /// Provider id.
        provider: String,
        /// The key.
        key: String,
    },
    /// Put the files strata's tools changed back as they were at the current entry.
    RewindFiles,
    /// Run a running extension's slash command (`/name args`); its text is shown, never
    /// sent to the model.
    RunExtension(String),
}

/// Where `/fork` cuts the branch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ForkAt {
    /// At the current position: the whole branch.
    Here,
    /// Before this user message (which the user edits and sends again).
    Before(EntryId),
}

/// Everything the agent task tells the UI.
#[derive(Debug)]
pub enum UiEvent {
    /// An event of the running agent.
    Agent(AgentEvent),
    /// A reply to a command.
    Reply(Reply),
    /// The permission gate asks; answer through the runtime that sent it.
    Permission(
        strata_runtime::permissions::PermissionRequest,
        RuntimeHandle,
    ),
    /// An extension asks the user, or says something for the footer.
    Extension(strata_host::extensions::UiCall),
}

/// A reply to a command.
#[derive(Debug)]
pub enum Reply {
    /// An agent is ready on a (possibly new) session.
    Attached(Box<Attached>),
    /// Model, tools or session details changed.
    Status(Box<Status>),
    /// Working on something long.
    Busy(String),
    /// Ready for the next command.
    Idle,
    /// Something to tell the user.
    Notice(String),
    /// Something to heed (a hook's or an extension's notice).
    Warning(String),
    /// Something failed.
    Error(String),
    /// The directory's sessions, for `/resume`.
    Sessions(Vec<PickerItem>),
    /// The tree, for `/tree`.
    Tree(Vec<TreeRow>),
    /// The current branch's user messages, newest first, for `/fork`.
    ForkPoints(Vec<TreeRow>),
    /// An item for the transcript (a shell command's output).
    Item(Item),
    /// After a move the files differ from the entry now current: how (one line a file),
    /// for the offer to restore them.
    OfferRestore(Vec<String>),
    /// A titled block of lines.
    Block {
        /// Title.
        title: String,
        /// Lines.
        lines: Vec<String>,
    },
}

/// A session the UI now shows.
#[derive(Debug)]
pub struct Attached {
    /// Model, tools, session.
    pub status: Status,
    /// The branch so far.
    pub transcript: Vec<Item>,
    /// Counters from the stored assistant messages.
    pub stats: Stats,
    /// The session's prompts, for the editor's history.
    pub history: Vec<String>,
    /// Steering and abort of the agent.
    pub control: Option<Control>,
}

/// Model, tools and session details the UI shows and estimates from.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Status {
    /// `provider/id`.
    pub model: String,
    /// Thinking level in effect.
    pub thinking: String,
    /// The model's context window.
    pub context_window: u64,
    /// The session's name.
    pub session_name: Option<String>,
    /// The session file.
    pub session_file: PathBuf,
    /// Every tool and whether it is on.
    pub tools: Vec<ToolInfo>,
    /// Models to switch to, those with credentials first.
    pub models: Vec<ModelOption>,
    /// The model reasons (thinking levels other than `off` apply).
    pub reasoning: bool,
    /// Where tools run (the footer shows it).
    pub cwd: PathBuf,
    /// The git branch checked out there (read from `.git/HEAD`), if any.
    pub branch: Option<String>,
    /// Compaction runs when the context fills.
    pub auto_compaction: bool,
    /// The provider honours mid-conversation system messages.
    pub mid_conversation_system: bool,
    /// Without them, changes are said as a reminder with the next user message.
    pub system_reminders: bool,
    /// The provider adds tools without rewriting the tools chapter.
    pub tool_addition: bool,
    /// The provider takes deferred tool definitions.
    pub deferred_tools: bool,
    /// The model's prices.
    pub prices: Prices,
    /// Estimated tokens of the tools, system and messages chapters.
    pub chapter_tokens: [u64; 3],
    /// The rows of the last tree shown.
    pub tree: Vec<TreeRow>,
    /// What each hook and extension cost in cache writes (the footer shows the total).
    pub attributed: Vec<strata_accounting::Attribution>,
}

/// A model `/model` and Ctrl+P offer.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelOption {
    /// `provider/id`.
    pub name: String,
    /// Name, window and prices; for an unusable model, why.
    pub detail: String,
    /// Its provider has credentials now.
    pub usable: bool,
    /// Its prices (what re-writing the prompt on it costs).
    pub prices: Prices,
}

/// A tool and whether it is on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolInfo {
    /// Name.
    pub name: String,
    /// Live now.
    pub enabled: bool,
    /// Estimated tokens of its definition.
    pub tokens: u64,
}

/// One row of the `/tree` picker.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TreeRow {
    /// The entry.
    pub id: EntryId,
    /// Its parent.
    pub parent: Option<EntryId>,
    /// Indentation and summary.
    pub text: String,
    /// Label and leaf marker.
    pub detail: String,
    /// The text of a user message (chosen: re-edited from the parent).
    pub user_text: Option<String>,
    /// The current leaf.
    pub leaf: bool,
    /// A child agent's session listed under the entry that spawned it (`id` is that entry):
    /// choosing the row opens the child.
    pub child: Option<PathBuf>,
}

/// The agent task: a view over the session runtime ([`strata_runtime`]). It maps the UI's
/// commands to the runtime's operations, reads what the screen shows between them, and
/// passes the runtime's events on; the behaviour (model switches, sessions, compaction,
/// keep-warm) is the runtime's.
pub struct Worker {
    setup: Setup,
    /// The agent, until [`Self::serve`] hands it to the runtime.
    agent: Option<Agent>,
    ui: UnboundedSender<UiEvent>,
    temp: Option<tempfile::TempDir>,
    /// The models `/model` offers.
    models: Vec<ModelOption>,
    /// Stops a running `!cmd`.
    pub shell_cancel: super::shell::ShellCancel,
}

/// The runtime's handle and event stream, with what passed through.
struct Live {
    handle: RuntimeHandle,
    events: UnboundedReceiver<RuntimeEvent>,
    ui: UnboundedSender<UiEvent>,
    models: Vec<ModelOption>,
    /// The divergence of the last request sent in this process (`None`: none sent yet).
    last_divergence: Option<Option<Divergence>>,
    /// What the last manual compaction wrote (`Some(None)`: nothing to compact).
    compacted: Option<Option<EntryId>>,
    /// The entry the last label went on, and the label (`None`: cleared).
    labelled: Option<(EntryId, Option<String>)>,
}

/// What a restore would do, one line each.
fn preview_lines(report: &strata_runtime::permissions::checkpoint::RestoreReport) -> Vec<String> {
    report
        .restored
        .iter()
        .map(|path| format!("{}: changed since", path.display()))
        .chain(
            report
                .removed
                .iter()
                .map(|path| format!("{}: did not exist here", path.display())),
        )
        .chain(
            report
                .not_restorable
                .iter()
                .map(|what| format!("not restorable: {what}")),
        )
        .collect()
}

/// What a restore did, one line each (a restore that changed nothing says so).
fn restored_lines(report: &strata_runtime::permissions::checkpoint::RestoreReport) -> Vec<String> {
    let mut lines: Vec<String> = report
        .restored
        .iter()
        .map(|path| format!("restored {}", path.display()))
        .chain(
            report
                .removed
                .iter()
                .map(|path| format!("removed {}", path.display())),
        )
        .chain(
            report
                .not_restorable
                .iter()
                .map(|what| format!("not restorable: {what}")),
        )
        .collect();
    if lines.is_empty() {
        lines.push("nothing to restore: the files are as they were at this entry".into());
    }
    lines
}

impl Live {
    fn reply(&self, reply: Reply) {
        let _ = self.ui.send(UiEvent::Reply(reply));
    }

    /// After a move: when the files strata's tools changed are not as they were at the entry
    /// now current, offers to restore them (the UI's picker; `/rewind` does it later too).
    async fn offer_restore(&mut self) -> anyhow::Result<()> {
        let preview = self
            .call(Vec::new(), |agent| agent.preview_rewind(None))
            .await?
            .context("reading the file checkpoints")?;
        if preview.changes_files() {
            self.reply(Reply::OfferRestore(preview_lines(&preview)));
        }
        Ok(())
    }

    /// Passes an event on; returns what failed, when it says something did.
    fn on_event(&mut self, event: RuntimeEvent) -> Option<String> {
        match event {
            RuntimeEvent::Agent { event } => {
                if let AgentEvent::RequestStart { divergence, .. } = &event {
                    self.last_divergence = Some(divergence.clone());
                }
                let _ = self.ui.send(UiEvent::Agent(event));
                None
            }
            RuntimeEvent::RunEnded {
                error: Some(error), ..
            } => Some(format!("the run failed: {error}")),
            RuntimeEvent::Compacted { entry } => {
                self.compacted = Some(entry);
                None
            }
            RuntimeEvent::Labelled { target, label } => {
                self.labelled = Some((target, label));
                None
            }
            RuntimeEvent::FilesRestored { report } => {
                self.reply(Reply::Block {
                    title: "files restored to this entry".into(),
                    lines: restored_lines(&report),
                });
                None
            }
            RuntimeEvent::PermissionRequested { request } => {
                let _ = self
                    .ui
                    .send(UiEvent::Permission(request, self.handle.clone()));
                None
            }
            RuntimeEvent::Notice { source, text } => {
                self.reply(Reply::Warning(format!("{source}: {text}")));
                None
            }
            RuntimeEvent::Failed { op, error } => Some(match op {
                "compact" => format!("compaction failed: {error}"),
                "navigate" => format!("moving in the tree: {error}"),
                "keep_warm" => format!("keeping the cache warm: {error}"),
                _ => error,
            }),
            _ => None,
        }
    }

    /// An event while no command runs (a keep-warm ping): failures are said at once.
    fn idle_event(&mut self, event: RuntimeEvent) {
        if let Some(error) = self.on_event(event) {
            self.reply(Reply::Error(error));
        }
    }

    /// Sends `ops`, then reads the agent with `read` once they have finished, passing the
    /// events on meanwhile. Fails with the first failure the operations reported.
    async fn call<T: Send + 'static>(
        &mut self,
        ops: Vec<Op>,
        read: impl FnOnce(&mut Agent) -> T + Send + 'static,
    ) -> anyhow::Result<T> {
        let (done, mut value) = oneshot::channel();
        for op in ops {
            self.handle.send(op)?;
        }
        self.handle.send(Op::WithAgent(Box::new(move |agent| {
            let _ = done.send(read(agent));
        })))?;
        let mut failure = None;
        loop {
            tokio::select! {
                biased;
                Some(event) = self.events.recv() => {
                    if let Some(error) = self.on_event(event) {
                        failure.get_or_insert(error);
                    }
                }
                read = &mut value => {
                    // Every event of the operations was sent before `read` ran.
                    while let Ok(event) = self.events.try_recv() {
                        if let Some(error) = self.on_event(event) {
                            failure.get_or_insert(error);
                        }
                    }
                    let read = read.map_err(|_| RuntimeClosed)?;
                    return match failure {
                        Some(error) => Err(anyhow::anyhow!(error)),
                        None => Ok(read),
                    };
                }
            }
        }
    }

    /// Sends the UI the current session, its transcript and counters.
    async fn attach(&mut self) -> anyhow::Result<()> {
        let models = self.models.clone();
        let attached = self
            .call(Vec::new(), move |agent| attached(agent, models))
            .await?;
        self.reply(Reply::Attached(Box::new(attached)));
        Ok(())
    }

    async fn refresh_status(&mut self) -> anyhow::Result<()> {
        let models = self.models.clone();
        let status = self
            .call(Vec::new(), move |agent| status(agent, models))
            .await?;
        self.reply(Reply::Status(Box::new(status)));
        Ok(())
    }
}

impl Worker {
    /// A worker on a built agent, reporting to `ui`.
    pub fn new(setup: Setup, built: Built, ui: UnboundedSender<UiEvent>) -> Self {
        let models = super::models::options(&setup);
        Self {
            setup,
            agent: Some(built.agent),
            ui,
            temp: built.temp,
            models,
            shell_cancel: Default::default(),
        }
    }

    /// Starts the runtime and runs commands until the UI hangs up; while idle, the runtime
    /// keeps the provider's cache warm as the agent's keep-warm plan says (`[cache]
    /// keep_warm`), and its events reach the UI.
    pub async fn serve(mut self, mut commands: UnboundedReceiver<Command>) {
        let Some(agent) = self.agent.take() else {
            return;
        };
        let (handle, events, task) = strata_runtime::spawn(agent);
        let mut live = Live {
            handle,
            events,
            ui: self.ui.clone(),
            models: std::mem::take(&mut self.models),
            last_divergence: None,
            compacted: None,
            labelled: None,
        };
        if let Err(error) = live.attach().await {
            live.reply(Reply::Error(format!("{error:#}")));
        }
        loop {
            tokio::select! {
                command = commands.recv() => {
                    let Some(command) = command else {
                        break;
                    };
                    let long = matches!(
                        command,
                        Command::Prompt(_) | Command::Compact(_) | Command::Navigate { .. }
                    );
                    if let Err(error) = self.run(&mut live, command).await {
                        live.reply(Reply::Error(format!("{error:#}")));
                    }
                    if long && let Err(error) = live.refresh_status().await {
                        live.reply(Reply::Error(format!("{error:#}")));
                    }
                    live.reply(Reply::Idle);
                }
                event = live.events.recv() => match event {
                    Some(event) => live.idle_event(event),
                    None => break,
                },
            }
        }
        let _ = live.handle.send(Op::Shutdown);
        let _ = task.await;
        drop(self.temp.take());
    }

    async fn run(&mut self, live: &mut Live, command: Command) -> anyhow::Result<()> {
        match command {
            Command::Prompt(text) => {
                live.call(vec![Op::Prompt(UserInput::text(text))], |_| ())
                    .await?;
            }
            Command::RewindFiles => {
                live.call(vec![Op::RewindFiles { target: None }], |_| ())
                    .await?;
            }
            Command::Compact(focus) => {
                live.compacted = None;
                live.call(vec![Op::Compact { focus }], |_| ()).await?;
                if live.compacted == Some(None) {
                    live.reply(Reply::Notice("nothing to compact yet".into()));
                }
            }
            Command::Navigate {
                target,
                summarize,
                instructions,
            } => {
                if summarize {
                    live.reply(Reply::Busy("summarizing the branch".into()));
                }
                let navigate = Op::Navigate {
                    target,
                    summarize,
                    instructions,
                };
                live.call(vec![navigate], |_| ()).await?;
                live.attach().await?;
                let note = if summarize {
                    "moved; the branch left was summarized"
                } else {
                    "moved in the tree"
                };
                live.reply(Reply::Notice(note.into()));
                // The conversation moved; the files did not. Offer to move them too.
                live.offer_restore().await?;
            }
            Command::Model(name) => self.switch_model(live, &name).await?,
            Command::Thinking(level) => {
                let level: ThinkingLevel = level.parse().map_err(anyhow::Error::msg)?;
                let set = live.call(vec![Op::SetThinking(level)], thinking_of).await?;
                live.reply(Reply::Notice(format!("thinking level: {set}")));
                live.refresh_status().await?;
            }
            Command::Tools { enable, disable } => {
                // Tools built with the agent (delegation's `task`) are kept as they are.
                let (live_names, built_with_agent) = live
                    .call(Vec::new(), |agent| {
                        let names: Vec<String> = agent
                            .tools()
                            .names()
                            .into_iter()
                            .map(str::to_owned)
                            .collect();
                        let kept: Vec<std::sync::Arc<dyn strata_tools::Tool>> = agent
                            .tools()
                            .iter()
                            .filter(|tool| strata_tools::builtin(tool.name()).is_none())
                            .cloned()
                            .collect();
                        (names, kept)
                    })
                    .await?;
                let mut names: Vec<String> = live_names
                    .into_iter()
                    .filter(|name| !disable.contains(name))
                    .collect();
                for name in enable {
                    if !names.contains(&name) {
                        names.push(name);
                    }
                }
                let names: Vec<&str> = names.iter().map(String::as_str).collect();
                let builtins: Vec<&str> = names
                    .iter()
                    .copied()
                    .filter(|name| !built_with_agent.iter().any(|tool| tool.name() == *name))
                    .collect();
                check_tool_names(&builtins)?;
                let mut tools = ToolSet::builtins(&builtins);
                for tool in built_with_agent {
                    if names.contains(&tool.name()) {
                        tools.insert(tool);
                    }
                }
                live.call(vec![Op::SetTools(tools)], |_| ()).await?;
                live.reply(Reply::Notice(format!(
                    "tools now: {} (stored as a system patch with the next request)",
                    names.join(", ")
                )));
                live.refresh_status().await?;
            }
            Command::ForkPoints => {
                let rows = live
                    .call(Vec::new(), |agent| fork_points(agent.session()))
                    .await?;
                live.reply(Reply::ForkPoints(rows));
            }
            Command::Fork(at) => {
                let leaf = live
                    .call(Vec::new(), move |agent| {
                        let session = agent.session();
                        match &at {
                            ForkAt::Here => session.leaf().cloned(),
                            ForkAt::Before(id) => session.tree().parent_of(id).cloned(),
                        }
                    })
                    .await?;
                let written = live
                    .call(vec![Op::Fork { leaf }], session_path)
                    .await
                    .context("forking the session")?;
                live.attach().await?;
                live.reply(Reply::Notice(format!("forked into {}", written.display())));
                live.offer_restore().await?;
            }
            Command::New => {
                live.call(vec![Op::NewSession { parent: None }], |_| ())
                    .await?;
                live.attach().await?;
                live.reply(Reply::Notice("new session".into()));
            }
            Command::Resume(path) => {
                let switch = Op::SwitchSession {
                    path: path.clone(),
                    router: Some(self.setup.session_router(None)),
                };
                live.call(vec![switch], |_| ()).await?;
                live.attach().await?;
                live.reply(Reply::Notice(format!("resumed {}", path.display())));
            }
            Command::Sessions => {
                let store = self.setup.store()?;
                let cwd = self.setup.cwd.display().to_string();
                let current = live.call(Vec::new(), session_path).await?;
                let sessions = store.list(&cwd).context("listing sessions")?;
                let items = sessions
                    .iter()
                    .filter(|summary| summary.path != current)
                    .map(session_item)
                    .collect();
                live.reply(Reply::Sessions(items));
            }
            Command::Tree => {
                let rows = live
                    .call(Vec::new(), |agent| tree_rows(agent.session()))
                    .await?;
                live.reply(Reply::Tree(rows));
            }
            Command::Name(name) => {
                let trimmed = name.trim().to_owned();
                live.call(vec![Op::SetSessionName(name)], |_| ()).await?;
                live.reply(Reply::Notice(format!("session named “{trimmed}”")));
                live.refresh_status().await?;
            }
            Command::Label(label) => {
                live.labelled = None;
                live.call(vec![Op::LabelLeaf(label)], |_| ()).await?;
                let said = match live.labelled.take() {
                    Some((target, Some(label))) => format!("labelled {target} “{label}”"),
                    Some((target, None)) => format!("label of {target} cleared"),
                    None => "nothing was labelled".to_owned(),
                };
                live.reply(Reply::Notice(said));
            }
            Command::Context => {
                let divergence = live.last_divergence.clone();
                let mut lines = live
                    .call(Vec::new(), move |agent| {
                        context_report(agent, divergence.as_ref()).map_err(|e| format!("{e:#}"))
                    })
                    .await?
                    .map_err(anyhow::Error::msg)?;
                let attributed = live
                    .call(Vec::new(), |agent| {
                        strata_accounting::attributions(agent.session().tree())
                    })
                    .await?;
                let attributed = stats::attribution_lines(&attributed);
                if !attributed.is_empty() {
                    lines.push(String::new());
                    lines.extend(attributed);
                }
                // The rules each tool call passes, with the file each came from.
                if let Some(gate) = &self.setup.rules.gate {
                    lines.push(String::new());
                    lines.extend(gate.describe());
                }
                live.reply(Reply::Block {
                    title: "context: the next request".into(),
                    lines,
                });
            }
            Command::Export(output) => {
                let file = live.call(Vec::new(), session_path).await?;
                let written = crate::export::export_html(
                    &file,
                    output.as_deref(),
                    crate::export::Overwrite::Refuse,
                )?;
                live.reply(Reply::Notice(format!("exported to {}", written.display())));
            }
            Command::RunExtension(text) => {
                let reply = super::app::extension_command_reply(&self.setup.loaded(), &text).await;
                live.reply(reply);
            }
            Command::Shell { command, exclude } => {
                let message =
                    super::shell::run(&self.setup, &command, exclude, &self.shell_cancel).await;
                let item = super::shell::item(&message);
                live.call(Vec::new(), move |agent| {
                    agent
                        .session_mut()
                        .append_message(AgentMessage::BashExecution(message))
                        .map_err(|e| format!("recording the command's output: {e}"))
                })
                .await?
                .map_err(anyhow::Error::msg)?;
                // Shown once recorded: what the screen shows, the session holds.
                live.reply(Reply::Item(item));
                live.refresh_status().await?;
            }
            Command::AutoCompaction(enabled) => {
                live.call(vec![Op::SetAutoCompaction(enabled)], |_| ())
                    .await?;
                live.refresh_status().await?;
            }
            Command::Login { provider, key } => {
                let file = super::login::store(&mut self.setup, &provider, &key)?;
                live.models = super::models::options(&self.setup);
                live.reply(Reply::Notice(format!(
                    "stored {provider}'s key in {} (readable by you only); this run and the next use it",
                    file.display()
                )));
                live.refresh_status().await?;
            }
            Command::LoginHelp => live.reply(Reply::Block {
                title: "login".into(),
                lines: super::login::instructions(&self.setup),
            }),
            Command::SessionInfo => {
                let lines = live.call(Vec::new(), super::info::session_lines).await?;
                live.reply(Reply::Block {
                    title: "session".into(),
                    lines,
                });
            }
        }
        Ok(())
    }

    /// `provider/id[:thinking]`: the route from the configuration, the level when named
    /// (without one the runtime keeps the level asked for: off where the model does not
    /// reason, back again where it does).
    async fn switch_model(&mut self, live: &mut Live, name: &str) -> anyhow::Result<()> {
        let choice: ModelChoice = self.setup.resolve_choice(name)?;
        let route = self.setup.model_route(&choice, None)?;
        let mut ops = vec![Op::SetModel(route)];
        if let Some(level) = &choice.thinking {
            ops.push(Op::SetThinking(level.parse().map_err(anyhow::Error::msg)?));
        }
        let (model, set) = live
            .call(ops, |agent| {
                (agent.config().model.qualified_id(), thinking_of(agent))
            })
            .await?;
        let mut said = format!("model: {model}");
        if choice.thinking.is_some() {
            said.push_str(&format!(", thinking {set}"));
        }
        live.reply(Reply::Notice(said));
        live.refresh_status().await
    }
}

fn session_path(agent: &mut Agent) -> PathBuf {
    agent.session().path().to_path_buf()
}

/// The thinking level in effect, as the session records it.
fn thinking_of(agent: &mut Agent) -> String {
    agent
        .context()
        .map_or_else(|_| "off".to_owned(), |c| c.thinking_level.clone())
}

/// What the UI shows of a session it now shows.
fn attached(agent: &mut Agent, models: Vec<ModelOption>) -> Attached {
    let transcript = transcript_of(agent.session());
    let history = transcript
        .iter()
        .filter_map(|item| match item {
            Item::User(text) => Some(text.clone()),
            _ => None,
        })
        .collect();
    Attached {
        stats: stats_of(agent.session()),
        status: status(agent, models),
        transcript,
        history,
        control: Some(agent.control()),
    }
}

/// The next request's chapters, the policy, and how the last request compared.
fn context_report(
    agent: &mut Agent,
    last_divergence: Option<&Option<Divergence>>,
) -> anyhow::Result<Vec<String>> {
    let next = strata_runtime::inspect::next_request(agent)?;
    let (rendered, report) = (&next.rendered, &next.report);
    let mut lines = vec![format!(
        "{:<9} {:>9} {:>8}  {}",
        "chapter", "bytes", "≈tokens", "hash (FNV-1a 64)"
    )];
    for (name, digest) in [
        ("tools", report.tools),
        ("system", report.system),
        ("messages", report.messages),
    ] {
        lines.push(format!(
            "{name:<9} {:>9} {:>8}  {:016x}",
            digest.bytes,
            stats::tokens(digest.bytes as u64 / 4),
            digest.hash
        ));
    }
    if report.deferred.bytes > 0 {
        lines.push(format!(
            "{:<9} {:>9} {:>8}  {:016x}  (outside the cached prefix)",
            "deferred",
            report.deferred.bytes,
            stats::tokens(report.deferred.bytes as u64 / 4),
            report.deferred.hash
        ));
    }
    lines.push(String::new());
    lines.push("policy:".to_owned());
    for line in &next.policy {
        lines.push(format!("  {line}"));
    }
    let request = &rendered.request;
    let breakpoints: Vec<String> = request
        .breakpoints
        .iter()
        .map(|bp| {
            let at = match bp.position {
                strata_provider::BreakpointPosition::Tools => "after tools".to_owned(),
                strata_provider::BreakpointPosition::System => "after system".to_owned(),
                strata_provider::BreakpointPosition::Message { index } => {
                    format!("after message {}", index + 1)
                }
            };
            format!(
                "{at} ({})",
                serde_json::to_value(bp.ttl)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_owned))
                    .unwrap_or_default()
            )
        })
        .collect();
    lines.push(format!(
        "breakpoints: {}",
        if breakpoints.is_empty() {
            "none (automatic cache)".to_owned()
        } else {
            breakpoints.join(", ")
        }
    ));
    lines.push(match last_divergence {
        None => "last request: none sent yet in this run".to_owned(),
        Some(None) => "last request: the first of this run (nothing to compare with)".to_owned(),
        Some(Some(Divergence::Identical)) => "last request: identical to the one before".to_owned(),
        Some(Some(Divergence::Extends { at })) => {
            format!("last request: extended the one before at byte {at} (cache kept)")
        }
        Some(Some(Divergence::At {
            offset,
            chapter,
            chapter_offset,
        })) => format!(
            "last request: broke the cache in the {} chapter, at byte {chapter_offset} of it ({offset} overall)",
            stats::chapter_name(*chapter)
        ),
    });
    lines.push(format!(
        "{} tools, {} system blocks, {} messages",
        request.tools.len(),
        request.system.len(),
        request.messages.len()
    ));
    for note in &report.notes {
        if let Ok(text) = serde_json::to_string(note) {
            lines.push(format!("note: {text}"));
        }
    }
    let session = agent.session();
    lines.extend(crate::commands::context::delegation_lines(
        session.tree(),
        session.leaf().map(|id| id.as_str()),
    ));
    Ok(lines)
}

/// Model, tools and session details.
fn status(agent: &mut Agent, models: Vec<ModelOption>) -> Status {
    let config = agent.config();
    let model = config.model.clone();
    let capabilities = config.capabilities.clone();
    let live: Vec<String> = agent
        .tools()
        .names()
        .into_iter()
        .map(str::to_owned)
        .collect();
    let tools = strata_tools::ALL_TOOL_NAMES
        .iter()
        .map(|name| ToolInfo {
            name: (*name).to_owned(),
            enabled: live.iter().any(|l| l == name),
            tokens: strata_tools::builtin(name)
                .and_then(|tool| serde_json::to_string(&tool.definition()).ok())
                .map_or(0, |json| json.len() as u64 / 4),
        })
        .collect();
    let (thinking, chapter_tokens) = match strata_runtime::inspect::next_request(agent) {
        Ok(next) => {
            let tokens = next.chapter_tokens();
            (next.thinking_level, tokens)
        }
        Err(_) => ("off".to_owned(), [0; 3]),
    };
    let session = agent.session();
    let cwd = agent.config().cwd.clone();
    Status {
        auto_compaction: agent.config().compaction.enabled,
        branch: super::info::git_branch(&cwd),
        cwd,
        reasoning: model.reasoning,
        model: model.qualified_id(),
        thinking,
        context_window: model.context_window,
        session_name: session.tree().name().map(str::to_owned),
        session_file: session.path().to_path_buf(),
        tools,
        models,
        mid_conversation_system: capabilities.mid_conversation_system,
        system_reminders: capabilities.system_reminders,
        tool_addition: capabilities.tool_addition,
        deferred_tools: capabilities.deferred_tools,
        prices: model.prices,
        chapter_tokens,
        tree: Vec::new(),
        attributed: strata_accounting::attributions(session.tree()),
    }
}

/// The branch at the session's leaf as transcript items.
pub fn transcript_of(session: &Session) -> Vec<Item> {
    transcript_after(session, None)
}

/// [`transcript_of`] from the entry after `after` on (all of it when `after` is `None` or
/// not on the branch).
pub fn transcript_after(session: &Session, after: Option<&str>) -> Vec<Item> {
    let tree = session.tree();
    let Some(leaf) = session.leaf() else {
        return Vec::new();
    };
    let branch = tree.branch(leaf.as_str());
    let start = after
        .and_then(|after| branch.iter().position(|e| e.id().as_str() == after))
        .map_or(0, |at| at + 1);
    let mut items: Vec<Item> = Vec::new();
    for entry in branch.into_iter().skip(start) {
        let Ok(entry) = entry.entry() else {
            continue;
        };
        match entry {
            Entry::Message(message) => push_message(&mut items, message.message.into_message()),
            Entry::Compaction(compaction) => items.push(Item::Notice(Notice {
                level: Level::Info,
                text: format!(
                    "compacted (≈{} tokens summarized)",
                    stats::tokens(compaction.tokens_before)
                ),
            })),
            Entry::BranchSummary(summary) => items.push(Item::Notice(Notice {
                level: Level::Info,
                text: format!("branch summary: {}", first_line(&summary.summary, 200)),
            })),
            // The model a session starts with is in the footer; only later switches are news.
            Entry::ModelChange(change) if !items.is_empty() => items.push(Item::Notice(Notice {
                level: Level::Info,
                text: format!("model → {}/{}", change.provider, change.model_id),
            })),
            _ => {}
        }
    }
    items
}

fn push_message(items: &mut Vec<Item>, message: AgentMessage) {
    match message {
        AgentMessage::User(user) => items.push(Item::User(user.content.text_joined("\n"))),
        AgentMessage::Assistant(assistant) => {
            for block in assistant.content {
                match block {
                    ContentBlock::Text(text) if !text.text.trim().is_empty() => {
                        items.push(Item::Assistant(text.text));
                    }
                    ContentBlock::Thinking(thinking) if !thinking.thinking.is_empty() => {
                        items.push(Item::Thinking(thinking.thinking));
                    }
                    ContentBlock::ToolCall(call) => items.push(Item::Tool(ToolItem {
                        id: call.id,
                        name: call.name,
                        arguments: call.arguments.to_string(),
                        output: String::new(),
                        state: ToolState::Running,
                        diff: None,
                    })),
                    _ => {}
                }
            }
            if let Some(error) = assistant.error_message {
                items.push(Item::Notice(Notice {
                    level: Level::Error,
                    text: error,
                }));
            }
        }
        AgentMessage::ToolResult(result) => {
            let output = tool_result_text(&result.content);
            let found = items.iter_mut().rev().find_map(|item| match item {
                Item::Tool(tool) if tool.id == result.tool_call_id => Some(tool),
                _ => None,
            });
            if let Some(tool) = found {
                tool.output = output;
                tool.diff = result_diff(result.details.as_ref());
                tool.state = if result.is_error {
                    ToolState::Failed
                } else {
                    ToolState::Done
                };
            }
        }
        AgentMessage::BashExecution(bash) => items.push(super::shell::item(&bash)),
        AgentMessage::BranchSummary(summary) => items.push(Item::Notice(Notice {
            level: Level::Info,
            text: format!("branch summary: {}", first_line(&summary.summary, 200)),
        })),
        _ => {}
    }
}

/// Counters from every request the file records (all branches: all were paid), keep-warm
/// pings and summaries included.
pub fn stats_of(session: &Session) -> Stats {
    let tree = session.tree();
    let mut stats = Stats::from_records(&strata_accounting::records(tree));
    // The children's requests are in their own files; their results say what they cost.
    stats.children_cost = strata_session::delegation_results(tree)
        .iter()
        .map(|decision| decision.cost)
        .sum();
    stats
}

fn first_line(text: &str, width: usize) -> String {
    let line = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
    let mut out: String = line.chars().take(width).collect();
    if line.chars().count() > width {
        out.push('…');
    }
    out
}

/// A `/resume` row: the name (or first message), when, how long, and the first message for
/// searching.
pub fn session_item(summary: &SessionSummary) -> PickerItem {
    let first = summary
        .first_message
        .as_deref()
        .map(|m| first_line(m, 80))
        .unwrap_or_else(|| "(no messages)".into());
    let label = match &summary.name {
        Some(name) => format!("{name} — {first}"),
        None => first,
    };
    let detail = format!(
        "{} · {} messages",
        strata_session::format_iso_millis(summary.modified)
            .get(..16)
            .unwrap_or_default()
            .replace('T', " "),
        summary.message_count
    );
    PickerItem::new(label, detail, summary.path.display().to_string())
}

/// The tree as picker rows: messages (system messages by what they change), compactions,
/// summaries and model changes, indented only where the tree forks; `usage` entries are
/// hidden, as in Pi.
pub fn tree_rows(session: &Session) -> Vec<TreeRow> {
    let tree = session.tree();
    let leaf = session.leaf();
    let mut rows = Vec::new();
    let mut stack: Vec<(EntryId, String)> = Vec::new();
    let push_children =
        |stack: &mut Vec<(EntryId, String)>, children: &[&EntryId], prefix: &str| {
            if let [only] = children {
                stack.push(((*only).clone(), prefix.to_owned()));
                return;
            }
            for child in children.iter().rev() {
                stack.push(((*child).clone(), format!("{prefix}  ")));
            }
        };
    push_children(&mut stack, &tree.roots(), "");
    let delegated = strata_session::delegated_by_entry(session.path());
    // The path to the leaf is marked so the current branch stands out.
    let on_path: Vec<EntryId> = leaf
        .map(|leaf| {
            tree.path_to_root(leaf.as_str())
                .into_iter()
                .cloned()
                .collect()
        })
        .unwrap_or_default();
    // The leaf may be a label or leaf-move entry: its nearest shown ancestor is marked.
    let shown_leaf: Option<EntryId> = leaf.and_then(|leaf| {
        tree.walk_to_root(leaf.as_str())
            .find(|e| e.entry().ok().and_then(|e| describe(&e)).is_some())
            .map(|e| e.id().clone())
    });
    while let Some((id, prefix)) = stack.pop() {
        let children = tree.children(&id);
        if let Ok(entry) = tree.entry(&id)
            && let Some((text, user_text)) = describe(&entry)
        {
            let marker = if on_path.contains(&id) {
                "● "
            } else {
                "○ "
            };
            let mut detail = String::new();
            if let Some(label) = tree.label_of(&id) {
                detail.push_str(&format!("[{label}] "));
            }
            let is_leaf = shown_leaf.as_ref() == Some(&id);
            if is_leaf {
                detail.push_str("← current");
            }
            rows.push(TreeRow {
                parent: tree.parent_of(&id).cloned(),
                text: format!("{prefix}{marker}{text}"),
                detail,
                user_text,
                leaf: is_leaf,
                id: id.clone(),
                child: None,
            });
        }
        // The children it spawned, as `strata tree` lists them.
        for child in delegated.get(id.as_str()).into_iter().flatten() {
            rows.push(TreeRow {
                parent: Some(id.clone()),
                text: format!("{prefix}    ↳ {}", child.title()),
                detail: format!("{} msgs · open", child.summary.message_count),
                user_text: None,
                leaf: false,
                id: id.clone(),
                child: Some(child.path().to_path_buf()),
            });
        }
        push_children(&mut stack, &children, &prefix);
    }
    rows
}

/// The user messages on the path to the leaf, newest first.
pub fn fork_points(session: &Session) -> Vec<TreeRow> {
    let tree = session.tree();
    let Some(leaf) = session.leaf() else {
        return Vec::new();
    };
    tree.walk_to_root(leaf.as_str())
        .filter(|entry| entry.kind() == EntryKind::Message(Role::User))
        .filter_map(|entry| {
            let parsed = entry.entry().ok()?;
            let (text, user_text) = describe(&parsed)?;
            Some(TreeRow {
                id: entry.id().clone(),
                parent: entry.parent_id().cloned(),
                text,
                detail: String::new(),
                user_text,
                leaf: false,
                child: None,
            })
        })
        .collect()
}

/// A row's text for entries the tree shows, and a user message's text.
fn describe(entry: &Entry) -> Option<(String, Option<String>)> {
    match entry {
        Entry::Message(message) => match &*message.message {
            AgentMessage::User(user) => {
                let text = user.content.text_joined("\n");
                Some((format!("user: {}", first_line(&text, 70)), Some(text)))
            }
            AgentMessage::Assistant(assistant) => {
                let text = strata_session::join_text(&assistant.content, " ");
                let calls: Vec<&str> = assistant.tool_calls().map(|c| c.name.as_str()).collect();
                let mut line = format!("assistant: {}", first_line(&text, 60));
                if !calls.is_empty() {
                    line.push_str(&format!(" → {}", calls.join(", ")));
                }
                Some((line, None))
            }
            AgentMessage::ToolResult(_) => None,
            // A system message: what it changes (sections by name, tools by ±name).
            AgentMessage::System(system) => {
                let mut changes: Vec<String> = system
                    .section_changes()
                    .map(|(name, text)| match text {
                        Some(_) => name.to_owned(),
                        None => format!("-{name}"),
                    })
                    .collect();
                changes.extend(system.tools_added().iter().map(|t| format!("+{}", t.name)));
                changes.extend(system.tools_removed().map(|name| format!("-{name}")));
                Some((
                    format!("system: {}", first_line(&changes.join(" "), 60)),
                    None,
                ))
            }
            other => Some((other.role().to_owned(), None)),
        },
        Entry::Compaction(compaction) => Some((
            format!(
                "compaction (≈{} tokens)",
                stats::tokens(compaction.tokens_before)
            ),
            None,
        )),
        Entry::BranchSummary(summary) => Some((
            format!("branch summary: {}", first_line(&summary.summary, 60)),
            None,
        )),
        Entry::ModelChange(change) => Some((
            format!("model → {}/{}", change.provider, change.model_id),
            None,
        )),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use strata_agent::KEEP_WARM_CUSTOM_TYPE;

    use super::*;

    fn session(lines: &[serde_json::Value]) -> (tempfile::TempDir, Session) {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("s.jsonl");
        let text: String = lines.iter().map(|line| format!("{line}\n")).collect();
        std::fs::write(&path, text).expect("writing");
        let session = Session::open(&path).expect("opening").session;
        (dir, session)
    }

    fn entry(id: &str, parent: Option<&str>, message: serde_json::Value) -> serde_json::Value {
        json!({"type":"message","id":id,"parentId":parent,
            "timestamp":"2026-03-01T10:00:00.000Z","message":message})
    }

    #[test]
    fn keep_warm_pings_in_the_file_are_billed_but_not_the_last_answer() {
        let usage = |read: u64, total: f64| {
            json!({"input":0,"output":1,"cacheRead":read,"cacheWrite":0,"totalTokens":read + 1,
                "cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":total}})
        };
        let (_dir, session) = session(&[
            json!({"type":"session","version":3,"id":"s","timestamp":"2026-03-01T10:00:00.000Z","cwd":"/p"}),
            entry(
                "u0000001",
                None,
                json!({"role":"user","content":"hi","timestamp":1}),
            ),
            entry(
                "a0000001",
                Some("u0000001"),
                json!({"role":"assistant","content":[{"type":"text","text":"Hello."}],
                "api":"anthropic-messages","provider":"anthropic","model":"claude-opus-4-8",
                "usage":usage(900, 0.002),"stopReason":"stop","timestamp":2}),
            ),
            json!({"type":"custom","id":"k0000001","parentId":"a0000001",
                "timestamp":"2026-03-01T10:05:00.000Z","customType":KEEP_WARM_CUSTOM_TYPE,
                "data":{"usage":usage(950, 0.0005),"provider":"anthropic","model":"claude-opus-4-8"}}),
            json!({"type":"usage","id":"k0000002","parentId":"k0000001",
                "timestamp":"2026-03-01T10:09:00.000Z","kind":"cache_warm",
                "provider":"anthropic","model":"claude-opus-4-8","usage":usage(960, 0.0005)}),
        ]);
        let stats = stats_of(&session);
        assert_eq!(stats.requests, 3);
        assert_eq!(stats.pings, 2);
        assert_eq!(stats.cache_read, 2810);
        assert!((stats.cost - 0.003).abs() < 1e-12, "{}", stats.cost);
        assert_eq!(stats.last.map(|usage| usage.cache_read), Some(900));
    }

    #[test]
    fn a_resumed_branch_becomes_transcript_items_and_counters() {
        let (_dir, session) = session(&[
            json!({"type":"session","version":3,"id":"s","timestamp":"2026-03-01T10:00:00.000Z","cwd":"/p"}),
            json!({"type":"model_change","id":"m0000001","parentId":null,
                "timestamp":"2026-03-01T10:00:00.000Z","provider":"anthropic","modelId":"claude-sonnet-4-5"}),
            entry(
                "u0000001",
                Some("m0000001"),
                json!({"role":"user","content":"read it","timestamp":1}),
            ),
            entry(
                "a0000001",
                Some("u0000001"),
                json!({"role":"assistant","content":[
                {"type":"thinking","thinking":"look first"},
                {"type":"text","text":"Reading."},
                {"type":"toolCall","id":"c1","name":"read","arguments":{"path":"a.rs"}}],
                "api":"anthropic-messages","provider":"anthropic","model":"claude-sonnet-4-5",
                "usage":{"input":100,"output":10,"cacheRead":900,"cacheWrite":0,"totalTokens":1010,
                    "cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0.002}},
                "stopReason":"toolUse","timestamp":2}),
            ),
            entry(
                "r0000001",
                Some("a0000001"),
                json!({"role":"toolResult","toolCallId":"c1",
                "toolName":"read","content":[{"type":"text","text":"fn a() {}"}],"isError":false,"timestamp":3}),
            ),
            json!({"type":"model_change","id":"m0000002","parentId":"r0000001",
                "timestamp":"2026-03-01T10:00:00.000Z","provider":"openai","modelId":"gpt-5"}),
        ]);
        assert_eq!(
            transcript_of(&session),
            vec![
                Item::User("read it".into()),
                Item::Thinking("look first".into()),
                Item::Assistant("Reading.".into()),
                Item::Tool(ToolItem {
                    id: "c1".into(),
                    name: "read".into(),
                    arguments: "{\"path\":\"a.rs\"}".into(),
                    output: "fn a() {}".into(),
                    state: ToolState::Done,
                    diff: None,
                }),
                Item::Notice(Notice {
                    level: Level::Info,
                    text: "model → openai/gpt-5".into(),
                }),
            ]
        );
        let points = fork_points(&session);
        assert_eq!(
            points.iter().map(|row| row.id.as_str()).collect::<Vec<_>>(),
            vec!["u0000001"]
        );
        assert_eq!(points[0].user_text.as_deref(), Some("read it"));
        assert_eq!(points[0].parent, Some(EntryId::new("m0000001")));
        let stats = stats_of(&session);
        assert_eq!(stats.requests, 1);
        assert_eq!(stats.hit_rate(), Some(0.9));
        assert!((stats.cost - 0.002).abs() < 1e-12);
    }
}
