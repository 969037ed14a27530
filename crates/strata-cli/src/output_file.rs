//! Writing a command's output file (an HTML export, …) safely: never onto a session, never
//! over an existing file unless asked, and atomically, so a reader sees the old file or the
//! whole new one.

use std::io::{BufRead as _, Read as _, Write as _};
use std::path::{Path, PathBuf};

use anyhow::Context as _;

/// Whether an existing file at the output path may be replaced (`--force`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Overwrite {
    /// An existing file is an error.
    Refuse,
    /// An existing file is replaced, unless it is a session.
    Replace,
}

/// Writes `bytes` to `path` through a temp file in the same directory renamed into place.
/// `sources` are the session files the output was made from: `path` must not be one of them,
/// nor any other session file, even with [`Overwrite::Replace`].
pub fn write_output(
    path: &Path,
    bytes: &[u8],
    sources: &[&Path],
    overwrite: Overwrite,
) -> anyhow::Result<()> {
    for source in sources {
        if same_file(path, source) {
            anyhow::bail!(
                "{} is the session being read; choose another output path",
                path.display()
            );
        }
    }
    let exists = std::fs::symlink_metadata(path).is_ok();
    if exists {
        if is_session_file(path) {
            anyhow::bail!(
                "{} is a session file; an output never replaces a session",
                path.display()
            );
        }
        if overwrite == Overwrite::Refuse {
            anyhow::bail!(
                "{} already exists; pass --force to replace it, or choose another path",
                path.display()
            );
        }
    }
    let dir = match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let mut temp = tempfile::Builder::new()
        .prefix(".strata-output-")
        .suffix(".tmp")
        .tempfile_in(&dir)
        .with_context(|| format!("creating a temporary file in {}", dir.display()))?;
    temp.write_all(bytes)
        .and_then(|()| temp.as_file().sync_all())
        .with_context(|| format!("writing {}", temp.path().display()))?;
    let persisted = match overwrite {
        // No clobbering even if another process created the file since the check above.
        Overwrite::Refuse => temp.persist_noclobber(path),
        Overwrite::Replace => temp.persist(path),
    };
    persisted
        .map(drop)
        .map_err(|e| e.error)
        .with_context(|| format!("writing {}", path.display()))
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
            assert!(format!("{err:#}").contains("session"), "{err:#}");
        }
        assert_eq!(std::fs::read_to_string(&session).unwrap(), HEADER);
    }

    #[test]
    fn never_replaces_another_session_file() {
        let dir = tempfile::tempdir().unwrap();
        let other = dir.path().join("other.jsonl");
        std::fs::write(&other, HEADER).unwrap();
        let err = write_output(&other, b"<html>", &[], Overwrite::Replace).unwrap_err();
        assert!(format!("{err:#}").contains("is a session file"), "{err:#}");
        assert_eq!(std::fs::read_to_string(&other).unwrap(), HEADER);
    }

    #[test]
    fn an_existing_file_needs_force_and_no_temp_file_is_left() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("page.html");
        std::fs::write(&out, "old").unwrap();
        let err = write_output(&out, b"new", &[], Overwrite::Refuse).unwrap_err();
        assert!(format!("{err:#}").contains("--force"), "{err:#}");
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
