//! A session file opened for reading or for appending.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::Value;

use crate::entry::{
    BranchSummaryEntry, CompactionEntry, ContextAction, ContextEditEntry, CustomEntry,
    CustomMessageEntry, Entry, EntryBase, EntryKind, LabelEntry, LeafEntry, MessageEntry,
    ModelChangeEntry, Replacement, SessionInfoEntry, ThinkingLevelChangeEntry, ToolDefinition,
    UsageEntry,
};
use crate::error::{Diagnostic, SessionError};
use crate::fast::lazy::LazyMessage;
use crate::group::{EditGroup, GROUP_FIELD, PlannedEdit};
use crate::header::{CURRENT_VERSION, SessionHeader};
use crate::id::{EntryId, fresh_id, random_u64, uuid_v7};
use crate::message::{AgentMessage, Extra, MessageContent, SystemMessage, Usage};
use crate::time::{format_iso_millis, now_iso, now_millis, now_unix_millis};
use crate::tree::Tree;

/// How appends reach the disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct WriteOptions {
    /// `fsync` (`sync_data`) after every appended line. Off by default, like Pi.
    pub fsync: bool,
}

/// A session just opened, with what was wrong in its file.
#[derive(Debug)]
pub struct Opened {
    /// The session.
    pub session: Session,
    /// Lines skipped or repaired while reading, each naming file and line.
    pub diagnostics: Vec<Diagnostic>,
}

/// A session file: its tree, and when opened for writing, the locked file appends go to.
#[derive(Debug)]
pub struct Session {
    tree: Tree,
    writer: Option<Writer>,
    options: WriteOptions,
}

#[derive(Debug)]
struct Writer {
    /// Shared with the tree, which reads lines through it.
    file: Arc<File>,
    /// The file does not end in a newline (torn line, or a failed write): start the next line with one.
    needs_newline: bool,
    /// The file's length as this writer left it.
    length: u64,
    /// The file's identity (device, inode) when opened, to notice a replacement.
    identity: Option<(u64, u64)>,
    /// Set once the file changed under the writer: every later append is refused too.
    changed: Option<&'static str>,
    /// Where the entries held were saved when the file changed; refused entries follow.
    recovery: Option<PathBuf>,
}

impl Writer {
    /// A writer for `file`, which is `length` bytes long as indexed.
    fn new(
        file: Arc<File>,
        needs_newline: bool,
        length: u64,
        path: &Path,
    ) -> Result<Self, SessionError> {
        let metadata = file.metadata().map_err(|e| SessionError::io(path, e))?;
        Ok(Self {
            file,
            needs_newline,
            length,
            identity: identity(&metadata),
            changed: None,
            recovery: None,
        })
    }

    /// Fails when the path no longer names this file, or the file's length is not what this
    /// writer left: appending then would write to an unlinked file or after someone's bytes.
    fn check_unchanged(&mut self, path: &Path) -> Result<(), SessionError> {
        if self.changed.is_none() {
            let length = self
                .file
                .metadata()
                .map_err(|e| SessionError::io(path, e))?
                .len();
            let same_file = match std::fs::metadata(path) {
                Ok(metadata) => identity(&metadata) == self.identity,
                Err(_) => false,
            };
            self.changed = if !same_file {
                Some("replaced or removed")
            } else if length < self.length {
                Some("truncated")
            } else if length > self.length {
                Some("appended to by another writer")
            } else {
                None
            };
        }
        match self.changed {
            Some(change) => Err(SessionError::FileChanged {
                path: path.to_path_buf(),
                change,
                saved: String::new(),
            }),
            None => Ok(()),
        }
    }
}

#[cfg(unix)]
fn identity(metadata: &std::fs::Metadata) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    Some((metadata.dev(), metadata.ino()))
}

#[cfg(not(unix))]
fn identity(_metadata: &std::fs::Metadata) -> Option<(u64, u64)> {
    None
}

