//! Sessions a session delegated to, as every view lists them (`strata tree`, the TUI's `/tree`
//! and `/agents`, the export): each child with the fields of its header's [`SPAWNED_BY_FIELD`](crate::SPAWNED_BY_FIELD),
//! grouped by the entry that spawned it; and the spawn decisions recorded on a branch (the
//! delegation results' `details.subagent`), for `/context` and `strata context`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::store::{SessionStore, SessionSummary, spawned_by};
use crate::{AgentMessage, Entry, EntryKind, EntryRef, Role, Tree};

/// A session delegated from another, described by its header.
#[derive(Debug, Clone, PartialEq)]
pub struct Delegated {
    /// The child's file, counts and times.
    pub summary: SessionSummary,
    /// The parent's entry that spawned it (the assistant message holding the call).
    pub entry_id: String,
    /// The delegation call's id.
    pub tool_call_id: String,
    /// The task's short description.
    pub description: String,
    /// `fork` or `fresh`.
    pub start: String,
    /// The agent definition used, if any.
    pub agent: Option<String>,
    /// Why it started that way (the price comparison); absent in files written before it
    /// was recorded.
    pub reason: Option<String>,
    /// 1 for the parent's children, 2 for theirs, …
    pub depth: u64,
}

impl Delegated {
    /// Reads the child's header; `None` when the file names no spawning entry.
    fn read(summary: SessionSummary) -> Option<Self> {
        let field = spawned_by(&summary.path)?;
        let text = |key: &str| field[key].as_str().map(str::to_owned);
        Some(Self {
            entry_id: text("entryId").unwrap_or_default(),
            tool_call_id: text("toolCallId").unwrap_or_default(),
            description: text("description").unwrap_or_default(),
            start: text("start").unwrap_or_default(),
            agent: text("agent"),
            reason: text("reason"),
            depth: field["depth"].as_u64().unwrap_or(1),
            summary,
        })
    }

    /// The child's file.
    pub fn path(&self) -> &Path {
        &self.summary.path
    }

    /// `child (fork scout): description  3 msgs  /path/to/child.jsonl` — one line, as the
    /// listings print it.
    pub fn line(&self) -> String {
        format!(
            "{}  {} msgs  {}",
            self.title(),
            self.summary.message_count,
            self.summary.path.display()
        )
    }

    /// `child (fork scout): description`.
    pub fn title(&self) -> String {
        child_title(&self.start, self.agent.as_deref(), &self.description)
    }
}

/// `child (fork scout): description` from a child header's
/// [`SPAWNED_BY_FIELD`](crate::SPAWNED_BY_FIELD) fields: how every view names a child.
pub fn child_title(start: &str, agent: Option<&str>, description: &str) -> String {
    let agent = agent.map(|agent| format!(" {agent}")).unwrap_or_default();
    format!("child ({start}{agent}): {description}")
}

/// The sessions `parent` delegated to (its direct children), oldest first; a file that
/// cannot be read, or whose header lacks [`SPAWNED_BY_FIELD`](crate::SPAWNED_BY_FIELD), is left out.
pub fn delegated_from(parent: &Path) -> Vec<Delegated> {
    try_delegated_from(parent).unwrap_or_default()
}

/// [`delegated_from`], failing when the children's folder exists but cannot be listed (for
/// a view that must say so, like `strata stats`, rather than show no children).
pub fn try_delegated_from(parent: &Path) -> Result<Vec<Delegated>, crate::SessionError> {
    Ok(SessionStore::children_of(parent)?
        .into_iter()
        .filter_map(Delegated::read)
        .collect())
}

/// [`delegated_from`] grouped by the spawning entry's id.
pub fn delegated_by_entry(parent: &Path) -> BTreeMap<String, Vec<Delegated>> {
    let mut by_entry: BTreeMap<String, Vec<Delegated>> = BTreeMap::new();
    for child in delegated_from(parent) {
        by_entry
            .entry(child.entry_id.clone())
            .or_default()
            .push(child);
    }
    by_entry
}

/// How a child on a branch was started and why: a delegation result's `details.subagent`.
#[derive(Debug, Clone, PartialEq)]
pub struct SpawnDecision {
    /// The delegation call's id.
    pub tool_call_id: String,
    /// The task's short description (from the result, else empty).
    pub description: String,
    /// `fork` or `fresh`.
    pub start: String,
    /// The price comparison that chose it.
    pub reason: String,
    /// The child's file.
    pub session: PathBuf,
    /// The child's cost in dollars.
    pub cost: f64,
    /// `stop`, `aborted`, `budget`, `error`, `length`.
    pub outcome: String,
}

impl SpawnDecision {
    /// The decision a tool result records, if it is a delegation result.
    pub fn of_result(tool_call_id: &str, details: Option<&Value>) -> Option<Self> {
        let subagent = details?.get("subagent")?;
        let text = |key: &str| subagent[key].as_str().unwrap_or_default().to_owned();
        let reason = subagent["reason"].as_str()?.to_owned();
        Some(Self {
            tool_call_id: tool_call_id.to_owned(),
            description: text("description"),
            start: text("start"),
            reason,
            session: PathBuf::from(text("session")),
            cost: subagent["usage"]["cost"].as_f64().unwrap_or(0.0),
            outcome: text("outcome"),
        })
    }
}

