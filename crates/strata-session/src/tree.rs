//! The in-memory index of a session file: one compact node per entry (its id, parent, type and
//! where its line is in the file), with lines read and parsed into typed values only when asked
//! for. An opened file is indexed in one streaming pass and never held in memory: memory grows
//! with the number of entries, not with their bytes.

use std::borrow::Cow;
use std::collections::HashMap;
use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use serde_json::{Map, Value};

use crate::entry::{Entry, EntryKind, FastParse, FieldParse, Role};
use crate::error::{Diagnostic, Problem, SessionError, serde_reason};
use crate::fast::lazy::{FileSpan, LazyMessage, MessageRead};
use crate::fast::scan::{
    Parent, ScanError, Scanned, scan_entry, scan_pi_layout, scan_pi_tree_fields, scan_prefix,
};
use crate::header::{CURRENT_VERSION, SessionHeader};
use crate::id::{EntryId, IdHasher};
use crate::time::parse_iso_millis;

mod builder;
mod ids;
mod indexer;
mod io;
mod sidecar;
#[cfg(test)]
mod tests;

use builder::*;
use ids::*;
use indexer::*;
pub(crate) use io::read_exact_at;
use io::*;

pub use sidecar::sidecar_path;

const NONE: u32 = u32::MAX;

/// How much of a file is read before its lines are indexed: small enough to stay in cache.
const READ_BLOCK: usize = 256 * 1024;

/// Blocks in flight between the reading thread and the indexer.
const BLOCKS_IN_FLIGHT: usize = 4;

/// The most bytes [`Tree::entries`] reads at once.
const RUN_BYTES: usize = 1 << 20;

/// A gap between two wanted lines that [`Tree::entries`] reads over rather than seek past.
const RUN_GAP: usize = 64 * 1024;

/// Files from this size on are read on a second thread while being indexed.
const OVERLAP_FROM: u64 = 8 << 20;

/// Where the lines of the opened text are.
#[derive(Debug, Clone)]
enum Text {
    /// All in memory (a tree parsed from bytes).
    Memory(Vec<u8>),
    /// In the file, read line by line when asked for.
    File(Arc<File>),
}

#[derive(Debug, Clone)]
struct Node {
    /// Offset of the line in the text space (the opened text, then appended lines).
    start: usize,
    len: u32,
    line: u32,
    id: EntryId,
    parent: u32,
    kind: EntryKind,
}

impl Node {
    /// A node that stands for nothing (where a decode failed, before the whole is refused).
    fn placeholder() -> Self {
        Self {
            start: 0,
            len: 0,
            line: 0,
            id: EntryId::new(""),
            parent: NONE,
            kind: EntryKind::Unknown,
        }
    }
}

/// A label on an entry, with the time it was set.
#[derive(Debug, Clone, PartialEq, Eq)]
struct LabelState {
    text: String,
    timestamp: String,
}

/// The entries of one session file as a tree, with the current leaf, labels and name.
///
/// Entries are kept as their raw JSON lines; [`Tree::entry`] parses one into a typed [`Entry`]
/// on demand.
#[derive(Debug, Clone)]
pub struct Tree {
    path: PathBuf,
    header: SessionHeader,
    /// The text as opened. Every line an entry was made from is UTF-8 (checked when indexed);
    /// lines that were not are kept repaired in `repaired`.
    text: Text,
    /// Its length: nodes starting from here are in `appended`.
    text_len: usize,
    /// Lines of a file-backed text read for [`EntryRef::raw_line`], by node index; only the
    /// lines asked for take memory, and the slots only once one is (a slot a node is 24 MB
    /// for a million entries, which a context build never touches).
    line_cache: OnceLock<Box<[OnceLock<Box<str>>]>>,
    /// How many nodes have a slot in `line_cache`: those of a file-backed text as opened
    /// (0 for in-memory text).
    cached_lines: usize,
    appended: String,
    /// Lossy copies (U+FFFD for bad bytes) of the entry lines that were not UTF-8, by node index.
    repaired: HashMap<u32, String>,
    nodes: Vec<Node>,
    by_id: IdIndex,
    /// Each entry's children, made when first asked for: opening a session and building its
    /// context never need them.
    child_lists: OnceLock<ChildLists>,
    /// Whether some id is held by more than one entry.
    repeated_ids: bool,
    leaf: u32,
    labels: HashMap<EntryId, LabelState>,
    name: Option<String>,
    ends_without_newline: bool,
    /// Lines in the file so far (the header and skipped lines included).
    line_count: u32,
}

