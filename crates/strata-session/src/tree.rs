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
use crate::header::{CURRENT_VERSION, SessionHeader};
use crate::id::{EntryId, IdHasher};
use crate::lazy::{FileSpan, LazyMessage, MessageRead};
use crate::scan::{
    Parent, ScanError, Scanned, scan_entry, scan_pi_layout, scan_pi_tree_fields, scan_prefix,
};
use crate::time::parse_iso_millis;

mod sidecar;

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

/// One pass over the text building nodes, then the id map and parent resolution.
struct Builder {
    path: PathBuf,
    nodes: Vec<Node>,
    /// Parents other than the previous line, resolved once every id is known: (child, parent id).
    pending: Vec<(u32, EntryId)>,
    /// The last entry in file order that decides the leaf (an entry, or a `leaf` entry).
    leaf_decider: u32,
    /// Label changes in file order (target, label, timestamp), applied when finished so that
    /// builders of consecutive parts of a file can be joined.
    label_changes: Vec<(EntryId, Option<String>, String)>,
    /// The name the last `session_info` gave (`Some(None)`: cleared), if any was seen.
    name: Option<Option<String>>,
    diagnostics: Vec<Diagnostic>,
    ends_without_newline: bool,
    line_count: u32,
    header: Option<SessionHeader>,
    version: u32,
    /// Where the next line to index starts.
    next_line: usize,
    repaired: HashMap<u32, String>,
    /// By node: whether its line took the literal layout scan, which does not look past the
    /// tree fields. Those of them that end up with no child have their brackets counted when
    /// the file is indexed (see [`Builder::drop_torn_leaves`]).
    layout_only: Vec<bool>,
    /// Whether the line being indexed took the literal layout scan.
    line_layout_only: bool,
    /// The id table of exactly these nodes, as a sidecar stored it: [`Builder::index_ids`]
    /// takes it instead of inserting every id again. Anything that adds, drops or moves a
    /// node clears it.
    restored_ids: Option<IdIndex>,
}

impl Builder {
    fn new(path: &Path, text_len: usize) -> Self {
        // Untouched capacity costs no memory; real sessions average well over 512 bytes a line.
        let estimate = (text_len / 512).max(16);
        Self {
            path: path.to_path_buf(),
            nodes: Vec::with_capacity(estimate),
            pending: Vec::new(),
            leaf_decider: NONE,
            label_changes: Vec::new(),
            name: None,
            diagnostics: Vec::new(),
            ends_without_newline: false,
            line_count: 0,
            header: None,
            version: CURRENT_VERSION,
            next_line: 0,
            repaired: HashMap::new(),
            layout_only: Vec::with_capacity(estimate),
            line_layout_only: false,
            restored_ids: None,
        }
    }

    /// A builder for the lines from `start` on of a file whose header is `header` (already
    /// indexed by the builder of the part before).
    fn for_part(path: &Path, header: &SessionHeader, start: usize, text_len: usize) -> Self {
        let mut builder = Self::new(path, text_len);
        builder.version = header.effective_version();
        builder.header = Some(header.clone());
        builder.next_line = start;
        builder
    }

    /// Appends the builder of the next part of the file: its nodes, lines and diagnostics
    /// follow this one's.
    fn join(&mut self, next: Builder) {
        self.restored_ids = None;
        let offset = self.nodes.len() as u32;
        let lines = self.line_count;
        self.nodes.extend(next.nodes.into_iter().map(|mut node| {
            node.line += lines;
            if node.parent != NONE {
                node.parent += offset;
            }
            node
        }));
        self.pending.extend(
            next.pending
                .into_iter()
                .map(|(child, parent)| (child + offset, parent)),
        );
        if next.leaf_decider != NONE {
            self.leaf_decider = next.leaf_decider + offset;
        }
        self.label_changes.extend(next.label_changes);
        if next.name.is_some() {
            self.name = next.name;
        }
        self.diagnostics
            .extend(next.diagnostics.into_iter().map(|mut diagnostic| {
                diagnostic.line += lines as usize;
                diagnostic
            }));
        self.layout_only.extend(next.layout_only);
        self.repaired.extend(
            next.repaired
                .into_iter()
                .map(|(index, text)| (index + offset, text)),
        );
        self.line_count += next.line_count;
        self.next_line = next.next_line;
    }

    fn diagnose(&mut self, line: usize, problem: Problem) {
        self.diagnostics.push(Diagnostic {
            path: self.path.clone(),
            line,
            problem,
        });
    }

    /// Indexes the lines not indexed yet in `bytes`, which holds the text from offset `base` on
    /// (and must reach back to the next line to index). Without `at_end`, a last line that may
    /// still continue is left for the next call.
    fn feed(&mut self, bytes: &[u8], base: usize, at_end: bool) -> Result<(), SessionError> {
        while self.next_line - base < bytes.len() {
            let start = self.next_line - base;
            let mut probe = start;
            while let Some(b' ' | b'\t' | b'\r') = bytes.get(probe) {
                probe += 1;
            }
            if probe < bytes.len() && bytes[probe] == b'\n' {
                // A blank line: counted, nothing else.
                self.line_count += 1;
                self.next_line = base + probe + 1;
                continue;
            }
            if probe == bytes.len() {
                if at_end {
                    self.line_count += 1;
                    self.next_line = base + bytes.len();
                }
                return Ok(());
            }
            // Lines end at newlines (JSON strings cannot hold a raw one). The tree fields come
            // from the line's first keys where it is laid out as Pi and strata write it, else
            // from a full structural scan.
            let rest = &bytes[start..];
            let end = match memchr::memchr(b'\n', rest) {
                Some(length) => start + length,
                None if at_end => bytes.len(),
                None => return Ok(()),
            };
            let line = &bytes[start..end];
            // Nearly every line takes the literal layout scan, which reads the tree fields
            // only. A torn line (a write cut short after an inner `}`, then more lines) can
            // pass it; such a line never gets a child, since no writer links to an entry it
            // failed to write, so only lines left childless are checked further, once the
            // whole file is indexed (`drop_torn_leaves`). Every other line gets one pass over
            // its bytes here: more brackets opened than closed sends it to the full scan (as
            // does a line whose strings hold unbalanced brackets).
            let layout = scan_pi_tree_fields(line);
            self.line_layout_only = layout.is_some();
            let (scanned, ascii) = match layout {
                Some(scanned) => (Ok(scanned), line.is_ascii()),
                None => {
                    let (balanced, ascii) = bracket_balance_and_ascii(line);
                    let prefix = if balanced { scan_prefix(line) } else { None };
                    let scanned = match prefix {
                        Some(scanned) => Ok(scanned),
                        None => scan_entry(line),
                    };
                    (scanned, ascii)
                }
            };
            self.line_count += 1;
            self.next_line = base + end + 1;
            let unterminated = end == bytes.len();
            let start = base + start;
            if self.header.is_none() {
                let header = match std::str::from_utf8(line) {
                    Ok(text) => SessionHeader::parse(text),
                    Err(_) => SessionHeader::parse(&String::from_utf8_lossy(line)),
                };
                match header {
                    Some(parsed) => {
                        self.version = parsed.effective_version();
                        self.header = Some(parsed);
                        continue;
                    }
                    None => {
                        return Err(SessionError::MissingHeader {
                            path: self.path.clone(),
                            line: self.line_count as usize,
                            reason: SessionHeader::problem(&String::from_utf8_lossy(line)),
                        });
                    }
                }
            }
            let line_no = self.line_count as usize;
            // Checked here, while the line is in cache; almost every line is plain ASCII.
            if ascii || std::str::from_utf8(line).is_ok() {
                self.entry_line(line, start, line_no, unterminated, scanned);
            } else {
                self.diagnose(line_no, Problem::InvalidUtf8);
                let lossy = String::from_utf8_lossy(line).into_owned();
                let scanned = scan_entry(lossy.as_bytes());
                self.line_layout_only = false;
                let index = self.nodes.len() as u32;
                let indexed =
                    self.entry_line(lossy.as_bytes(), start, line_no, unterminated, scanned);
                if indexed {
                    // The node spans the raw line; its text is the repaired copy.
                    if let Some(node) = self.nodes.last_mut() {
                        node.len = line.len() as u32;
                    }
                    self.repaired.insert(index, lossy);
                }
            }
        }
        Ok(())
    }

