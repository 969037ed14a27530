//! File checkpoints for rewind: every change strata's edit and write tools make, and the
//! changes `bash` makes to a git project's tracked and untracked files, kept beside the
//! session file (`<session>.files/`: `index.jsonl` and content-addressed `blobs/`), never in
//! the session itself. [`Checkpoints::restore`] puts the files back as they were at any
//! point of the tree, given the tool calls on the path to that point.
//!
//! A change is `{call, path, before, after}` with SHA-256 names of the contents (`null`: the
//! file did not exist). A file's state at an entry is the `after` of the last change on the
//! path to it, or, when no change on that path touched it, the `before` of its first
//! recorded change (its content before strata changed it).

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// One recorded change.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Change {
    /// The tool call that made it.
    pub call: String,
    /// The file (absolute).
    pub path: PathBuf,
    /// Content before (`None`: absent).
    pub before: Option<String>,
    /// Content after (`None`: absent).
    pub after: Option<String>,
}

/// A line of `index.jsonl`: a change, or a note that a call's changes cannot be restored.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(untagged)]
enum IndexLine {
    Change(Change),
    Unrestorable { call: String, unrestorable: String },
}

/// The contents of files before a call, for [`Checkpoints::after_files`].
#[derive(Debug, Clone, Default)]
pub struct FileSnap {
    files: Vec<(PathBuf, Option<String>)>,
}

/// A git project's state before a `bash` call, for [`Checkpoints::after_bash`].
#[derive(Debug, Clone)]
pub enum BashSnap {
    /// The project's work tree: dirty files' contents and the index's object ids.
    Git {
        /// The work tree root.
        root: PathBuf,
        /// Files git reports as changed or untracked, with their content then.
        dirty: BTreeMap<PathBuf, Option<String>>,
        /// Tracked paths and their staged object ids.
        staged: BTreeMap<PathBuf, String>,
    },
    /// Not a git project: changes cannot be seen.
    Blind(String),
}

/// What a restore did (or, from [`Checkpoints::preview`], would do).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RestoreReport {
    /// Files written back.
    pub restored: Vec<PathBuf>,
    /// Files removed (they did not exist at that point).
    pub removed: Vec<PathBuf>,
    /// Changes that could not be undone, in words (bash outside a git project, …).
    pub not_restorable: Vec<String>,
}

impl RestoreReport {
    /// Whether any file is (or would be) written or removed.
    pub fn changes_files(&self) -> bool {
        !self.restored.is_empty() || !self.removed.is_empty()
    }
}

/// The store beside one session file.
#[derive(Debug, Clone)]
pub struct Checkpoints {
    dir: PathBuf,
}

impl Checkpoints {
    /// The store for the session file `session` (`<session>.files/`).
    pub fn beside(session: &Path) -> Self {
        let mut name = session.as_os_str().to_owned();
        name.push(".files");
        Self {
            dir: PathBuf::from(name),
        }
    }

    /// Its directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Gives `fork` (the store beside a session forked from this one, whose path holds the
    /// tool calls `calls`) what rewinding there needs. Every record is carried: the disk is
    /// as all of them left it, so a rewind in the fork must know each file strata changed,
    /// on any branch. Only the blobs a rewind there can restore are carried: each file's
    /// content before strata first changed it, and what the calls on the fork's path left.
    /// Blobs are hard-linked where the file system allows (they never change), copied
    /// otherwise. Nothing recorded: nothing written.
    pub fn carry_to(&self, fork: &Checkpoints, calls: &HashSet<String>) -> std::io::Result<()> {
        let lines = self.index()?;
        if lines.is_empty() {
            return Ok(());
        }
        let mut seen: HashSet<&Path> = HashSet::new();
        let mut wanted: BTreeSet<&String> = BTreeSet::new();
        for line in &lines {
            if let IndexLine::Change(change) = line {
                if seen.insert(change.path.as_path())
                    && let Some(before) = &change.before
                {
                    wanted.insert(before);
                }
                if calls.contains(&change.call)
                    && let Some(after) = &change.after
                {
                    wanted.insert(after);
                }
            }
        }
        let blobs = fork.dir.join("blobs");
        std::fs::create_dir_all(&blobs)?;
        for hash in wanted {
            let source = self.dir.join("blobs").join(hash);
            let target = blobs.join(hash);
            if target.exists() || !source.exists() {
                // A store carried before holds only what its own path could restore.
                continue;
            }
            if std::fs::hard_link(&source, &target).is_err() {
                std::fs::copy(&source, &target)?;
            }
        }
        fork.append(&lines)
    }