/// Opens `options` on `path` after checking that it names a regular file: a device such as
/// `/dev/zero` would be read forever, and opening a FIFO would block.
fn open_regular(path: &Path, options: &OpenOptions) -> Result<File, SessionError> {
    let metadata = std::fs::metadata(path).map_err(|e| SessionError::io(path, e))?;
    if !metadata.is_file() {
        return Err(SessionError::NotRegularFile {
            path: path.to_path_buf(),
        });
    }
    let file = options.open(path).map_err(|e| SessionError::io(path, e))?;
    // The path may have been swapped between the check and the open.
    let opened = file.metadata().map_err(|e| SessionError::io(path, e))?;
    if !opened.is_file() {
        return Err(SessionError::NotRegularFile {
            path: path.to_path_buf(),
        });
    }
    Ok(file)
}

/// Options creating a file readable by its owner only: sessions hold what tools printed.
fn private_new_file() -> OpenOptions {
    let mut options = OpenOptions::new();
    options.create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    options
}

/// Saves what a writer held when its file changed under it: the first time, a new file beside
/// it (`<name>.recovered-<unix ms>.jsonl`: the header and every entry line the session held,
/// read through its own handle, which still reads a replaced file's bytes), then `line`; later
/// refused lines are appended to the same file. Returns its path.
fn save_recovery(
    tree: &Tree,
    recovery: &mut Option<PathBuf>,
    path: &Path,
    line: &str,
) -> std::io::Result<PathBuf> {
    let mut bytes = Vec::new();
    let target = match recovery {
        Some(target) => target.clone(),
        None => {
            let stem = path
                .file_stem()
                .map_or_else(|| "session".into(), |s| s.to_string_lossy().into_owned());
            let target = path.with_file_name(format!("{stem}.recovered-{}.jsonl", now_millis()));
            let header = tree
                .header()
                .to_json_line()
                .map_err(std::io::Error::other)?;
            bytes.extend_from_slice(header.as_bytes());
            bytes.push(b'\n');
            for entry in tree.iter() {
                let held = entry.raw_line();
                if !held.is_empty() {
                    bytes.extend_from_slice(held.as_bytes());
                    bytes.push(b'\n');
                }
            }
            target
        }
    };
    bytes.extend_from_slice(line.as_bytes());
    bytes.push(b'\n');
    let mut options = if recovery.is_some() {
        let mut options = OpenOptions::new();
        options.append(true);
        options
    } else {
        private_new_file()
    };
    options.write(true).open(&target)?.write_all(&bytes)?;
    *recovery = Some(target.clone());
    Ok(target)
}

/// Indexes the file; its lines stay on disk, read through `file` when asked for.
fn read_tree(path: &Path, file: Arc<File>) -> Result<(Tree, Vec<Diagnostic>), SessionError> {
    Tree::open_file(path, file)
}

fn lock(path: &Path, file: &File) -> Result<(), SessionError> {
    match file.try_lock() {
        Ok(()) => Ok(()),
        Err(std::fs::TryLockError::WouldBlock) => Err(SessionError::Locked {
            path: path.to_path_buf(),
        }),
        Err(std::fs::TryLockError::Error(error)) => Err(SessionError::io(path, error)),
    }
}

impl Session {
    /// Opens a session file read-only (no lock). Damaged lines are skipped and reported.
    pub fn open(path: impl AsRef<Path>) -> Result<Opened, SessionError> {
        let path = path.as_ref();
        let file = open_regular(path, OpenOptions::new().read(true))?;
        let (tree, diagnostics) = read_tree(path, Arc::new(file))?;
        Ok(Opened {
            session: Self {
                tree,
                writer: None,
                options: WriteOptions::default(),
            },
            diagnostics,
        })
    }

