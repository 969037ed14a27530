//! Opening a session file for reading, with its diagnostics on stderr.

use std::path::Path;

use anyhow::Context as _;
use strata_runtime::{Diagnostic, EntryId, Session};

/// Opens `path` read-only; lines skipped while reading are reported on stderr, each naming
/// the file and line, and do not stop the command.
pub fn open_session(path: &Path) -> anyhow::Result<Session> {
    // The session's errors name the file already: said once.
    let opened = Session::open(path).context("opening the session")?;
    report_skipped(&opened.diagnostics);
    Ok(opened.session)
}

/// Says on stderr each line skipped while reading a session (file and line named).
pub fn report_skipped(diagnostics: &[Diagnostic]) {
    for diagnostic in diagnostics {
        eprintln!("strata: warning: {diagnostic}");
    }
}

/// Resolves `--leaf ID` against the tree: a full id, or a unique prefix of one.
pub fn resolve_leaf(session: &Session, wanted: &str) -> anyhow::Result<EntryId> {
    let tree = session.tree();
    if let Some(entry) = tree.get(wanted) {
        return Ok(entry.id().clone());
    }
    let matches: Vec<&EntryId> = tree
        .iter()
        .map(|entry| entry.id())
        .filter(|id| id.as_str().starts_with(wanted))
        .collect();
    match matches.as_slice() {
        [one] => Ok((*one).clone()),
        [] => anyhow::bail!("{}: no entry with id {wanted:?}", session.path().display()),
        many => anyhow::bail!(
            "{}: id prefix {wanted:?} is ambiguous ({} entries: {})",
            session.path().display(),
            many.len(),
            many.iter()
                .take(5)
                .map(|id| id.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}
