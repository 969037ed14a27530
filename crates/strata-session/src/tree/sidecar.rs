//! The index sidecar: `<session file>.idx`, what the streaming index pass of a large session
//! file found, so that a re-open reads a few megabytes instead of scanning the whole file.
//!
//! The sidecar holds the [`Builder`] state after the pass and before [`Builder::finish`]: per
//! entry its offset, length, line number, id, parent (the line before, or pending by id) and
//! kind, plus the pending parents, label changes, the name and the header. It records the
//! session file's length, mtime and a hash of all its bytes when written (the content it
//! indexes), and when it was written. On open: the same length and mtime, written more than
//! [`RACY_SECS`] after that mtime → used as is without reading the file; otherwise the bytes
//! it indexed are hashed again, and only if they match is it used (for the old part of a file
//! that grew, with the appended bytes indexed); anything else (shorter, changed, another format
//! version, a torn, corrupt or foreign sidecar) → ignored, and the file is scanned. The
//! session file is never written.
//!
//! The sidecar's own hash is keyed with a random key kept beside the sessions
//! ([`KEY_FILE`], mode 0600): a sidecar made or edited by anything that does not hold the key
//! (a copy from another machine, a forgery with a recomputed checksum) never checks out.
//!
//! Only a pass that reported nothing (no diagnostics, no repaired lines) over a v2+ file is
//! saved: those are the only states the sidecar can restore exactly.
//!
//! Layout (little-endian): magic `STRATIDX`, format version `u32`, then the fields below, then
//! a hash of everything before it (`u64`). Strings are a `u32` length and UTF-8 bytes.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::UNIX_EPOCH;

use super::{
    Builder, IdIndex, NONE, Node, READ_BLOCK, RangeReader, Streamed, index_part, read_exact_at,
};
use crate::entry::{EntryKind, Role};
use crate::error::SessionError;
use crate::header::SessionHeader;
use crate::id::EntryId;

/// Files from this size on get a sidecar; a smaller one is scanned faster than it is checked.
pub(super) const SIDECAR_FROM: u64 = 1 << 20;

const MAGIC: &[u8; 8] = b"STRATIDX";

/// Bumped whenever the layout or the meaning of a field changes (2: fixed-size node records
/// and the id table; 3: a hash of the whole indexed content, the time written, a keyed hash).
const FORMAT_VERSION: u32 = 3;

/// One node's record: start `u64`, length, line and parent `u32`, kind code `u8`, id length
/// `u8` and the id's bytes padded to [`ID_BYTES`]. A fixed size lets a reopen decode a
/// chunk of records in one loop, with no per-field checks; ids longer than that (never
/// Pi's or strata's own) follow the records, by node.
const RECORD: usize = 22 + ID_BYTES;

/// The id bytes a record holds in place: what an [`EntryId`] keeps inline.
const ID_BYTES: usize = 14;

/// A record's id length when the id is stored after the records.
const LONG_ID: u8 = u8::MAX;

/// A file modified this close to when its sidecar was written may have changed again within
/// the same mtime tick (file systems stamp times coarsely): its content is hashed on open.
const RACY_SECS: u64 = 2;

/// The key of the sidecars' hashes, in the session file's directory (16 random bytes).
pub const KEY_FILE: &str = ".strata-sidecar.key";

const KEY_BYTES: usize = 16;

/// The sidecar key of `path`'s directory; created (mode 0600) when `create` and missing.
/// `None` when it cannot be read or made: no sidecar is then written or trusted.
fn sidecar_key(path: &Path, create: bool) -> Option<[u8; KEY_BYTES]> {
    let dir = path.parent().filter(|dir| !dir.as_os_str().is_empty());
    let key_path = dir.map_or_else(|| PathBuf::from(KEY_FILE), |dir| dir.join(KEY_FILE));
    let mut key = [0u8; KEY_BYTES];
    if let Ok(bytes) = std::fs::read(&key_path) {
        if bytes.len() != KEY_BYTES {
            return None;
        }
        key.copy_from_slice(&bytes);
        return Some(key);
    }
    if !create {
        return None;
    }
    key[..8].copy_from_slice(&crate::id::random_u64().to_le_bytes());
    key[8..].copy_from_slice(&crate::id::random_u64().to_le_bytes());
    match private_new_file()
        .open(&key_path)
        .and_then(|mut out| out.write_all(&key))
    {
        Ok(()) => Some(key),
        // Another process made it first: use theirs.
        Err(_) => sidecar_key(path, false),
    }
}

/// `<file>.idx`: a name that is not `*.jsonl`, so no session listing takes it for a session.
pub fn sidecar_path(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(".idx");
    PathBuf::from(name)
}

