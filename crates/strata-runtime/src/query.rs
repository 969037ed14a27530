//! Typed reads of the session a runtime holds: a front end sends [`crate::Op::Query`] and
//! gets [`crate::RuntimeEvent::Answered`] in queue order, so an answer also marks where the
//! operations sent before it finished. Every type here is plain data (serde both ways): the
//! views only translate it into their own pictures.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use strata_accounting::{Attribution, Totals};
use strata_permissions::checkpoint::RestoreReport;
use strata_provider::{ThinkingLevel, Usage};
use strata_session::{Entry, EntryId};

use crate::runtime::Status;

/// A read, answered from the session as it stands once the operations before it ran.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "query", rename_all = "snake_case")]
pub enum Query {
    /// Model, thinking level, session, tools and totals: [`Answer::State`].
    State,
    /// The context's messages in Pi's JSON shape: [`Answer::Messages`].
    Messages,
    /// The branch at the leaf, from the entry after `after` on (all of it when `None` or not
    /// on the branch): [`Answer::Transcript`]. `last` and `before` window it, so a view shows
    /// the end of a long session without reading the rest of it, and the earlier part as the
    /// user scrolls up.
    Transcript {
        /// Where to start.
        after: Option<EntryId>,
        /// At most this many entries, the last ones of the range (`None`: all of them).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        last: Option<usize>,
        /// Only entries before this one on the branch (`None`, or not on the branch: up to
        /// the leaf).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        before: Option<EntryId>,
    },
    /// The whole tree, depth first: [`Answer::Tree`].
    Tree,
    /// The user messages on the path to the leaf, newest first: [`Answer::ForkPoints`].
    ForkPoints,
    /// Where a fork before the user message `entry` starts: [`Answer::ForkPoint`].
    ForkPoint {
        /// The user message.
        entry: EntryId,
    },
    /// Every entry (the header excluded) in append order, or only those after `since`:
    /// [`Answer::Entries`]. An unknown `since` fails, as Pi's `get_entries` does.
    Entries {
        /// The cursor: the last entry already seen.
        since: Option<EntryId>,
    },
    /// Every entry as the tree the entries form (Pi's `get_tree`): [`Answer::EntryTree`].
    EntryTree,
    /// Every user message with text in file order, all branches (Pi's `get_fork_messages`):
    /// [`Answer::UserMessages`].
    UserMessages,
    /// The compaction entry `entry` (`None`: the newest in the file, e.g. the one an
    /// [`crate::Op::Compact`] just appended) with Pi's estimate of the context after it:
    /// [`Answer::Compaction`].
    Compaction {
        /// The compaction entry.
        entry: Option<EntryId>,
    },
    /// What each hook and extension cost in cache writes over the file:
    /// [`Answer::Attributions`].
    Attributions,
    /// Every request the file records, added up, and the messages by role: [`Answer::Stats`].
    Stats,
    /// The next request's chapters, policy and breakpoints: [`Answer::NextRequest`].
    NextRequest,
    /// What putting the files back as they were at `target` (`None`: the leaf) would do:
    /// [`Answer::RewindPreview`].
    RewindPreview {
        /// The entry whose file state is wanted.
        target: Option<EntryId>,
    },
}

