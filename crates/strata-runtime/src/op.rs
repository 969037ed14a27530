//! What a front end asks of a session runtime.

use std::path::PathBuf;

use strata_provider::ThinkingLevel;
use strata_session::{BashExecutionMessage, EntryId, ImageContent};

use serde::{Deserialize, Serialize};

use crate::queue::QueueMode;
use crate::route::ModelRef;

/// A message from the user: text and the images sent with it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
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

/// One operation, queued in order. While a run goes on, `Steer`, `FollowUp`, `Abort`, `Bash`
/// and `AbortBash` act at once; `Compact`, `Navigate`, the forks, `NewSession` and
/// `SwitchSession` abort it first (as Pi does) and run after it; every other operation waits
/// for it to end.
///
/// Plain data: an operation round-trips through serde (`{"op": "prompt", "args": {...}}`), so
/// a sequence of them can be recorded and replayed, or sent from another process.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", content = "args", rename_all = "snake_case")]
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
    /// Writes a new session file holding the path to the parent of the user message `entry`
    /// and appends to it (Pi's `fork`: the message is the one to edit and send again). Fails
    /// when `entry` is no user message.
    ForkBefore {
        /// The user message.
        entry: EntryId,
    },
    /// Writes a new session file holding the path to the leaf and appends to it (Pi's
    /// `clone`); fails while the session has no entry.
    Clone,
    /// Starts a new session file next to the current one.
    NewSession {
        /// `parentSession` of the new header.
        parent: Option<String>,
    },
    /// Appends to another session file from now on.
    SwitchSession {
        /// The file.
        path: PathBuf,
        /// Take up the model the file names, through the runtime's [`crate::Router`], with
        /// the session's thinking level, as Pi does on resume; `false`, or a model the router
        /// cannot reach, keeps the current model and level.
        follow_model: bool,
    },
    /// Sends requests to another model, routed by the runtime's [`crate::Router`] (the
    /// thinking level is kept where the model reasons, `off` where it does not).
    SetModel(ModelRef),
    /// Sends summaries to another model (`None`: the session's).
    SetSummaryModel(Option<ModelRef>),
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
    #[serde(rename = "label")]
    LabelLeaf(Option<String>),
    /// Appends a `custom` entry: an extension's own state, kept in the session and never sent
    /// to the model (Pi's `appendEntry(customType, data)`).
    AppendCustom {
        /// The extension's identifier for its entries.
        custom_type: String,
        /// What it keeps.
        #[serde(default)]
        data: Option<serde_json::Value>,
    },
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
    /// Runs a shell command the user typed (`!cmd`, rpc's `bash`) with strata-tools' bash
    /// (the tools' shell, limits, environment policy and temp dir; no sandbox: the user runs
    /// it), starting at once, also during a run; a command still running is cancelled first.
    /// Its output streams as [`crate::RuntimeEvent::BashOutput`], its end is
    /// [`crate::RuntimeEvent::BashEnded`], and it is appended to the session as
    /// [`Op::RecordBash`] would, once no run goes on.
    Bash {
        /// The command line.
        command: String,
        /// `!!cmd`: kept in the session, never sent to the model.
        exclude: bool,
    },
    /// Cancels the user's shell command running now (acts at once, also during a run).
    AbortBash,
    /// Appends a shell command the user ran elsewhere and its output to the session, so the
    /// next request carries it (unless it is kept out of the context).
    RecordBash(Box<BashRecord>),
    /// Waits for the tool work still running in the background (children started with
    /// `run_in_background`), running each answer as it arrives, until none is pending: print
    /// mode sends it before [`Op::Shutdown`], which would stop that work.
    AwaitBackground,
    /// Finishes the queue and ends the task, returning the agent; background work still
    /// running is stopped (its files stay as written).
    Shutdown,
}

