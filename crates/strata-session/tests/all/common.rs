//! Helpers shared by the test modules.

use std::path::PathBuf;

pub fn pi_fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/pi")
        .join(name)
}

pub fn pi_fixture_files() -> Vec<PathBuf> {
    let dir = pi_fixture("");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "jsonl"))
        .collect();
    files.sort();
    files
}

/// A user message with plain text.
pub fn user(text: &str) -> strata_session::AgentMessage {
    strata_session::AgentMessage::User(strata_session::UserMessage {
        content: strata_session::MessageContent::Text(text.into()),
        timestamp: 1_768_471_204_000,
        extra: Default::default(),
    })
}