/// What is known of the session file when its sidecar is read or written.
struct FileState {
    len: u64,
    mtime: (u64, u32),
}

fn file_state(file: &File) -> Option<FileState> {
    let metadata = file.metadata().ok()?;
    let mtime = metadata
        .modified()
        .ok()
        .and_then(|time| time.duration_since(UNIX_EPOCH).ok())
        .map_or((0, 0), |since| (since.as_secs(), since.subsec_nanos()));
    Some(FileState {
        len: metadata.len(),
        mtime,
    })
}

/// The hash of `file`'s first `end` bytes: four lanes a step, the two halves of a large file
/// on two threads (it is read at memory speed from the page cache).
fn content_hash(file: &File, end: u64) -> Option<u64> {
    /// Bytes per read: a whole number of lane steps.
    const CHUNK: u64 = 1 << 20;
    let part = |start: u64, stop: u64| -> Option<u64> {
        let mut lanes = Lanes::new(stop - start);
        let mut buffer = vec![0u8; CHUNK.min(stop - start) as usize];
        let mut at = start;
        while at < stop {
            let len = CHUNK.min(stop - at) as usize;
            read_exact_at(file, &mut buffer[..len], at).ok()?;
            lanes.feed(&buffer[..len]);
            at += len as u64;
        }
        Some(lanes.finish())
    };
    if end < 16 * CHUNK {
        return part(0, end);
    }
    let middle = (end / 2) / CHUNK * CHUNK;
    let (first, second) = std::thread::scope(|scope| {
        let first = scope.spawn(|| part(0, middle));
        let second = part(middle, end);
        (first.join().ok().flatten(), second)
    });
    let mut all = Hash::new(end);
    all.words(&first?.to_le_bytes());
    all.words(&second?.to_le_bytes());
    Some(all.finish())
}

/// [`Hash`] over four interleaved lanes (four words a step, no dependency between them).
struct Lanes {
    lanes: [u64; 4],
    /// The bytes after the last whole step; only the last part fed may leave some.
    rest: Vec<u8>,
}

impl Lanes {
    fn new(len: u64) -> Self {
        let seed = Hash::new(len).h;
        Self {
            lanes: [seed, seed ^ 1, seed ^ 2, seed ^ 3],
            rest: Vec::new(),
        }
    }

    fn feed(&mut self, bytes: &[u8]) {
        debug_assert!(
            self.rest.is_empty(),
            "a part after one that left bytes over"
        );
        let mut steps = bytes.chunks_exact(32);
        for step in &mut steps {
            for (lane, word) in self.lanes.iter_mut().zip(step.chunks_exact(8)) {
                let mut w = [0u8; 8];
                w.copy_from_slice(word);
                *lane = (*lane ^ u64::from_le_bytes(w))
                    .wrapping_mul(Hash::K)
                    .rotate_left(29);
            }
        }
        self.rest.extend_from_slice(steps.remainder());
    }

    fn finish(self) -> u64 {
        let mut all = Hash::new(self.rest.len() as u64);
        for lane in self.lanes {
            all.words(&lane.to_le_bytes());
        }
        let mut tail = all;
        tail.words(&self.rest);
        tail.finish()
    }
}

/// A fast 64-bit hash, eight bytes a step (not cryptographic: it detects damage, not forgery).
#[cfg(test)]
fn hash(bytes: &[u8]) -> u64 {
    let mut hash = Hash::new(bytes.len() as u64);
    hash.words(bytes);
    hash.finish()
}

/// [`hash`] fed in parts: every part but the last a whole number of words.
#[derive(Clone, Copy)]
struct Hash {
    h: u64,
    /// The bytes after the last whole word of the last part.
    rest: [u8; 8],
    rest_len: usize,
}

impl Hash {
    const K: u64 = 0x9E37_79B9_7F4A_7C15;

    /// A hash of `len` bytes in all.
    fn new(len: u64) -> Self {
        Self {
            h: 0xCBF2_9CE4_8422_2325u64 ^ len.wrapping_mul(Self::K),
            rest: [0; 8],
            rest_len: 0,
        }
    }

    /// Feeds `bytes`; only the last part may leave bytes over.
    fn words(&mut self, bytes: &[u8]) {
        debug_assert_eq!(self.rest_len, 0, "a part after one that left bytes over");
        let mut chunks = bytes.chunks_exact(8);
        for chunk in &mut chunks {
            let mut word = [0u8; 8];
            word.copy_from_slice(chunk);
            self.h = (self.h ^ u64::from_le_bytes(word))
                .wrapping_mul(Self::K)
                .rotate_left(29);
        }
        let rest = chunks.remainder();
        self.rest[..rest.len()].copy_from_slice(rest);
        self.rest_len = rest.len();
    }