    fn store(&self, bytes: &[u8]) -> std::io::Result<String> {
        let hash = format!("{:x}", Sha256::digest(bytes));
        let blobs = self.dir.join("blobs");
        let path = blobs.join(&hash);
        if !path.exists() {
            std::fs::create_dir_all(&blobs)?;
            let mut tmp = tempfile::NamedTempFile::new_in(&blobs)?;
            tmp.write_all(bytes)?;
            tmp.persist(&path).map_err(|e| e.error)?;
        }
        Ok(hash)
    }

    fn blob(&self, hash: &str) -> std::io::Result<Vec<u8>> {
        std::fs::read(self.dir.join("blobs").join(hash))
    }

    fn store_file(&self, path: &Path) -> std::io::Result<Option<String>> {
        match std::fs::read(path) {
            Ok(bytes) => self.store(&bytes).map(Some),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) if path.is_dir() => Err(std::io::Error::new(e.kind(), "a directory")),
            Err(e) => Err(e),
        }
    }

    fn append(&self, lines: &[IndexLine]) -> std::io::Result<()> {
        if lines.is_empty() {
            return Ok(());
        }
        std::fs::create_dir_all(&self.dir)?;
        let mut text = String::new();
        for line in lines {
            text.push_str(&serde_json::to_string(line).map_err(std::io::Error::other)?);
            text.push('\n');
        }
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.join("index.jsonl"))?;
        file.write_all(text.as_bytes())
    }

    fn index(&self) -> std::io::Result<Vec<IndexLine>> {
        let text = match std::fs::read_to_string(self.dir.join("index.jsonl")) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(e),
        };
        // A torn last line (a crash mid-write) is skipped, not fatal.
        Ok(text
            .lines()
            .filter_map(|line| serde_json::from_str(line).ok())
            .collect())
    }

    /// Keeps the contents of `paths` before an edit or write call.
    pub fn before_files(&self, paths: &[PathBuf]) -> std::io::Result<FileSnap> {
        let mut files = Vec::new();
        for path in paths {
            files.push((path.clone(), self.store_file(path)?));
        }
        Ok(FileSnap { files })
    }

    /// Records what the call `call` changed of the files in `snap`.
    pub fn after_files(&self, call: &str, snap: &FileSnap) -> std::io::Result<Vec<Change>> {
        let mut changes = Vec::new();
        for (path, before) in &snap.files {
            let after = self.store_file(path)?;
            if after != *before {
                changes.push(Change {
                    call: call.to_owned(),
                    path: path.clone(),
                    before: before.clone(),
                    after,
                });
            }
        }
        let lines: Vec<IndexLine> = changes.iter().cloned().map(IndexLine::Change).collect();
        self.append(&lines)?;
        Ok(changes)
    }

    /// Looks at the git work tree around `cwd` before a bash call.
    pub fn before_bash(&self, cwd: &Path) -> std::io::Result<BashSnap> {
        let Some(root) = git_root(cwd) else {
            return Ok(BashSnap::Blind(
                "not a git repository, so changes made by bash cannot be seen".to_owned(),
            ));
        };
        let mut dirty = BTreeMap::new();
        for path in git_dirty(&root)? {
            let content = self.store_file(&path).unwrap_or(None);
            dirty.insert(path, content);
        }
        Ok(BashSnap::Git {
            staged: git_staged(&root)?,
            root,
            dirty,
        })
    }

    /// Records what the bash call `call` changed since `snap`.
    pub fn after_bash(&self, call: &str, snap: &BashSnap) -> std::io::Result<Vec<Change>> {
        let (root, dirty, staged) = match snap {
            BashSnap::Blind(why) => {
                self.append(&[IndexLine::Unrestorable {
                    call: call.to_owned(),
                    unrestorable: format!("bash call {call}: {why}"),
                }])?;
                return Ok(Vec::new());
            }
            BashSnap::Git {
                root,
                dirty,
                staged,
            } => (root, dirty, staged),
        };
        let dirty_after = git_dirty(root)?;
        let candidates: BTreeSet<&PathBuf> = dirty.keys().chain(dirty_after.iter()).collect();
        let mut changes = Vec::new();
        for path in candidates {
            let before = match dirty.get(path) {
                Some(content) => content.clone(),
                None => match staged.get(path) {
                    Some(oid) => Some(self.store(&git_blob(root, oid)?)?),
                    None => None,
                },
            };
            let after = self.store_file(path).unwrap_or(None);
            if before != after {
                changes.push(Change {
                    call: call.to_owned(),
                    path: path.clone(),
                    before,
                    after,
                });
            }
        }
        let lines: Vec<IndexLine> = changes.iter().cloned().map(IndexLine::Change).collect();
        self.append(&lines)?;
        Ok(changes)
    }

    /// Puts every recorded file back as it was after the calls `on_path` (the tool calls on
    /// the path from the root to the target entry, any order).
    pub fn restore(&self, on_path: &HashSet<String>) -> std::io::Result<RestoreReport> {
        self.walk(on_path, true)
    }

    /// What [`Checkpoints::restore`] would do for `on_path`, nothing written: a front end
    /// offers the restore when this lists a file (the files differ from that point).
    pub fn preview(&self, on_path: &HashSet<String>) -> std::io::Result<RestoreReport> {
        self.walk(on_path, false)
    }

    /// The state of every recorded file after the calls `on_path`, compared with the disk;
    /// `write`: made so.
    fn walk(&self, on_path: &HashSet<String>, write: bool) -> std::io::Result<RestoreReport> {
        let mut first_before: BTreeMap<PathBuf, Option<String>> = BTreeMap::new();
        let mut state_at: BTreeMap<PathBuf, Option<String>> = BTreeMap::new();
        let mut report = RestoreReport::default();
        for line in self.index()? {
            match line {
                IndexLine::Change(change) => {
                    first_before
                        .entry(change.path.clone())
                        .or_insert(change.before.clone());
                    if on_path.contains(&change.call) {
                        state_at.insert(change.path, change.after);
                    }
                }
                IndexLine::Unrestorable { call, unrestorable } => {
                    if !on_path.contains(&call) {
                        report.not_restorable.push(unrestorable);
                    }
                }
            }
        }
        for (path, original) in first_before {
            let wanted = state_at.remove(&path).unwrap_or(original);
            let current = match std::fs::read(&path) {
                Ok(bytes) => Some(format!("{:x}", Sha256::digest(&bytes))),
                Err(_) => None,
            };
            if current == wanted {
                continue;
            }
            match wanted {
                Some(hash) => {
                    if write {
                        let bytes = self.blob(&hash)?;
                        if let Some(parent) = path.parent() {
                            std::fs::create_dir_all(parent)?;
                        }
                        std::fs::write(&path, bytes)?;
                    }
                    report.restored.push(path);
                }
                None => {
                    if write {
                        std::fs::remove_file(&path)?;
                    }
                    report.removed.push(path);
                }
            }
        }
        Ok(report)
    }
}

