//! A session tree as one self-contained HTML file (`strata export`, `/export`, rpc's
//! `export_html`): every branch, the current leaf marked, messages by role, tool calls and
//! results and thinking collapsible, compaction and branch summaries, per-request usage,
//! the session name and labels. Styles and script are inline; nothing is fetched. The page is
//! [`strata_export`]'s; this module picks the file and refuses to overwrite a session.

use std::path::{Path, PathBuf};

use anyhow::Context as _;
use strata_session::Session;

pub use crate::output_file::Overwrite;
use crate::output_file::write_output;

/// Writes the HTML export of `session_file` to `output` (default: the session file's name
/// with `.html`, in the current directory) and returns the path written.
/// The output is never the session itself nor any other session, replaces an existing file
/// only with [`Overwrite::Replace`], and is written atomically.
pub fn export_html(
    session_file: &Path,
    output: Option<&Path>,
    overwrite: Overwrite,
) -> anyhow::Result<PathBuf> {
    // The session's errors name the file already.
    let opened = Session::open(session_file).context("reading the session")?;
    crate::commands::open::report_skipped(&opened.diagnostics);
    let page = strata_export::page(&opened.session, &opened.diagnostics);
    let path = match output {
        Some(path) => path.to_path_buf(),
        None => default_output(session_file)?,
    };
    write_output(&path, page.as_bytes(), &[session_file], overwrite)?;
    Ok(path)
}

/// `<session file stem>.html` in the current directory.
fn default_output(session_file: &Path) -> anyhow::Result<PathBuf> {
    let stem = session_file
        .file_stem()
        .map_or_else(|| "session".into(), |s| s.to_string_lossy());
    let cwd = std::env::current_dir().context("reading the current directory")?;
    Ok(cwd.join(format!("{stem}.html")))
}