/// A borrowed view of one entry of a [`Tree`]: cheap fields without parsing the line.
#[derive(Debug, Clone, Copy)]
pub struct EntryRef<'a> {
    tree: &'a Tree,
    index: u32,
}

impl<'a> EntryRef<'a> {
    fn node(&self) -> &'a Node {
        &self.tree.nodes[self.index as usize]
    }

    /// The entry's id.
    pub fn id(&self) -> &'a EntryId {
        &self.node().id
    }

    /// The parent's id, `None` for a root (including entries whose parent is missing).
    pub fn parent_id(&self) -> Option<&'a EntryId> {
        let parent = self.node().parent;
        (parent != NONE).then(|| &self.tree.nodes[parent as usize].id)
    }

    /// Its type (and message role), known without parsing.
    pub fn kind(&self) -> EntryKind {
        self.node().kind
    }

    /// Its line number in the file (1-based).
    pub fn line_number(&self) -> usize {
        self.node().line as usize
    }

    /// Its `timestamp` as Unix milliseconds, if it parses.
    pub fn timestamp_millis(&self) -> Option<i64> {
        self.tree.millis_of(self.index)
    }

    /// Its line exactly as in the file (no newline).
    pub fn raw_line(&self) -> &'a str {
        self.tree.line_text(self.index)
    }

    /// Its line as in the file, read now and not kept (where [`EntryRef::raw_line`] keeps
    /// it): for a pass over many entries that looks at each line once, e.g. to skip the
    /// ones a cheap substring test rules out before parsing the rest.
    pub fn read_line(&self) -> Result<Cow<'a, str>, SessionError> {
        self.tree.line(self.index)
    }

    /// The typed entry, parsed from its line now (migrated when the file is v1 or v2).
    pub fn entry(&self) -> Result<Entry, SessionError> {
        self.tree.parse_node(self.index, MessageRead::Parse)
    }

    /// Its label, if one is set.
    pub fn label(&self) -> Option<&'a str> {
        self.tree.label_of(self.id())
    }
}

impl Tree {
    /// Indexes a session file's bytes. `path` is only used in messages.
    pub fn parse(path: &Path, bytes: Vec<u8>) -> Result<(Self, Vec<Diagnostic>), SessionError> {
        let mut builder = Builder::new(path, bytes.len());
        builder.feed(&bytes, 0, true)?;
        let ends_without_newline = !bytes.is_empty() && !bytes.ends_with(b"\n");
        let len = bytes.len();
        builder.finish(Text::Memory(bytes), len, ends_without_newline)
    }

    /// Indexes an open session file: from its index sidecar when that matches the file
    /// (indexing only what was appended since), else in one streaming pass, after which a
    /// large file gets a sidecar. Its lines stay in the file, read through `file` when asked.
    pub(crate) fn open_file(
        path: &Path,
        file: Arc<File>,
    ) -> Result<(Self, Vec<Diagnostic>), SessionError> {
        let (builder, streamed) = match sidecar::load(path, &file) {
            Some(restored) => restored?,
            None => {
                let mut scanned = Self::scan_file(path, &file)?;
                sidecar::save(path, &file, &mut scanned.0, &scanned.1);
                scanned
            }
        };
        builder.finish(
            Text::File(file),
            streamed.len,
            streamed.ends_without_newline,
        )
    }

    /// The index pass over a whole file.
    fn scan_file(path: &Path, file: &File) -> Result<(Builder, Streamed), SessionError> {
        let size = file.metadata().map_or(0, |m| m.len());
        let mut reader: &File = file;
        if size < OVERLAP_FROM {
            index_stream(path, &mut reader, size as usize, READ_BLOCK)
        } else if let Some(parts) = index_in_parts(path, file, size) {
            parts
        } else {
            index_overlapped(path, &mut reader, size as usize, READ_BLOCK)
        }
    }

