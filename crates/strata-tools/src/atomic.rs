//! Replacing a file's contents all at once: a reader sees the old file or the new one, never half.

use std::io::{self, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// Mode of a file that did not exist before (before the umask, as `open` would apply it).
const NEW_FILE_MODE: u32 = 0o644;

/// Writes `bytes` to a temp file beside `path`, syncs it, and renames it over `path`.
/// A symlink is written through (its target is replaced, the link stays); an existing file's
/// permissions are kept. On failure the temp file is removed and `path` is untouched.
pub(crate) fn atomic_write(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let target = write_target(path);
    let dir = match target.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let permissions = std::fs::metadata(&target).ok().map(|m| m.permissions());
    let mut temp = tempfile::Builder::new()
        .prefix(".strata-write-")
        .suffix(".tmp")
        .tempfile_in(&dir)?;
    temp.write_all(bytes)?;
    temp.as_file().sync_all()?;
    let permissions = permissions.unwrap_or_else(|| std::fs::Permissions::from_mode(NEW_FILE_MODE));
    temp.as_file().set_permissions(permissions)?;
    temp.persist(&target).map_err(|e| e.error)?;
    Ok(())
}

/// The file a write to `path` must replace: the end of a symlink chain, if `path` is a link.
fn write_target(path: &Path) -> PathBuf {
    match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.file_type().is_symlink() => {
            std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf())
        }
        _ => path.to_path_buf(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replaces_contents_keeps_mode_and_leaves_no_temp_file() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("script.sh");
        std::fs::write(&file, "old").unwrap();
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o755)).unwrap();
        atomic_write(&file, b"new").unwrap();
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "new");
        let mode = std::fs::metadata(&file).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o755);
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, vec![std::ffi::OsString::from("script.sh")]);
    }

    #[test]
    fn writes_through_a_symlink() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("real.txt");
        let link = dir.path().join("link.txt");
        std::fs::write(&real, "old").unwrap();
        std::os::unix::fs::symlink(&real, &link).unwrap();
        atomic_write(&link, b"new").unwrap();
        assert!(
            std::fs::symlink_metadata(&link)
                .unwrap()
                .file_type()
                .is_symlink()
        );
        assert_eq!(std::fs::read_to_string(&real).unwrap(), "new");
    }
}