    fn finish(mut self) -> u64 {
        for &byte in &self.rest[..self.rest_len] {
            self.h = (self.h ^ u64::from(byte))
                .wrapping_mul(Self::K)
                .rotate_left(29);
        }
        let h = self.h ^ (self.h >> 32);
        h.wrapping_mul(Self::K) ^ (h >> 29)
    }
}

fn kind_code(kind: EntryKind) -> u8 {
    match kind {
        EntryKind::Message(role) => {
            16 + match role {
                Role::User => 0,
                Role::Assistant => 1,
                Role::ToolResult => 2,
                Role::BashExecution => 3,
                Role::Custom => 4,
                Role::System => 5,
                Role::Other => 6,
            }
        }
        EntryKind::Compaction => 0,
        EntryKind::BranchSummary => 1,
        EntryKind::ModelChange => 2,
        EntryKind::ThinkingLevelChange => 3,
        EntryKind::Custom => 4,
        EntryKind::CustomMessage => 5,
        EntryKind::Label => 6,
        EntryKind::SessionInfo => 7,
        EntryKind::Usage => 8,
        EntryKind::System => 9,
        EntryKind::ContextEdit => 10,
        EntryKind::Leaf => 11,
        EntryKind::Unknown => 12,
    }
}

fn kind_of(code: u8) -> Option<EntryKind> {
    Some(match code {
        0 => EntryKind::Compaction,
        1 => EntryKind::BranchSummary,
        2 => EntryKind::ModelChange,
        3 => EntryKind::ThinkingLevelChange,
        4 => EntryKind::Custom,
        5 => EntryKind::CustomMessage,
        6 => EntryKind::Label,
        7 => EntryKind::SessionInfo,
        8 => EntryKind::Usage,
        9 => EntryKind::System,
        10 => EntryKind::ContextEdit,
        11 => EntryKind::Leaf,
        12 => EntryKind::Unknown,
        16 => EntryKind::Message(Role::User),
        17 => EntryKind::Message(Role::Assistant),
        18 => EntryKind::Message(Role::ToolResult),
        19 => EntryKind::Message(Role::BashExecution),
        20 => EntryKind::Message(Role::Custom),
        21 => EntryKind::Message(Role::System),
        22 => EntryKind::Message(Role::Other),
        _ => return None,
    })
}

#[derive(Default)]
struct Writer(Vec<u8>);

impl Writer {
    fn u8(&mut self, value: u8) {
        self.0.push(value);
    }
    fn u32(&mut self, value: u32) {
        self.0.extend_from_slice(&value.to_le_bytes());
    }
    fn u64(&mut self, value: u64) {
        self.0.extend_from_slice(&value.to_le_bytes());
    }
    fn str(&mut self, value: &str) {
        self.u32(value.len() as u32);
        self.0.extend_from_slice(value.as_bytes());
    }
    fn opt_str(&mut self, value: Option<&str>) {
        match value {
            Some(value) => {
                self.u8(1);
                self.str(value);
            }
            None => self.u8(0),
        }
    }
}

/// Reads the sidecar's body as it is decoded, through one small buffer, hashing it on the way:
/// the file is never held whole (its pages would be as many again as the index it restores).
struct Reader<R> {
    source: R,
    buffer: Vec<u8>,
    /// Where the unread bytes of `buffer` start.
    at: usize,
    /// Body bytes not read from `source` yet.
    unread: u64,
    hash: Hash,
}

/// How much of the body one read takes: a whole number of hash words.
const READ_CHUNK: usize = 64 * 1024;

impl<R: std::io::Read> Reader<R> {
    fn new(source: R, body_len: u64, key: &[u8; KEY_BYTES]) -> Self {
        let mut hash = Hash::new(body_len);
        hash.words(key);
        Self {
            source,
            buffer: Vec::with_capacity(READ_CHUNK),
            at: 0,
            unread: body_len,
            hash,
        }
    }

    /// Body bytes left to decode.
    fn remaining(&self) -> u64 {
        (self.buffer.len() - self.at) as u64 + self.unread
    }

    /// Reads on until `count` bytes are buffered; `None` when the body ends before.
    #[cold]
    #[inline(never)]
    fn fill(&mut self, count: usize) -> Option<()> {
        while self.buffer.len() - self.at < count {
            if self.unread == 0 {
                return None;
            }
            self.buffer.drain(..self.at);
            self.at = 0;
            let start = self.buffer.len();
            let chunk = self.unread.min(READ_CHUNK as u64) as usize;
            self.buffer.resize(start + chunk, 0);
            self.source.read_exact(&mut self.buffer[start..]).ok()?;
            self.unread -= chunk as u64;
            self.hash.words(&self.buffer[start..]);
        }
        Some(())
    }

