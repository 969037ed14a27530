//! The agent task: a view over the session runtime, which owns the [`Agent`]. It runs what the
//! UI asks for one command at a time as runtime operations, and reports back on one channel,
//! agent events and replies in the order they happened.

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context as _;
use strata_agent::{Agent, AgentEvent, Control};
use strata_context::render::Divergence;
use strata_provider::{Prices, ThinkingLevel};
use strata_runtime::{
    Answer, ContextReport, Op, OpName, Query, RowKind, RuntimeClosed, RuntimeEvent, RuntimeHandle,
    SessionStats, Status as RuntimeStatus, TranscriptItem, UserInput, read_model,
};
use strata_session::{EntryId, Session, SessionSummary};
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender};

use super::app::{Item, Level, Notice, ToolItem, ToolState};
use super::picker::PickerItem;
use super::stats::{self, Stats};
use strata_host::model::ModelChoice;
use strata_host::setup::{Built, check_tool_names};
use strata_host::{Setup, SetupRouter};

/// What the UI asks the agent task to do.
#[derive(Debug, Clone, PartialEq)]
pub enum Command {
    /// Run a prompt to the end.
    Prompt(String),
    /// The part of the branch before this entry, one window ([`ATTACH_ENTRIES`]) of it.
    Earlier(EntryId),
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
    /// A long session's counters, counted after it was shown.
    Counted(Box<(Status, Stats)>),
    /// The window of the branch above what is shown.
    Earlier(Box<Window>),
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

/// How many entries of the branch a window of the transcript reads: the end of a long session
/// shows at once, and the part above it as the user scrolls up (Pi shows the messages since
/// the last compaction; this shows more, and all of it on the way up).
pub const ATTACH_ENTRIES: usize = 400;

/// A part of the branch as items, and what is above it.
#[derive(Debug, Default)]
pub struct Window {
    /// The items, oldest first.
    pub items: Vec<Item>,
    /// Entries of the branch above them (0: the whole branch is shown).
    pub earlier: usize,
    /// The first entry shown: where the next window up ends.
    pub first: Option<EntryId>,
}

/// A session the UI now shows.
#[derive(Debug)]
pub struct Attached {
    /// Model, tools, session.
    pub status: Status,
    /// The end of the branch so far, and what is above it.
    pub transcript: Window,
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
    /// The runtime's router, told of a changed setup (a key stored by `/login`).
    router: Option<Arc<SetupRouter>>,
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
    /// Steering and abort of the agent the runtime runs.
    control: Control,
    /// The id of the next query sent.
    next_query: u64,
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
        let preview = match self
            .read(Vec::new(), Query::RewindPreview { target: None })
            .await
            .context("reading the file checkpoints")?
        {
            Answer::RewindPreview(preview) => preview,
            other => return Err(unexpected(&other)),
        };
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
                OpName::Compact => format!("compaction failed: {error}"),
                OpName::Navigate => format!("moving in the tree: {error}"),
                OpName::KeepWarm => format!("keeping the cache warm: {error}"),
                OpName::RecordBash => format!("recording the command's output: {error}"),
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

    /// Sends `ops`, then `queries`, and returns their answers once the runtime has answered
    /// the last (after every event of the operations), passing the events on meanwhile. Fails
    /// with the first failure the operations reported.
    async fn call(&mut self, ops: Vec<Op>, mut queries: Vec<Query>) -> anyhow::Result<Vec<Answer>> {
        for op in ops {
            self.handle.send(op)?;
        }
        // Without a read, an empty window of the transcript marks where the operations
        // finished: it reads nothing, and waits for no count (the state would).
        let wanted = queries.len();
        if queries.is_empty() {
            queries.push(Query::Transcript {
                after: None,
                last: Some(0),
                before: None,
            });
        }
        let first = self.next_query;
        for query in queries {
            let id = self.next_query;
            self.next_query += 1;
            self.handle.send(Op::Query { id, query })?;
        }
        let last = self.next_query - 1;
        let mut failure: Option<String> = None;
        let mut answers = Vec::new();
        while let Some(event) = self.events.recv().await {
            match event {
                RuntimeEvent::Answered { id, answer } if (first..=last).contains(&id) => {
                    answers.push(answer);
                    if id == last {
                        answers.truncate(wanted);
                        return match failure {
                            Some(error) => Err(anyhow::anyhow!(error)),
                            None => Ok(answers),
                        };
                    }
                }
                event => {
                    if let Some(error) = self.on_event(event) {
                        failure.get_or_insert(error);
                    }
                }
            }
        }
        Err(RuntimeClosed.into())
    }