    /// Indexes one entry line; false when it was skipped (and diagnosed).
    fn entry_line(
        &mut self,
        line: &[u8],
        start: usize,
        line_no: usize,
        unterminated: bool,
        scanned: Result<Scanned<'_>, ScanError>,
    ) -> bool {
        let version = self.version;
        let end = start + line.len();
        let scanned = match scanned {
            // A cut-short write can still look balanced only if it is complete; confirm with serde.
            Ok(scanned)
                if !unterminated
                    || serde_json::from_slice::<serde::de::IgnoredAny>(line).is_ok() =>
            {
                scanned
            }
            Ok(_) => {
                self.diagnose(line_no, Problem::TornLastLine { bytes: line.len() });
                return false;
            }
            Err(error) => {
                let problem = if unterminated {
                    Problem::TornLastLine { bytes: line.len() }
                } else {
                    Problem::MalformedLine {
                        reason: format!("{} at byte {}", error.reason, error.offset + 1),
                    }
                };
                self.diagnose(line_no, problem);
                return false;
            }
        };
        let Some(entry_type) = scanned.entry_type.as_deref() else {
            self.diagnose(
                line_no,
                Problem::MalformedLine {
                    reason: "no string `type` field".into(),
                },
            );
            return false;
        };
        if entry_type == "session" {
            self.diagnose(
                line_no,
                Problem::MalformedLine {
                    reason: "a second `session` header".into(),
                },
            );
            return false;
        }
        let index = self.nodes.len() as u32;
        let legacy_v1 = version < 2;
        let id = if legacy_v1 {
            // v1 has no ids: Pi draws random ones and rewrites the file; strata derives them from
            // the position so they are the same on every open and the file stays untouched.
            EntryId::from(format!("{:08x}", index + 1))
        } else {
            match scanned.id.as_deref() {
                Some(id) => EntryId::new(id),
                None => {
                    self.diagnose(line_no, Problem::MissingId);
                    return false;
                }
            }
        };
        let mut kind = EntryKind::from_type(entry_type);
        if let EntryKind::Message(_) = kind {
            let role = scanned.role.as_deref().unwrap_or("");
            kind = EntryKind::Message(Role::from_str(role, version < CURRENT_VERSION));
        }
        let parent = if legacy_v1 {
            index.checked_sub(1).unwrap_or(NONE)
        } else {
            match &scanned.parent {
                Parent::Id(parent) if parent.as_bytes() == id.as_bytes() => NONE,
                // Most entries continue from the line before: resolved without a lookup.
                Parent::Id(parent)
                    if self
                        .nodes
                        .last()
                        .is_some_and(|prev| prev.id.as_bytes() == parent.as_bytes()) =>
                {
                    index - 1
                }
                Parent::Id(parent) => {
                    self.pending.push((index, EntryId::new(&**parent)));
                    NONE
                }
                Parent::Null | Parent::Absent | Parent::Other => NONE,
            }
        };
        self.leaf_decider = index;
        match kind {
            EntryKind::Label => {
                #[derive(serde::Deserialize)]
                #[serde(rename_all = "camelCase")]
                struct LabelFields {
                    target_id: Option<String>,
                    label: Option<String>,
                    #[serde(default)]
                    timestamp: String,
                }
                if let Ok(fields) = serde_json::from_slice::<LabelFields>(line)
                    && let Some(target) = fields.target_id
                {
                    self.label_changes.push((
                        EntryId::from(target),
                        fields.label,
                        fields.timestamp,
                    ));
                }
            }
            EntryKind::SessionInfo => {
                #[derive(serde::Deserialize)]
                struct InfoFields {
                    name: Option<String>,
                }
                if let Ok(fields) = serde_json::from_slice::<InfoFields>(line) {
                    self.name = Some(clean_name(fields.name.as_deref()));
                }
            }
            _ => {}
        }
        self.nodes.push(Node {
            start,
            len: (end - start) as u32,
            line: line_no as u32,
            id,
            parent,
            kind,
        });
        self.layout_only.push(self.line_layout_only);
        true
    }

    /// Checks the lines that took only the literal layout scan and have no child (no line
    /// names them as parent): a torn line is among them, if there is one. Those whose
    /// brackets do not balance get the full scan, and the ones it refuses are dropped and
    /// reported as the full scan at indexing would have reported them. Runs before the id
    /// map is built, so dropping needs no more than renumbering.
    fn drop_torn_leaves(&mut self, text: &Text) -> Result<(), SessionError> {
        let mut has_child = vec![false; self.nodes.len()];
        for node in &self.nodes {
            if node.parent != NONE {
                has_child[node.parent as usize] = true;
            }
        }
        let named: std::collections::HashSet<&[u8]> = self
            .pending
            .iter()
            .map(|(_, parent)| parent.as_bytes())
            .collect();
        let mut torn = Vec::new();
        let mut buffer = Vec::new();
        for (index, node) in self.nodes.iter().enumerate() {
            if !self.layout_only.get(index).copied().unwrap_or(false)
                || has_child[index]
                || named.contains(node.id.as_bytes())
            {
                continue;
            }
            let line: &[u8] = match text {
                Text::Memory(bytes) => bytes
                    .get(node.start..node.start + node.len as usize)
                    .unwrap_or(&[]),
                Text::File(file) => {
                    buffer.resize(node.len as usize, 0);
                    read_exact_at(file, &mut buffer, node.start as u64)
                        .map_err(|e| SessionError::io(&self.path, e))?;
                    &buffer
                }
            };
            if bracket_balance_and_ascii(line).0 {
                continue;
            }
            if let Err(error) = scan_entry(line) {
                torn.push((index as u32, node.line as usize, error));
            }
        }
        if torn.is_empty() {
            return Ok(());
        }
        self.restored_ids = None;
        for (_, line, error) in &torn {
            self.diagnose(
                *line,
                Problem::MalformedLine {
                    reason: format!("{} at byte {}", error.reason, error.offset + 1),
                },
            );
        }
        let dropped: Vec<u32> = torn.iter().map(|(index, _, _)| *index).collect();
        // New index of each node: its old one less the dropped nodes before it.
        let renumber = |index: u32| index - dropped.partition_point(|&gone| gone < index) as u32;
        drop_indices(&mut self.nodes, &dropped);
        drop_indices(&mut self.layout_only, &dropped);
        for node in &mut self.nodes {
            if node.parent != NONE {
                // A dropped node is no one's parent.
                node.parent = renumber(node.parent);
            }
        }
        // A dropped line's own parent link (not the line before it) and repair go with it.
        let kept = |index: &u32| dropped.binary_search(index).is_err();
        self.pending.retain(|(child, _)| kept(child));
        for (child, _) in &mut self.pending {
            *child = renumber(*child);
        }
        self.repaired = std::mem::take(&mut self.repaired)
            .into_iter()
            .filter(|(index, _)| kept(index))
            .map(|(index, text)| (renumber(index), text))
            .collect();
        let decider = self.leaf_decider;
        if decider != NONE {
            let kept_before = renumber(decider);
            self.leaf_decider = if dropped.binary_search(&decider).is_err() {
                kept_before
            } else {
                // The kept line before a dropped last line decides, as if it was never indexed.
                kept_before.checked_sub(1).unwrap_or(NONE)
            };
        }
        Ok(())
    }