/// A shell command the user ran and its output, as [`Op::RecordBash`] appends it (Pi's
/// `bashExecution` message).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BashRecord {
    /// The command line.
    pub command: String,
    /// Its output.
    pub output: String,
    /// Exit code (`None`: cancelled or unknown).
    pub exit_code: Option<i64>,
    /// The user cancelled it.
    pub cancelled: bool,
    /// The output was cut.
    pub truncated: bool,
    /// Where the full output was saved.
    pub full_output_path: Option<String>,
    /// Unix milliseconds.
    pub timestamp: i64,
    /// `!!cmd`: kept in the session but never sent.
    pub exclude_from_context: bool,
}

impl From<BashExecutionMessage> for BashRecord {
    fn from(message: BashExecutionMessage) -> Self {
        Self {
            command: message.command,
            output: message.output,
            exit_code: message.exit_code.flatten(),
            cancelled: message.cancelled,
            truncated: message.truncated,
            full_output_path: message.full_output_path,
            timestamp: message.timestamp,
            exclude_from_context: message.exclude_from_context == Some(true),
        }
    }
}

impl From<BashRecord> for BashExecutionMessage {
    fn from(record: BashRecord) -> Self {
        Self {
            command: record.command,
            output: record.output,
            // A cancelled command has a `null` exit code, as Pi writes it.
            exit_code: Some(record.exit_code),
            cancelled: record.cancelled,
            truncated: record.truncated,
            full_output_path: record.full_output_path,
            timestamp: record.timestamp,
            exclude_from_context: record.exclude_from_context.then_some(true),
            extra: Default::default(),
        }
    }
}

impl Op {
    /// The operation's name, for errors.
    pub fn name(&self) -> OpName {
        match self {
            Self::Prompt(_) => OpName::Prompt,
            Self::Steer(_) => OpName::Steer,
            Self::FollowUp(_) => OpName::FollowUp,
            Self::ClearQueue => OpName::ClearQueue,
            Self::SetSteeringMode(_) => OpName::SetSteeringMode,
            Self::SetFollowUpMode(_) => OpName::SetFollowUpMode,
            Self::Abort => OpName::Abort,
            Self::Compact { .. } => OpName::Compact,
            Self::Navigate { .. } => OpName::Navigate,
            Self::Fork { .. } => OpName::Fork,
            Self::ForkBefore { .. } => OpName::ForkBefore,
            Self::Clone => OpName::Clone,
            Self::NewSession { .. } => OpName::NewSession,
            Self::SwitchSession { .. } => OpName::SwitchSession,
            Self::SetModel(_) => OpName::SetModel,
            Self::SetSummaryModel(_) => OpName::SetSummaryModel,
            Self::SetThinking(_) => OpName::SetThinking,
            Self::SetTools(_) => OpName::SetTools,
            Self::SetAutoCompaction(_) => OpName::SetAutoCompaction,
            Self::SetSessionName(_) => OpName::SetSessionName,
            Self::LabelLeaf(_) => OpName::LabelLeaf,
            Self::AppendCustom { .. } => OpName::AppendCustom,
            Self::KeepWarm => OpName::KeepWarm,
            Self::SetPermissionMode(_) => OpName::SetPermissionMode,
            Self::AnswerPermission { .. } => OpName::AnswerPermission,
            Self::RewindFiles { .. } => OpName::RewindFiles,
            Self::Query { .. } => OpName::Query,
            Self::Bash { .. } => OpName::Bash,
            Self::AbortBash => OpName::AbortBash,
            Self::RecordBash(_) => OpName::RecordBash,
            Self::AwaitBackground => OpName::AwaitBackground,
            Self::Shutdown => OpName::Shutdown,
        }
    }

    /// Operations that stop a run going on before they run.
    pub(crate) fn aborts_run(&self) -> bool {
        matches!(
            self,
            Self::Compact { .. }
                | Self::Navigate { .. }
                | Self::Fork { .. }
                | Self::ForkBefore { .. }
                | Self::Clone
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
            Self::Bash { command, exclude } => WhileRunning::Bash { command, exclude },
            Self::AbortBash => WhileRunning::AbortBash,
            op if op.aborts_run() => WhileRunning::AbortThen(op),
            op => WhileRunning::After(op),
        }
    }
}

