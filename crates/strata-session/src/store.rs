//! Session directories (one per working directory, named like Pi's) and fast listing.
//!
//! Listing reads no JSON beyond a handful of lines per file: it finds lines by their prefix
//! (`{"type":"message"`, `{"type":"session_info"`), counts newlines, and parses only the header,
//! the first user message, the last `session_info` and the last user/assistant message. What it
//! finds is kept in a small index file beside the sessions (`.strata-index.json`), keyed by
//! file size and modification time; a file that only grew is scanned from where the last scan
//! stopped, since sessions are append-only.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::time::UNIX_EPOCH;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::SessionError;
use crate::fast::scan::scan_entry;
use crate::header::SessionHeader;
use crate::session::{Session, WriteOptions, new_header};
use crate::time::parse_iso_millis;

/// The index file kept in each session directory.
pub const INDEX_FILE_NAME: &str = ".strata-index.json";
const INDEX_VERSION: u32 = 1;

/// The sessions under one root directory, one subdirectory per working directory.
#[derive(Debug, Clone)]
pub struct SessionStore {
    root: PathBuf,
}

/// What listing tells about one session file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionSummary {
    /// The session file.
    #[serde(skip)]
    pub path: PathBuf,
    /// The header's session id.
    pub id: String,
    /// The header's working directory.
    pub cwd: String,
    /// The latest `session_info` name, if any.
    pub name: Option<String>,
    /// The file this session was forked from.
    pub parent_session: Option<String>,
    /// The header's timestamp (creation), ISO 8601.
    pub created: String,
    /// Last activity as Unix milliseconds: the last user or assistant message, else the
    /// header's time, else the file's modification time (Pi's rule).
    pub modified: i64,
    /// The text of the first user message, if any.
    pub first_message: Option<String>,
    /// How many `message` entries the file holds.
    pub message_count: usize,
    /// How many lines follow the header (entries, plus any damaged lines).
    pub entry_count: usize,
    /// The file's size in bytes.
    pub size: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct IndexRecord {
    summary: SessionSummary,
    mtime_nanos: u128,
    /// Bytes scanned: the end of the last complete line seen.
    scanned_to: u64,
    header_line: String,
    last_activity: Option<i64>,
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct IndexFile {
    version: u32,
    sessions: BTreeMap<String, IndexRecord>,
}

impl SessionStore {
    /// A store rooted at `root` (strata's default is `~/.strata/sessions`, see [`SessionStore::default_root`]).
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Self { root: root.into() }
    }

    /// `<home>/.strata/sessions`.
    pub fn default_root(home: &Path) -> PathBuf {
        home.join(".strata").join("sessions")
    }

    /// The root directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The directory for a working directory, named as Pi names it:
    /// `--<cwd without its leading separator, with '/', '\' and ':' as '-'>--`.
    pub fn dir_for_cwd(&self, cwd: &str) -> PathBuf {
        self.root.join(dir_name_for_cwd(cwd))
    }

    /// A fresh file path for a new session with this header: `<timestamp>_<id>.jsonl`, with
    /// ':' and '.' of the timestamp as '-' (Pi's naming).
    pub fn session_path(&self, header: &SessionHeader) -> PathBuf {
        let stamp = header.timestamp.replace([':', '.'], "-");
        self.dir_for_cwd(&header.cwd)
            .join(format!("{stamp}_{}.jsonl", header.id))
    }

    /// Creates a new session for `cwd` in its directory, open for appending.
    pub fn create(&self, cwd: &str, options: WriteOptions) -> Result<Session, SessionError> {
        let header = new_header(cwd, None);
        Session::create_with_header(self.session_path(&header), header, options)
    }

    /// The sessions of one working directory, most recently active first.
    pub fn list(&self, cwd: &str) -> Result<Vec<SessionSummary>, SessionError> {
        let mut sessions = list_dir(&self.dir_for_cwd(cwd))?;
        sort_by_activity(&mut sessions);
        Ok(sessions)
    }

    /// The sessions of every working directory, most recently active first.
    pub fn list_all(&self) -> Result<Vec<SessionSummary>, SessionError> {
        let mut sessions = Vec::new();
        let entries = match std::fs::read_dir(&self.root) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(sessions),
            Err(e) => return Err(SessionError::io(&self.root, e)),
        };
        for entry in entries {
            let entry = entry.map_err(|e| SessionError::io(&self.root, e))?;
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                sessions.extend(list_dir(&entry.path())?);
            }
        }
        sort_by_activity(&mut sessions);
        Ok(sessions)
    }

    /// The most recently modified session file of a working directory (Pi's `--continue`).
    pub fn most_recent(&self, cwd: &str) -> Result<Option<PathBuf>, SessionError> {
        let dir = self.dir_for_cwd(cwd);
        let entries = match std::fs::read_dir(&dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(SessionError::io(&dir, e)),
        };
        let mut best: Option<(std::time::SystemTime, PathBuf)> = None;
        for entry in entries.flatten() {
            let path = entry.path();
            if !is_session_file(&path) || read_header(&path).is_none() {
                continue;
            }
            if let Ok(modified) = entry.metadata().and_then(|m| m.modified())
                && best.as_ref().is_none_or(|(time, _)| modified > *time)
            {
                best = Some((modified, path));
            }
        }
        Ok(best.map(|(_, path)| path))
    }
}