    /// Builds the id map (sized exactly, now that the count is known) and resolves the parents
    /// that were not the previous line.
    fn index_ids(&mut self) -> (IdIndex, bool) {
        let mut duplicates = Vec::new();
        let by_id = match self.restored_ids.take() {
            // Stored only when every id was distinct: nothing to report.
            Some(restored) if restored.len == self.nodes.len() => restored,
            _ => {
                let mut by_id = IdIndex::with_capacity(self.nodes.len());
                for index in 0..self.nodes.len() as u32 {
                    if by_id.insert(&self.nodes, index).is_some() {
                        let node = &self.nodes[index as usize];
                        duplicates.push((node.line as usize, node.id.clone()));
                    }
                }
                by_id
            }
        };
        let repeated = !duplicates.is_empty();
        for (line, id) in duplicates {
            self.diagnose(line, Problem::DuplicateId { id });
        }
        let pending = std::mem::take(&mut self.pending);
        let mut forward = false;
        for (child, parent_id) in pending {
            match by_id.get(&self.nodes, parent_id.as_str()) {
                Some(parent) if parent != child => {
                    self.nodes[child as usize].parent = parent;
                    forward |= parent > child;
                }
                _ => {
                    let node = &self.nodes[child as usize];
                    let (line, id) = (node.line as usize, node.id.clone());
                    self.diagnose(
                        line,
                        Problem::UnknownParent {
                            id,
                            parent: parent_id,
                        },
                    );
                }
            }
        }
        if forward {
            self.break_cycles();
        }
        (by_id, repeated)
    }

    /// Parents normally precede children; a file linking forward could form a cycle, which
    /// would make walks endless. Each cycle is cut at the entry where it is found.
    fn break_cycles(&mut self) {
        // 0 = unvisited, 1 = on the current walk, 2 = done.
        let mut state = vec![0u8; self.nodes.len()];
        for start in 0..self.nodes.len() {
            let mut walk = Vec::new();
            let mut current = start as u32;
            while current != NONE && state[current as usize] == 0 {
                state[current as usize] = 1;
                walk.push(current);
                current = self.nodes[current as usize].parent;
            }
            if current != NONE && state[current as usize] == 1 {
                let node = &mut self.nodes[current as usize];
                node.parent = NONE;
                let (line, id) = (node.line as usize, node.id.clone());
                self.diagnose(line, Problem::ParentCycle { id });
            }
            for index in walk {
                state[index as usize] = 2;
            }
        }
    }

    /// The leaf: the last entry, or the position a final `leaf` entry points at.
    fn resolve_leaf(&mut self) -> u32 {
        let decider = self.leaf_decider;
        if decider == NONE || self.nodes[decider as usize].kind != EntryKind::Leaf {
            return decider;
        }
        let node = &self.nodes[decider as usize];
        if node.parent != NONE {
            return node.parent;
        }
        // A `leaf` entry to null is a reset; one to a missing entry is damage, and then the
        // entry itself is the leaf, as Pi takes it.
        let missing = self.diagnostics.iter().find_map(|d| match &d.problem {
            Problem::UnknownParent { id, parent } if id == &node.id => Some(parent.clone()),
            _ => None,
        });
        match missing {
            Some(target) => {
                let line = node.line as usize;
                self.diagnose(line, Problem::UnknownLeafTarget { target });
                decider
            }
            None => NONE,
        }
    }

    fn finish(
        mut self,
        text: Text,
        text_len: usize,
        ends_without_newline: bool,
    ) -> Result<(Tree, Vec<Diagnostic>), SessionError> {
        let Some(header) = self.header.take() else {
            return Err(SessionError::MissingHeader {
                path: self.path.clone(),
                line: (self.line_count as usize).max(1),
                reason: "the file has no `session` header line".to_owned(),
            });
        };
        self.ends_without_newline = ends_without_newline;
        self.drop_torn_leaves(&text)?;
        let mut labels = HashMap::new();
        for (target, label, timestamp) in std::mem::take(&mut self.label_changes) {
            apply_label(&mut labels, target, label.as_deref(), &timestamp);
        }
        let (by_id, repeated_ids) = self.index_ids();
        let leaf = self.resolve_leaf();
        self.diagnostics.sort_by_key(|d| d.line);
        let tree = Tree {
            path: self.path,
            header,
            line_cache: OnceLock::new(),
            cached_lines: match &text {
                Text::File(_) => self.nodes.len(),
                Text::Memory(_) => 0,
            },
            text,
            text_len,
            appended: String::new(),
            repaired: self.repaired,
            nodes: self.nodes,
            by_id,
            child_lists: OnceLock::new(),
            repeated_ids,
            leaf,
            labels,
            name: self.name.flatten(),
            ends_without_newline: self.ends_without_newline,
            line_count: self.line_count,
        };
        Ok((tree, self.diagnostics))
    }
}

/// Removes the elements at `dropped` (ascending indices) from `items`, keeping the order.
fn drop_indices<T>(items: &mut Vec<T>, dropped: &[u32]) {
    let mut position = 0u32;
    items.retain(|_| {
        let keep = dropped.binary_search(&position).is_err();
        position += 1;
        keep
    });
}

/// Id → node index, as an open-addressing table of node indices (4 bytes a slot): the ids
/// themselves live in the nodes, so the table adds about 1 MB per 100,000 entries.
#[derive(Debug, Clone)]
struct IdIndex {
    slots: Vec<u32>,
    len: usize,
}

impl IdIndex {
    fn with_capacity(entries: usize) -> Self {
        Self {
            slots: vec![NONE; Self::slot_count(entries)],
            len: 0,
        }
    }

    /// The table size for `entries` ids: at most half full.
    fn slot_count(entries: usize) -> usize {
        (entries.max(8) * 2).next_power_of_two()
    }

    /// The index of `nodes` when no two share an id (`None` otherwise: the full build
    /// reports those), for a sidecar to store.
    fn of_distinct(nodes: &[Node]) -> Option<Self> {
        let mut by_id = Self::with_capacity(nodes.len());
        for index in 0..nodes.len() as u32 {
            if by_id.insert(nodes, index).is_some() {
                return None;
            }
        }
        Some(by_id)
    }

    /// An index of `entries` nodes from its stored slots: `None` unless the table has the
    /// size [`Self::with_capacity`] gives and as many used slots as nodes, each naming a
    /// node. (The sidecar's hash already vouches for the bytes; this keeps a lookup from
    /// ever indexing past the nodes.)
    fn from_slots(slots: Vec<u32>, entries: usize) -> Option<Self> {
        if slots.len() != Self::slot_count(entries) {
            return None;
        }
        let used = slots.iter().filter(|&&slot| slot != NONE).count();
        let in_range = slots
            .iter()
            .all(|&slot| slot == NONE || (slot as usize) < entries);
        (used == entries && in_range).then_some(Self {
            slots,
            len: entries,
        })
    }

    /// A fixed value of the slot hash: a stored table is only taken by a build that hashes
    /// ids as the one that stored it.
    fn hash_fingerprint() -> u64 {
        let mut hasher = IdHasher::default();
        std::hash::Hasher::write(&mut hasher, b"strata id table");
        std::hash::Hasher::finish(&hasher)
    }

    fn slot_of(&self, id: &[u8]) -> usize {
        let mut hasher = IdHasher::default();
        std::hash::Hasher::write(&mut hasher, id);
        // The multiplicative hash puts its best bits high.
        let hash = std::hash::Hasher::finish(&hasher);
        (hash >> (64 - self.slots.len().trailing_zeros())) as usize
    }

    fn get(&self, nodes: &[Node], id: &str) -> Option<u32> {
        let id = id.as_bytes();
        let mask = self.slots.len() - 1;
        let mut slot = self.slot_of(id);
        loop {
            let index = self.slots[slot];
            if index == NONE {
                return None;
            }
            if nodes[index as usize].id.as_bytes() == id {
                return Some(index);
            }
            slot = (slot + 1) & mask;
        }
    }