    /// Opens a session file for appending: takes its advisory lock (a second writer gets
    /// [`SessionError::Locked`]), then reads it. Version 1 files are refused
    /// ([`SessionError::LegacyFormat`]): fork them first. A group of edits cut short at the
    /// leaf is completed by appending ([`Session::complete_unfinished_group`]).
    pub fn open_writable(
        path: impl AsRef<Path>,
        options: WriteOptions,
    ) -> Result<Opened, SessionError> {
        let path = path.as_ref();
        let file = Arc::new(open_regular(
            path,
            OpenOptions::new().read(true).append(true),
        )?);
        lock(path, &file)?;
        let (tree, diagnostics) = read_tree(path, Arc::clone(&file))?;
        if tree.version() < 2 {
            return Err(SessionError::LegacyFormat {
                path: path.to_path_buf(),
                version: tree.version(),
            });
        }
        if tree.version() > CURRENT_VERSION {
            return Err(SessionError::UnsupportedVersion {
                path: path.to_path_buf(),
                version: tree.version(),
                supported: CURRENT_VERSION,
            });
        }
        let needs_newline = tree.ends_without_newline();
        let writer = Writer::new(file, needs_newline, tree.text_len() as u64, path)?;
        let mut session = Self {
            tree,
            writer: Some(writer),
            options,
        };
        // A decision cut short at the tail is finished before anything else is appended.
        session.complete_unfinished_group()?;
        Ok(Opened {
            session,
            diagnostics,
        })
    }

    /// Creates a new session file at `path` (which must not exist) for `cwd`, writes its header
    /// and keeps it open for appending.
    pub fn create(
        path: impl AsRef<Path>,
        cwd: &str,
        options: WriteOptions,
    ) -> Result<Self, SessionError> {
        Self::create_with_header(path, new_header(cwd, None), options)
    }