/// What a [`Query`] found.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "answer", rename_all = "snake_case")]
pub enum Answer {
    /// [`Query::State`].
    State(Box<Status>),
    /// [`Query::Messages`].
    Messages {
        /// Pi's message objects.
        messages: Vec<serde_json::Value>,
    },
    /// [`Query::Transcript`].
    Transcript {
        /// The items, oldest first.
        items: Vec<TranscriptItem>,
        /// How many entries of the branch come before the window (0: it starts at the root
        /// or at `after`).
        #[serde(default)]
        earlier: usize,
        /// The window's first entry: `before` for the part above it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        first: Option<EntryId>,
    },
    /// [`Query::Tree`].
    Tree {
        /// The rows, depth first.
        rows: Vec<TreeRow>,
    },
    /// [`Query::ForkPoints`].
    ForkPoints {
        /// The rows, newest first.
        rows: Vec<TreeRow>,
    },
    /// [`Query::ForkPoint`].
    ForkPoint {
        /// The message's parent: the last entry the fork keeps.
        parent: Option<EntryId>,
        /// The message's text.
        text: String,
    },
    /// [`Query::Entries`].
    Entries {
        /// The entries as the file holds them.
        entries: Vec<Entry>,
        /// The session's leaf.
        leaf: Option<EntryId>,
    },
    /// [`Query::EntryTree`].
    EntryTree {
        /// Entries without a parent (or whose parent is missing), in append order.
        roots: Vec<EntryNode>,
        /// The session's leaf.
        leaf: Option<EntryId>,
    },
    /// [`Query::UserMessages`].
    UserMessages {
        /// The messages, oldest first.
        messages: Vec<UserMessage>,
    },
    /// [`Query::Compaction`].
    Compaction {
        /// The entry.
        entry: Box<strata_session::CompactionEntry>,
        /// The context's estimated tokens right after it (`None`: it cannot be rebuilt).
        tokens_after: Option<u64>,
    },
    /// [`Query::Attributions`].
    Attributions {
        /// By hook or extension.
        attributed: Vec<Attribution>,
    },
    /// [`Query::Stats`].
    Stats(Box<SessionStats>),
    /// [`Query::NextRequest`].
    NextRequest(Box<ContextReport>),
    /// [`Query::RewindPreview`].
    RewindPreview(RestoreReport),
    /// The read failed (the session could not be read, an unknown entry …).
    Failed {
        /// Why.
        error: String,
    },
}

/// One entry of [`Answer::EntryTree`] with its subtree; serialised as Pi's tree node
/// (`{entry, children, label?}`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EntryNode {
    /// The entry.
    pub entry: Entry,
    /// Its children in append order.
    pub children: Vec<EntryNode>,
    /// Its label, when it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
}

/// A user message a fork may start before; serialised as Pi's `{entryId, text}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UserMessage {
    /// The message's entry.
    pub entry_id: EntryId,
    /// Its text.
    pub text: String,
}

/// One item of a branch as a transcript shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "item", rename_all = "snake_case")]
pub enum TranscriptItem {
    /// A user message's text.
    User {
        /// The text.
        text: String,
    },
    /// An answer's text block.
    Assistant {
        /// The text.
        text: String,
    },
    /// An answer's reasoning.
    Thinking {
        /// The text.
        text: String,
    },
    /// A tool call with its result, once there is one.
    Tool(ToolCallItem),
    /// A shell command the user ran.
    Bash {
        /// The command line.
        command: String,
        /// Its output.
        output: String,
        /// Its exit code (`None`: cancelled or unknown).
        exit_code: Option<i64>,
        /// The user cancelled it.
        cancelled: bool,
        /// Kept out of the context (`!!cmd`).
        excluded: bool,
    },
    /// An answer's error.
    Error {
        /// The text.
        text: String,
    },
    /// A compaction.
    Compaction {
        /// Tokens of the context it summarised.
        tokens_before: u64,
    },
    /// A branch summary (as an entry or as a message).
    BranchSummary {
        /// The summary.
        summary: String,
    },
    /// A switch to another model after the session started.
    ModelChange {
        /// Provider id.
        provider: String,
        /// Model id.
        model: String,
    },
}

/// A tool call of the transcript.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolCallItem {
    /// The call's id.
    pub id: String,
    /// The tool.
    pub name: String,
    /// Its arguments as JSON text.
    pub arguments: String,
    /// The result's text (empty until there is one).
    pub output: String,
    /// The result's diff (edit and write tools).
    pub diff: Option<String>,
    /// How it ended (`None`: no result yet).
    pub failed: Option<bool>,
}

/// One row of the tree: the entries a picker shows (messages, compactions, summaries, model
/// changes; `usage`, label and leaf entries hidden, as in Pi), and the child sessions each
/// entry spawned.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TreeRow {
    /// The entry (for a child row: the entry that spawned it).
    pub id: EntryId,
    /// Its parent (for a child row: the spawning entry).
    pub parent: Option<EntryId>,
    /// How many forks deep it is (indentation).
    pub depth: usize,
    /// What it is.
    pub row: RowKind,
    /// Its label.
    pub label: Option<String>,
    /// On the path to the leaf.
    pub on_path: bool,
    /// The row the leaf stands on (a label or leaf entry at the leaf marks its nearest
    /// shown ancestor).
    pub leaf: bool,
}