/// Pi's directory name for a working directory.
pub fn dir_name_for_cwd(cwd: &str) -> String {
    let trimmed = cwd.strip_prefix(['/', '\\']).unwrap_or(cwd);
    format!("--{}--", trimmed.replace(['/', '\\', ':'], "-"))
}

fn sort_by_activity(sessions: &mut [SessionSummary]) {
    sessions.sort_by(|a, b| {
        b.modified
            .cmp(&a.modified)
            .then_with(|| a.path.cmp(&b.path))
    });
}

fn is_session_file(path: &Path) -> bool {
    path.extension().is_some_and(|ext| ext == "jsonl")
}

fn read_header(path: &Path) -> Option<(SessionHeader, String)> {
    let mut file = File::open(path).ok()?;
    let mut buffer = vec![0u8; 4096];
    let mut filled = 0;
    loop {
        if let Some(end) = memchr::memchr(b'\n', &buffer[..filled]) {
            let line = std::str::from_utf8(&buffer[..end]).ok()?;
            return SessionHeader::parse(line).map(|h| (h, line.to_owned()));
        }
        if filled == buffer.len() {
            if buffer.len() >= 1 << 20 {
                return None;
            }
            buffer.resize(buffer.len() * 2, 0);
        }
        let read = file.read(&mut buffer[filled..]).ok()?;
        if read == 0 {
            let line = std::str::from_utf8(&buffer[..filled]).ok()?;
            return SessionHeader::parse(line).map(|h| (h, line.to_owned()));
        }
        filled += read;
    }
}

/// The header field of a delegated session naming where it was spawned: the parent session,
/// the spawning entry and call, the task's description, the agent, `fork` or `fresh`, the
/// depth. Pi keeps unknown header fields and reads none of them.
pub const SPAWNED_BY_FIELD: &str = "spawnedBy";

/// Where the sessions delegated from `parent` live: `<parent dir>/<parent stem>.subagents/`.
/// A folder beside the file, not in the store's directory, so that a child is never listed,
/// continued or resumed as a session of its own working directory (by strata or Pi).
pub fn children_dir(parent: &Path) -> PathBuf {
    let stem = parent
        .file_stem()
        .map_or_else(|| "session".into(), |s| s.to_string_lossy().into_owned());
    parent
        .parent()
        .unwrap_or(Path::new("."))
        .join(format!("{stem}.subagents"))
}

impl SessionStore {
    /// The sessions delegated from `parent` (see [`children_dir`]), oldest first; none when
    /// it never delegated.
    pub fn children_of(parent: &Path) -> Result<Vec<SessionSummary>, SessionError> {
        let mut children = list_dir(&children_dir(parent))?;
        children.sort_by(|a, b| a.created.cmp(&b.created).then(a.path.cmp(&b.path)));
        Ok(children)
    }
}

/// The [`SPAWNED_BY_FIELD`] of a session's header (its first line only is read); `None` for
/// a session nobody delegated, or a file that cannot be read.
pub fn spawned_by(path: &Path) -> Option<serde_json::Value> {
    let mut header = header_json(path).ok()??;
    Some(header.get_mut(SPAWNED_BY_FIELD)?.take())
}

/// A file's session header as JSON, reading only its first non-blank line: `None` when that
/// line is not a `session` object (a Claude Code log, an empty file), so a caller can tell
/// the kinds of log apart without reading a large file.
pub fn header_json(path: &Path) -> std::io::Result<Option<serde_json::Value>> {
    use std::io::BufRead as _;
    let mut reader = std::io::BufReader::new(std::fs::File::open(path)?);
    let mut line = Vec::new();
    loop {
        line.clear();
        if reader.read_until(b'\n', &mut line)? == 0 {
            return Ok(None);
        }
        if line.iter().any(|b| !b.is_ascii_whitespace()) {
            break;
        }
    }
    Ok(serde_json::from_slice::<serde_json::Value>(&line)
        .ok()
        .filter(|header| header["type"] == "session"))
}