    // Called six times an entry: the buffered case must stay a bounds check and a slice.
    #[inline]
    fn take(&mut self, count: usize) -> Option<&[u8]> {
        if self.buffer.len() - self.at < count {
            self.fill(count)?;
        }
        let start = self.at;
        self.at += count;
        self.buffer.get(start..self.at)
    }
    #[inline]
    fn u8(&mut self) -> Option<u8> {
        self.take(1).map(|bytes| bytes[0])
    }
    #[inline]
    fn u32(&mut self) -> Option<u32> {
        let mut word = [0u8; 4];
        word.copy_from_slice(self.take(4)?);
        Some(u32::from_le_bytes(word))
    }
    #[inline]
    fn u64(&mut self) -> Option<u64> {
        let mut word = [0u8; 8];
        word.copy_from_slice(self.take(8)?);
        Some(u64::from_le_bytes(word))
    }
    #[inline]
    fn str(&mut self) -> Option<&str> {
        let len = self.u32()? as usize;
        std::str::from_utf8(self.take(len)?).ok()
    }
    fn opt_str(&mut self) -> Option<Option<&str>> {
        match self.u8()? {
            0 => Some(None),
            1 => self.str().map(Some),
            _ => None,
        }
    }

    /// After the whole body was decoded: whether the hash that follows it matches.
    fn body_checks_out(mut self) -> bool {
        if self.remaining() != 0 {
            return false;
        }
        let mut sum = [0u8; 8];
        self.source.read_exact(&mut sum).is_ok() && self.hash.finish() == u64::from_le_bytes(sum)
    }
}

/// Whether this pass's state is one the sidecar restores exactly.
fn savable(builder: &Builder) -> bool {
    builder.diagnostics.is_empty()
        && builder.repaired.is_empty()
        && builder.version >= 2
        && builder.header.is_some()
        && builder.layout_only.len() == builder.nodes.len()
}

fn encode(
    builder: &Builder,
    header: &str,
    state: &FileState,
    streamed: &Streamed,
    content: u64,
    by_id: Option<&IdIndex>,
    key: &[u8; KEY_BYTES],
) -> Vec<u8> {
    let mut out = Writer::default();
    out.0.extend_from_slice(MAGIC);
    out.u32(FORMAT_VERSION);
    out.u64(streamed.len as u64);
    out.u64(state.mtime.0);
    out.u32(state.mtime.1);
    out.u64(content);
    let saved_at = std::time::SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |since| since.as_secs());
    out.u64(saved_at);
    out.u8(u8::from(streamed.ends_without_newline));
    out.str(header);
    out.u32(builder.line_count);
    out.u64(builder.next_line as u64);
    out.u32(builder.leaf_decider);
    out.u32(builder.nodes.len() as u32);
    let mut long_ids = Vec::new();
    for (index, (node, &layout_only)) in builder.nodes.iter().zip(&builder.layout_only).enumerate()
    {
        out.u64(node.start as u64);
        out.u32(node.len);
        out.u32(node.line);
        out.u32(node.parent);
        out.u8(kind_code(node.kind) | if layout_only { 0x80 } else { 0 });
        let id = node.id.as_bytes();
        let mut padded = [0u8; ID_BYTES];
        if id.len() <= ID_BYTES {
            out.u8(id.len() as u8);
            padded[..id.len()].copy_from_slice(id);
        } else {
            out.u8(LONG_ID);
            long_ids.push((index as u32, node.id.as_str()));
        }
        out.0.extend_from_slice(&padded);
    }
    out.u32(long_ids.len() as u32);
    for (index, id) in long_ids {
        out.u32(index);
        out.str(id);
    }
    // The id table, so that a reopen does not hash every id again; left out when two
    // entries share an id (the open that rebuilds it reports them).
    match by_id {
        Some(by_id) => {
            out.u8(1);
            out.u64(IdIndex::hash_fingerprint());
            out.u32(by_id.slots.len() as u32);
            for slot in &by_id.slots {
                out.u32(*slot);
            }
        }
        None => out.u8(0),
    }
    out.u32(builder.pending.len() as u32);
    for (child, parent) in &builder.pending {
        out.u32(*child);
        out.str(parent.as_str());
    }
    out.u32(builder.label_changes.len() as u32);
    for (target, label, timestamp) in &builder.label_changes {
        out.str(target.as_str());
        out.opt_str(label.as_deref());
        out.str(timestamp);
    }
    match &builder.name {
        None => out.u8(0),
        Some(name) => {
            out.u8(1);
            out.opt_str(name.as_deref());
        }
    }
    let sum = keyed_hash(&out.0, key);
    out.u64(sum);
    out.0
}