    /// Maps the node's id to `index`; returns the index it replaced (a duplicate id).
    fn insert(&mut self, nodes: &[Node], index: u32) -> Option<u32> {
        if (self.len + 1) * 2 > self.slots.len() {
            self.grow(nodes);
        }
        let id = nodes[index as usize].id.as_bytes();
        let mask = self.slots.len() - 1;
        let mut slot = self.slot_of(id);
        loop {
            let current = self.slots[slot];
            if current == NONE {
                self.slots[slot] = index;
                self.len += 1;
                return None;
            }
            if nodes[current as usize].id.as_bytes() == id {
                self.slots[slot] = index;
                return Some(current);
            }
            slot = (slot + 1) & mask;
        }
    }

    fn grow(&mut self, nodes: &[Node]) {
        let doubled = self.slots.len() * 2;
        let old = std::mem::replace(&mut self.slots, vec![NONE; doubled]);
        self.len = 0;
        for index in old.into_iter().filter(|&index| index != NONE) {
            self.insert(nodes, index);
        }
    }
}

/// Whether `{`/`[` and `}`/`]` are equally many in `line` (strings included), and whether it is
/// all ASCII. It is the one pass every byte of a file gets at open, so it is written for the
/// compiler's vector code: per-lane counters over fixed 16-byte chunks, summed only every
/// [`LANE_FLUSH`] chunks (no horizontal sum per chunk), and no branch on the bytes.
fn bracket_balance_and_ascii(line: &[u8]) -> (bool, bool) {
    // One vector register of counters and one of high bits (more lanes spill to the stack).
    const LANES: usize = 16;
    // A lane's counter moves by at most 2 a chunk: 60 chunks stay within an `i8`.
    const LANE_FLUSH: usize = 60;
    let mut depth: i64 = 0;
    let mut high = 0u8;
    let mut chunks = line.chunks_exact(LANES);
    loop {
        let mut lanes = [0i8; LANES];
        let mut lane_high = [0u8; LANES];
        let mut taken = 0;
        for chunk in chunks.by_ref().take(LANE_FLUSH) {
            for ((lane, high), &byte) in lanes.iter_mut().zip(&mut lane_high).zip(chunk) {
                let opened = i8::from(byte == b'{') + i8::from(byte == b'[');
                let closed = i8::from(byte == b'}') + i8::from(byte == b']');
                *lane += opened - closed;
                *high |= byte;
            }
            taken += 1;
        }
        depth += lanes.iter().map(|&lane| i64::from(lane)).sum::<i64>();
        high |= lane_high.iter().fold(0, |all, &byte| all | byte);
        if taken < LANE_FLUSH {
            break;
        }
    }
    for &byte in chunks.remainder() {
        depth += i64::from(u8::from(byte == b'{') + u8::from(byte == b'['));
        depth -= i64::from(u8::from(byte == b'}') + u8::from(byte == b']'));
        high |= byte;
    }
    (depth == 0, high < 0x80)
}

/// What a streaming pass learned about the text besides its lines.
struct Streamed {
    len: usize,
    ends_without_newline: bool,
}

/// Feeds blocks of a text to a [`Builder`], carrying a line cut by a block's end over to the
/// next block: only that line is copied, never the whole text.
struct Stream {
    builder: Builder,
    /// The text from `carry_from` on that is not indexed yet.
    carry: Vec<u8>,
    carry_from: usize,
    len: usize,
    last_byte: Option<u8>,
}

impl Stream {
    fn new(builder: Builder) -> Self {
        let start = builder.next_line;
        Self {
            builder,
            carry: Vec::new(),
            carry_from: start,
            len: start,
            last_byte: None,
        }
    }

    fn push(&mut self, block: &[u8]) -> Result<(), SessionError> {
        if block.is_empty() {
            return Ok(());
        }
        let base = self.len;
        self.len += block.len();
        self.last_byte = block.last().copied();
        let mut rest = block;
        if !self.carry.is_empty() {
            let Some(newline) = memchr::memchr(b'\n', block) else {
                // A line longer than a block: indexed once its end has arrived.
                self.carry.extend_from_slice(block);
                return Ok(());
            };
            self.carry.extend_from_slice(&block[..=newline]);
            self.builder.feed(&self.carry, self.carry_from, false)?;
            let indexed = self
                .builder
                .next_line
                .saturating_sub(self.carry_from)
                .min(self.carry.len());
            self.carry.drain(..indexed);
            self.carry_from += indexed;
            rest = &block[newline + 1..];
            if !self.carry.is_empty() {
                self.carry.extend_from_slice(rest);
                return Ok(());
            }
        }
        let rest_base = base + (block.len() - rest.len());
        self.builder.feed(rest, rest_base, false)?;
        let indexed = self
            .builder
            .next_line
            .saturating_sub(rest_base)
            .min(rest.len());
        self.carry_from = rest_base + indexed;
        self.carry.extend_from_slice(&rest[indexed..]);
        Ok(())
    }

    fn finish(mut self) -> Result<(Builder, Streamed), SessionError> {
        self.builder.feed(&self.carry, self.carry_from, true)?;
        let streamed = Streamed {
            len: self.len,
            ends_without_newline: self.last_byte.is_some_and(|byte| byte != b'\n'),
        };
        Ok((self.builder, streamed))
    }
}

/// Indexes `reader` block by block on this thread.
fn index_stream(
    path: &Path,
    reader: &mut impl Read,
    size_hint: usize,
    block: usize,
) -> Result<(Builder, Streamed), SessionError> {
    index_part(Builder::new(path, size_hint), path, reader, block)
}

/// Feeds what `reader` yields to `builder`, which starts at the reader's first byte.
fn index_part(
    builder: Builder,
    path: &Path,
    reader: &mut impl Read,
    block: usize,
) -> Result<(Builder, Streamed), SessionError> {
    let mut stream = Stream::new(builder);
    let mut buffer = vec![0u8; block.max(1)];
    loop {
        let read = fill(reader, &mut buffer).map_err(|e| SessionError::io(path, e))?;
        if read == 0 {
            break;
        }
        stream.push(&buffer[..read])?;
    }
    stream.finish()
}

/// Indexes `reader` while a second thread reads ahead into a few recycled blocks.
///
/// Reading a large file is mostly the kernel copying it, about as long as indexing it; on two
/// cores the two overlap. Memory stays at a few blocks whatever the file's size.
fn index_overlapped(
    path: &Path,
    reader: &mut (impl Read + Send),
    size_hint: usize,
    block: usize,
) -> Result<(Builder, Streamed), SessionError> {
    let block = block.max(1);
    let mut stream = Stream::new(Builder::new(path, size_hint));
    std::thread::scope(|scope| {
        let (full, filled) =
            std::sync::mpsc::sync_channel::<std::io::Result<Vec<u8>>>(BLOCKS_IN_FLIGHT);
        let (recycle, recycled) = std::sync::mpsc::channel::<Vec<u8>>();
        let source = &mut *reader;
        scope.spawn(move || {
            let mut fresh = BLOCKS_IN_FLIGHT + 1;
            loop {
                let mut buffer = match recycled.try_recv() {
                    Ok(buffer) => buffer,
                    Err(_) if fresh > 0 => {
                        fresh -= 1;
                        vec![0u8; block]
                    }
                    // Wait for the indexer to hand one back; it hung up: nothing more to do.
                    Err(_) => match recycled.recv() {
                        Ok(buffer) => buffer,
                        Err(_) => return,
                    },
                };
                buffer.resize(block, 0);
                let result = fill(source, &mut buffer).map(|read| {
                    buffer.truncate(read);
                    buffer
                });
                let last = !matches!(&result, Ok(buffer) if !buffer.is_empty());
                if full.send(result).is_err() || last {
                    return;
                }
            }
        });
        for result in filled {
            let buffer = result.map_err(|e| SessionError::io(path, e))?;
            if buffer.is_empty() {
                break;
            }
            stream.push(&buffer)?;
            // The reader may have finished already: then the block is simply dropped.
            let _ = recycle.send(buffer);
        }
        Ok::<(), SessionError>(())
    })?;
    stream.finish()
}

