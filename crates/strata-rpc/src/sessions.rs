//! What `fork` and `get_fork_messages` read from the session file: the user messages a fork
//! may start before (the runtime writes the forked file).

use std::path::Path;

use serde_json::{Value, json};
use strata_session::{AgentMessage, Entry, Session};

/// The session file read for a command. Its errors name the file already, so the message
/// says it once: "reading the session: F: No such file or directory (os error 2)".
pub fn read(file: &Path) -> Result<Session, String> {
    Session::open(file)
        .map(|opened| opened.session)
        .map_err(|e| format!("reading the session: {e}"))
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
            let text = user.content.text_joined("");
            if !text.is_empty() {
                found.push(json!({"entryId": entry.id(), "text": text}));
            }
        }
    }
    Ok(found)
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