/// The sidecar's own hash: of its body, keyed.
fn keyed_hash(body: &[u8], key: &[u8; KEY_BYTES]) -> u64 {
    let mut hash = Hash::new(body.len() as u64);
    hash.words(key);
    hash.words(body);
    hash.finish()
}

/// What a sidecar restored, before the session file is checked against it.
struct Restored {
    builder: Builder,
    len: u64,
    mtime: (u64, u32),
    content: u64,
    saved_at: u64,
    ends_without_newline: bool,
}

/// Decodes node `index`'s record (of a file of `file_len` bytes); `None` for damage. A long
/// id comes back empty, to be set from after the records.
#[inline(always)]
fn decode_node(record: &[u8; RECORD], index: u32, file_len: u64) -> Option<Node> {
    let word = |at: usize| {
        u32::from_le_bytes([record[at], record[at + 1], record[at + 2], record[at + 3]])
    };
    let start = u64::from_le_bytes([
        record[0], record[1], record[2], record[3], record[4], record[5], record[6], record[7],
    ]);
    let (len, line, parent) = (word(8), word(12), word(16));
    // Parents found while indexing are always an earlier line.
    if (parent != NONE && parent >= index) || start.checked_add(u64::from(len))? > file_len {
        return None;
    }
    let id = match record[21] {
        LONG_ID => EntryId::new(""),
        // Padding past the id is zero, so that one id has one record.
        id_len => EntryId::from_padded(id_len, &record[22..].try_into().ok()?)?,
    };
    let node = Node {
        start: usize::try_from(start).ok()?,
        len,
        line,
        id,
        parent,
        kind: kind_of(record[20] & 0x7f)?,
    };
    Some(node)
}

/// Decodes a sidecar of `size` bytes from `source`; `None` for anything but an intact one. The
/// hash is checked at the end, so a damaged sidecar is decoded as far as it reads (every count
/// and index is bounded by what is left) and then refused.
fn decode(
    path: &Path,
    source: impl std::io::Read,
    size: u64,
    key: &[u8; KEY_BYTES],
) -> Option<Restored> {
    let mut input = Reader::new(source, size.checked_sub(8)?, key);
    if input.take(MAGIC.len())? != MAGIC || input.u32()? != FORMAT_VERSION {
        return None;
    }
    let len = input.u64()?;
    let mtime = (input.u64()?, input.u32()?);
    let content = input.u64()?;
    let saved_at = input.u64()?;
    let ends_without_newline = match input.u8()? {
        0 => false,
        1 => true,
        _ => return None,
    };
    let header: SessionHeader = serde_json::from_str(input.str()?).ok()?;
    let mut builder = Builder::new(path, 0);
    builder.version = header.effective_version();
    builder.header = Some(header);
    builder.line_count = input.u32()?;
    builder.next_line = usize::try_from(input.u64()?).ok()?;
    builder.leaf_decider = input.u32()?;
    let count = input.u32()?;
    // A count beyond what is left is damage.
    if u64::from(count) > input.remaining() / RECORD as u64 {
        return None;
    }
    builder.nodes = Vec::with_capacity(count as usize);
    builder.layout_only = Vec::with_capacity(count as usize);
    let mut long_ids = Vec::new();
    let mut left = count as usize;
    while left > 0 {
        let batch = left.min(READ_CHUNK / RECORD);
        let first = builder.nodes.len() as u32;
        let (records, _) = input.take(batch * RECORD)?.as_chunks::<RECORD>();
        // Extended from an exact-size iterator: each node is written in place, with no
        // capacity check per push. A damaged record is noted, and the sidecar refused after
        // the chunk.
        let mut damaged = false;
        builder
            .nodes
            .extend(records.iter().zip(first..).map(|(record, index)| {
                decode_node(record, index, len).unwrap_or_else(|| {
                    damaged = true;
                    Node::placeholder()
                })
            }));
        if damaged {
            return None;
        }
        builder
            .layout_only
            .extend(records.iter().map(|record| record[20] & 0x80 != 0));
        long_ids.extend(
            records
                .iter()
                .zip(first..)
                .filter(|(record, _)| record[21] == LONG_ID)
                .map(|(_, index)| index),
        );
        left -= batch;
    }
    // The long ids, one for each record that said so, in order.
    if input.u32()? as usize != long_ids.len() {
        return None;
    }
    for index in long_ids {
        (input.u32()? == index).then_some(())?;
        let id = input.str()?;
        if id.len() <= ID_BYTES {
            return None;
        }
        builder.nodes[index as usize].id = EntryId::new(id);
    }
    builder.restored_ids = match input.u8()? {
        0 => None,
        1 => {
            let same_hash = input.u64()? == IdIndex::hash_fingerprint();
            let slot_count = input.u32()? as usize;
            if slot_count as u64 > input.remaining() / 4 {
                return None;
            }
            let mut slots = Vec::with_capacity(slot_count);
            let mut left = slot_count;
            while left > 0 {
                let batch = left.min(READ_CHUNK / 4);
                let (words, _) = input.take(batch * 4)?.as_chunks::<4>();
                slots.extend(words.iter().map(|word| u32::from_le_bytes(*word)));
                left -= batch;
            }
            // A table from a build that hashed ids otherwise is read past, not taken.
            if same_hash {
                Some(IdIndex::from_slots(slots, builder.nodes.len())?)
            } else {
                None
            }
        }
        _ => return None,
    };
    if builder.leaf_decider != NONE && builder.leaf_decider >= count {
        return None;
    }
    let pending = input.u32()?;
    for _ in 0..pending {
        let child = input.u32()?;
        if child >= count {
            return None;
        }
        builder.pending.push((child, EntryId::new(input.str()?)));
    }
    let labels = input.u32()?;
    for _ in 0..labels {
        let target = EntryId::new(input.str()?);
        let label = input.opt_str()?.map(str::to_owned);
        let timestamp = input.str()?.to_owned();
        builder.label_changes.push((target, label, timestamp));
    }
    builder.name = match input.u8()? {
        0 => None,
        1 => Some(input.opt_str()?.map(str::to_owned)),
        _ => return None,
    };
    if builder.next_line as u64 > len + 1 || !input.body_checks_out() {
        return None;
    }
    Some(Restored {
        builder,
        len,
        mtime,
        content,
        saved_at,
        ends_without_newline,
    })
}

