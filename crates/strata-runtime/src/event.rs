//! What a session runtime reports: the agent loop's events and its own.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use strata_agent::{AgentEvent, NoticeSource};
use strata_provider::ThinkingLevel;
use strata_session::EntryId;

use crate::queue::QueuedTexts;

/// How a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunEnd {
    /// The model finished.
    Stop,
    /// The answer hit the output cap.
    Length,
    /// Stopped by [`crate::Op::Abort`] (or by an operation that aborts first).
    Aborted,
    /// A request or a tool batch failed.
    Error,
}

impl RunEnd {
    /// The agent's reason (`stop`, `length`, `aborted`, `error`) as a value.
    pub fn from_reason(reason: &str) -> Self {
        match reason {
            "stop" => Self::Stop,
            "length" => Self::Length,
            "aborted" => Self::Aborted,
            _ => Self::Error,
        }
    }

    /// The name (Pi's stop reasons).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Stop => "stop",
            Self::Length => "length",
            Self::Aborted => "aborted",
            Self::Error => "error",
        }
    }
}

/// Whether a message sent while a run goes on joined it or waits for the next.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Disposition {
    /// It started a run.
    Started,
    /// Delivered after the running tool batch.
    Steered,
    /// Delivered when the run would end.
    Queued,
}

/// One thing that happened, in order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum RuntimeEvent {
    /// An event of the agent loop (text, tools, usage, compaction, …).
    Agent {
        /// The event.
        event: AgentEvent,
    },
    /// A user message was accepted.
    Accepted {
        /// What happens to it.
        disposition: Disposition,
        /// Messages waiting (steering and follow-up).
        pending: usize,
    },
    /// A run ended.
    RunEnded {
        /// Why.
        end: RunEnd,
        /// Text of the last answer.
        final_text: String,
        /// What failed, for [`RunEnd::Error`].
        error: Option<String>,
        /// A queued follow-up runs next, at once (Pi reports both as one run).
        continues: bool,
    },
    /// An entry no run wrote was appended (a keep-warm ping's `usage` entry).
    EntryAppended {
        /// The entry as persisted.
        entry: strata_session::Entry,
    },
    /// Output of the user's shell command ([`crate::Op::Bash`]) as it arrives, whole UTF-8
    /// characters only; the pieces joined are the whole output.
    BashOutput {
        /// The new output.
        delta: String,
    },
    /// The user's shell command ended (its output cut as the bash tool cuts it). The runtime
    /// appends it to the session before its next operation, or once the run going on ends.
    BashEnded {
        /// The command and how it ended.
        record: Box<crate::BashRecord>,
    },
    /// Nothing runs and nothing is queued: the runtime waits for the next operation.
    Settled,
    /// A record tool work sent for front ends, passed on as is (a child agent's event, tagged
    /// by child: `strata_child`, docs/rpc.md); rpc and `--mode json` write it as a line.
    Record {
        /// The record, with its own `type`.
        record: serde_json::Value,
    },
    /// The model changed.
    ModelChanged {
        /// Provider id.
        provider: String,
        /// Model id.
        model: String,
        /// The thinking level in effect on it.
        thinking: ThinkingLevel,
    },
    /// The thinking level changed.
    ThinkingChanged {
        /// The level in effect.
        level: ThinkingLevel,
    },
    /// The runtime appends to another session file (new, forked or switched to).
    SessionChanged {
        /// The file.
        path: PathBuf,
        /// Its id.
        id: String,
    },
    /// A compaction asked for with [`crate::Op::Compact`] ended (`None`: nothing to compact).
    Compacted {
        /// The `compaction` entry written.
        entry: Option<EntryId>,
    },
    /// The leaf moved (`entry`: the entry written for the move).
    Navigated {
        /// The `leaf` or `branch_summary` entry.
        entry: EntryId,
    },
    /// An entry's label was set or cleared ([`crate::Op::LabelLeaf`]).
    Labelled {
        /// The entry labelled.
        target: EntryId,
        /// The label (`None`: cleared).
        label: Option<String>,
    },
    /// The session was named.
    SessionNamed {
        /// The name.
        name: String,
    },
    /// Queued messages were dropped.
    QueueCleared {
        /// Their texts.
        texts: QueuedTexts,
    },
    /// The messages waiting changed (queued, delivered or taken for the next run).
    QueueChanged {
        /// The texts waiting now.
        texts: QueuedTexts,
    },
    /// A tool call waits for the user: answer with [`crate::Op::AnswerPermission`] (allow
    /// once, for the session, for the project, or deny with a reason).
    PermissionRequested {
        /// The question.
        request: strata_permissions::PermissionRequest,
    },
    /// The permission mode changed ([`crate::Op::SetPermissionMode`]).
    PermissionModeChanged {
        /// The mode in effect.
        mode: strata_permissions::Mode,
    },
    /// Files were put back ([`crate::Op::RewindFiles`]); the restore is in the session.
    FilesRestored {
        /// What was written back, removed, and could not be undone.
        report: strata_permissions::checkpoint::RestoreReport,
    },
    /// A hook or an extension has something for the user only (a hook's `systemMessage`, a
    /// failed or timed-out hook, a blocked prompt's reason, an extension that crashed, hung
    /// or wrote garbage): every one is a warning, said once.
    Notice {
        /// Who said it (`hook <event>` / `extension <name>` as text).
        source: NoticeSource,
        /// What to show.
        text: String,
    },
    /// The answer to [`crate::Op::Query`].
    Answered {
        /// The query's id.
        id: u64,
        /// What it found.
        answer: crate::Answer,
    },
    /// An operation failed; the runtime goes on.
    Failed {
        /// The operation.
        op: crate::OpName,
        /// Why.
        error: String,
    },
}