/// The spawn decisions on the path from the root to `leaf` (the current branch when `leaf`
/// is the session's), oldest first.
pub fn spawn_decisions(tree: &Tree, leaf: Option<&str>) -> Vec<SpawnDecision> {
    let Some(leaf) = leaf else {
        return Vec::new();
    };
    let mut found: Vec<SpawnDecision> = tree.walk_to_root(leaf).filter_map(decision_of).collect();
    found.reverse();
    found
}

/// Every delegation result the session records, on any branch (all were paid for), in file
/// order.
pub fn delegation_results(tree: &Tree) -> Vec<SpawnDecision> {
    delegation_results_from(tree, 0)
}

/// [`delegation_results`] of the entries from position `start` on.
pub fn delegation_results_from(tree: &Tree, start: usize) -> Vec<SpawnDecision> {
    tree.iter().skip(start).filter_map(decision_of).collect()
}

fn decision_of(entry: EntryRef<'_>) -> Option<SpawnDecision> {
    // Most tool results are not a delegation's: a substring test on the line (not kept)
    // rules them out before a parse.
    if entry.kind() != EntryKind::Message(Role::ToolResult)
        || !entry
            .read_line()
            .is_ok_and(|line| line.contains("\"subagent\""))
    {
        return None;
    }
    match entry.entry().ok()? {
        Entry::Message(message) => match message.message.into_message() {
            AgentMessage::ToolResult(result) => {
                SpawnDecision::of_result(&result.tool_call_id, result.details.as_ref())
            }
            _ => None,
        },
        _ => None,
    }
}

/// How the message a background child's end posts to its parent's conversation opens.
pub const TASK_NOTIFICATION_OPEN: &str = "<task-notification>";

/// The message a background child's end posts to its parent's conversation: who it was, how
/// it ended, its file and its answer (or error), marked so the model cannot take it for the
/// user's words. [`notified_child`] reads it back.
pub fn task_notification(
    tool_call_id: &str,
    description: &str,
    failed: bool,
    session: &Path,
    result: &str,
) -> String {
    let status = if failed { "failed" } else { "completed" };
    format!(
        "{TASK_NOTIFICATION_OPEN}\nBackground child agent `{tool_call_id}` ({description}) \
         {status}. Its session: {}\n<result>\n{result}\n</result>\n</task-notification>",
        session.display()
    )
}

/// The background child whose end a [`task_notification`] reports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotifiedChild {
    /// The delegation call's id.
    pub tool_call_id: String,
    /// The child's file.
    pub session: PathBuf,
    /// It ended with an error.
    pub failed: bool,
}

/// The child a message's text reports the end of, if it is a [`task_notification`].
pub fn notified_child(text: &str) -> Option<NotifiedChild> {
    let rest = text
        .strip_prefix(TASK_NOTIFICATION_OPEN)?
        .strip_prefix("\nBackground child agent `")?;
    let (tool_call_id, rest) = rest.split_once('`')?;
    // The head ends where the answer starts; the description (the model's words) comes
    // before the status and the file, so both are read from the head's end.
    let (head, _) = rest.split_once("\n<result>\n")?;
    let (before, session) = head.rsplit_once(". Its session: ")?;
    let failed = if before.ends_with(") failed") {
        true
    } else if before.ends_with(") completed") {
        false
    } else {
        return None;
    };
    Some(NotifiedChild {
        tool_call_id: tool_call_id.to_owned(),
        session: PathBuf::from(session),
        failed,
    })
}

/// The background children whose end the user messages from position `start` on report, in
/// file order: their cost is in their own files, as no delegation result carries it.
pub fn notified_children_from(tree: &Tree, start: usize) -> Vec<NotifiedChild> {
    tree.iter()
        .skip(start)
        .filter(|entry| {
            // A substring test on the line (not kept) rules out most messages before a parse.
            entry.kind() == EntryKind::Message(Role::User)
                && entry
                    .read_line()
                    .is_ok_and(|line| line.contains(TASK_NOTIFICATION_OPEN))
        })
        .filter_map(|entry| match entry.entry().ok()? {
            Entry::Message(message) => match message.message.into_message() {
                AgentMessage::User(user) => notified_child(&user.content.text_joined("\n")),
                _ => None,
            },
            _ => None,
        })
        .collect()
}

#[cfg(test)]
mod notification_tests {
    use super::*;

    #[test]
    fn a_notification_names_its_child_whatever_the_description_says() {
        let path = Path::new("/s/parent.subagents/1_call_7.jsonl");
        for (description, failed) in [
            ("look around", false),
            ("odd) completed. Its session: /elsewhere", true),
        ] {
            let text = task_notification("call_7", description, failed, path, "the answer");
            let child = notified_child(&text).unwrap_or_else(|| panic!("{text}"));
            assert_eq!(child.tool_call_id, "call_7");
            assert_eq!(child.failed, failed);
            assert_eq!(child.session, path);
        }
        assert_eq!(
            notified_child("Background child agent `x` (y) completed."),
            None
        );
        assert_eq!(notified_child("<task-notification>\nsomething else"), None);
    }
}
