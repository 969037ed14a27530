//! What a call touches on disk, to decide which calls of a batch may run together.

use std::path::{Path, PathBuf};

/// The paths one call reads and writes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Access {
    /// Touches nothing on disk that another call could see (e.g. an invalid call).
    None,
    /// Reads these paths (a directory covers everything under it).
    Read(Vec<PathBuf>),
    /// Writes these paths.
    Write(Vec<PathBuf>),
    /// Runs a shell command: may write anything, so it conflicts with every writer and every
    /// other shell command, but not with readers.
    Shell,
    /// Must run alone (unknown tools).
    Exclusive,
    /// Hands the work to a child agent whose own calls are scheduled and judged one by one:
    /// conflicts with nothing, and the permission rules see it as a delegation.
    Delegate,
}

impl Access {
    /// Whether two calls must run one after the other.
    pub fn conflicts_with(&self, other: &Access) -> bool {
        use Access::{Delegate, Exclusive, None, Read, Shell, Write};
        match (self, other) {
            (None | Delegate, _) | (_, None | Delegate) => false,
            (Exclusive, _) | (_, Exclusive) => true,
            (Shell, Shell) | (Shell, Write(_)) | (Write(_), Shell) => true,
            (Shell, Read(_)) | (Read(_), Shell) | (Read(_), Read(_)) => false,
            (Write(a), Write(b)) | (Write(a), Read(b)) | (Read(b), Write(a)) => overlaps(a, b),
        }
    }
}

/// Whether any written path equals, contains or lies inside any other path.
fn overlaps(written: &[PathBuf], touched: &[PathBuf]) -> bool {
    written
        .iter()
        .any(|w| touched.iter().any(|t| w.starts_with(t) || t.starts_with(w)))
}

/// The path a call names, made absolute against `cwd`, with `.` and `..` resolved and symlinks
/// followed as far as the path exists, so that two spellings of one file compare equal.
pub fn canonical_path(path: &Path, cwd: &Path) -> PathBuf {
    let absolute = lexical_normalize(&cwd.join(path));
    if let Ok(real) = std::fs::canonicalize(&absolute) {
        return real;
    }
    // The file may not exist yet (write creates it): canonicalize its nearest existing parent.
    let mut tail = Vec::new();
    let mut current = absolute.as_path();
    while let Some(parent) = current.parent() {
        if let Some(name) = current.file_name() {
            tail.push(name.to_owned());
        }
        if let Ok(real) = std::fs::canonicalize(parent) {
            let mut result = real;
            for name in tail.iter().rev() {
                result.push(name);
            }
            return result;
        }
        current = parent;
    }
    absolute
}

/// `a/./b/../c` → `a/c`, without touching the file system.
pub(crate) fn lexical_normalize(path: &Path) -> PathBuf {
    use std::path::Component;
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() {
                    out.push(component);
                }
            }
            other => out.push(other),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> Vec<PathBuf> {
        vec![PathBuf::from(s)]
    }

    #[test]
    fn writes_to_one_file_conflict_and_to_two_files_do_not() {
        assert!(Access::Write(p("/a/x")).conflicts_with(&Access::Write(p("/a/x"))));
        assert!(!Access::Write(p("/a/x")).conflicts_with(&Access::Write(p("/a/y"))));
    }

    #[test]
    fn a_directory_read_conflicts_with_a_write_inside_it() {
        assert!(Access::Read(p("/a")).conflicts_with(&Access::Write(p("/a/b/c"))));
        assert!(!Access::Read(p("/a")).conflicts_with(&Access::Read(p("/a/b"))));
    }

    #[test]
    fn shell_conflicts_with_writers_and_shells_only() {
        assert!(Access::Shell.conflicts_with(&Access::Shell));
        assert!(Access::Shell.conflicts_with(&Access::Write(p("/x"))));
        assert!(!Access::Shell.conflicts_with(&Access::Read(p("/x"))));
        assert!(Access::Exclusive.conflicts_with(&Access::Read(p("/x"))));
        assert!(!Access::None.conflicts_with(&Access::Exclusive));
    }

    #[test]
    fn lexical_normalize_resolves_dots() {
        assert_eq!(
            lexical_normalize(Path::new("/a/./b/../c")),
            PathBuf::from("/a/c")
        );
    }

    #[test]
    fn canonical_path_of_a_missing_file_keeps_its_name_under_the_real_parent() {
        let dir = tempfile::tempdir().unwrap();
        let got = canonical_path(Path::new("new/sub/file.txt"), dir.path());
        let real = std::fs::canonicalize(dir.path()).unwrap();
        assert_eq!(got, real.join("new/sub/file.txt"));
    }
}