/// The index pass's state for `file` from its sidecar, with any bytes appended since indexed;
/// `None` when there is no usable sidecar (the caller scans the file).
pub(super) fn load(path: &Path, file: &File) -> Option<Result<(Builder, Streamed), SessionError>> {
    let state = file_state(file)?;
    if state.len < SIDECAR_FROM {
        return None;
    }
    let key = sidecar_key(path, false)?;
    let sidecar = File::open(sidecar_path(path)).ok()?;
    let size = sidecar.metadata().ok()?.len();
    let restored = decode(path, &sidecar, size, &key)?;
    if restored.len > state.len {
        return None;
    }
    // Untouched since well before the sidecar was written: nothing to read. Any other state
    // (grown, touched, or changed within the same mtime tick) is checked by content.
    let untouched = restored.len == state.len
        && restored.mtime == state.mtime
        && restored.saved_at > state.mtime.0.saturating_add(RACY_SECS);
    if !untouched && content_hash(file, restored.len)? != restored.content {
        return None;
    }
    if restored.len == state.len {
        let streamed = Streamed {
            len: restored.len as usize,
            ends_without_newline: restored.ends_without_newline,
        };
        let mut builder = restored.builder;
        // Checked by content because it was racy or touched: written again once the mtime is
        // settled, so that later opens need not read the file.
        let now = std::time::SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |since| since.as_secs());
        if !untouched && now > state.mtime.0.saturating_add(RACY_SECS) {
            save(path, file, &mut builder, &streamed);
        }
        return Some(Ok((builder, streamed)));
    }
    // The file grew: its old last line must have been complete, or it may continue now.
    if restored.ends_without_newline {
        return None;
    }
    let mut builder = restored.builder;
    let header = builder.header.clone()?;
    let start = restored.len;
    let part = Builder::for_part(path, &header, start as usize, (state.len - start) as usize);
    let mut reader = RangeReader {
        file,
        position: start,
        end: None,
    };
    Some(
        index_part(part, path, &mut reader, READ_BLOCK).map(|(next, streamed)| {
            builder.join(next);
            if streamed.len as u64 - start >= SIDECAR_FROM {
                save(path, file, &mut builder, &streamed);
            }
            (builder, streamed)
        }),
    )
}