fn git(root: &Path, args: &[&str]) -> std::io::Result<Vec<u8>> {
    let output = Command::new("git")
        .arg("-C")
        .arg(root)
        .args(args)
        .stdin(std::process::Stdio::null())
        .output()?;
    if !output.status.success() {
        return Err(std::io::Error::other(format!(
            "git {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&output.stderr).trim()
        )));
    }
    Ok(output.stdout)
}

fn git_root(cwd: &Path) -> Option<PathBuf> {
    let out = git(cwd, &["rev-parse", "--show-toplevel"]).ok()?;
    let text = String::from_utf8(out).ok()?;
    Some(PathBuf::from(text.trim_end_matches('\n')))
}

/// Changed, deleted and untracked (not ignored) files, absolute.
fn git_dirty(root: &Path) -> std::io::Result<BTreeSet<PathBuf>> {
    let out = git(
        root,
        &[
            "status",
            "--porcelain=v1",
            "-z",
            "--untracked-files=all",
            "--no-renames",
        ],
    )?;
    Ok(out
        .split(|b| *b == 0)
        .filter(|record| record.len() > 3)
        .map(|record| root.join(String::from_utf8_lossy(&record[3..]).as_ref()))
        .collect())
}

/// Tracked paths and their staged object ids.
fn git_staged(root: &Path) -> std::io::Result<BTreeMap<PathBuf, String>> {
    let out = git(root, &["ls-files", "-s", "-z"])?;
    let mut staged = BTreeMap::new();
    for record in out.split(|b| *b == 0) {
        // `<mode> <oid> <stage>\t<path>`
        let text = String::from_utf8_lossy(record);
        if let Some((meta, path)) = text.split_once('\t')
            && let Some(oid) = meta.split(' ').nth(1)
        {
            staged.insert(root.join(path), oid.to_owned());
        }
    }
    Ok(staged)
}

fn git_blob(root: &Path, oid: &str) -> std::io::Result<Vec<u8>> {
    git(root, &["cat-file", "blob", oid])
}
