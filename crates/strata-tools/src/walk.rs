//! The directory walk grep and find share: .gitignore respected, dotfiles included, `.git` skipped.

use std::path::{Path, PathBuf};

use ignore::WalkBuilder;
use tokio_util::sync::CancellationToken;

/// One entry found under the root.
pub(crate) struct Entry {
    pub(crate) path: PathBuf,
    pub(crate) is_dir: bool,
}

/// Visits everything under `root` in a stable (sorted) order, until `visit` returns false or
/// `cancel` fires. Returns false if cancelled.
pub(crate) fn walk(
    root: &Path,
    cancel: &CancellationToken,
    mut visit: impl FnMut(Entry) -> bool,
) -> bool {
    let walker = WalkBuilder::new(root)
        .hidden(false)
        .require_git(false)
        .follow_links(false)
        .sort_by_file_name(|a, b| a.cmp(b))
        .filter_entry(|entry| entry.file_name() != ".git")
        .build();
    for entry in walker {
        if cancel.is_cancelled() {
            return false;
        }
        let Ok(entry) = entry else { continue };
        if entry.depth() == 0 {
            continue;
        }
        let is_dir = entry.file_type().is_some_and(|t| t.is_dir());
        if !visit(Entry {
            path: entry.into_path(),
            is_dir,
        }) {
            break;
        }
    }
    true
}

/// Files and directories under `root` (directories with a trailing `/`), relative, in the
/// walk's order, at most `limit`: what the terminal UI's `@` completion offers.
pub fn project_files(root: &Path, limit: usize) -> Vec<String> {
    let mut found = Vec::new();
    walk(root, &CancellationToken::new(), |entry| {
        let mut rel = relative(&entry.path, root);
        if entry.is_dir {
            rel.push('/');
        }
        found.push(rel);
        found.len() < limit
    });
    found
}

/// `path` relative to `root`, with `/` separators.
pub(crate) fn relative(path: &Path, root: &Path) -> String {
    let rel = path.strip_prefix(root).unwrap_or(path);
    rel.components()
        .map(|c| c.as_os_str().to_string_lossy())
        .collect::<Vec<_>>()
        .join("/")
}