/// Writes the sidecar for a pass over `file`, if it is worth one and restorable; best-effort:
/// a failure (a read-only directory, a full disk) just leaves no sidecar.
///
/// The id table it stores is left in `builder` for the open to take: it is not built twice.
pub(super) fn save(path: &Path, file: &File, builder: &mut Builder, streamed: &Streamed) {
    // Only session files get one: a fork being staged (`.fork-*.jsonl.tmp`) is renamed
    // after it is read, and would leave its sidecar behind under the old name.
    let is_session = path
        .extension()
        .is_some_and(|extension| extension == "jsonl");
    if !is_session || (streamed.len as u64) < SIDECAR_FROM || !savable(builder) {
        return;
    }
    let Some(state) = file_state(file) else {
        return;
    };
    let Some(header) = builder
        .header
        .as_ref()
        .and_then(|header| serde_json::to_string(header).ok())
    else {
        return;
    };
    if state.len != streamed.len as u64 {
        // Appended to while it was indexed: the next open indexes it afresh.
        return;
    }
    let Some(key) = sidecar_key(path, true) else {
        return;
    };
    let Some(content) = content_hash(file, streamed.len as u64) else {
        return;
    };
    let by_id = IdIndex::of_distinct(&builder.nodes);
    let bytes = encode(
        builder,
        &header,
        &state,
        streamed,
        content,
        by_id.as_ref(),
        &key,
    );
    builder.restored_ids = by_id;
    let target = sidecar_path(path);
    let mut temp = target.clone().into_os_string();
    temp.push(format!(".tmp{}", std::process::id()));
    let temp = PathBuf::from(temp);
    let written = private_new_file()
        .open(&temp)
        .and_then(|mut out| out.write_all(&bytes))
        .and_then(|()| std::fs::rename(&temp, &target));
    if written.is_err() {
        let _ = std::fs::remove_file(&temp);
    }
}

