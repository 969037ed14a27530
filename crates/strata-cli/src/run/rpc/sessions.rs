//! Session files for new_session, switch_session, fork and clone: created beside the current
//! one with Pi's `<timestamp>_<id>.jsonl` names.

use std::path::{Path, PathBuf};

use anyhow::Context as _;
use serde_json::{Value, json};
use strata_agent::Agent;
use strata_session::{AgentMessage, Entry, EntryId, MessageContent, Session};

use crate::run::Setup;
use crate::run::model::ModelChoice;
use crate::run::setup::open_or_create;

/// Creates an empty session in `dir` (its header naming `parent`, the runtime's naming),
/// returns its path; the file is closed again for the agent that will open it.
pub fn create(dir: &Path, cwd: &str, parent: Option<String>) -> anyhow::Result<PathBuf> {
    let session = strata_runtime::sessions::create(dir, cwd, parent)
        .with_context(|| format!("creating a session in {}", dir.display()))?;
    Ok(session.path().to_path_buf())
}

/// Where a fork from the user message `entry_id` starts (its parent) and the message's text.
pub fn fork_point(session: &Session, entry_id: &str) -> anyhow::Result<(Option<EntryId>, String)> {
    let tree = session.tree();
    let entry = tree
        .entry(entry_id)
        .ok()
        .context("Invalid entry ID for forking")?;
    let Entry::Message(message) = entry else {
        anyhow::bail!("Invalid entry ID for forking: {entry_id} is not a user message");
    };
    let AgentMessage::User(user) = &message.message else {
        anyhow::bail!("Invalid entry ID for forking: {entry_id} is not a user message");
    };
    Ok((tree.parent_of(entry_id).cloned(), user_text(&user.content)))
}

/// A new session file beside `session` holding the path from the root to `leaf` (none: an
/// empty session), its header naming `session` as the parent (the runtime's fork).
pub fn fork(session: &Session, leaf: Option<&EntryId>) -> anyhow::Result<PathBuf> {
    let forked = strata_runtime::sessions::fork(session, leaf)
        .with_context(|| format!("forking {}", session.path().display()))?;
    Ok(forked.path().to_path_buf())
}

/// Every user message of the file with text, in file order: Pi's `get_fork_messages`.
pub fn user_messages(file: &Path) -> anyhow::Result<Vec<Value>> {
    let opened = Session::open(file).with_context(|| format!("reading {}", file.display()))?;
    let tree = opened.session.tree();
    let mut found = Vec::new();
    for entry in tree.iter() {
        if let Ok(Entry::Message(message)) = entry.entry()
            && let AgentMessage::User(user) = &message.message
        {
            let text = user_text(&user.content);
            if !text.is_empty() {
                found.push(json!({"entryId": entry.id(), "text": text}));
            }
        }
    }
    Ok(found)
}

/// An agent on the session at `path`, with the session's own model when it names one the
/// catalog knows, else `fallback`.
pub fn open_agent(
    setup: &Setup,
    path: &Path,
    fallback: Option<ModelChoice>,
) -> anyhow::Result<Agent> {
    let cwd = setup.cwd.display().to_string();
    let session = open_or_create(path, &cwd)?;
    let context = strata_context::build(session.tree(), session.leaf())
        .with_context(|| format!("building the context of {}", path.display()))?;
    let own = context
        .model
        .as_ref()
        .filter(|m| setup.catalog.model(&m.provider, &m.model_id).is_some())
        .map(|m| ModelChoice {
            provider: m.provider.clone(),
            id: m.model_id.clone(),
            thinking: Some(context.thinking_level.clone()),
        });
    let choice = match own.or(fallback) {
        Some(choice) => choice,
        None => setup.model_choice()?,
    };
    setup.agent_on(session, &choice)
}

fn user_text(content: &MessageContent) -> String {
    match content {
        MessageContent::Text(text) => text.clone(),
        MessageContent::Blocks(blocks) => blocks
            .iter()
            .filter_map(|b| match b {
                strata_session::ContentBlock::Text(t) => Some(t.text.as_str()),
                _ => None,
            })
            .collect(),
    }
}
