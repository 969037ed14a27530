//! What `fork` and `get_fork_messages` read from the session file: the user messages a fork
//! may start before (the runtime writes the forked file).

use std::path::Path;

use serde_json::{Value, json};
use strata_session::{AgentMessage, Entry, EntryId, MessageContent, Session};

/// Where a fork from the user message `entry_id` starts (its parent) and the message's text.
pub fn fork_point(session: &Session, entry_id: &str) -> Result<(Option<EntryId>, String), String> {
    let tree = session.tree();
    let entry = tree
        .entry(entry_id)
        .map_err(|_| "Invalid entry ID for forking".to_owned())?;
    let not_user = || format!("Invalid entry ID for forking: {entry_id} is not a user message");
    let Entry::Message(message) = entry else {
        return Err(not_user());
    };
    let AgentMessage::User(user) = &*message.message else {
        return Err(not_user());
    };
    Ok((tree.parent_of(entry_id).cloned(), user_text(&user.content)))
}

/// Every user message of the file with text, in file order: Pi's `get_fork_messages`.
pub fn user_messages(file: &Path) -> Result<Vec<Value>, String> {
    let opened = Session::open(file).map_err(|e| format!("reading {}: {e}", file.display()))?;
    let tree = opened.session.tree();
    let mut found = Vec::new();
    for entry in tree.iter() {
        if let Ok(Entry::Message(message)) = entry.entry()
            && let AgentMessage::User(user) = &*message.message
        {
            let text = user_text(&user.content);
            if !text.is_empty() {
                found.push(json!({"entryId": entry.id(), "text": text}));
            }
        }
    }
    Ok(found)
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