    /// Sends `ops` and waits until they have run.
    /// Waits for the user's command to end, passing other events on.
    async fn bash_ended(&mut self) -> anyhow::Result<Box<strata_runtime::BashRecord>> {
        while let Some(event) = self.events.recv().await {
            match event {
                RuntimeEvent::BashEnded { record } => return Ok(record),
                event => {
                    if let Some(error) = self.on_event(event) {
                        self.reply(Reply::Error(error));
                    }
                }
            }
        }
        Err(RuntimeClosed.into())
    }

    async fn ops(&mut self, ops: Vec<Op>) -> anyhow::Result<()> {
        self.call(ops, Vec::new()).await.map(drop)
    }

    /// One read after `ops`.
    async fn read(&mut self, ops: Vec<Op>, query: Query) -> anyhow::Result<Answer> {
        let answers = self.call(ops, vec![query]).await?;
        match answers.into_iter().next() {
            Some(Answer::Failed { error }) => Err(anyhow::anyhow!(error)),
            Some(answer) => Ok(answer),
            None => Err(anyhow::anyhow!("the runtime gave no answer")),
        }
    }

    /// The runtime's state after `ops`.
    async fn state(&mut self, ops: Vec<Op>) -> anyhow::Result<RuntimeStatus> {
        match self.read(ops, Query::State).await? {
            Answer::State(state) => Ok(*state),
            other => Err(unexpected(&other)),
        }
    }

    /// Sends the UI the current session, its transcript and counters. While the runtime
    /// counts a long session's first pass, the prompt shows at once with the published state,
    /// and the counters and the next request's chapters follow ([`Reply::Counted`]) when the
    /// count is done.
    async fn attach(&mut self) -> anyhow::Result<()> {
        let state = self.handle.status();
        let (status, stats) = if state.counting {
            // The next request's chapters come with the counters: a long context need not be
            // rendered to show the session.
            let thinking = state.thinking;
            let status = status_of(
                state,
                &SessionStats::default(),
                thinking,
                [0; 3],
                self.models.clone(),
            );
            (status, None)
        } else {
            let (status, stats) = self.status().await?;
            (status, Some(stats))
        };
        let transcript = self.window(None).await?;
        let history = transcript
            .items
            .iter()
            .filter_map(|item| match item {
                Item::User(text) => Some(text.clone()),
                _ => None,
            })
            .collect();
        self.reply(Reply::Attached(Box::new(Attached {
            status,
            transcript,
            stats: stats.as_ref().map(Stats::of).unwrap_or_default(),
            history,
            control: Some(self.control.clone()),
        })));
        if stats.is_none() {
            let (status, stats) = self.status().await?;
            self.reply(Reply::Counted(Box::new((status, Stats::of(&stats)))));
        }
        Ok(())
    }

    /// The last [`ATTACH_ENTRIES`] entries of the branch before `before` (the leaf: `None`).
    async fn window(&mut self, before: Option<EntryId>) -> anyhow::Result<Window> {
        let query = Query::Transcript {
            after: None,
            last: Some(ATTACH_ENTRIES),
            before,
        };
        match self.read(Vec::new(), query).await? {
            Answer::Transcript {
                items,
                earlier,
                first,
            } => Ok(Window {
                items: items.into_iter().map(item_of).collect(),
                earlier,
                first,
            }),
            other => Err(unexpected(&other)),
        }
    }

    async fn refresh_status(&mut self) -> anyhow::Result<()> {
        let (status, _) = self.status().await?;
        self.reply(Reply::Status(Box::new(status)));
        Ok(())
    }