    /// The file this tree was read from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The header line.
    pub fn header(&self) -> &SessionHeader {
        &self.header
    }

    /// The file's format version (1 when the header has none).
    pub fn version(&self) -> u32 {
        self.header.effective_version()
    }

    /// The current position: the last entry in file order, or the target of a later `leaf` entry.
    /// `None` before the first entry.
    pub fn leaf(&self) -> Option<&EntryId> {
        (self.leaf != NONE).then(|| &self.nodes[self.leaf as usize].id)
    }

    /// How many entries the tree holds (the header and skipped lines not counted).
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// Whether the session has no entries.
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// Whether an entry has this id.
    pub fn contains<Q: AsRef<str> + ?Sized>(&self, id: &Q) -> bool {
        let id = id.as_ref();
        self.by_id.get(&self.nodes, id).is_some()
    }

    /// A view of the entry with this id.
    pub fn get<Q: AsRef<str> + ?Sized>(&self, id: &Q) -> Option<EntryRef<'_>> {
        let id = id.as_ref();
        self.by_id
            .get(&self.nodes, id)
            .map(|index| EntryRef { tree: self, index })
    }

    /// The n-th entry in file order.
    pub fn get_index(&self, index: usize) -> Option<EntryRef<'_>> {
        (index < self.nodes.len()).then_some(EntryRef {
            tree: self,
            index: index as u32,
        })
    }

    /// Every entry in file order.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = EntryRef<'_>> + ExactSizeIterator {
        (0..self.nodes.len() as u32).map(move |index| EntryRef { tree: self, index })
    }

    /// The parent's id of an entry (`None` for a root or an unknown id).
    pub fn parent_of<Q: AsRef<str> + ?Sized>(&self, id: &Q) -> Option<&EntryId> {
        let id = id.as_ref();
        self.get(id).and_then(|entry| entry.parent_id())
    }

    /// The children of an entry, oldest first by timestamp (file order among equals).
    pub fn children<Q: AsRef<str> + ?Sized>(&self, id: &Q) -> Vec<&EntryId> {
        let id = id.as_ref();
        let Some(index) = self.by_id.get(&self.nodes, id) else {
            return Vec::new();
        };
        let lists = self.child_lists.get_or_init(|| ChildLists::of(&self.nodes));
        let mut children = Vec::new();
        let mut child = lists.first_child[index as usize];
        while child != NONE {
            children.push(child);
            child = lists.next_sibling[child as usize];
        }
        // The list is newest first; file order first, then a stable sort by time.
        children.reverse();
        children.sort_by_cached_key(|&child| self.millis_of(child).unwrap_or(i64::MIN));
        children
            .into_iter()
            .map(|child| &self.nodes[child as usize].id)
            .collect()
    }

    /// Entries without a parent (or whose parent is missing), in file order.
    pub fn roots(&self) -> Vec<&EntryId> {
        self.nodes
            .iter()
            .filter(|node| node.parent == NONE)
            .map(|node| &node.id)
            .collect()
    }

    /// Walks from an entry up to its root, the entry first.
    pub fn walk_to_root<Q: AsRef<str> + ?Sized>(
        &self,
        id: &Q,
    ) -> impl Iterator<Item = EntryRef<'_>> {
        let id = id.as_ref();
        let start = self.by_id.get(&self.nodes, id).unwrap_or(NONE);
        std::iter::successors((start != NONE).then_some(start), move |&index| {
            let parent = self.nodes[index as usize].parent;
            (parent != NONE).then_some(parent)
        })
        .map(move |index| EntryRef { tree: self, index })
    }

    /// The entries from the root down to an entry, **root first**, as their numbers in file
    /// order (what [`Tree::get_index`] takes) and their kinds (empty for an unknown id);
    /// `None` when the walk would pass `limit` entries.
    ///
    /// A context build walks a long session's whole path for its kinds but reads few of its
    /// ids: numbers are a quarter of the ids' size. The walk counts the path first (parent
    /// links only), so that both lists are allocated once at their lengths.
    pub fn numbers_and_kinds_from_root<Q: AsRef<str> + ?Sized>(
        &self,
        id: &Q,
        limit: usize,
    ) -> Option<(Vec<u32>, Vec<EntryKind>)> {
        let id = id.as_ref();
        let depth = self.walk_to_root(id).take(limit.saturating_add(1)).count();
        if depth > limit {
            return None;
        }
        let (mut numbers, mut kinds) = (Vec::with_capacity(depth), Vec::with_capacity(depth));
        for entry in self.walk_to_root(id) {
            numbers.push(entry.index);
            kinds.push(entry.node().kind);
        }
        numbers.reverse();
        kinds.reverse();
        Some((numbers, kinds))
    }

    /// The number in file order of the entry with this id (the later one of a repeated id).
    pub fn number_of<Q: AsRef<str> + ?Sized>(&self, id: &Q) -> Option<usize> {
        self.index_of(id.as_ref())
    }

    /// Whether two entries share an id (each such pair is reported when the file is opened).
    pub fn has_repeated_ids(&self) -> bool {
        self.repeated_ids
    }

    /// The ids from an entry up to its root, **leaf first** (empty for an unknown id).
    pub fn path_to_root<Q: AsRef<str> + ?Sized>(&self, id: &Q) -> Vec<&EntryId> {
        let id = id.as_ref();
        self.walk_to_root(id).map(|entry| entry.id()).collect()
    }

    /// The ids from the root down to an entry, **root first** (empty for an unknown id).
    pub fn path_from_root<Q: AsRef<str> + ?Sized>(&self, id: &Q) -> Vec<&EntryId> {
        let id = id.as_ref();
        let mut path = self.path_to_root(id);
        path.reverse();
        path
    }

    /// The entries from the root down to an entry, root first.
    pub fn branch<Q: AsRef<str> + ?Sized>(&self, id: &Q) -> Vec<EntryRef<'_>> {
        let id = id.as_ref();
        let mut path: Vec<_> = self.walk_to_root(id).collect();
        path.reverse();
        path
    }

    /// The typed entry with this id, parsed from its line now.
    pub fn entry<Q: AsRef<str> + ?Sized>(&self, id: &Q) -> Result<Entry, SessionError> {
        let id = id.as_ref();
        match self.by_id.get(&self.nodes, id) {
            Some(index) => self.parse_node(index, MessageRead::Parse),
            None => Err(SessionError::UnknownEntry {
                path: self.path.clone(),
                id: EntryId::new(id),
            }),
        }
    }

    /// [`Tree::entry`] of each id, in order, reading the file in as few reads as possible:
    /// lines that follow each other in the file (a chain usually does) come in one read of up
    /// to 1 MiB, instead of one read each. Memory stays at one run at a time.
    pub fn entries<Q: AsRef<str>>(&self, ids: &[Q]) -> Vec<Result<Entry, SessionError>> {
        self.read_in_runs(
            ids.len(),
            |at| self.index_of(ids[at].as_ref()).map(|index| index as u32),
            |at| self.entry(ids[at].as_ref()),
            MessageRead::Parse,
        )
    }

    /// The entries numbered `numbers` in file order ([`Tree::numbers_and_kinds_from_root`]
    /// gives a path's), read as [`Tree::entries`] reads them; `read` says how their messages
    /// are read. A number past the end is an unknown entry.
    pub fn entries_at(
        &self,
        numbers: &[u32],
        read: MessageRead,
    ) -> Vec<Result<Entry, SessionError>> {
        let known = |at: usize| Some(numbers[at]).filter(|&index| (index as usize) < self.len());
        self.read_in_runs(
            numbers.len(),
            known,
            |at| match known(at) {
                Some(index) => self.parse_node(index, read),
                None => Err(SessionError::UnknownEntry {
                    path: self.path.clone(),
                    id: EntryId::new(numbers[at].to_string()),
                }),
            },
            read,
        )
    }

    /// `count` entries, the `at`-th being node `index_at(at)`: those whose lines are in the
    /// file are read in runs, every other one (`None`, or a line held in memory) by `alone`.
    fn read_in_runs(
        &self,
        count: usize,
        index_at: impl Fn(usize) -> Option<u32>,
        alone: impl Fn(usize) -> Result<Entry, SessionError>,
        read: MessageRead,
    ) -> Vec<Result<Entry, SessionError>> {
        let mut out = Vec::with_capacity(count);
        let Text::File(file) = &self.text else {
            out.extend((0..count).map(alone));
            return out;
        };
        let from_file = |at: usize| index_at(at).filter(|&index| self.reads_from_file(index));
        let mut buffer = Vec::new();
        let mut at = 0;
        while at < count {
            let Some(first) = from_file(at) else {
                out.push(alone(at));
                at += 1;
                continue;
            };
            // The run: the next entries whose lines follow in the file, close enough to read
            // along.
            let begin = self.nodes[first as usize].start;
            let mut end = begin + self.nodes[first as usize].len as usize;
            let mut run = vec![first];
            while let Some(next) = (at + run.len() < count)
                .then(|| from_file(at + run.len()))
                .flatten()
            {
                let node = &self.nodes[next as usize];
                let node_end = node.start + node.len as usize;
                if node.start < end || node.start > end + RUN_GAP || node_end - begin > RUN_BYTES {
                    break;
                }
                end = node_end;
                run.push(next);
            }
            at += run.len();
            buffer.clear();
            buffer.resize(end - begin, 0);
            if read_exact_at(file, &mut buffer, begin as u64).is_err() {
                // Each line read alone, so that each failure names its own entry.
                out.extend(run.iter().map(|&index| self.parse_node(index, read)));
                continue;
            }
            for index in run {
                let node = &self.nodes[index as usize];
                let bytes = &buffer[node.start - begin..node.start - begin + node.len as usize];
                out.push(match std::str::from_utf8(bytes) {
                    Ok(line) => self.parse_node_line(index, line, read, Some(file)),
                    // Changed on disk since it was indexed: the single read reports it.
                    Err(_) => self.parse_node(index, read),
                });
            }
        }
        out
    }

    /// Whether a node's line must be read from the file (not appended, repaired or cached).
    fn reads_from_file(&self, index: u32) -> bool {
        self.version() >= CURRENT_VERSION
            && self.line_in_memory(index).is_none()
            && (index as usize) < self.cached_lines
            && self.cached_line(index).is_none()
    }

    /// A node's line if [`EntryRef::raw_line`] has read it already.
    fn cached_line(&self, index: u32) -> Option<&str> {
        let slots = self.line_cache.get()?;
        slots.get(index as usize)?.get().map(|text| &**text)
    }

    /// The entry's line exactly as in the file (no newline).
    pub fn raw_line<Q: AsRef<str> + ?Sized>(&self, id: &Q) -> Option<&str> {
        let id = id.as_ref();
        self.get(id).map(|entry| entry.raw_line())
    }

    /// The label set on an entry, if any.
    pub fn label_of<Q: AsRef<str> + ?Sized>(&self, id: &Q) -> Option<&str> {
        let id = id.as_ref();
        self.labels.get(id).map(|label| label.text.as_str())
    }

    /// Every label in effect: target id → label text.
    pub fn labels(&self) -> impl Iterator<Item = (&EntryId, &str)> {
        self.labels
            .iter()
            .map(|(id, label)| (id, label.text.as_str()))
    }

    /// The session's name (the latest `session_info` in the file; an empty one clears it).
    pub fn name(&self) -> Option<&str> {
        self.name.as_deref()
    }

    /// How many bytes of the file were indexed when it was opened.
    pub(crate) fn text_len(&self) -> usize {
        self.text_len
    }

    /// Whether the file's last byte is not a newline (the next append must start one).
    pub(crate) fn ends_without_newline(&self) -> bool {
        self.ends_without_newline
    }

    pub(crate) fn label_timestamp(&self, id: &str) -> Option<&str> {
        self.labels.get(id).map(|label| label.timestamp.as_str())
    }

    /// The line of a node, kept once read (for [`EntryRef::raw_line`]); empty when the file
    /// can no longer be read there.
    fn line_text(&self, index: u32) -> &str {
        if let Some(text) = self.line_in_memory(index) {
            return text;
        }
        if index as usize >= self.cached_lines {
            return "";
        }
        let slots = self.line_cache.get_or_init(|| {
            std::iter::repeat_with(OnceLock::new)
                .take(self.cached_lines)
                .collect()
        });
        let Some(slot) = slots.get(index as usize) else {
            return "";
        };
        if let Some(text) = slot.get() {
            return text;
        }
        match self.read_line(index) {
            Ok(text) => slot.get_or_init(|| text.into_boxed_str()),
            Err(_) => "",
        }
    }

    /// The line of a node without keeping it: borrowed when in memory, else read from the file.
    fn line(&self, index: u32) -> Result<Cow<'_, str>, SessionError> {
        if let Some(text) = self.line_in_memory(index) {
            return Ok(Cow::Borrowed(text));
        }
        if let Some(text) = self.cached_line(index) {
            return Ok(Cow::Borrowed(text));
        }
        self.read_line(index).map(Cow::Owned)
    }

    /// The line when no file read is needed: appended, repaired, in-memory text, or `None`.
    fn line_in_memory(&self, index: u32) -> Option<&str> {
        let node = &self.nodes[index as usize];
        let end = node.start + node.len as usize;
        if node.start >= self.text_len {
            let offset = self.text_len;
            return Some(
                self.appended
                    .get(node.start - offset..end - offset)
                    .unwrap_or(""),
            );
        }
        if let Some(repaired) = self.repaired.get(&index) {
            return Some(repaired);
        }
        match &self.text {
            Text::Memory(bytes) => Some(
                bytes
                    .get(node.start..end)
                    .and_then(|line| std::str::from_utf8(line).ok())
                    .unwrap_or(""),
            ),
            Text::File(_) => None,
        }
    }

    /// Reads a node's line from the file. The line was UTF-8 when indexed; a file changed on
    /// disk since is an error, not a wrong entry.
    fn read_line(&self, index: u32) -> Result<String, SessionError> {
        let Text::File(file) = &self.text else {
            return Ok(String::new());
        };
        let node = &self.nodes[index as usize];
        let mut bytes = vec![0u8; node.len as usize];
        read_exact_at(file, &mut bytes, node.start as u64)
            .map_err(|e| SessionError::io(&self.path, e))?;
        String::from_utf8(bytes).map_err(|_| {
            SessionError::io(
                &self.path,
                std::io::Error::new(
                    std::io::ErrorKind::InvalidData,
                    format!("line {} changed on disk since it was opened", node.line),
                ),
            )
        })
    }

    fn millis_of(&self, index: u32) -> Option<i64> {
        let line = self.line(index).ok()?;
        let bytes = line.as_bytes();
        let scanned = scan_pi_layout(bytes)
            .or_else(|| scan_prefix(bytes))
            .or_else(|| scan_entry(bytes).ok())?;
        scanned.timestamp.as_deref().and_then(parse_iso_millis)
    }

    fn invalid(&self, index: u32, entry_type: &str, source: serde_json::Error) -> SessionError {
        self.invalid_field(index, entry_type, None, &source)
    }

    fn invalid_field(
        &self,
        index: u32,
        entry_type: &str,
        field: Option<String>,
        source: &serde_json::Error,
    ) -> SessionError {
        let node = &self.nodes[index as usize];
        SessionError::InvalidEntry {
            path: self.path.clone(),
            line: node.line as usize,
            id: node.id.clone(),
            entry_type: entry_type.into(),
            field: field.map(String::into_boxed_str),
            reason: serde_reason(source).into_boxed_str(),
        }
    }

    fn parse_node(&self, index: u32, read: MessageRead) -> Result<Entry, SessionError> {
        let line = self.line(index)?;
        self.parse_node_line(index, line.as_ref(), read, None)
    }

    /// Parses a node from its line, already read.
    ///
    /// A message kept as JSON stays in `file` when the line was read from there at the node's
    /// offset, else it is held.
    fn parse_node_line(
        &self,
        index: u32,
        line: &str,
        read: MessageRead,
        file: Option<&Arc<File>>,
    ) -> Result<Entry, SessionError> {
        let node = &self.nodes[index as usize];
        if self.version() >= CURRENT_VERSION {
            let tag = kind_tag(node.kind);
            return match tag {
                Some(tag) => {
                    let role = match node.kind {
                        EntryKind::Message(role) => role,
                        _ => Role::Other,
                    };
                    let keep = |span: std::ops::Range<usize>| match file {
                        Some(file) => LazyMessage::in_file(
                            role,
                            FileSpan {
                                file: Arc::clone(file),
                                at: (node.start + span.start) as u64,
                                len: span.len(),
                            },
                        ),
                        None => LazyMessage::checked(role, line.get(span).unwrap_or_default()),
                    };
                    if read == MessageRead::KeepJson
                        && tag == "message"
                        && let Some(entry) = Entry::message_keeping_json(role, line, keep)
                    {
                        return Ok(entry);
                    }
                    Entry::from_line_with_kind::<FastParse>(tag, role, line).map_err(|_| {
                        // Parsed again, tracking where: only on this rare path.
                        match Entry::from_line_with_kind::<FieldParse>(tag, role, line) {
                            Err(failed) => {
                                self.invalid_field(index, tag, failed.field, &failed.error)
                            }
                            Ok(_) => self.invalid(
                                index,
                                tag,
                                serde::de::Error::custom("does not parse (and then did)"),
                            ),
                        }
                    })
                }
                None => serde_json::from_str::<Map<String, Value>>(line)
                    .and_then(Entry::from_json_map)
                    .map_err(|e| self.invalid(index, "unknown", e)),
            };
        }
        let map = self.migrated_map(index)?;
        let tag = map
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned();
        // Kept as JSON, a migrated message keeps the key order Pi's migration leaves.
        let message_json = (read == MessageRead::KeepJson)
            .then(|| {
                map.get("message")
                    .and_then(|message| serde_json::to_string(message).ok())
            })
            .flatten();
        let mut entry = Entry::from_json_map(map).map_err(|e| self.invalid(index, &tag, e))?;
        if let (Entry::Message(message), Some(json)) = (&mut entry, message_json)
            && let Some(kept) = LazyMessage::from_json(message.message.role_kind(), &json)
        {
            message.message = kept;
        }
        Ok(entry)
    }

    /// The entry's JSON object after Pi's v1→v2→v3 migrations (ids, `firstKeptEntryId`, roles).
    fn migrated_map(&self, index: u32) -> Result<Map<String, Value>, SessionError> {
        let node = &self.nodes[index as usize];
        let line = self.line(index)?;
        let mut map: Map<String, Value> = serde_json::from_str(&line)
            .map_err(|e| self.invalid(index, kind_tag(node.kind).unwrap_or(""), e))?;
        let version = self.version();
        if version < 2 {
            map.insert("id".into(), Value::String(node.id.to_string()));
            let parent = if node.parent == NONE {
                Value::Null
            } else {
                Value::String(self.nodes[node.parent as usize].id.to_string())
            };
            map.insert("parentId".into(), parent);
            if map.get("type").and_then(Value::as_str) == Some("compaction")
                && let Some(Value::Number(number)) = map.shift_remove("firstKeptEntryIndex")
            {
                // Pi indexes the parsed lines with the header at 0.
                let target = number
                    .as_u64()
                    .filter(|&i| i >= 1 && (i as usize) <= self.nodes.len());
                if let Some(target) = target {
                    let id = self.nodes[target as usize - 1].id.to_string();
                    map.insert("firstKeptEntryId".into(), Value::String(id));
                }
            }
        }
        if version < 3
            && let Some(Value::Object(message)) = map.get_mut("message")
            && message.get("role").and_then(Value::as_str) == Some("hookMessage")
        {
            message.insert("role".into(), Value::String("custom".into()));
        }
        Ok(map)
    }

    /// The entry's line as a v3 file holds it: the raw line for v3 files, the migrated entry otherwise.
    pub(crate) fn v3_line(&self, index: usize) -> Result<Cow<'_, str>, SessionError> {
        let node = &self.nodes[index];
        if self.version() >= CURRENT_VERSION {
            return self.line(index as u32);
        }
        let map = self.migrated_map(index as u32)?;
        serde_json::to_string(&map)
            .map(Cow::Owned)
            .map_err(|e| self.invalid(index as u32, kind_tag(node.kind).unwrap_or(""), e))
    }

    pub(crate) fn index_of(&self, id: &str) -> Option<usize> {
        self.by_id.get(&self.nodes, id).map(|index| index as usize)
    }

    /// Records a line just appended to the file: updates leaf, children, labels and name.
    pub(crate) fn push_appended(&mut self, line: String, entry: &Entry) {
        let start = self.text_len + self.appended.len();
        self.appended.push_str(&line);
        let parent = entry
            .parent_id()
            .and_then(|parent| self.by_id.get(&self.nodes, parent.as_str()))
            .unwrap_or(NONE);
        let index = self.nodes.len() as u32;
        let line_number = self.next_line_number();
        self.nodes.push(Node {
            start,
            len: line.len() as u32,
            line: line_number,
            id: entry.id().clone(),
            parent,
            kind: entry.kind(),
        });
        if let Some(lists) = self.child_lists.get_mut() {
            lists.push(parent);
        }
        self.repeated_ids |= self.by_id.insert(&self.nodes, index).is_some();
        self.leaf = if matches!(entry, Entry::Leaf(_)) {
            parent
        } else {
            index
        };
        match entry {
            Entry::Label(label) => apply_label(
                &mut self.labels,
                label.target_id.clone(),
                label.label.as_deref(),
                &label.base.timestamp,
            ),
            Entry::SessionInfo(info) => self.name = clean_name(info.name.as_deref()),
            _ => {}
        }
        self.ends_without_newline = false;
    }

    fn next_line_number(&mut self) -> u32 {
        self.line_count += 1;
        self.line_count
    }
}