/// The most parts a file is cut into for indexing on several threads.
const MAX_PARTS: usize = 8;

/// Parts smaller than this are not worth a thread.
const MIN_PART: u64 = 8 << 20;

/// Indexes a large file in parts on several threads, each reading its own byte range; `None`
/// when the file does not lend itself (one processor, no header where expected, a legacy
/// version whose ids come from line positions), for the caller to index it in one stream.
fn index_in_parts(
    path: &Path,
    file: &File,
    size: u64,
) -> Option<Result<(Builder, Streamed), SessionError>> {
    let threads = std::thread::available_parallelism().map_or(1, usize::from);
    let parts = threads.min(MAX_PARTS).min((size / MIN_PART) as usize);
    if parts < 2 {
        return None;
    }
    index_split(path, file, size, parts)
}

/// [`index_in_parts`] with the number of parts given.
fn index_split(
    path: &Path,
    file: &File,
    size: u64,
    parts: usize,
) -> Option<Result<(Builder, Streamed), SessionError>> {
    let (header, _) = header_of(file)?;
    if header.effective_version() < 2 {
        return None;
    }
    // Each part starts after a newline, so that no line is cut between two parts.
    let mut starts = vec![0u64];
    for part in 1..parts {
        let guess = size / parts as u64 * part as u64;
        let start = line_start_after(file, guess.max(starts[starts.len() - 1]))?;
        if start < size {
            starts.push(start);
        }
    }
    let mut ends: Vec<Option<u64>> = starts.iter().skip(1).map(|&start| Some(start)).collect();
    // The last part reads to the end, wherever it is by then.
    ends.push(None);
    let outcome = std::thread::scope(|scope| {
        let workers: Vec<_> = starts
            .iter()
            .zip(&ends)
            .skip(1)
            .map(|(&start, &end)| {
                let header = &header;
                scope.spawn(move || {
                    let text_len = end.unwrap_or(size).saturating_sub(start) as usize;
                    let builder = Builder::for_part(path, header, start as usize, text_len);
                    let mut reader = RangeReader {
                        file,
                        position: start,
                        end,
                    };
                    index_part(builder, path, &mut reader, READ_BLOCK)
                })
            })
            .collect();
        let mut reader = RangeReader {
            file,
            position: 0,
            end: ends[0],
        };
        let first = index_part(
            Builder::new(path, starts.get(1).copied().unwrap_or(size) as usize),
            path,
            &mut reader,
            READ_BLOCK,
        );
        let rest: Vec<_> = workers
            .into_iter()
            .map(|worker| {
                worker.join().unwrap_or_else(|_| {
                    Err(SessionError::io(
                        path,
                        std::io::Error::other("an indexing thread panicked"),
                    ))
                })
            })
            .collect();
        (first, rest)
    });
    let (first, rest) = outcome;
    Some((|| {
        let (mut builder, mut streamed) = first?;
        for part in rest {
            let (next, next_streamed) = part?;
            builder.join(next);
            streamed = next_streamed;
        }
        Ok((builder, streamed))
    })())
}

/// The header of a file and where the line after it starts, from its first megabyte.
fn header_of(file: &File) -> Option<(SessionHeader, u64)> {
    let mut prefix = vec![0u8; 1 << 20];
    let read = read_at_most(file, &mut prefix, 0).ok()?;
    let prefix = &prefix[..read];
    let mut start = 0;
    loop {
        let end = start + memchr::memchr(b'\n', &prefix[start..])?;
        let line = &prefix[start..end];
        if !line.iter().all(|byte| matches!(byte, b' ' | b'\t' | b'\r')) {
            let header = SessionHeader::parse(std::str::from_utf8(line).ok()?)?;
            return Some((header, end as u64 + 1));
        }
        start = end + 1;
    }
}

/// The offset just after the first newline at or after `from` (within the next megabyte).
fn line_start_after(file: &File, from: u64) -> Option<u64> {
    let mut window = vec![0u8; 1 << 20];
    let read = read_at_most(file, &mut window, from).ok()?;
    memchr::memchr(b'\n', &window[..read]).map(|at| from + at as u64 + 1)
}

/// A byte range of a file read with positioned reads, so that threads share the handle.
struct RangeReader<'a> {
    file: &'a File,
    position: u64,
    /// Exclusive; `None`: to the end of the file.
    end: Option<u64>,
}

impl Read for RangeReader<'_> {
    fn read(&mut self, buffer: &mut [u8]) -> std::io::Result<usize> {
        let want = match self.end {
            Some(end) => buffer.len().min(end.saturating_sub(self.position) as usize),
            None => buffer.len(),
        };
        if want == 0 {
            return Ok(0);
        }
        let read = read_some_at(self.file, &mut buffer[..want], self.position)?;
        self.position += read as u64;
        Ok(read)
    }
}

/// Reads at `offset` until `buffer` is full or the file ends; returns how much was read.
fn read_at_most(file: &File, buffer: &mut [u8], offset: u64) -> std::io::Result<usize> {
    let mut done = 0;
    while done < buffer.len() {
        match read_some_at(file, &mut buffer[done..], offset + done as u64) {
            Ok(0) => break,
            Ok(read) => done += read,
            Err(error) if error.kind() == std::io::ErrorKind::Interrupted => {}
            Err(error) => return Err(error),
        }
    }
    Ok(done)
}

/// One positioned read.
fn read_some_at(file: &File, buffer: &mut [u8], offset: u64) -> std::io::Result<usize> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileExt;
        file.read_at(buffer, offset)
    }
    #[cfg(windows)]
    {
        use std::os::windows::fs::FileExt;
        file.seek_read(buffer, offset)
    }
}

/// Reads exactly `buffer.len()` bytes at `offset` without moving the file's position.
pub(crate) fn read_exact_at(file: &File, buffer: &mut [u8], offset: u64) -> std::io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileExt;
        file.read_exact_at(buffer, offset)
    }
    #[cfg(windows)]
    {
        use std::os::windows::fs::FileExt;
        let mut done = 0;
        while done < buffer.len() {
            match file.seek_read(&mut buffer[done..], offset + done as u64) {
                Ok(0) => return Err(std::io::ErrorKind::UnexpectedEof.into()),
                Ok(read) => done += read,
                Err(error) if error.kind() == std::io::ErrorKind::Interrupted => {}
                Err(error) => return Err(error),
            }
        }
        Ok(())
    }
}

