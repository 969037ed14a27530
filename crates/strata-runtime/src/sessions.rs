//! New and forked session files, named as Pi names them, next to the current one; and the
//! session store's listing (sessions of a directory, the sessions each delegated to) as every
//! view lists them.

use std::path::{Path, PathBuf};

use strata_session::{EntryId, Session, SessionHeader, WriteOptions};

use crate::error::RuntimeError;

/// The store's listing: the sessions of a directory, their summaries, the children a session
/// delegated to (by spawning entry), and how dates read in them.
pub use strata_session::{
    Delegated, SessionStore, SessionSummary, delegated_by_entry, delegated_from, format_iso_millis,
    spawned_by,
};

/// Pi's file name for a session: `<timestamp>_<id>.jsonl`, ':' and '.' of the time as '-'.
pub fn file_name(header: &SessionHeader) -> String {
    let stamp = header.timestamp.replace([':', '.'], "-");
    format!("{stamp}_{}.jsonl", header.id)
}

/// A new, empty session file in `dir` for `cwd`.
pub fn create(dir: &Path, cwd: &str, parent: Option<String>) -> Result<Session, RuntimeError> {
    let header = strata_session::new_header(cwd, parent);
    let path = dir.join(file_name(&header));
    Ok(Session::create_with_header(
        &path,
        header,
        WriteOptions::default(),
    )?)
}

/// The directory `session`'s file is in.
pub fn dir_of(session: &Session) -> PathBuf {
    session
        .path()
        .parent()
        .map_or_else(|| PathBuf::from("."), Path::to_path_buf)
}

/// Writes a new file next to `session` holding its path to `leaf` (`None`: no entries), named
/// after its own header, and opens it for appending.
pub fn fork(session: &Session, leaf: Option<&EntryId>) -> Result<Session, RuntimeError> {
    let dir = dir_of(session);
    let staging = dir.join(format!(".fork-{}.jsonl.tmp", std::process::id()));
    session.fork(leaf, &staging)?;
    let header = Session::open(&staging)?.session.header().clone();
    let path = dir.join(file_name(&header));
    std::fs::rename(&staging, &path).map_err(|source| RuntimeError::Rename {
        path: path.clone(),
        source,
    })?;
    let fork = open(&path)?;
    carry_checkpoints(session.path(), &fork);
    Ok(fork)
}

/// Gives the fork `fork` (of the session file `from`) the file checkpoints its path needs for
/// a rewind (`Checkpoints::carry_to`). A failure is logged, not fatal: the fork itself is
/// written, only its rewinds lack those files.
pub fn carry_checkpoints(from: &Path, fork: &Session) {
    use strata_permissions::checkpoint::Checkpoints;
    let calls = strata_agent::rules::tool_calls_to(fork, fork.leaf());
    if let Err(error) =
        Checkpoints::beside(from).carry_to(&Checkpoints::beside(fork.path()), &calls)
    {
        tracing::warn!(
            "the fork {} carries no file checkpoints: {error}",
            fork.path().display()
        );
    }
}

/// Opens `path` for appending.
pub fn open(path: &Path) -> Result<Session, RuntimeError> {
    Ok(Session::open_writable(path, WriteOptions::default())?.session)
}
