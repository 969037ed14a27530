//! What a front end asks of a session runtime.

use std::path::PathBuf;

use strata_provider::ThinkingLevel;
use strata_session::{BashExecutionMessage, EntryId, ImageContent};

use crate::queue::QueueMode;
use crate::route::ModelRoute;

/// A message from the user: text and the images sent with it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct UserInput {
    /// The text.
    pub text: String,
    /// Images after the text, as Pi stores them.
    pub images: Vec<ImageContent>,
}

impl UserInput {
    /// Text without images.
    pub fn text(text: impl Into<String>) -> Self {
        Self {
            text: text.into(),
            images: Vec::new(),
        }
    }
}

impl From<&str> for UserInput {
    fn from(text: &str) -> Self {
        Self::text(text)
    }
}

/// One operation, queued in order. While a run goes on, `Steer`, `FollowUp` and `Abort` act on
/// it at once; `Compact`, `Navigate`, `Fork`, `NewSession` and `SwitchSession` abort it first
/// (as Pi does) and run after it; every other operation waits for it to end.
pub enum Op {
    /// Runs a prompt to the end (a prompt sent during a run is queued as a follow-up).
    Prompt(UserInput),
    /// A message delivered after the running tool batch (when idle: queued for the next run).
    Steer(UserInput),
    /// A message delivered when the run would end (when idle: queued for the next run).
    FollowUp(UserInput),
    /// Drops the queued steering and follow-up messages.
    ClearQueue,
    /// How queued steering messages are handed over (acts at once, also during a run).
    SetSteeringMode(QueueMode),
    /// How queued follow-up messages are handed over (acts at once, also during a run).
    SetFollowUpMode(QueueMode),
    /// Stops the stream and running tools; the session stays well-formed.
    Abort,
    /// Summarises the history before the kept tail, with optional focus instructions.
    Compact {
        /// Added to the summary instructions, like Pi's `/compact <text>`.
        focus: Option<String>,
    },
    /// Moves the leaf (`None`: before the first entry), optionally summarising the abandoned
    /// path as a branch summary.
    Navigate {
        /// Where to.
        target: Option<EntryId>,
        /// Whether to summarise the path left.
        summarize: bool,
        /// Instructions for that summary.
        instructions: Option<String>,
    },
    /// Writes a new session file holding the path to `leaf` (`None`: empty) and appends to it.
    Fork {
        /// The last entry the new file keeps.
        leaf: Option<EntryId>,
    },
    /// Starts a new session file next to the current one.
    NewSession {
        /// `parentSession` of the new header.
        parent: Option<String>,
    },
    /// Appends to another session file from now on.
    SwitchSession {
        /// The file.
        path: PathBuf,
        /// Resolves the model the file names, once the runtime has opened it (the front end
        /// holds the keys and configuration): with a route the session's own model and thinking
        /// level are taken up, as Pi does on resume; no router, or no route, keeps the current
        /// model and level.
        router: Option<SessionRouter>,
    },
    /// Sends requests to another model (the thinking level is kept where the model reasons,
    /// `off` where it does not).
    SetModel(ModelRoute),
    /// Sends summaries to another model (`None`: the session's).
    SetSummaryModel(Option<ModelRoute>),
    /// Records a thinking level for the next requests.
    SetThinking(ThinkingLevel),
    /// Replaces the live tool set by names (stored as a system patch before the next
    /// request): a tool the agent was built with that is not a built-in (delegation's
    /// `task`) is kept while named, every other name must be a built-in.
    SetTools(Vec<String>),
    /// Turns automatic compaction on or off.
    SetAutoCompaction(bool),
    /// Names the session.
    SetSessionName(String),
    /// Labels the entry the leaf stands on (label and leaf entries passed over, as Pi's
    /// `/label` does); `None` clears its label.
    LabelLeaf(Option<String>),
    /// Re-sends the last request now to keep its cache warm, when the plan allows a ping.
    KeepWarm,
    /// Switches the permission mode (acts at once, also during a run: the next tool call is
    /// judged by it; the model reads it at the end of the next request).
    SetPermissionMode(strata_permissions::Mode),
    /// Answers [`crate::RuntimeEvent::PermissionRequested`] (acts at once, during the run
    /// that asked).
    AnswerPermission {
        /// The request's id.
        id: String,
        /// The user's answer.
        answer: strata_permissions::Answer,
    },
    /// Puts the files strata's tools changed back as they were at `target` (`None`: the
    /// leaf, e.g. right after [`Op::Navigate`]); the restore is appended to the session.
    RewindFiles {
        /// The entry whose file state is wanted.
        target: Option<EntryId>,
    },
    /// Reads the session ([`crate::Query`]); answered with [`crate::RuntimeEvent::Answered`]
    /// carrying `id`. It waits for a run going on, like every operation before it, so its
    /// answer also marks where those operations finished.
    Query {
        /// Chosen by the front end, to match the answer.
        id: u64,
        /// The read.
        query: crate::Query,
    },
    /// Appends a shell command the user ran (`!cmd`, rpc's `bash`) and its output to the
    /// session, so the next request carries it (unless it is kept out of the context).
    RecordBash(Box<BashExecutionMessage>),
    /// Finishes the queue and ends the task, returning the agent.
    Shutdown,
}