/// Reads until `block` is full or the input ends; returns how much was read.
fn fill(reader: &mut impl Read, block: &mut [u8]) -> std::io::Result<usize> {
    let mut filled = 0;
    while filled < block.len() {
        match reader.read(&mut block[filled..]) {
            Ok(0) => break,
            Ok(read) => filled += read,
            Err(error) if error.kind() == std::io::ErrorKind::Interrupted => {}
            Err(error) => return Err(error),
        }
    }
    Ok(filled)
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEADER: &str = r#"{"type":"session","version":3,"id":"s","timestamp":"2026-01-15T10:00:00.000Z","cwd":"/w"}"#;

    fn message(id: &str, parent: &str, text: &str) -> String {
        format!(
            r#"{{"type":"message","id":"{id}","parentId":{parent},"timestamp":"2026-01-15T10:00:01.000Z","message":{{"role":"user","content":"{text}","timestamp":1}}}}"#
        )
    }

    /// Lines of every kind the indexer treats specially.
    fn awkward_file() -> Vec<u8> {
        let mut bytes = Vec::new();
        bytes.extend_from_slice(HEADER.as_bytes());
        bytes.extend_from_slice(b"\n\n   \n");
        bytes.extend_from_slice(message("a1", "null", "first \\\"quoted\\\" line").as_bytes());
        bytes.extend_from_slice(b"\n  ");
        bytes.extend_from_slice(message("b2", "\"a1\"", "second").as_bytes());
        bytes.extend_from_slice(b" \r\n");
        // A torn write in the middle of the file, then more entries.
        bytes.extend_from_slice(
            br#"{"type":"message","id":"c3","parentId":"b2","message":{"role":"us"#,
        );
        bytes.push(b'\n');
        let mut bad = message("d4", "\"b2\"", "caf\u{e9} XX").into_bytes();
        let at = bad.len() - 20;
        bad[at] = 0xff;
        bytes.extend_from_slice(&bad);
        bytes.push(b'\n');
        bytes.extend_from_slice(message("e5", "\"d4\"", "\u{1F600} fine").as_bytes());
        bytes.push(b'\n');
        bytes.extend_from_slice(br#"{"type":"message","id":"f6","parentId":"e5","mess"#);
        bytes
    }

    #[test]
    fn the_root_first_walk_gives_the_path_and_its_kinds_within_the_limit() {
        let mut text = format!("{HEADER}\n");
        text.push_str(&message("a1", "null", "one"));
        text.push('\n');
        text.push_str(r#"{"type":"thinking_level_change","id":"b2","parentId":"a1","timestamp":"2026-01-15T10:00:01.000Z","thinkingLevel":"high"}"#);
        text.push('\n');
        // A sibling branch, off the path.
        text.push_str(&message("d4", "\"a1\"", "three"));
        text.push('\n');
        text.push_str(&message("c3", "\"b2\"", "two"));
        text.push('\n');
        let (tree, _) = Tree::parse(Path::new("t.jsonl"), text.into_bytes()).expect("tree");
        let (numbers, kinds) = tree
            .numbers_and_kinds_from_root("c3", 3)
            .expect("within the limit");
        assert_eq!(numbers, [0, 1, 3]);
        let ids: Vec<&str> = numbers
            .iter()
            .map(|&n| tree.get_index(n as usize).expect("entry").id().as_str())
            .collect();
        let expected: Vec<&str> = tree
            .path_from_root("c3")
            .iter()
            .map(|id| id.as_str())
            .collect();
        assert_eq!(ids, expected);
        assert_eq!(tree.number_of("c3"), Some(3));
        assert_eq!(
            kinds,
            [
                EntryKind::Message(Role::User),
                EntryKind::ThinkingLevelChange,
                EntryKind::Message(Role::User)
            ]
        );
        assert!(
            tree.numbers_and_kinds_from_root("c3", 2).is_none(),
            "past the limit"
        );
        let (none, no_kinds) = tree.numbers_and_kinds_from_root("zz", 5).expect("unknown");
        assert!(none.is_empty() && no_kinds.is_empty());
        assert!(!tree.has_repeated_ids());
        let repeated = format!(
            "{HEADER}\n{}\n{}\n",
            message("a1", "null", "x"),
            message("a1", "null", "y")
        );
        let (tree, _) = Tree::parse(Path::new("t.jsonl"), repeated.into_bytes()).expect("tree");
        assert!(tree.has_repeated_ids());
    }

    #[test]
    fn children_are_listed_alike_whether_asked_before_or_after_an_append() {
        // `z9` names a parent that comes later in the file.
        let text = format!(
            "{HEADER}\n{}\n{}\n{}\n{}\n",
            message("a1", "null", "x"),
            message("z9", "\"c3\"", "x"),
            message("b2", "\"a1\"", "x"),
            message("c3", "\"a1\"", "x"),
        );
        let line = message("d4", "\"a1\"", "x");
        let entry: Entry = serde_json::from_str(&line).expect("entry");
        let ids = |tree: &Tree, id: &str| -> Vec<String> {
            tree.children(id)
                .iter()
                .map(|id| id.as_str().to_owned())
                .collect()
        };
        let (mut asked_first, _) =
            Tree::parse(Path::new("t.jsonl"), text.clone().into_bytes()).expect("tree");
        assert_eq!(ids(&asked_first, "a1"), ["b2", "c3"]);
        assert_eq!(ids(&asked_first, "c3"), ["z9"]);
        asked_first.push_appended(line.clone(), &entry);
        let (mut asked_after, _) =
            Tree::parse(Path::new("t.jsonl"), text.into_bytes()).expect("tree");
        asked_after.push_appended(line, &entry);
        for tree in [&asked_first, &asked_after] {
            assert_eq!(ids(tree, "a1"), ["b2", "c3", "d4"]);
            assert_eq!(ids(tree, "c3"), ["z9"]);
            assert!(ids(tree, "d4").is_empty());
        }
    }

    fn summary(tree: &Tree, diagnostics: &[Diagnostic]) -> Vec<String> {
        let mut out: Vec<String> = tree
            .iter()
            .map(|entry| {
                format!(
                    "{} {} {:?} {:?} {}",
                    entry.line_number(),
                    entry.id(),
                    entry.parent_id(),
                    entry.kind(),
                    entry.raw_line()
                )
            })
            .collect();
        out.extend(diagnostics.iter().map(ToString::to_string));
        out.push(format!(
            "leaf {:?} end {}",
            tree.leaf(),
            tree.ends_without_newline()
        ));
        out
    }

    /// Streams `bytes` through the indexer in blocks, the text then served from memory.
    fn streamed(
        bytes: &[u8],
        hint: usize,
        block: usize,
        overlapped: bool,
    ) -> Result<(Tree, Vec<Diagnostic>), SessionError> {
        let path = Path::new("awkward.jsonl");
        let mut reader = bytes;
        let (builder, streamed) = if overlapped {
            index_overlapped(path, &mut reader, hint, block)?
        } else {
            index_stream(path, &mut reader, hint, block)?
        };
        assert_eq!(streamed.len, bytes.len());
        builder.finish(
            Text::Memory(bytes.to_vec()),
            streamed.len,
            streamed.ends_without_newline,
        )
    }

    #[test]
    fn reading_in_any_block_size_indexes_like_one_buffer() {
        let bytes = awkward_file();
        let path = Path::new("awkward.jsonl");
        let (tree, diagnostics) = Tree::parse(path, bytes.clone()).unwrap();
        let expected = summary(&tree, &diagnostics);
        assert_eq!(tree.len(), 4, "{expected:#?}");
        for block in [1, 2, 3, 7, 64, 100, 4096] {
            let (read, read_diagnostics) = streamed(&bytes, 0, block, false).unwrap();
            assert_eq!(summary(&read, &read_diagnostics), expected, "block {block}");
        }
    }

    #[test]
    fn reading_on_a_second_thread_indexes_like_one_buffer() {
        let mut bytes = awkward_file();
        // A line longer than several blocks.
        let long = message("g7", "\"e5\"", &"x".repeat(300));
        let at = bytes.len() - br#"{"type":"message","id":"f6","parentId":"e5","mess"#.len();
        bytes.splice(at..at, format!("{long}\n").into_bytes());
        let path = Path::new("awkward.jsonl");
        let (tree, diagnostics) = Tree::parse(path, bytes.clone()).unwrap();
        let expected = summary(&tree, &diagnostics);
        assert_eq!(tree.len(), 5, "{expected:#?}");
        let len = bytes.len();
        for block in [1, 2, 3, 7, 64, 100, 4096] {
            // The size read first may be stale: the file grew, or shrank, since.
            for hint in [0, 1, len / 2, len - 1, len, len + 100] {
                let (read, read_diagnostics) = streamed(&bytes, hint, block, true).unwrap();
                assert_eq!(
                    summary(&read, &read_diagnostics),
                    expected,
                    "block {block}, size hint {hint}"
                );
                assert_eq!(read.text_len(), len);
            }
        }
    }

    #[test]
    fn indexing_in_parts_on_threads_indexes_like_one_buffer() {
        let mut bytes = awkward_file();
        // Labels and names set and cleared in different parts; a parent in an earlier part.
        let label = |id: &str, parent: &str, target: &str, text: &str| {
            format!(
                r#"{{"type":"label","id":"{id}","parentId":"{parent}","timestamp":"2026-01-15T10:00:02.000Z","targetId":"{target}","label":{text}}}"#
            )
        };
        let at = bytes.len() - br#"{"type":"message","id":"f6","parentId":"e5","mess"#.len();
        let mut middle = String::new();
        for (n, text) in ["\"one\"", "null", "\"two\""].iter().enumerate() {
            let parent = if n == 0 {
                "e5".to_owned()
            } else {
                format!("l{}", n - 1)
            };
            middle.push_str(&label(&format!("l{n}"), &parent, "a1", text));
            middle.push('\n');
            middle.push_str(&message(&format!("m{n}"), &format!("\"l{n}\""), "filler"));
            middle.push('\n');
        }
        middle.push_str(r#"{"type":"session_info","id":"n1","parentId":"m2","timestamp":"2026-01-15T10:00:03.000Z","name":" named "}"#);
        middle.push('\n');
        bytes.splice(at..at, middle.into_bytes());
        let path = Path::new("awkward.jsonl");
        let (tree, diagnostics) = Tree::parse(path, bytes.clone()).unwrap();
        let expected = summary(&tree, &diagnostics);
        assert_eq!(tree.label_of("a1"), Some("two"));
        assert_eq!(tree.name(), Some("named"));
        let dir = tempfile::tempdir().unwrap();
        let file_path = dir.path().join("awkward.jsonl");
        std::fs::write(&file_path, &bytes).unwrap();
        let file = File::open(&file_path).unwrap();
        for parts in 2..=7 {
            let (builder, streamed) = index_split(path, &file, bytes.len() as u64, parts)
                .unwrap()
                .unwrap();
            let (read, read_diagnostics) = builder
                .finish(
                    Text::Memory(bytes.clone()),
                    streamed.len,
                    streamed.ends_without_newline,
                )
                .unwrap();
            assert_eq!(summary(&read, &read_diagnostics), expected, "{parts} parts");
            assert_eq!(read.label_of("a1"), Some("two"));
            assert_eq!(read.name(), Some("named"));
        }
    }

    #[test]
    fn a_read_error_on_the_reading_thread_is_reported() {
        struct Failing(usize);
        impl Read for Failing {
            fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
                if self.0 == 0 {
                    return Err(std::io::Error::other("disk gone"));
                }
                let n = buf.len().min(self.0);
                buf[..n].fill(b'\n');
                self.0 -= n;
                Ok(n)
            }
        }
        let error = index_overlapped(Path::new("f.jsonl"), &mut Failing(100), 1000, 16)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(error.contains("disk gone"), "{error}");
        // A file with no header stops the indexer; the reading thread stops with it.
        let error = index_overlapped(
            Path::new("f.jsonl"),
            &mut b"not a header\n".repeat(1000).as_slice(),
            13_000,
            64,
        )
        .err();
        assert!(matches!(
            error,
            Some(SessionError::MissingHeader { line: 1, .. })
        ));
    }

    /// A file in Pi's layout (read by the literal scan) indexes exactly like the same file with
    /// every entry's keys in another order (read by the full scan): branches, a `leaf` entry
    /// that moves the leaf back, labels, a name, a torn line ending in `}` mid-file, a torn
    /// last line.
    #[test]
    fn the_literal_layout_scan_indexes_like_the_full_scan() {
        let ts = "2026-01-15T10:00:01.000Z";
        // (type, id, parent, the rest of the object after the tree fields)
        let entries: Vec<(&str, &str, Option<&str>, String)> = vec![
            (
                "model_change",
                "a1",
                None,
                r#""provider":"p","modelId":"m""#.into(),
            ),
            (
                "message",
                "b2",
                Some("a1"),
                r#""message":{"role":"user","content":"hi {"}"#.into(),
            ),
            (
                "message",
                "c3",
                Some("b2"),
                r#""message":{"role":"assistant","content":[]}"#.into(),
            ),
            // A branch from b2.
            (
                "message",
                "d4",
                Some("b2"),
                r#""message":{"role":"user","content":"other"}"#.into(),
            ),
            (
                "label",
                "e5",
                Some("d4"),
                r#""targetId":"b2","label":"start""#.into(),
            ),
            (
                "session_info",
                "f6",
                Some("e5"),
                r#""name":" named ""#.into(),
            ),
            (
                "message",
                "g7",
                Some("c3"),
                r#""message":{"role":"toolResult","content":[]}"#.into(),
            ),
            // Moves the leaf back to d4: the leaf is not the last entry line.
            ("leaf", "h8", Some("d4"), String::new()),
        ];
        let render = |reordered: bool| {
            let mut text = String::from(HEADER);
            text.push('\n');
            for (n, (kind, id, parent, rest)) in entries.iter().enumerate() {
                let parent = parent.map_or("null".to_owned(), |p| format!("\"{p}\""));
                let rest = if rest.is_empty() {
                    String::new()
                } else {
                    format!(",{rest}")
                };
                let line = if reordered {
                    format!(
                        r#"{{"id":"{id}","timestamp":"{ts}","parentId":{parent},"type":"{kind}"{rest}}}"#
                    )
                } else {
                    format!(
                        r#"{{"type":"{kind}","id":"{id}","parentId":{parent},"timestamp":"{ts}"{rest}}}"#
                    )
                };
                text.push_str(&line);
                text.push('\n');
                if n == 2 {
                    // A write cut short right after an inner `}`, then the next entries.
                    let cut = line.find(r#""content""#).map_or(line.len(), |at| at + 10);
                    text.push_str(&line.replace(r#""c3""#, r#""t9""#)[..cut]);
                    text.push_str("}\n");
                }
            }
            text.push_str(r#"{"type":"message","id":"z0","parentId":"g7","mess"#);
            text.into_bytes()
        };
        let view = |bytes: Vec<u8>| {
            let (tree, diagnostics) = Tree::parse(Path::new("t.jsonl"), bytes).unwrap();
            let nodes: Vec<String> = tree
                .iter()
                .map(|entry| {
                    format!(
                        "{} {} {:?} {:?} {:?}",
                        entry.line_number(),
                        entry.id(),
                        entry.parent_id(),
                        entry.kind(),
                        entry.timestamp_millis()
                    )
                })
                .collect();
            let problems: Vec<String> = diagnostics
                .iter()
                .map(|d| {
                    let problem = format!("{:?}", d.problem);
                    let kind = problem
                        .split([' ', '{', '('])
                        .next()
                        .unwrap_or("")
                        .to_owned();
                    format!("{} {kind}", d.line)
                })
                .collect();
            let labels: Vec<String> = tree
                .labels()
                .map(|(id, text)| format!("{id}={text}"))
                .collect();
            (
                nodes,
                problems,
                tree.leaf().cloned(),
                labels,
                tree.name().map(str::to_owned),
            )
        };
        let literal = view(render(false));
        let full = view(render(true));
        assert_eq!(literal, full);
        assert_eq!(literal.2.as_ref().map(EntryId::as_str), Some("d4"));
        assert_eq!(literal.0.len(), entries.len());
        assert_eq!(literal.1.len(), 2, "{:?}", literal.1);
        assert_eq!(literal.4.as_deref(), Some("named"));
        assert_eq!(literal.3, ["b2=start"]);
        // The literal scan really is what read the Pi layout.
        let pi = render(false);
        let first = pi.split(|&b| b == b'\n').nth(1).unwrap();
        assert!(scan_pi_tree_fields(first).is_some());
        let other = render(true);
        let first = other.split(|&b| b == b'\n').nth(1).unwrap();
        assert!(scan_pi_tree_fields(first).is_none());
    }

    /// Torn lines that pass the literal layout scan (cut right after an inner `}`): one with
    /// the next write on the same line (Pi appends without a newline), one on a line of its own
    /// (strata starts a new line), one as the last entry line. Each is reported as malformed and
    /// left out, read from memory and from the file alike; the entries around them stay.
    #[test]
    fn torn_lines_the_layout_scan_passes_are_found_among_the_childless() {
        let assistant = |id: &str, parent: &str| {
            format!(
                r#"{{"type":"message","id":"{id}","parentId":"{parent}","timestamp":"2026-01-15T10:00:01.000Z","message":{{"role":"assistant","content":[{{"type":"text","text":"x"}},{{"type":"text","text":"y"}}],"stopReason":"stop","timestamp":1}}}}"#
            )
        };
        let torn = |id: &str, parent: &str| {
            let line = assistant(id, parent);
            let cut = line.find(r#""x"}"#).expect("inner object") + 4;
            line[..cut].to_owned()
        };
        let mut text = format!("{HEADER}\n{}\n", message("a1", "null", "hi"));
        text.push_str(&assistant("b2", "a1"));
        text.push('\n');
        // Line 4: torn t1, and on the same line the next write, c3 (lost with it).
        text.push_str(&torn("t1", "b2"));
        text.push_str(&message("c3", "\"b2\"", "after a crash"));
        text.push('\n');
        // Line 5: d4 continues from c3, which no longer exists.
        text.push_str(&message("d4", "\"c3\"", "next"));
        text.push('\n');
        // Line 6: torn t2 on a line of its own, then e5 from b2 (line 7).
        text.push_str(&torn("t2", "d4"));
        text.push('\n');
        text.push_str(&message("e5", "\"b2\"", "again"));
        text.push('\n');
        // Line 8: a torn last entry line, ended by a newline.
        text.push_str(&torn("t3", "e5"));
        text.push('\n');
        let bytes = text.into_bytes();
        let path = std::env::temp_dir().join(format!("strata-torn-{}.jsonl", std::process::id()));
        std::fs::write(&path, &bytes).unwrap();
        let file = Arc::new(File::open(&path).unwrap());
        let (from_file, file_diagnostics) = Tree::open_file(&path, file).unwrap();
        let (in_memory, diagnostics) = Tree::parse(&path, bytes).unwrap();
        std::fs::remove_file(&path).unwrap();
        assert_eq!(
            summary(&from_file, &file_diagnostics),
            summary(&in_memory, &diagnostics)
        );
        let ids: Vec<&str> = in_memory.iter().map(|e| e.id().as_str()).collect();
        assert_eq!(ids, ["a1", "b2", "d4", "e5"]);
        let problems: Vec<(usize, bool)> = diagnostics
            .iter()
            .map(|d| (d.line, matches!(d.problem, Problem::MalformedLine { .. })))
            .collect();
        assert_eq!(
            problems,
            [(4, true), (5, false), (6, true), (8, true)],
            "{diagnostics:?}"
        );
        assert!(matches!(
            &diagnostics[1].problem,
            Problem::UnknownParent { parent, .. } if parent.as_str() == "c3"
        ));
        // The torn last line does not decide the leaf; the entry before it does.
        assert_eq!(in_memory.leaf().map(EntryId::as_str), Some("e5"));
        assert_eq!(in_memory.parent_of("e5").map(EntryId::as_str), Some("b2"));
        assert_eq!(in_memory.children("b2").len(), 1);
        // The torn lines did take the literal layout scan.
        assert!(scan_pi_tree_fields(torn("t2", "d4").as_bytes()).is_some());
        let glued = torn("t1", "b2") + &message("c3", "\"b2\"", "x");
        assert!(scan_pi_tree_fields(glued.as_bytes()).is_some());
    }

    #[test]
    fn the_bracket_count_agrees_with_a_plain_count() {
        let plain = |line: &[u8]| {
            let mut depth = 0i64;
            for &byte in line {
                depth += i64::from(matches!(byte, b'{' | b'['));
                depth -= i64::from(matches!(byte, b'}' | b']'));
            }
            (depth == 0, line.is_ascii())
        };
        // Lengths around the lane width and the flush interval; runs of one bracket long
        // enough to overflow a lane counter that was not flushed.
        let mut seed = 7u64;
        for len in [0, 1, 31, 32, 33, 64, 1919, 1920, 1921, 3841, 5000, 20_000] {
            for pattern in 0..4 {
                let line: Vec<u8> = (0..len)
                    .map(|i| match pattern {
                        0 => b'{',
                        1 => [b'{', b'[', b'a'][i % 3],
                        2 => {
                            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1);
                            b"{}[]a\"x\xc3"[(seed >> 59) as usize % 8]
                        }
                        _ => {
                            if i < len / 2 {
                                b'['
                            } else {
                                b'}'
                            }
                        }
                    })
                    .collect();
                assert_eq!(
                    bracket_balance_and_ascii(&line),
                    plain(&line),
                    "length {len}, pattern {pattern}"
                );
            }
        }
    }

    /// Reading several entries in runs gives each entry exactly as reading it alone does, in
    /// any order, with unknown ids, torn and repaired lines among them.
    #[test]
    fn entries_read_in_runs_are_the_entries_read_one_by_one() {
        let mut bytes = awkward_file();
        let mut more = String::from("\n");
        let mut parent = "e5".to_owned();
        for n in 0..40 {
            let id = format!("r{n:02}");
            more.push_str(&message(
                &id,
                &format!("\"{parent}\""),
                &"y".repeat(n * 500),
            ));
            more.push('\n');
            parent = id;
        }
        // A line of the right shape whose message does not parse as a message.
        more.push_str(r#"{"type":"message","id":"bad","parentId":"r39","timestamp":"2026-01-15T10:00:01.000Z","message":{"role":"user","content":7}}"#);
        more.push('\n');
        let at = bytes.len() - br#"{"type":"message","id":"f6","parentId":"e5","mess"#.len();
        bytes.splice(at..at, more.into_bytes());
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("runs.jsonl");
        std::fs::write(&path, &bytes).unwrap();
        let (tree, _) = Tree::open_file(&path, Arc::new(File::open(&path).unwrap())).unwrap();
        let mut ids: Vec<String> = tree.iter().map(|entry| entry.id().to_string()).collect();
        assert!(ids.len() > 40, "{ids:?}");
        let show = |result: Result<Entry, SessionError>| match result {
            Ok(entry) => format!("{entry:?}"),
            Err(error) => format!("error: {error}"),
        };
        for order in 0..3 {
            match order {
                1 => ids.reverse(),
                2 => {
                    ids.insert(3, "missing".to_owned());
                    ids.swap(10, 20);
                    ids.push(ids[5].clone());
                }
                _ => {}
            }
            let alone: Vec<String> = ids.iter().map(|id| show(tree.entry(id))).collect();
            let runs: Vec<String> = tree.entries(&ids).into_iter().map(show).collect();
            assert_eq!(runs, alone, "order {order}");
        }
        assert!(show(tree.entry("bad")).starts_with("error"));
    }

    #[test]
    fn a_line_that_is_not_utf8_is_repaired_reported_and_kept() {
        let (tree, diagnostics) = Tree::parse(Path::new("bad.jsonl"), awkward_file()).unwrap();
        let problems: Vec<(usize, &Problem)> =
            diagnostics.iter().map(|d| (d.line, &d.problem)).collect();
        assert!(
            problems.contains(&(7, &Problem::InvalidUtf8)),
            "{problems:?}"
        );
        assert!(problems.iter().any(|(line, _)| *line == 6), "{problems:?}");
        assert!(problems.iter().any(|(line, _)| *line == 9), "{problems:?}");
        let repaired = tree.get("d4").unwrap();
        assert_eq!(repaired.line_number(), 7);
        assert!(repaired.raw_line().contains('\u{FFFD}'));
        assert!(repaired.raw_line().contains("café"));
        assert!(repaired.entry().is_ok());
        // Its neighbours are untouched and linked through it.
        assert_eq!(tree.parent_of("e5").map(EntryId::as_str), Some("d4"));
        assert!(tree.get("e5").unwrap().raw_line().contains('\u{1F600}'));
        assert_eq!(tree.leaf().map(EntryId::as_str), Some("e5"));
        assert!(tree.ends_without_newline());
    }
}