/// An operation's name ([`crate::RuntimeEvent::Failed`] says which failed).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OpName {
    /// [`Op::Prompt`].
    Prompt,
    /// [`Op::Steer`].
    Steer,
    /// [`Op::FollowUp`].
    FollowUp,
    /// [`Op::ClearQueue`].
    ClearQueue,
    /// [`Op::SetSteeringMode`].
    SetSteeringMode,
    /// [`Op::SetFollowUpMode`].
    SetFollowUpMode,
    /// [`Op::Abort`].
    Abort,
    /// [`Op::Compact`].
    Compact,
    /// [`Op::Navigate`].
    Navigate,
    /// [`Op::Fork`].
    Fork,
    /// [`Op::ForkBefore`].
    ForkBefore,
    /// [`Op::Clone`].
    Clone,
    /// [`Op::NewSession`].
    NewSession,
    /// [`Op::SwitchSession`].
    SwitchSession,
    /// [`Op::SetModel`].
    SetModel,
    /// [`Op::SetSummaryModel`].
    SetSummaryModel,
    /// [`Op::SetThinking`].
    SetThinking,
    /// [`Op::SetTools`].
    SetTools,
    /// [`Op::SetAutoCompaction`].
    SetAutoCompaction,
    /// [`Op::SetSessionName`].
    SetSessionName,
    /// [`Op::LabelLeaf`].
    #[serde(rename = "label")]
    LabelLeaf,
    /// [`Op::AppendCustom`].
    AppendCustom,
    /// [`Op::KeepWarm`].
    KeepWarm,
    /// [`Op::SetPermissionMode`].
    SetPermissionMode,
    /// [`Op::AnswerPermission`].
    AnswerPermission,
    /// [`Op::RewindFiles`].
    RewindFiles,
    /// [`Op::Query`].
    Query,
    /// [`Op::Bash`].
    Bash,
    /// [`Op::AbortBash`].
    AbortBash,
    /// [`Op::RecordBash`].
    RecordBash,
    /// [`Op::AwaitBackground`].
    AwaitBackground,
    /// [`Op::Shutdown`].
    Shutdown,
}

impl OpName {
    /// The name as the wire writes it (`set_model`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Prompt => "prompt",
            Self::Steer => "steer",
            Self::FollowUp => "follow_up",
            Self::ClearQueue => "clear_queue",
            Self::SetSteeringMode => "set_steering_mode",
            Self::SetFollowUpMode => "set_follow_up_mode",
            Self::Abort => "abort",
            Self::Compact => "compact",
            Self::Navigate => "navigate",
            Self::Fork => "fork",
            Self::ForkBefore => "fork_before",
            Self::Clone => "clone",
            Self::NewSession => "new_session",
            Self::SwitchSession => "switch_session",
            Self::SetModel => "set_model",
            Self::SetSummaryModel => "set_summary_model",
            Self::SetThinking => "set_thinking",
            Self::SetTools => "set_tools",
            Self::SetAutoCompaction => "set_auto_compaction",
            Self::SetSessionName => "set_session_name",
            Self::LabelLeaf => "label",
            Self::AppendCustom => "append_custom",
            Self::KeepWarm => "keep_warm",
            Self::SetPermissionMode => "set_permission_mode",
            Self::AnswerPermission => "answer_permission",
            Self::RewindFiles => "rewind_files",
            Self::Query => "query",
            Self::Bash => "bash",
            Self::AbortBash => "abort_bash",
            Self::RecordBash => "record_bash",
            Self::AwaitBackground => "await_background",
            Self::Shutdown => "shutdown",
        }
    }
}

impl std::fmt::Display for OpName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
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
    Bash {
        command: String,
        exclude: bool,
    },
    AbortBash,
    AbortThen(Op),
    After(Op),
}