    /// Model, tools and session details, and the session's counters.
    async fn status(&mut self) -> anyhow::Result<(Status, SessionStats)> {
        let queries = vec![Query::State, Query::NextRequest, Query::Stats];
        let answers = self.call(Vec::new(), queries).await?;
        let Ok([Answer::State(state), next, Answer::Stats(stats)]) =
            <[Answer; 3]>::try_from(answers)
        else {
            anyhow::bail!("the runtime answered the status reads out of order");
        };
        Ok((self.status_from(*state, next, &stats), *stats))
    }

    fn status_from(&self, state: RuntimeStatus, next: Answer, stats: &SessionStats) -> Status {
        let (thinking, chapter_tokens) = match next {
            Answer::NextRequest(next) => (next.thinking, next.chapter_tokens()),
            _ => (ThinkingLevel::Off, [0; 3]),
        };
        status_of(state, stats, thinking, chapter_tokens, self.models.clone())
    }
}

/// An answer of another kind than asked for (a runtime bug).
fn unexpected(answer: &Answer) -> anyhow::Error {
    anyhow::anyhow!("the runtime answered with {answer:?}")
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
            router: None,
        }
    }

    /// Starts the runtime and runs commands until the UI hangs up; while idle, the runtime
    /// keeps the provider's cache warm as the agent's keep-warm plan says (`[cache]
    /// keep_warm`), and its events reach the UI.
    pub async fn serve(mut self, mut commands: UnboundedReceiver<Command>) {
        let Some(agent) = self.agent.take() else {
            return;
        };
        let control = agent.control();
        let router = Arc::new(SetupRouter::new(self.setup.clone(), None));
        self.router = Some(router.clone());
        let (handle, events, task) = strata_runtime::spawn(agent, router);
        let mut live = Live {
            control,
            next_query: 0,
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
                live.ops(vec![Op::Prompt(UserInput::text(text))]).await?;
            }
            Command::Earlier(before) => {
                let window = live.window(Some(before)).await?;
                live.reply(Reply::Earlier(Box::new(window)));
            }
            Command::RewindFiles => {
                live.ops(vec![Op::RewindFiles { target: None }]).await?;
            }
            Command::Compact(focus) => {
                live.compacted = None;
                live.ops(vec![Op::Compact { focus }]).await?;
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
                live.ops(vec![navigate]).await?;
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
                let set = live.state(vec![Op::SetThinking(level)]).await?.thinking;
                live.reply(Reply::Notice(format!("thinking level: {set}")));
                live.refresh_status().await?;
            }
            Command::Tools { enable, disable } => {
                let live_names = live.state(Vec::new()).await?.tools;
                let mut names: Vec<String> = live_names
                    .iter()
                    .filter(|name| !disable.contains(name))
                    .cloned()
                    .collect();
                for name in enable {
                    if !names.contains(&name) {
                        names.push(name);
                    }
                }
                // A tool not live now must be a built-in (tools built with the agent, such as
                // delegation's `task`, are kept by the runtime while named).
                let added: Vec<&str> = names
                    .iter()
                    .filter(|name| !live_names.contains(name))
                    .map(String::as_str)
                    .collect();
                check_tool_names(&added)?;
                live.ops(vec![Op::SetTools(names.clone())]).await?;
                live.reply(Reply::Notice(format!(
                    "tools now: {} (stored as a system patch with the next request)",
                    names.join(", ")
                )));
                live.refresh_status().await?;
            }
            Command::ForkPoints => {
                let rows = match live.read(Vec::new(), Query::ForkPoints).await? {
                    Answer::ForkPoints { rows } => fork_rows(rows),
                    other => return Err(unexpected(&other)),
                };
                live.reply(Reply::ForkPoints(rows));
            }
            Command::Fork(at) => {
                let leaf = match at {
                    ForkAt::Here => live.state(Vec::new()).await?.leaf,
                    ForkAt::Before(entry) => {
                        match live.read(Vec::new(), Query::ForkPoint { entry }).await? {
                            Answer::ForkPoint { parent, .. } => parent,
                            other => return Err(unexpected(&other)),
                        }
                    }
                };
                let written = live
                    .state(vec![Op::Fork { leaf }])
                    .await
                    .context("forking the session")?
                    .session_path;
                live.attach().await?;
                live.reply(Reply::Notice(format!("forked into {}", written.display())));
                live.offer_restore().await?;
            }
            Command::New => {
                live.ops(vec![Op::NewSession { parent: None }]).await?;
                live.attach().await?;
                live.reply(Reply::Notice("new session".into()));
            }
            Command::Resume(path) => {
                let switch = Op::SwitchSession {
                    path: path.clone(),
                    follow_model: true,
                };
                live.ops(vec![switch]).await?;
                live.attach().await?;
                live.reply(Reply::Notice(format!("resumed {}", path.display())));
            }
            Command::Sessions => {
                let store = self.setup.store()?;
                let cwd = self.setup.cwd.display().to_string();
                let current = live.state(Vec::new()).await?.session_path;
                let sessions = store.list(&cwd).context("listing sessions")?;
                let items = sessions
                    .iter()
                    .filter(|summary| summary.path != current)
                    .map(session_item)
                    .collect();
                live.reply(Reply::Sessions(items));
            }
            Command::Tree => {
                let rows = match live.read(Vec::new(), Query::Tree).await? {
                    Answer::Tree { rows } => picker_rows(rows),
                    other => return Err(unexpected(&other)),
                };
                live.reply(Reply::Tree(rows));
            }
            Command::Name(name) => {
                let trimmed = name.trim().to_owned();
                live.ops(vec![Op::SetSessionName(name)]).await?;
                live.reply(Reply::Notice(format!("session named “{trimmed}”")));
                live.refresh_status().await?;
            }
            Command::Label(label) => {
                live.labelled = None;
                live.ops(vec![Op::LabelLeaf(label)]).await?;
                let said = match live.labelled.take() {
                    Some((target, Some(label))) => format!("labelled {target} “{label}”"),
                    Some((target, None)) => format!("label of {target} cleared"),
                    None => "nothing was labelled".to_owned(),
                };
                live.reply(Reply::Notice(said));
            }
            Command::Context => {
                let answers = live
                    .call(Vec::new(), vec![Query::NextRequest, Query::Stats])
                    .await?;
                let (next, stats) = match <[Answer; 2]>::try_from(answers) {
                    Ok([Answer::NextRequest(next), Answer::Stats(stats)]) => (next, stats),
                    Ok([Answer::Failed { error }, _]) => anyhow::bail!(error),
                    _ => anyhow::bail!("the runtime answered /context's reads out of order"),
                };
                let mut lines = context_lines(&next, live.last_divergence.as_ref());
                let attributed = strata_accounting::attribution_lines(&stats.attributed);
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
                let file = live.state(Vec::new()).await?.session_path;
                let written = strata_export::export_html(
                    &file,
                    output.as_deref(),
                    strata_export::Overwrite::Refuse,
                )?;
                // Skipped lines are said here: the terminal belongs to the UI.
                let skipped = match written.diagnostics.len() {
                    0 => String::new(),
                    n => format!(" ({n} unreadable session lines left out)"),
                };
                live.reply(Reply::Notice(format!(
                    "exported to {}{skipped}",
                    written.path.display()
                )));
            }
            Command::RunExtension(text) => {
                let reply = super::app::extension_command_reply(&self.setup.loaded(), &text).await;
                live.reply(reply);
            }
            Command::Shell { command, exclude } => {
                self.shell_cancel.attach(live.handle.clone());
                live.handle.send(Op::Bash { command, exclude })?;
                let message: strata_session::BashExecutionMessage =
                    (*live.bash_ended().await?).into();
                // The runtime records a command before its next operation: after this read
                // what the screen shows, the session holds.
                live.ops(Vec::new()).await?;
                live.reply(Reply::Item(super::shell::item(&message)));
                live.refresh_status().await?;
            }
            Command::AutoCompaction(enabled) => {
                live.ops(vec![Op::SetAutoCompaction(enabled)]).await?;
                live.refresh_status().await?;
            }
            Command::Login { provider, key } => {
                let file = super::login::store(&mut self.setup, &provider, &key)?;
                if let Some(router) = &self.router {
                    router.update(self.setup.clone());
                }
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
                let answers = live
                    .call(Vec::new(), vec![Query::State, Query::Stats])
                    .await?;
                let lines = match <[Answer; 2]>::try_from(answers) {
                    Ok([Answer::State(state), Answer::Stats(stats)]) => {
                        super::info::session_lines(&state, &stats)
                    }
                    _ => anyhow::bail!("the runtime answered /session's reads out of order"),
                };
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
        let mut ops = vec![Op::SetModel(choice.reference())];
        if let Some(level) = &choice.thinking {
            ops.push(Op::SetThinking(level.parse().map_err(anyhow::Error::msg)?));
        }
        let state = live.state(ops).await?;
        let (model, set) = (
            format!("{}/{}", state.provider, state.model),
            state.thinking,
        );
        let mut said = format!("model: {model}");
        if choice.thinking.is_some() {
            said.push_str(&format!(", thinking {set}"));
        }
        live.reply(Reply::Notice(said));
        live.refresh_status().await
    }
}