/// Finds the route to the model a session file names (provider id, model id) for
/// [`Op::SwitchSession`]; `None` where the front end cannot route that model.
pub type SessionRouter = Box<dyn FnOnce(&str, &str) -> Option<ModelRoute> + Send>;

impl Op {
    /// The operation's name, for errors.
    pub fn name(&self) -> &'static str {
        match self {
            Self::Prompt(_) => "prompt",
            Self::Steer(_) => "steer",
            Self::FollowUp(_) => "follow_up",
            Self::ClearQueue => "clear_queue",
            Self::SetSteeringMode(_) => "set_steering_mode",
            Self::SetFollowUpMode(_) => "set_follow_up_mode",
            Self::Abort => "abort",
            Self::Compact { .. } => "compact",
            Self::Navigate { .. } => "navigate",
            Self::Fork { .. } => "fork",
            Self::NewSession { .. } => "new_session",
            Self::SwitchSession { .. } => "switch_session",
            Self::SetModel(_) => "set_model",
            Self::SetSummaryModel(_) => "set_summary_model",
            Self::SetThinking(_) => "set_thinking",
            Self::SetTools(_) => "set_tools",
            Self::SetAutoCompaction(_) => "set_auto_compaction",
            Self::SetSessionName(_) => "set_session_name",
            Self::LabelLeaf(_) => "label",
            Self::KeepWarm => "keep_warm",
            Self::SetPermissionMode(_) => "set_permission_mode",
            Self::AnswerPermission { .. } => "answer_permission",
            Self::RewindFiles { .. } => "rewind_files",
            Self::Query { .. } => "query",
            Self::RecordBash(_) => "record_bash",
            Self::Shutdown => "shutdown",
        }
    }

    /// Operations that stop a run going on before they run.
    pub(crate) fn aborts_run(&self) -> bool {
        matches!(
            self,
            Self::Compact { .. }
                | Self::Navigate { .. }
                | Self::Fork { .. }
                | Self::NewSession { .. }
                | Self::SwitchSession { .. }
        )
    }

    pub(crate) fn while_running(self) -> WhileRunning {
        match self {
            Self::Steer(input) => WhileRunning::Steer(input),
            Self::FollowUp(input) | Self::Prompt(input) => WhileRunning::FollowUp(input),
            Self::Abort => WhileRunning::Abort,
            Self::ClearQueue => WhileRunning::ClearQueue,
            Self::SetSteeringMode(mode) => WhileRunning::SetMode {
                steering: true,
                mode,
            },
            Self::SetFollowUpMode(mode) => WhileRunning::SetMode {
                steering: false,
                mode,
            },
            Self::SetPermissionMode(mode) => WhileRunning::SetPermissionMode(mode),
            Self::AnswerPermission { id, answer } => WhileRunning::Answer { id, answer },
            op if op.aborts_run() => WhileRunning::AbortThen(op),
            op => WhileRunning::After(op),
        }
    }
}

/// What an operation arriving during a run does to it.
pub(crate) enum WhileRunning {
    Steer(UserInput),
    FollowUp(UserInput),
    Abort,
    ClearQueue,
    SetMode {
        steering: bool,
        mode: QueueMode,
    },
    SetPermissionMode(strata_permissions::Mode),
    Answer {
        id: String,
        answer: strata_permissions::Answer,
    },
    AbortThen(Op),
    After(Op),
}