    /// Creates a new session file with the given header (see [`new_header`]).
    pub fn create_with_header(
        path: impl AsRef<Path>,
        header: SessionHeader,
        options: WriteOptions,
    ) -> Result<Self, SessionError> {
        let path = path.as_ref();
        if let Some(dir) = path.parent().filter(|dir| !dir.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| SessionError::io(dir, e))?;
        }
        let mut file = private_new_file()
            .read(true)
            .append(true)
            .open(path)
            .map_err(|e| {
                if e.kind() == std::io::ErrorKind::AlreadyExists {
                    SessionError::AlreadyExists {
                        path: path.to_path_buf(),
                    }
                } else {
                    SessionError::io(path, e)
                }
            })?;
        lock(path, &file)?;
        let line = header
            .to_json_line()
            .map_err(|source| SessionError::Serialize {
                path: path.to_path_buf(),
                entry_type: "session".into(),
                source,
            })?;
        let mut bytes = line.into_bytes();
        bytes.push(b'\n');
        file.write_all(&bytes)
            .map_err(|e| SessionError::io(path, e))?;
        if options.fsync {
            file.sync_all().map_err(|e| SessionError::io(path, e))?;
        }
        let length = bytes.len() as u64;
        let (tree, _) = Tree::parse(path, bytes)?;
        let writer = Writer::new(Arc::new(file), false, length, path)?;
        Ok(Self {
            tree,
            writer: Some(writer),
            options,
        })
    }

    /// The tree of entries.
    pub fn tree(&self) -> &Tree {
        &self.tree
    }

    /// The session file.
    pub fn path(&self) -> &Path {
        self.tree.path()
    }

    /// The header line.
    pub fn header(&self) -> &SessionHeader {
        self.tree.header()
    }

    /// Whether this session was opened for appending.
    pub fn is_writable(&self) -> bool {
        self.writer.is_some()
    }

    /// The current position (see [`Tree::leaf`]).
    pub fn leaf(&self) -> Option<&EntryId> {
        self.tree.leaf()
    }

    fn require_entry(&self, id: &EntryId) -> Result<(), SessionError> {
        if self.tree.contains(id.as_str()) {
            Ok(())
        } else {
            Err(SessionError::UnknownEntry {
                path: self.path().to_path_buf(),
                id: id.clone(),
            })
        }
    }

    /// Appends an entry as a child of the leaf and makes it the leaf. Its id and parent are
    /// assigned here (the ones in `base` are replaced); an empty timestamp becomes now.
    /// Writes exactly one line with one write call.
    pub fn append(&mut self, entry: Entry) -> Result<EntryId, SessionError> {
        if let Entry::Leaf(_) = entry {
            return Err(SessionError::InvalidArgument {
                path: self.path().to_path_buf(),
                reason: "`leaf` entries are written by move_leaf, not append".into(),
            });
        }
        let parent = self.tree.leaf().cloned();
        self.write_entry(entry, parent)
    }

    fn write_entry(
        &mut self,
        mut entry: Entry,
        parent: Option<EntryId>,
    ) -> Result<EntryId, SessionError> {
        let path = self.tree.path().to_path_buf();
        let Some(writer) = self.writer.as_mut() else {
            return Err(SessionError::ReadOnly { path });
        };
        let unchanged = writer.check_unchanged(&path);
        let id = fresh_id(|candidate| self.tree.contains(candidate));
        let base = entry.base_mut();
        base.id = id.clone();
        base.parent_id = parent;
        if base.timestamp.is_empty() {
            base.timestamp = now_iso();
        }
        let line = entry
            .to_json_line()
            .map_err(|source| SessionError::Serialize {
                path: path.clone(),
                entry_type: entry.type_name().to_owned(),
                source,
            })?;
        if let Err(SessionError::FileChanged { path, change, .. }) = unchanged {
            let saved = match save_recovery(&self.tree, &mut writer.recovery, &path, &line) {
                Ok(recovery) => format!(
                    "; the entries it held and the one refused are saved in {}",
                    recovery.display()
                ),
                Err(error) => format!("; saving the entries it held failed too: {error}"),
            };
            return Err(SessionError::FileChanged {
                path,
                change,
                saved,
            });
        }
        unchanged?;
        let mut bytes = Vec::with_capacity(line.len() + 2);
        if writer.needs_newline {
            bytes.push(b'\n');
        }
        bytes.extend_from_slice(line.as_bytes());
        bytes.push(b'\n');
        if let Err(error) = (&*writer.file).write_all(&bytes) {
            // Part of the line may be on disk: make the next append start a fresh line, from
            // wherever the file now ends.
            writer.needs_newline = true;
            if let Ok(metadata) = writer.file.metadata() {
                writer.length = metadata.len();
            }
            return Err(SessionError::io(path, error));
        }
        writer.length += bytes.len() as u64;
        writer.needs_newline = false;
        if self.options.fsync {
            writer
                .file
                .sync_data()
                .map_err(|e| SessionError::io(&path, e))?;
        }
        self.tree.push_appended(line, &entry);
        Ok(id)
    }

    /// Appends a `message` entry.
    pub fn append_message(&mut self, message: AgentMessage) -> Result<EntryId, SessionError> {
        self.append(Entry::Message(MessageEntry {
            base: EntryBase::pending(),
            message: LazyMessage::new(message),
            extra: Extra::new(),
        }))
    }

    /// Appends a `compaction` entry (with strata's optional `system` and `tools` snapshots).
    pub fn append_compaction(
        &mut self,
        compaction: CompactionEntry,
    ) -> Result<EntryId, SessionError> {
        self.append(Entry::Compaction(Box::new(compaction)))
    }

    /// Appends a system message (Pi 1.x's `message` with `role: "system"`): changed
    /// sections, tools added and tools removed. The first on a path declares everything.
    pub fn append_system(
        &mut self,
        sections: BTreeMap<String, String>,
        tools_added: Vec<ToolDefinition>,
        tools_removed: Vec<String>,
    ) -> Result<EntryId, SessionError> {
        let message = SystemMessage::new(
            sections.into_iter().map(|(name, text)| (name, Some(text))),
            tools_added,
            tools_removed,
            now_unix_millis(),
        );
        self.append_message(AgentMessage::System(message))
    }

    /// Appends a system message as given (sections in its own order, which Pi renders them
    /// in).
    pub fn append_system_message(
        &mut self,
        message: SystemMessage,
    ) -> Result<EntryId, SessionError> {
        self.append_message(AgentMessage::System(message))
    }

    /// Excludes `targets` from context: one Pi 1.x `context_edit` with `replacement: null`
    /// per target (for [`ContextAction::Exclude`]). Returns the last edit's id. Every target
    /// must exist; nothing is written otherwise.
    pub fn append_context_edit(
        &mut self,
        targets: Vec<EntryId>,
        action: ContextAction,
    ) -> Result<EntryId, SessionError> {
        for target in &targets {
            self.require_entry(target)?;
        }
        if action != ContextAction::Exclude {
            // An action Pi has no shape for keeps strata's earlier form, which Pi ignores.
            return self.append(Entry::ContextEdit(Box::new(ContextEditEntry {
                base: EntryBase::pending(),
                target_id: None,
                replacement: None,
                targets,
                action: Some(action),
                extra: Extra::new(),
            })));
        }
        let ids = self.append_edit_group(
            targets
                .into_iter()
                .map(|target| PlannedEdit {
                    target_id: target,
                    replacement: None,
                })
                .collect(),
        )?;
        ids.last()
            .cloned()
            .ok_or_else(|| SessionError::InvalidArgument {
                path: self.path().to_path_buf(),
                reason: "a context edit needs at least one target".into(),
            })
    }

    /// Appends the Pi 1.x `context_edit`s of one decision (a fold, a masking batch) so that
    /// they count only together: with more than one, each carries a `strataGroup` marker
    /// (the first also the rest of the plan), and readers ignore a group not every member of
    /// which is on the path (see [`crate::counted_edits`]). Returns the edits' ids, in order. Every
    /// target must exist; nothing is written otherwise.
    pub fn append_edit_group(
        &mut self,
        edits: Vec<PlannedEdit>,
    ) -> Result<Vec<EntryId>, SessionError> {
        for edit in &edits {
            self.require_entry(&edit.target_id)?;
        }
        if edits.len() < 2 {
            return edits
                .into_iter()
                .map(|edit| self.append_edit(edit.target_id, edit.replacement, None))
                .collect();
        }
        let size = u32::try_from(edits.len()).map_err(|_| SessionError::InvalidArgument {
            path: self.path().to_path_buf(),
            reason: "too many edits for one group".into(),
        })?;
        let group_id = format!("{:016x}", random_u64());
        let rest = edits[1..].to_vec();
        let mut ids = Vec::with_capacity(edits.len());
        for (index, edit) in (0..size).zip(edits) {
            let group = EditGroup {
                id: group_id.clone(),
                index,
                size,
                rest: if index == 0 { rest.clone() } else { Vec::new() },
            };
            ids.push(self.append_edit(edit.target_id, edit.replacement, Some(group))?);
        }
        Ok(ids)
    }

    /// Completes a group of edits cut short at the leaf (a kill or a full disk between its
    /// lines) by appending the rest of its plan, so that every reader, Pi too, sees the
    /// decision whole; nothing is rewritten. Returns the ids appended (none when the leaf is
    /// no unfinished group, or its first member cannot be found).
    pub fn complete_unfinished_group(&mut self) -> Result<Vec<EntryId>, SessionError> {
        let Some(leaf) = self.tree.leaf().cloned() else {
            return Ok(Vec::new());
        };
        let Ok(Entry::ContextEdit(last)) = self.tree.entry(&leaf) else {
            return Ok(Vec::new());
        };
        let Some(last_group) = last.group() else {
            return Ok(Vec::new());
        };
        if last_group.index + 1 >= last_group.size {
            return Ok(Vec::new());
        }
        // Back along the parents to the first member: each one the previous index.
        let mut at = leaf;
        let mut first = last_group.clone();
        while first.index > 0 {
            let Some(parent) = self.tree.parent_of(&at).cloned() else {
                return Ok(Vec::new());
            };
            let Ok(Entry::ContextEdit(edit)) = self.tree.entry(&parent) else {
                return Ok(Vec::new());
            };
            match edit.group() {
                Some(group) if group.id == first.id && group.index + 1 == first.index => {
                    first = group;
                }
                _ => return Ok(Vec::new()),
            }
            at = parent;
        }
        if first.rest.len() + 1 != first.size as usize {
            return Ok(Vec::new());
        }
        let mut ids = Vec::new();
        for index in last_group.index + 1..first.size {
            let Some(edit) = first.rest.get(index as usize - 1).cloned() else {
                break;
            };
            let group = EditGroup {
                id: first.id.clone(),
                index,
                size: first.size,
                rest: Vec::new(),
            };
            ids.push(self.append_edit(edit.target_id, edit.replacement, Some(group))?);
        }
        Ok(ids)
    }

    /// Appends a Pi 1.x `context_edit` replacing `target`'s content with `content` (a string
    /// or content blocks) in later contexts; the entry itself stays as written.
    pub fn append_context_replacement(
        &mut self,
        target: &EntryId,
        content: Value,
    ) -> Result<EntryId, SessionError> {
        self.require_entry(target)?;
        let replacement = Replacement {
            content: Some(content),
            extra: Extra::new(),
        };
        self.append_edit(target.clone(), Some(replacement), None)
    }

    fn append_edit(
        &mut self,
        target: EntryId,
        replacement: Option<Replacement>,
        group: Option<EditGroup>,
    ) -> Result<EntryId, SessionError> {
        let mut extra = Extra::new();
        if let Some(group) = group {
            let value = serde_json::to_value(&group).map_err(|source| SessionError::Serialize {
                path: self.path().to_path_buf(),
                entry_type: "context_edit".into(),
                source,
            })?;
            extra.insert(GROUP_FIELD.into(), value);
        }
        self.append(Entry::ContextEdit(Box::new(ContextEditEntry {
            base: EntryBase::pending(),
            target_id: Some(target),
            replacement: Some(replacement),
            targets: Vec::new(),
            action: None,
            extra,
        })))
    }

    /// Appends a `usage` entry (Pi 1.x): a request's usage that is no message, such as a
    /// keep-warm ping (kind [`crate::CACHE_WARM_KIND`]). Counted in totals, never in context.
    pub fn append_usage(
        &mut self,
        kind: &str,
        provider: &str,
        model: &str,
        usage: Usage,
    ) -> Result<EntryId, SessionError> {
        self.append(Entry::Usage(Box::new(UsageEntry {
            base: EntryBase::pending(),
            kind: kind.to_owned(),
            provider: provider.to_owned(),
            model: model.to_owned(),
            usage,
            note: None,
            extra: Extra::new(),
        })))
    }

    /// Appends a `model_change` entry.
    pub fn append_model_change(
        &mut self,
        provider: &str,
        model_id: &str,
    ) -> Result<EntryId, SessionError> {
        self.append(Entry::ModelChange(ModelChangeEntry {
            base: EntryBase::pending(),
            provider: provider.to_owned(),
            model_id: model_id.to_owned(),
            extra: Extra::new(),
        }))
    }

    /// Appends a `thinking_level_change` entry.
    pub fn append_thinking_level_change(&mut self, level: &str) -> Result<EntryId, SessionError> {
        self.append(Entry::ThinkingLevelChange(ThinkingLevelChangeEntry {
            base: EntryBase::pending(),
            thinking_level: level.to_owned(),
            extra: Extra::new(),
        }))
    }

    /// Sets (`Some`) or clears (`None` or empty) the label of `target`. Like Pi, the `label`
    /// entry is a child of the leaf and becomes the leaf.
    pub fn append_label(
        &mut self,
        target: &EntryId,
        label: Option<&str>,
    ) -> Result<EntryId, SessionError> {
        self.require_entry(target)?;
        self.append(Entry::Label(LabelEntry {
            base: EntryBase::pending(),
            target_id: target.clone(),
            label: label.filter(|label| !label.is_empty()).map(str::to_owned),
            extra: Extra::new(),
        }))
    }

    /// Names the session (an empty name clears it); the name is trimmed, as Pi does.
    pub fn append_session_info(&mut self, name: &str) -> Result<EntryId, SessionError> {
        self.append(Entry::SessionInfo(SessionInfoEntry {
            base: EntryBase::pending(),
            name: Some(name.trim().to_owned()),
            extra: Extra::new(),
        }))
    }

    /// Appends an extension's `custom` entry (never in context).
    pub fn append_custom(
        &mut self,
        custom_type: &str,
        data: Option<Value>,
    ) -> Result<EntryId, SessionError> {
        self.append(Entry::Custom(CustomEntry {
            base: EntryBase::pending(),
            custom_type: custom_type.to_owned(),
            data,
            extra: Extra::new(),
        }))
    }

    /// Appends an extension's `custom_message` entry (enters context as a user message).
    pub fn append_custom_message(
        &mut self,
        custom_type: &str,
        content: MessageContent,
        display: bool,
        details: Option<Value>,
    ) -> Result<EntryId, SessionError> {
        self.append(Entry::CustomMessage(CustomMessageEntry {
            base: EntryBase::pending(),
            custom_type: custom_type.to_owned(),
            content,
            display,
            details,
            extra: Extra::new(),
        }))
    }

    /// Moves to `target` (or before the first entry with `None`) and appends a `branch_summary`
    /// there, as Pi's `branchWithSummary`: its parent is the target and its `fromId` is the
    /// target's id (`"root"` for none). The summary becomes the leaf.
    pub fn branch_with_summary(
        &mut self,
        target: Option<&EntryId>,
        summary: &str,
        details: Option<Value>,
        from_hook: Option<bool>,
    ) -> Result<EntryId, SessionError> {
        self.branch_with_summary_usage(target, summary, details, from_hook, None)
    }

    /// [`Self::branch_with_summary`] with the summary request's usage on the entry (Pi 1.x's
    /// `usage` field, counted in totals).
    pub fn branch_with_summary_usage(
        &mut self,
        target: Option<&EntryId>,
        summary: &str,
        details: Option<Value>,
        from_hook: Option<bool>,
        usage: Option<Usage>,
    ) -> Result<EntryId, SessionError> {
        if let Some(target) = target {
            self.require_entry(target)?;
        }
        let entry = Entry::BranchSummary(Box::new(BranchSummaryEntry {
            base: EntryBase::pending(),
            from_id: target.map_or_else(|| "root".to_owned(), |id| id.to_string()),
            summary: summary.to_owned(),
            details,
            from_hook,
            usage,
            extra: Extra::new(),
        }));
        self.write_entry(entry, target.cloned())
    }

    /// Moves the leaf to `target` (`None`: before the first entry) without adding to the
    /// conversation, by appending a `leaf` entry whose `parentId` is the new position, so the
    /// move survives a restart. Returns the `leaf` entry's id.
    pub fn move_leaf(&mut self, target: Option<&EntryId>) -> Result<EntryId, SessionError> {
        if let Some(target) = target {
            self.require_entry(target)?;
        }
        let entry = Entry::Leaf(LeafEntry {
            base: EntryBase::pending(),
            extra: Extra::new(),
        });
        self.write_entry(entry, target.cloned())
    }

    /// Moves the leaf to `target` (Pi's `branch(id)`); persisted like [`Session::move_leaf`].
    pub fn branch(&mut self, target: &EntryId) -> Result<EntryId, SessionError> {
        self.move_leaf(Some(target))
    }

    /// Moves the leaf before the first entry (Pi's `resetLeaf`); the next append starts a new root.
    pub fn reset_leaf(&mut self) -> Result<EntryId, SessionError> {
        self.move_leaf(None)
    }

    /// Writes a new session file at `new_path` holding the path from the root to `leaf`
    /// (`None`: no entries), with a header whose `parentSession` is this file. Lines are copied
    /// byte for byte (v1/v2 files: as migrated). Labels set on entries of the path by entries
    /// off it are re-created at the end, as Pi does. Works on read-only sessions.
    pub fn fork(
        &self,
        leaf: Option<&EntryId>,
        new_path: impl AsRef<Path>,
    ) -> Result<PathBuf, SessionError> {
        self.fork_with_header_fields(leaf, new_path, Extra::new())
    }

    /// [`Session::fork`] with `fields` added to the new header (over the ones copied from this
    /// file's header): a child agent's file names the entry that spawned it this way, in fields
    /// Pi keeps but does not read.
    pub fn fork_with_header_fields(
        &self,
        leaf: Option<&EntryId>,
        new_path: impl AsRef<Path>,
        fields: Extra,
    ) -> Result<PathBuf, SessionError> {
        let new_path = new_path.as_ref();
        let tree = &self.tree;
        let mut path_indices = Vec::new();
        if let Some(leaf) = leaf {
            self.require_entry(leaf)?;
            path_indices = tree
                .walk_to_root(leaf.as_str())
                .filter_map(|e| tree.index_of(e.id().as_str()))
                .collect();
            path_indices.reverse();
        }
        let mut out = String::new();
        let mut header = new_header(
            &tree.header().cwd,
            Some(self.path().to_string_lossy().into_owned()),
        );
        header.extra = tree.header().extra.clone();
        header.extra.extend(fields);
        let header_line = header
            .to_json_line()
            .map_err(|source| SessionError::Serialize {
                path: new_path.to_path_buf(),
                entry_type: "session".into(),
                source,
            })?;
        out.push_str(&header_line);
        out.push('\n');
        let mut on_path: HashSet<&str> = HashSet::new();
        // Label state as the copied lines alone would leave it.
        let mut copied_labels: HashMap<String, Option<String>> = HashMap::new();
        for &index in &path_indices {
            let Some(entry) = tree.get_index(index) else {
                continue;
            };
            on_path.insert(entry.id().as_str());
            out.push_str(&tree.v3_line(index)?);
            out.push('\n');
            if entry.kind() == EntryKind::Label
                && let Ok(Entry::Label(label)) = entry.entry()
            {
                let text = label.label.filter(|text| !text.is_empty());
                copied_labels.insert(label.target_id.to_string(), text);
            }
        }
        // Re-create labels whose final state differs from what the copied lines give.
        let mut fixes: Vec<(String, Option<String>, String)> = Vec::new();
        for &index in &path_indices {
            let Some(entry) = tree.get_index(index) else {
                continue;
            };
            let id = entry.id().as_str();
            let wanted = tree.label_of(id).map(str::to_owned);
            let copied = copied_labels.get(id).cloned().flatten();
            if wanted != copied {
                let timestamp = tree.label_timestamp(id).map_or_else(now_iso, str::to_owned);
                fixes.push((id.to_owned(), wanted, timestamp));
            }
        }
        let mut parent = path_indices
            .last()
            .and_then(|&i| tree.get_index(i))
            .map(|e| e.id().clone());
        let mut taken: HashSet<String> = on_path.iter().map(|id| (*id).to_owned()).collect();
        for (target, label, timestamp) in fixes {
            let id = fresh_id(|candidate| taken.contains(candidate));
            taken.insert(id.to_string());
            let entry = Entry::Label(LabelEntry {
                base: EntryBase {
                    id: id.clone(),
                    parent_id: parent.clone(),
                    timestamp,
                },
                target_id: EntryId::from(target),
                label,
                extra: Extra::new(),
            });
            let line = entry
                .to_json_line()
                .map_err(|source| SessionError::Serialize {
                    path: new_path.to_path_buf(),
                    entry_type: "label".into(),
                    source,
                })?;
            out.push_str(&line);
            out.push('\n');
            parent = Some(id);
        }
        if let Some(dir) = new_path.parent().filter(|dir| !dir.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| SessionError::io(dir, e))?;
        }
        let mut file = private_new_file().write(true).open(new_path).map_err(|e| {
            if e.kind() == std::io::ErrorKind::AlreadyExists {
                SessionError::AlreadyExists {
                    path: new_path.to_path_buf(),
                }
            } else {
                SessionError::io(new_path, e)
            }
        })?;
        file.write_all(out.as_bytes())
            .map_err(|e| SessionError::io(new_path, e))?;
        file.sync_all().map_err(|e| SessionError::io(new_path, e))?;
        Ok(new_path.to_path_buf())
    }
}

/// A version 3 header for a new session: a fresh UUIDv7 id, now, `cwd`, and the parent file if forked.
pub fn new_header(cwd: &str, parent_session: Option<String>) -> SessionHeader {
    let millis = now_millis();
    SessionHeader {
        version: Some(CURRENT_VERSION),
        id: uuid_v7(millis),
        timestamp: format_iso_millis(millis as i64),
        cwd: cwd.to_owned(),
        parent_session,
        extra: Extra::new(),
    }
}
