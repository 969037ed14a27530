//! What `fork` and `get_fork_messages` read from the session file: the user messages a fork
//! may start before (the runtime writes the forked file).

use std::path::Path;

use serde_json::{Value, json};
use strata_session::{AgentMessage, Entry, EntryId, MessageContent, Session};

/// The session file read for a command. Its errors name the file already, so the message
/// says it once: "reading the session: F: No such file or directory (os error 2)".
pub fn read(file: &Path) -> Result<Session, String> {
    Session::open(file)
        .map(|opened| opened.session)
        .map_err(|e| format!("reading the session: {e}"))
}

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
    let session = read(file)?;
    let tree = session.tree();
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_session_that_cannot_be_read_is_named_once() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("missing.jsonl");
        assert_eq!(
            user_messages(&missing).unwrap_err(),
            format!(
                "reading the session: {}: No such file or directory (os error 2)",
                missing.display()
            )
        );
        // A path that is no file: unreadable whoever runs the test (root reads a mode-000
        // file, so that case runs only for other users).
        let folder = dir.path().join("folder.jsonl");
        std::fs::create_dir(&folder).unwrap();
        let Err(message) = read(&folder) else {
            panic!("a folder opened as a session");
        };
        assert_eq!(
            message,
            format!(
                "reading the session: {}: not a regular file",
                folder.display()
            )
        );
        let locked = dir.path().join("locked.jsonl");
        std::fs::write(&locked, "").unwrap();
        std::fs::set_permissions(&locked, std::os::unix::fs::PermissionsExt::from_mode(0o000))
            .unwrap();
        if std::fs::read(&locked).is_err() {
            let Err(message) = read(&locked) else {
                panic!("a mode-000 file opened");
            };
            assert_eq!(
                message,
                format!(
                    "reading the session: {}: Permission denied (os error 13)",
                    locked.display()
                )
            );
        }
    }
}