fn kind_tag(kind: EntryKind) -> Option<&'static str> {
    Some(match kind {
        EntryKind::Message(_) => "message",
        EntryKind::Compaction => "compaction",
        EntryKind::BranchSummary => "branch_summary",
        EntryKind::ModelChange => "model_change",
        EntryKind::ThinkingLevelChange => "thinking_level_change",
        EntryKind::Custom => "custom",
        EntryKind::CustomMessage => "custom_message",
        EntryKind::Label => "label",
        EntryKind::SessionInfo => "session_info",
        EntryKind::Usage => "usage",
        EntryKind::System => "system",
        EntryKind::ContextEdit => "context_edit",
        EntryKind::Leaf => "leaf",
        EntryKind::Unknown => return None,
    })
}

/// The children of every node as lists through `next_sibling`, newest first (prepending is
/// O(1)), by node number.
#[derive(Debug, Clone)]
struct ChildLists {
    first_child: Vec<u32>,
    next_sibling: Vec<u32>,
}

impl ChildLists {
    fn of(nodes: &[Node]) -> Self {
        // Parents may follow their children in the file: every slot exists before linking.
        let mut lists = Self {
            first_child: vec![NONE; nodes.len()],
            next_sibling: vec![NONE; nodes.len()],
        };
        for (child, node) in nodes.iter().enumerate() {
            lists.link(node.parent, child as u32);
        }
        lists
    }

    /// Adds the next node, a child of `parent`.
    fn push(&mut self, parent: u32) {
        let child = self.first_child.len() as u32;
        self.first_child.push(NONE);
        self.next_sibling.push(NONE);
        self.link(parent, child);
    }

    fn link(&mut self, parent: u32, child: u32) {
        if let Some(first) = self.first_child.get_mut(parent as usize) {
            self.next_sibling[child as usize] = std::mem::replace(first, child);
        }
    }
}

fn apply_label(
    labels: &mut HashMap<EntryId, LabelState>,
    target: EntryId,
    label: Option<&str>,
    timestamp: &str,
) {
    match label {
        Some(text) if !text.is_empty() => {
            labels.insert(
                target,
                LabelState {
                    text: text.to_owned(),
                    timestamp: timestamp.to_owned(),
                },
            );
        }
        _ => {
            labels.remove(target.as_str());
        }
    }
}

fn clean_name(name: Option<&str>) -> Option<String> {
    name.map(str::trim)
        .filter(|name| !name.is_empty())
        .map(str::to_owned)
}