/// The TUI's status from the runtime's state, the next request's thinking level and chapters,
/// and the session's counters.
fn status_of(
    state: RuntimeStatus,
    stats: &SessionStats,
    thinking: ThinkingLevel,
    chapter_tokens: [u64; 3],
    models: Vec<ModelOption>,
) -> Status {
    let tools = strata_tools::ALL_TOOL_NAMES
        .iter()
        .map(|name| ToolInfo {
            name: (*name).to_owned(),
            enabled: state.tools.iter().any(|l| l == name),
            tokens: strata_tools::builtin(name)
                .and_then(|tool| serde_json::to_string(&tool.definition()).ok())
                .map_or(0, |json| json.len() as u64 / 4),
        })
        .collect();
    Status {
        auto_compaction: state.auto_compaction,
        branch: super::info::git_branch(&state.cwd),
        cwd: state.cwd,
        reasoning: state.reasoning,
        model: format!("{}/{}", state.provider, state.model),
        thinking: thinking.as_str().to_owned(),
        context_window: state.context_window,
        session_name: state.session_name,
        session_file: state.session_path,
        tools,
        models,
        mid_conversation_system: state.mid_conversation_system,
        system_reminders: state.system_reminders,
        tool_addition: state.tool_addition,
        deferred_tools: state.deferred_tools,
        prices: state.prices,
        chapter_tokens,
        tree: Vec::new(),
        attributed: stats.attributed.clone(),
    }
}