/// What a [`TreeRow`] shows.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum RowKind {
    /// A user message.
    User {
        /// Its text.
        text: String,
    },
    /// An answer.
    Assistant {
        /// Its text blocks joined by a space.
        text: String,
        /// The tools it called.
        tools: Vec<String>,
    },
    /// A system message: what it changes (sections by name, `-name` removed, `+tool`,
    /// `-tool`).
    System {
        /// The changes.
        changes: Vec<String>,
    },
    /// Another message, by role.
    Message {
        /// The role.
        role: String,
    },
    /// A compaction.
    Compaction {
        /// Tokens of the context it summarised.
        tokens_before: u64,
    },
    /// A branch summary.
    BranchSummary {
        /// The summary.
        summary: String,
    },
    /// A model change.
    ModelChange {
        /// Provider id.
        provider: String,
        /// Model id.
        model: String,
    },
    /// A child agent's session.
    Child {
        /// Its file.
        path: PathBuf,
        /// `child (start): description`.
        title: String,
        /// Its messages.
        messages: usize,
    },
}

impl RowKind {
    /// The text of a user message (chosen in a picker: re-edited from its parent).
    pub fn user_text(&self) -> Option<&str> {
        match self {
            Self::User { text } => Some(text),
            _ => None,
        }
    }
}

/// Every request the session file records (all branches: all were paid), keep-warm pings and
/// summaries included, and what the file holds.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SessionStats {
    /// The requests added up.
    pub totals: Totals,
    /// The last answer's tokens (pings and summaries are not answers).
    pub last: Option<Usage>,
    /// The last answer's dollars.
    pub last_cost: f64,
    /// Dollars the ended child agents spent, in their own files: a foreground child's from
    /// its delegation result, a background child's from its file once the message of its end
    /// is in the conversation.
    pub children_cost: f64,
    /// What each hook and extension cost in cache writes.
    pub attributed: Vec<Attribution>,
    /// Messages by role over the whole file.
    pub messages: RoleCounts,
    /// Entries in the file (the header excluded).
    pub entries: usize,
}

/// Messages by role.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RoleCounts {
    /// User messages.
    pub user: usize,
    /// Answers.
    pub assistant: usize,
    /// Tool results.
    pub tool_results: usize,
    /// Shell commands the user ran.
    pub bash: usize,
}

/// The request the agent would send next, as its renderer builds it now.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ContextReport {
    /// Bytes and hash of the tools, system and messages chapters, then the deferred tools
    /// when there are any (outside the cached prefix).
    pub chapters: Vec<ChapterSize>,
    /// The compaction policy and the system-change rule, one line each.
    pub policy: Vec<String>,
    /// Where the cache breakpoints go, with their lifetime (`after tools (5m)`).
    pub breakpoints: Vec<String>,
    /// Tools in the request.
    pub tools: usize,
    /// System blocks in the request.
    pub system_blocks: usize,
    /// Messages in the request.
    pub messages: usize,
    /// The renderer's notes, as JSON text.
    pub notes: Vec<String>,
    /// The children spawned on the branch, how each started and why (lines; empty when none).
    pub children: Vec<String>,
    /// The thinking level the session records.
    pub thinking: ThinkingLevel,
}

impl ContextReport {
    /// Approximate tokens of the tools, system and messages chapters (bytes / 4).
    pub fn chapter_tokens(&self) -> [u64; 3] {
        let mut tokens = [0; 3];
        for (slot, chapter) in tokens.iter_mut().zip(&self.chapters) {
            *slot = chapter.bytes / 4;
        }
        tokens
    }
}

/// One chapter's size and hash.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChapterSize {
    /// `tools`, `system`, `messages` or `deferred`.
    pub name: String,
    /// Bytes.
    pub bytes: u64,
    /// FNV-1a 64 of its bytes.
    pub hash: u64,
}
