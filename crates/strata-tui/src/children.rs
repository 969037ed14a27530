//! What `/agents` and the child view read from disk: the session's children, depth first, with
//! how each ended (the parent's delegation results), and one child's transcript. The UI loop
//! reads these itself rather than asking the agent task, which answers commands only between
//! runs: a running child opens while the parent's run goes on. Session files are only appended
//! to, so a file read mid-write is a prefix of the finished one.

use std::path::{Path, PathBuf};

use strata_session::{Delegated, Session, SpawnDecision};

use super::app::{Item, Level, Notice};

/// A child of the session, and its delegation result once it ended.
#[derive(Debug, Clone, PartialEq)]
pub struct Listed {
    /// The child, from its header.
    pub child: Delegated,
    /// What its parent recorded when it ended (`None`: still running, or the parent stopped
    /// before recording it).
    pub ended: Option<SpawnDecision>,
}

/// The children of `parent`, each followed by its own children.
pub fn list(parent: &Path) -> Vec<Listed> {
    let mut found = Vec::new();
    push_children(parent, &mut found);
    found
}

fn push_children(parent: &Path, found: &mut Vec<Listed>) {
    let children = strata_session::delegated_from(parent);
    if children.is_empty() {
        return;
    }
    let results = results_of(parent);
    for child in children {
        let ended = results
            .iter()
            .find(|decision| decision.tool_call_id == child.tool_call_id)
            .cloned();
        let path = child.path().to_path_buf();
        found.push(Listed { child, ended });
        push_children(&path, found);
    }
}

/// Every delegation result `parent` records, on any branch.
fn results_of(parent: &Path) -> Vec<SpawnDecision> {
    Session::open(parent)
        .map(|opened| strata_session::delegation_results(opened.session.tree()))
        .unwrap_or_default()
}

/// A child's session shown in place of the transcript, read-only.
#[derive(Debug, Clone, PartialEq)]
pub struct ChildView {
    /// `child (fork): description`.
    pub title: String,
    /// Its file.
    pub session: PathBuf,
    /// Its branch, from its task on (a fork's copy of the parent's conversation left out).
    pub items: Vec<Item>,
}

/// Reads the child session at `path` for viewing.
pub fn open(path: &Path) -> Result<ChildView, String> {
    let opened =
        Session::open(path).map_err(|error| format!("cannot open {}: {error}", path.display()))?;
    let session = opened.session;
    let header = strata_session::spawned_by(path).unwrap_or_default();
    let field = |key: &str| header[key].as_str().unwrap_or("").to_owned();
    let title = strata_session::child_title(
        &field("start"),
        header["agent"].as_str(),
        &field("description"),
    );
    let mut items = Vec::new();
    // A fork holds the parent's conversation up to the spawning entry: the parent's view
    // already shows it.
    let spawning = field("entryId");
    let copied = !spawning.is_empty() && session.tree().get(&spawning).is_some();
    if copied {
        items.push(Item::Notice(Notice {
            level: Level::Info,
            text: format!(
                "forked from the parent at entry {spawning}: the conversation before it is the parent's"
            ),
        }));
    }
    items.extend(super::worker::transcript_after(
        &session,
        copied.then_some(spawning.as_str()),
    ));
    Ok(ChildView {
        title,
        session: path.to_path_buf(),
        items,
    })
}