fn list_dir(dir: &Path) -> Result<Vec<SessionSummary>, SessionError> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(SessionError::io(dir, e)),
    };
    let index_path = dir.join(INDEX_FILE_NAME);
    let mut index: IndexFile = std::fs::read(&index_path)
        .ok()
        .and_then(|bytes| serde_json::from_slice::<IndexFile>(&bytes).ok())
        .filter(|index| index.version == INDEX_VERSION)
        .unwrap_or_default();
    let mut changed = false;
    let mut seen = Vec::new();
    let mut summaries = Vec::new();
    let mut buffer = Vec::new();
    for entry in entries.flatten() {
        let path = entry.path();
        if !is_session_file(&path) {
            continue;
        }
        let Some(file_name) = path.file_name().and_then(|n| n.to_str()).map(str::to_owned) else {
            continue;
        };
        let Ok(metadata) = entry.metadata() else {
            continue;
        };
        if !metadata.is_file() {
            continue;
        }
        let size = metadata.len();
        let mtime_nanos = metadata
            .modified()
            .ok()
            .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
            .map_or(0, |d| d.as_nanos());
        seen.push(file_name.clone());
        let cached = index.sessions.get(&file_name);
        if let Some(record) = cached
            && record.summary.size == size
            && record.mtime_nanos == mtime_nanos
        {
            let mut summary = record.summary.clone();
            summary.path = path;
            summaries.push(summary);
            continue;
        }
        let previous = cached.cloned();
        match refresh(&path, size, mtime_nanos, previous, &mut buffer) {
            Some(mut record) => {
                record.summary.path = path.clone();
                summaries.push(record.summary.clone());
                index.sessions.insert(file_name, record);
            }
            None => {
                index.sessions.remove(&file_name);
            }
        }
        changed = true;
    }
    let before = index.sessions.len();
    index.sessions.retain(|name, _| seen.contains(name));
    changed |= index.sessions.len() != before;
    if changed {
        index.version = INDEX_VERSION;
        // The index is a cache: failing to write it (read-only directory) only costs speed.
        let _ = write_index(&index_path, &index);
    }
    Ok(summaries)
}

fn write_index(path: &Path, index: &IndexFile) -> std::io::Result<()> {
    let bytes = serde_json::to_vec(index).map_err(std::io::Error::other)?;
    let temp = path.with_extension(format!("tmp{}", std::process::id()));
    let mut file = File::create(&temp)?;
    file.write_all(&bytes)?;
    drop(file);
    std::fs::rename(&temp, path)
}

/// Scans a file (or only what was appended since `previous`) into an index record.
fn refresh(
    path: &Path,
    size: u64,
    mtime_nanos: u128,
    previous: Option<IndexRecord>,
    buffer: &mut Vec<u8>,
) -> Option<IndexRecord> {
    let (header, header_line) = read_header(path)?;
    let mut record = match previous {
        Some(previous) if previous.header_line == header_line && previous.scanned_to <= size => {
            previous
        }
        _ => IndexRecord {
            summary: SessionSummary {
                path: PathBuf::new(),
                id: header.id.clone(),
                cwd: header.cwd.clone(),
                name: None,
                parent_session: header.parent_session.clone(),
                created: header.timestamp.clone(),
                modified: 0,
                first_message: None,
                message_count: 0,
                entry_count: 0,
                size: 0,
            },
            mtime_nanos: 0,
            scanned_to: 0,
            header_line,
            last_activity: None,
        },
    };
    let mut file = File::open(path).ok()?;
    file.seek(SeekFrom::Start(record.scanned_to)).ok()?;
    // Block by block, so that memory stays at a block (plus the longest line) whatever the
    // file's size; each block's complete lines are folded in, a cut line carried over.
    let mut reader = file.take(size - record.scanned_to);
    let mut skip_header = record.scanned_to == 0;
    buffer.clear();
    loop {
        let carried = buffer.len();
        let read = (&mut reader).take(LIST_BLOCK).read_to_end(buffer).ok()?;
        let complete = memchr::memrchr(b'\n', &buffer[carried..]).map(|i| carried + i + 1);
        if let Some(complete) = complete {
            scan_lines(&buffer[..complete], skip_header, &mut record);
            skip_header =
                skip_header && !buffer[..complete].iter().any(|b| !b.is_ascii_whitespace());
            record.scanned_to += complete as u64;
            buffer.drain(..complete);
        }
        if read == 0 {
            break;
        }
    }
    // A torn last line is neither counted nor consumed: it is scanned again once complete.
    record.summary.size = size;
    record.mtime_nanos = mtime_nanos;
    record.summary.modified = record
        .last_activity
        .or_else(|| parse_iso_millis(&record.summary.created))
        .unwrap_or((mtime_nanos / 1_000_000) as i64);
    Some(record)
}