fn private_new_file() -> OpenOptions {
    let mut options = OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    options
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: [u8; KEY_BYTES] = *b"0123456789abcdef";

    /// A body of several read chunks that ends off a word boundary, and its hash after it.
    fn sidecar_bytes() -> Vec<u8> {
        let mut bytes: Vec<u8> = (0..3 * READ_CHUNK + 13)
            .map(|i| (i.wrapping_mul(31) >> 3) as u8)
            .collect();
        let sum = keyed_hash(&bytes, &KEY);
        bytes.extend_from_slice(&sum.to_le_bytes());
        bytes
    }

    fn read_all(bytes: &[u8]) -> (Vec<u8>, bool) {
        let mut reader = Reader::new(bytes, bytes.len() as u64 - 8, &KEY);
        let mut body = Vec::new();
        // Takes of odd sizes, some longer than a chunk, straddle every boundary.
        for size in [1usize, 7, 8, 4093, READ_CHUNK + 5, 3].into_iter().cycle() {
            let size = size.min(reader.remaining() as usize);
            if size == 0 {
                break;
            }
            body.extend_from_slice(reader.take(size).expect("within the body"));
        }
        (body, reader.body_checks_out())
    }

    #[test]
    fn the_body_read_in_parts_is_the_body_and_its_hash_checks_out() {
        let bytes = sidecar_bytes();
        let (body, intact) = read_all(&bytes);
        assert_eq!(body, bytes[..bytes.len() - 8]);
        assert!(intact);
    }

    #[test]
    fn one_changed_byte_anywhere_fails_the_hash() {
        for at in [
            0,
            READ_CHUNK - 1,
            READ_CHUNK,
            2 * READ_CHUNK + 4,
            3 * READ_CHUNK + 12,
        ] {
            let mut bytes = sidecar_bytes();
            bytes[at] ^= 0x40;
            assert!(!read_all(&bytes).1, "a change at {at} went unseen");
        }
        // A take past the body's end is refused, not read from the hash.
        let bytes = sidecar_bytes();
        let mut reader = Reader::new(&bytes[..], bytes.len() as u64 - 8, &KEY);
        assert!(reader.take(bytes.len() - 7).is_none());
    }

    /// A pass over `entries` linked message lines, the first `long` of them with ids too long
    /// for a record, then encoded as a sidecar.
    fn encoded(entries: usize, long: usize) -> (Vec<u8>, u64) {
        let header = r#"{"type":"session","version":3,"id":"s","timestamp":"2026-01-15T10:00:00.000Z","cwd":"/w"}"#;
        let mut text = format!("{header}\n");
        let id = |n: usize| {
            if n < long {
                format!("a-long-entry-id-{n}")
            } else {
                format!("e{n}")
            }
        };
        for n in 0..entries {
            let parent = if n == 0 {
                "null".to_owned()
            } else {
                format!("\"{}\"", id(n - 1))
            };
            text.push_str(&format!(
                r#"{{"type":"message","id":"{}","parentId":{parent},"timestamp":"2026-01-15T10:00:01.000Z","message":{{"role":"user","content":"x","timestamp":1}}}}"#,
                id(n)
            ));
            text.push('\n');
        }
        let mut builder = Builder::new(Path::new("t.jsonl"), text.len());
        builder.feed(text.as_bytes(), 0, true).expect("indexed");
        let state = FileState {
            len: text.len() as u64,
            mtime: (1, 2),
        };
        let streamed = Streamed {
            len: text.len(),
            ends_without_newline: false,
        };
        (
            encode(
                &builder,
                header,
                &state,
                &streamed,
                7,
                IdIndex::of_distinct(&builder.nodes).as_ref(),
                &KEY,
            ),
            text.len() as u64,
        )
    }

    /// `bytes` with its body hash made right again after an edit.
    fn rehashed(mut bytes: Vec<u8>) -> Vec<u8> {
        let body = bytes.len() - 8;
        let sum = keyed_hash(&bytes[..body], &KEY);
        bytes[body..].copy_from_slice(&sum.to_le_bytes());
        bytes
    }

    #[test]
    fn the_id_table_comes_back_with_the_nodes_and_long_ids() {
        let (bytes, _) = encoded(40, 3);
        let restored =
            decode(Path::new("t.jsonl"), &bytes[..], bytes.len() as u64, &KEY).expect("decoded");
        let nodes = &restored.builder.nodes;
        assert_eq!(nodes.len(), 40);
        assert_eq!(nodes[1].id.as_str(), "a-long-entry-id-1");
        assert_eq!(nodes[39].id.as_str(), "e39");
        let by_id = restored.builder.restored_ids.expect("a table");
        for (index, node) in nodes.iter().enumerate() {
            assert_eq!(by_id.get(nodes, node.id.as_str()), Some(index as u32));
        }
        assert_eq!(by_id.get(nodes, "e40"), None);
    }

    #[test]
    fn a_table_of_another_hash_is_passed_over_and_a_wrong_one_refuses_the_sidecar() {
        let (bytes, _) = encoded(40, 0);
        let fingerprint = IdIndex::hash_fingerprint().to_le_bytes();
        let at = bytes
            .windows(8)
            .rposition(|window| window == fingerprint)
            .expect("the fingerprint is stored");
        let mut other_hash = bytes.clone();
        other_hash[at] ^= 1;
        let other_hash = rehashed(other_hash);
        let restored = decode(
            Path::new("t.jsonl"),
            &other_hash[..],
            other_hash.len() as u64,
            &KEY,
        )
        .expect("still a sidecar");
        assert!(
            restored.builder.restored_ids.is_none(),
            "the table is rebuilt"
        );
        assert_eq!(restored.builder.nodes.len(), 40);
        // A slot naming a node that does not exist (after the count of slots).
        let slots_at = at + 8 + 4;
        let slot = (slots_at..)
            .step_by(4)
            .find(|&i| bytes[i..i + 4] != NONE.to_le_bytes())
            .expect("a used slot");
        let mut wrong = bytes.clone();
        wrong[slot..slot + 4].copy_from_slice(&40u32.to_le_bytes());
        let wrong = rehashed(wrong);
        assert!(decode(Path::new("t.jsonl"), &wrong[..], wrong.len() as u64, &KEY).is_none());
    }

    #[test]
    fn a_sidecar_hashed_without_its_key_does_not_check_out() {
        let (bytes, _) = encoded(40, 0);
        assert!(decode(Path::new("t.jsonl"), &bytes[..], bytes.len() as u64, &KEY).is_some());
        let body = bytes.len() - 8;
        let mut forged = bytes.clone();
        forged[body..].copy_from_slice(&hash(&bytes[..body]).to_le_bytes());
        let other = *b"fedcba9876543210";
        assert!(decode(Path::new("t.jsonl"), &forged[..], forged.len() as u64, &KEY).is_none());
        assert!(decode(Path::new("t.jsonl"), &bytes[..], bytes.len() as u64, &other).is_none());
    }

    #[test]
    fn the_content_hash_sees_one_changed_byte_on_either_thread() {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("big");
        let bytes: Vec<u8> = (0..(40usize << 20) + 13).map(|i| (i % 251) as u8).collect();
        std::fs::write(&path, &bytes).expect("written");
        let whole = content_hash(&File::open(&path).expect("open"), bytes.len() as u64);
        for at in [0, 20 << 20, (40 << 20) + 12] {
            let mut changed = bytes.clone();
            changed[at] ^= 1;
            std::fs::write(&path, &changed).expect("written");
            let hash = content_hash(&File::open(&path).expect("open"), bytes.len() as u64);
            assert_ne!(hash, whole, "a change at {at} went unseen");
        }
    }

    #[test]
    fn a_body_not_read_to_its_end_does_not_check_out() {
        let bytes = sidecar_bytes();
        let mut reader = Reader::new(&bytes[..], bytes.len() as u64 - 8, &KEY);
        reader.take(100).expect("within the body");
        assert!(!reader.body_checks_out());
    }
}
