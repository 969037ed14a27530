//! Pi-compatible JSONL session trees: typed entries, append-only store, tree navigation,
//! legacy migration.
//!
//! A session file is Pi's format, version 3: a header line, then one JSON entry per line, each
//! pointing at its parent. strata adds `system`, `context_edit` and `leaf` entries and snapshot
//! fields on `compaction`; Pi ignores what it does not know. See `docs/session-format.md`.
//!
//! ```no_run
//! use strata_session::Session;
//! let opened = Session::open("session.jsonl")?;
//! for problem in &opened.diagnostics {
//!     eprintln!("{problem}");
//! }
//! let tree = opened.session.tree();
//! if let Some(leaf) = tree.leaf() {
//!     for id in tree.path_from_root(leaf.as_str()) {
//!         println!("{id}: {}", tree.entry(id.as_str())?.type_name());
//!     }
//! }
//! # Ok::<(), strata_session::SessionError>(())
//! ```

mod delegated;
mod entry;
mod error;
mod fast;
mod group;
mod header;
mod id;
mod message;
mod serde_util;
mod session;
mod shape;
mod store;
mod time;
mod tree;

pub use fast::canonical;

pub use delegated::{
    Delegated, NotifiedChild, SpawnDecision, TASK_NOTIFICATION_OPEN, child_title,
    delegated_by_entry, delegated_from, delegation_results, delegation_results_from,
    notified_child, notified_children_from, spawn_decisions, task_notification, try_delegated_from,
};
pub use entry::{
    BranchSummaryEntry, CACHE_WARM_KIND, CompactionEntry, ContextAction, ContextEditEntry,
    CustomEntry, CustomMessageEntry, EditEffect, Entry, EntryBase, EntryKind, LabelEntry,
    LeafEntry, MessageEntry, ModelChangeEntry, Replacement, Role, SessionInfoEntry, SystemEntry,
    ThinkingLevelChangeEntry, ToolDefinition, UnknownEntry, UsageEntry,
};
pub use error::{Diagnostic, Problem, SessionError};
pub use fast::lazy::{FileSpan, LazyMessage, MessageRead, SpanReader};
pub use group::{EditGroup, GROUP_FIELD, PlannedEdit, counted_edits};
pub use header::{CURRENT_VERSION, SessionHeader};
pub use id::EntryId;
pub use message::{
    AgentMessage, AssistantMessage, BashExecutionMessage, BranchSummaryMessage,
    CompactionSummaryMessage, ContentBlock, Cost, CustomMessage, Extra, ImageContent,
    MessageContent, StopReason, SystemMessage, TextContent, ThinkingContent, ToolCall,
    ToolReference, ToolResultMessage, Usage, UserMessage, join_text,
};
pub use session::{Opened, Session, WriteOptions, new_header};
pub use store::{
    INDEX_FILE_NAME, SPAWNED_BY_FIELD, SessionStore, SessionSummary, children_dir,
    dir_name_for_cwd, header_json, spawned_by,
};
pub use time::{format_iso_millis, now_iso, now_unix_millis, parse_iso_millis};
pub use tree::{EntryRef, Tree, sidecar_path};