/// How much of a session file listing reads at a time.
const LIST_BLOCK: u64 = 1 << 20;

const MESSAGE_PREFIX: &[u8] = br#"{"type":"message""#;
const INFO_PREFIX: &[u8] = br#"{"type":"session_info""#;

/// Folds complete lines into the record's counts, name, first message and last activity.
fn scan_lines(bytes: &[u8], skip_header: bool, record: &mut IndexRecord) {
    let mut start = 0;
    let mut header_pending = skip_header;
    let mut last_activity_line: Option<(usize, usize)> = None;
    while start < bytes.len() {
        let end = memchr::memchr(b'\n', &bytes[start..]).map_or(bytes.len(), |i| start + i);
        let line = &bytes[start..end];
        let line_start = start;
        start = end + 1;
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        if header_pending {
            header_pending = false;
            continue;
        }
        record.summary.entry_count += 1;
        let (is_message, is_info) = if line.starts_with(MESSAGE_PREFIX) {
            (true, false)
        } else if line.starts_with(INFO_PREFIX) {
            (false, true)
        } else if line.starts_with(br#"{"type":""#) {
            (false, false)
        } else {
            // Written by something else: fall back to the scanner.
            match scan_entry(line) {
                Ok(scanned) => match scanned.entry_type.as_deref() {
                    Some("message") => (true, false),
                    Some("session_info") => (false, true),
                    _ => (false, false),
                },
                Err(_) => (false, false),
            }
        };
        if is_info {
            if let Ok(info) = serde_json::from_slice::<InfoLine>(line) {
                record.summary.name = info
                    .name
                    .map(|n| n.trim().to_owned())
                    .filter(|n| !n.is_empty());
            }
        } else if is_message {
            record.summary.message_count += 1;
            let role = message_role(line);
            if matches!(role.as_deref(), Some("user" | "assistant")) {
                last_activity_line = Some((line_start, end));
                if record.summary.first_message.is_none() && role.as_deref() == Some("user") {
                    record.summary.first_message = first_text(line);
                }
            }
        }
    }
    if let Some((from, to)) = last_activity_line
        && let Some(time) = activity_time(&bytes[from..to])
    {
        record.last_activity = Some(record.last_activity.map_or(time, |t| t.max(time)));
    }
}

#[derive(Deserialize)]
struct InfoLine {
    name: Option<String>,
}

/// The role of a message line: found near the start where Pi and strata write it, else by a full scan.
fn message_role(line: &[u8]) -> Option<String> {
    const NEEDLE: &[u8] = br#""message":{"role":""#;
    let window = &line[..line.len().min(256)];
    if let Some(at) = memchr::memmem::find(window, NEEDLE) {
        let rest = &line[at + NEEDLE.len()..];
        if let Some(end) = memchr::memchr2(b'"', b'\\', rest)
            && rest[end] == b'"'
        {
            return std::str::from_utf8(&rest[..end]).ok().map(str::to_owned);
        }
    }
    scan_entry(line)
        .ok()
        .and_then(|scanned| scanned.role.map(|r| r.into_owned()))
}

/// Pi's `extractTextContent`: a string content, or its text blocks joined by spaces; `None` when empty.
fn first_text(line: &[u8]) -> Option<String> {
    let value: Value = serde_json::from_slice(line).ok()?;
    let text = match value.get("message")?.get("content")? {
        Value::String(text) => text.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
            .filter_map(|b| b.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join(" "),
        _ => return None,
    };
    (!text.is_empty()).then_some(text)
}

/// The message's own numeric timestamp, else the entry's ISO timestamp.
fn activity_time(line: &[u8]) -> Option<i64> {
    let value: Value = serde_json::from_slice(line).ok()?;
    if let Some(time) = value
        .get("message")
        .and_then(|m| m.get("timestamp"))
        .and_then(Value::as_f64)
    {
        return Some(time as i64);
    }
    value
        .get("timestamp")
        .and_then(Value::as_str)
        .and_then(parse_iso_millis)
}