/// The next request's chapters, the policy, and how the last request compared.
fn context_lines(
    next: &ContextReport,
    last_divergence: Option<&Option<Divergence>>,
) -> Vec<String> {
    let mut lines = vec![format!(
        "{:<9} {:>9} {:>8}  {}",
        "chapter", "bytes", "≈tokens", "hash (FNV-1a 64)"
    )];
    for chapter in &next.chapters {
        let mut line = format!(
            "{:<9} {:>9} {:>8}  {:016x}",
            chapter.name,
            chapter.bytes,
            stats::tokens(chapter.bytes / 4),
            chapter.hash
        );
        if chapter.name == "deferred" {
            line.push_str("  (outside the cached prefix)");
        }
        lines.push(line);
    }
    lines.push(String::new());
    lines.push("policy:".to_owned());
    lines.extend(next.policy.iter().map(|line| format!("  {line}")));
    lines.push(format!(
        "breakpoints: {}",
        if next.breakpoints.is_empty() {
            "none (automatic cache)".to_owned()
        } else {
            next.breakpoints.join(", ")
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
        next.tools, next.system_blocks, next.messages
    ));
    lines.extend(next.notes.iter().map(|note| format!("note: {note}")));
    lines.extend(next.children.iter().cloned());
    lines
}

/// A transcript item of the read model as the screen shows it.
fn item_of(item: TranscriptItem) -> Item {
    let info = |text: String| {
        Item::Notice(Notice {
            level: Level::Info,
            text,
        })
    };
    match item {
        TranscriptItem::User { text } => Item::User(text),
        TranscriptItem::Assistant { text } => Item::Assistant(text),
        TranscriptItem::Thinking { text } => Item::Thinking(text),
        TranscriptItem::Tool(tool) => Item::Tool(ToolItem {
            id: tool.id,
            name: tool.name,
            arguments: tool.arguments,
            output: tool.output,
            state: match tool.failed {
                None => ToolState::Running,
                Some(true) => ToolState::Failed,
                Some(false) => ToolState::Done,
            },
            diff: tool.diff,
        }),
        TranscriptItem::Bash {
            command,
            output,
            exit_code,
            cancelled,
            excluded,
        } => super::shell::bash_item(&command, &output, exit_code, cancelled, excluded),
        TranscriptItem::Error { text } => Item::Notice(Notice {
            level: Level::Error,
            text,
        }),
        TranscriptItem::Compaction { tokens_before } => info(format!(
            "compacted (≈{} tokens summarized)",
            stats::tokens(tokens_before)
        )),
        TranscriptItem::BranchSummary { summary } => {
            info(format!("branch summary: {}", first_line(&summary, 200)))
        }
        TranscriptItem::ModelChange { provider, model } => {
            info(format!("model → {provider}/{model}"))
        }
    }
}

#[cfg(test)]
/// The branch at the session's leaf as transcript items.
pub fn transcript_of(session: &Session) -> Vec<Item> {
    transcript_after(session, None)
}

/// The transcript from the entry after `after` on (all of it when `after` is `None` or
/// not on the branch).
pub fn transcript_after(session: &Session, after: Option<&str>) -> Vec<Item> {
    let after = after.map(EntryId::new);
    read_model::transcript(session, after.as_ref())
        .into_iter()
        .map(item_of)
        .collect()
}

#[cfg(test)]
/// Counters from every request the file records (all branches: all were paid), keep-warm
/// pings and summaries included.
pub fn stats_of(session: &Session) -> Stats {
    Stats::of(&read_model::stats(session))
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

#[cfg(test)]
/// The tree as picker rows (the read model's rows, indented where the tree forks).
pub fn tree_rows(session: &Session) -> Vec<TreeRow> {
    picker_rows(read_model::tree_rows(session))
}

/// The read model's tree rows as the picker shows them.
fn picker_rows(rows: Vec<strata_runtime::TreeRow>) -> Vec<TreeRow> {
    rows.into_iter()
        .map(|row| {
            let prefix = "  ".repeat(row.depth);
            if let RowKind::Child {
                path,
                title,
                messages,
            } = row.row
            {
                return TreeRow {
                    id: row.id,
                    parent: row.parent,
                    text: format!("{prefix}    ↳ {title}"),
                    detail: format!("{messages} msgs · open"),
                    user_text: None,
                    leaf: false,
                    child: Some(path),
                };
            }
            let marker = if row.on_path { "● " } else { "○ " };
            let mut detail = String::new();
            if let Some(label) = &row.label {
                detail.push_str(&format!("[{label}] "));
            }
            if row.leaf {
                detail.push_str("← current");
            }
            TreeRow {
                text: format!("{prefix}{marker}{}", row_text(&row.row)),
                user_text: row.row.user_text().map(str::to_owned),
                detail,
                leaf: row.leaf,
                id: row.id,
                parent: row.parent,
                child: None,
            }
        })
        .collect()
}

/// The user messages on the path to the leaf, newest first, as `/fork` lists them.
fn fork_rows(rows: Vec<strata_runtime::TreeRow>) -> Vec<TreeRow> {
    rows.into_iter()
        .map(|row| TreeRow {
            text: row_text(&row.row),
            user_text: row.row.user_text().map(str::to_owned),
            detail: String::new(),
            leaf: false,
            id: row.id,
            parent: row.parent,
            child: None,
        })
        .collect()
}

/// A row's one line.
fn row_text(row: &RowKind) -> String {
    match row {
        RowKind::User { text } => format!("user: {}", first_line(text, 70)),
        RowKind::Assistant { text, tools } => {
            let mut line = format!("assistant: {}", first_line(text, 60));
            if !tools.is_empty() {
                line.push_str(&format!(" → {}", tools.join(", ")));
            }
            line
        }
        RowKind::System { changes } => format!("system: {}", first_line(&changes.join(" "), 60)),
        RowKind::Message { role } => role.clone(),
        RowKind::Compaction { tokens_before } => {
            format!("compaction (≈{} tokens)", stats::tokens(*tokens_before))
        }
        RowKind::BranchSummary { summary } => {
            format!("branch summary: {}", first_line(summary, 60))
        }
        RowKind::ModelChange { provider, model } => format!("model → {provider}/{model}"),
        RowKind::Child { title, .. } => title.clone(),
    }
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod one_read_model;
