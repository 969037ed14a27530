//! Writing the page to a file safely (`strata export`, the TUI's `/export`, rpc's
//! `export_html`): never onto a session, never over an existing file unless asked, and
//! atomically, so a reader sees the old file or the whole new one.

use std::io::{BufRead as _, Read as _, Write as _};
use std::path::{Path, PathBuf};

use strata_session::{Diagnostic, Session, SessionError};

/// Whether an existing file at the output path may be replaced (`--force`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Overwrite {
    /// An existing file is an error.
    Refuse,
    /// An existing file is replaced, unless it is a session.
    Replace,
}

/// Why an export was not written.
#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    /// The session could not be read (its error names the file).
    #[error("reading the session: {0}")]
    Session(#[from] SessionError),
    /// The output path is the session being exported.
    #[error("{} is the session being read; choose another output path", .0.display())]
    IsSource(PathBuf),
    /// The output path holds another session.
    #[error("{} is a session file; an output never replaces a session", .0.display())]
    IsSession(PathBuf),
    /// The output path exists and [`Overwrite::Refuse`] was asked.
    #[error("{} already exists; pass --force to replace it, or choose another path", .0.display())]
    Exists(PathBuf),
    /// Reading the working directory or writing the file failed.
    #[error("{what}: {source}")]
    Io {
        /// What was being done, naming the path.
        what: String,
        /// The operating system's error.
        source: std::io::Error,
    },
}

/// What [`export_html`] wrote.
#[derive(Debug)]
pub struct Exported {
    /// The page's path.
    pub path: PathBuf,
    /// Lines of the session skipped while reading it (each names the file and line).
    pub diagnostics: Vec<Diagnostic>,
}

/// Writes the HTML export of `session_file` to `output` (default: the session file's name
/// with `.html`, in the current directory). The output is never the session itself nor any
/// other session, replaces an existing file only with [`Overwrite::Replace`], and is written
/// atomically.
pub fn export_html(
    session_file: &Path,
    output: Option<&Path>,
    overwrite: Overwrite,
) -> Result<Exported, ExportError> {
    let opened = Session::open(session_file)?;
    let page = crate::page(&opened.session, &opened.diagnostics);
    let path = match output {
        Some(path) => path.to_path_buf(),
        None => default_output(session_file)?,
    };
    write_output(&path, page.as_bytes(), &[session_file], overwrite)?;
    Ok(Exported {
        path,
        diagnostics: opened.diagnostics,
    })
}

/// `<session file stem>.html` in the current directory.
fn default_output(session_file: &Path) -> Result<PathBuf, ExportError> {
    let stem = session_file
        .file_stem()
        .map_or_else(|| "session".into(), |s| s.to_string_lossy());
    let cwd = std::env::current_dir().map_err(|source| ExportError::Io {
        what: "reading the current directory".into(),
        source,
    })?;
    Ok(cwd.join(format!("{stem}.html")))
}

/// Writes `bytes` to `path` through a temp file in the same directory renamed into place.
/// `sources` are the session files the output was made from: `path` must not be one of them,
/// nor any other session file, even with [`Overwrite::Replace`].
pub fn write_output(
    path: &Path,
    bytes: &[u8],
    sources: &[&Path],
    overwrite: Overwrite,
) -> Result<(), ExportError> {
    if sources.iter().any(|source| same_file(path, source)) {
        return Err(ExportError::IsSource(path.to_path_buf()));
    }
    if std::fs::symlink_metadata(path).is_ok() {
        if is_session_file(path) {
            return Err(ExportError::IsSession(path.to_path_buf()));
        }
        if overwrite == Overwrite::Refuse {
            return Err(ExportError::Exists(path.to_path_buf()));
        }
    }
    let dir = match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let io = |what: String| move |source| ExportError::Io { what, source };
    let mut temp = tempfile::Builder::new()
        .prefix(".strata-output-")
        .suffix(".tmp")
        .tempfile_in(&dir)
        .map_err(io(format!(
            "creating a temporary file in {}",
            dir.display()
        )))?;
    temp.write_all(bytes)
        .and_then(|()| temp.as_file().sync_all())
        .map_err(io(format!("writing {}", temp.path().display())))?;
    let persisted = match overwrite {
        // No clobbering even if another process created the file since the check above.
        Overwrite::Refuse => temp.persist_noclobber(path),
        Overwrite::Replace => temp.persist(path),
    };
    persisted
        .map(drop)
        .map_err(|e| e.error)
        .map_err(io(format!("writing {}", path.display())))
}

/// Whether `a` and `b` name the same file (same device and inode), following links.
fn same_file(a: &Path, b: &Path) -> bool {
    use std::os::unix::fs::MetadataExt as _;
    match (std::fs::metadata(a), std::fs::metadata(b)) {
        (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
        _ => false,
    }
}

/// Whether the file's first line is a session header (`{"type":"session",…}`).
fn is_session_file(path: &Path) -> bool {
    let Ok(file) = std::fs::File::open(path) else {
        return false;
    };
    let mut first = Vec::new();
    // A header line is short; a few KB is enough to tell, whatever the file's size.
    let read = std::io::BufReader::new(file)
        .take(64 * 1024)
        .read_until(b'\n', &mut first);
    if read.is_err() {
        return false;
    }
    serde_json::from_slice::<serde_json::Value>(trim_newline(&first))
        .is_ok_and(|value| value.get("type").and_then(|t| t.as_str()) == Some("session"))
}

fn trim_newline(line: &[u8]) -> &[u8] {
    line.strip_suffix(b"\n").unwrap_or(line)
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEADER: &str =
        "{\"type\":\"session\",\"version\":3,\"id\":\"s\",\"timestamp\":\"t\",\"cwd\":\"/\"}\n";

    #[test]
    fn refuses_the_source_session_even_through_another_name() {
        let dir = tempfile::tempdir().unwrap();
        let session = dir.path().join("a.jsonl");
        std::fs::write(&session, HEADER).unwrap();
        let link = dir.path().join("link.html");
        std::os::unix::fs::symlink(&session, &link).unwrap();
        for target in [&session, &link] {
            let err = write_output(target, b"<html>", &[&session], Overwrite::Replace).unwrap_err();
            assert!(err.to_string().contains("session"), "{err}");
        }
        assert_eq!(std::fs::read_to_string(&session).unwrap(), HEADER);
    }

    #[test]
    fn never_replaces_another_session_file() {
        let dir = tempfile::tempdir().unwrap();
        let other = dir.path().join("other.jsonl");
        std::fs::write(&other, HEADER).unwrap();
        let err = write_output(&other, b"<html>", &[], Overwrite::Replace).unwrap_err();
        assert!(err.to_string().contains("is a session file"), "{err}");
        assert_eq!(std::fs::read_to_string(&other).unwrap(), HEADER);
    }

    #[test]
    fn an_existing_file_needs_force_and_no_temp_file_is_left() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("page.html");
        std::fs::write(&out, "old").unwrap();
        let err = write_output(&out, b"new", &[], Overwrite::Refuse).unwrap_err();
        assert!(err.to_string().contains("--force"), "{err}");
        assert_eq!(std::fs::read_to_string(&out).unwrap(), "old");
        write_output(&out, b"new", &[], Overwrite::Replace).unwrap();
        assert_eq!(std::fs::read_to_string(&out).unwrap(), "new");
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, vec![std::ffi::OsString::from("page.html")]);
    }
}
