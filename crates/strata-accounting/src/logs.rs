//! What a log on disk paid, request by request: strata and Pi session files (with the sessions
//! they delegated to) and Claude Code project logs. `strata stats` prints it; any front end
//! can read the same figures.
//!
//! Reading never stops at a bad line: a line that is not JSON or not UTF-8 is reported as a
//! warning naming the file and line, and the rest is read. A session is read through the
//! session crate's index (its lines stay in the file, parsed one at a time), so a large one
//! costs its index, not its size.

use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::Value;
use strata_provider::{Catalog, Usage};
use strata_session::{EntryKind, Session, SessionError};

use crate::{
    Attribution, CacheReport, RequestKind, RequestRecord, attributions, cache_report, own_part,
    priced_records,
};

/// One provider request as a log records it.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct RequestUsage {
    /// Entry id (sessions) or request id (Claude Code).
    pub id: String,
    /// `provider/model` as recorded.
    pub model: String,
    /// Uncached input tokens.
    pub input: u64,
    /// Tokens read from cache.
    pub cache_read: u64,
    /// Tokens written to cache.
    pub cache_write: u64,
    /// Output tokens.
    pub output: u64,
    /// Cost in USD (as recorded, else priced from the capability table; 0 when unknown).
    pub cost: f64,
}

impl RequestUsage {
    /// The row for an accounted request (its id marked with its kind).
    pub fn of(record: &RequestRecord) -> Self {
        Self {
            id: record.label(),
            model: record.qualified_model(),
            input: record.usage.input,
            cache_read: record.usage.cache_read,
            cache_write: record.usage.cache_write(),
            output: record.usage.output,
            cost: record.cost,
        }
    }
}

/// What one log paid.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LogStats {
    /// The file.
    pub path: PathBuf,
    /// `strata`, `pi` or `claude-code`.
    pub kind: &'static str,
    /// Every request in file order.
    pub requests: Vec<RequestUsage>,
    /// The accounting's records behind `requests` (totals and hit rates are theirs).
    #[serde(skip)]
    pub records: Vec<RequestRecord>,
    /// Every cache break classified, requests below the cache minimum, aborted requests.
    #[serde(flatten)]
    pub cache: CacheReport,
    /// The sessions it delegated to (its `task` calls' children), each with its own.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub children: Vec<ChildStats>,
    /// What each hook and extension cost in cache writes (included in the cost above).
    #[serde(rename = "hooksAndExtensions", skip_serializing_if = "Vec::is_empty")]
    pub attributed: Vec<Attribution>,
}

/// A delegated session's stats, with how it started.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ChildStats {
    /// `fork` or `fresh`.
    pub start: String,
    /// The task's short description.
    pub description: String,
    /// Tokens its first request read from the cache the parent wrote (a fork's prefix).
    pub read_from_parent: u64,
    /// Its own stats.
    #[serde(flatten)]
    pub log: LogStats,
}

impl LogStats {
    /// Every record of its children, theirs included.
    pub fn child_records(&self) -> Vec<&RequestRecord> {
        self.children
            .iter()
            .flat_map(|child| child.log.records.iter().chain(child.log.child_records()))
            .collect()
    }

    /// Tokens forked children (at any depth) read from their parent's prefix.
    pub fn read_from_parents(&self) -> u64 {
        self.children
            .iter()
            .map(|child| child.read_from_parent + child.log.read_from_parents())
            .sum()
    }
}

/// Why a file could not be read as a log.
#[derive(Debug, thiserror::Error)]
pub enum LogError {
    /// Its metadata could not be read.
    #[error("reading its metadata")]
    Metadata(#[source] std::io::Error),
    /// A directory, a device …
    #[error("not a regular file")]
    NotAFile,
    /// It could not be read.
    #[error("reading it")]
    Read(#[source] std::io::Error),
    /// A session file the session crate refused.
    #[error(transparent)]
    Session(#[from] SessionError),
    /// Neither a session nor a Claude Code log (the reason said).
    #[error("not a session or Claude Code log: {0}")]
    NotALog(&'static str),
}

/// `error` and its sources, `: `-separated (what a warning line says).
pub fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

/// The log files under `path`: a file named by the caller is read whatever its name (and
/// marked `true`); a directory is walked for `*.jsonl`, delegated sessions' folders left to
/// the session that delegated them. An entry that cannot be read is a warning and skipped:
/// it does not hide the rest of the directory.
pub fn collect(
    path: &Path,
    named: bool,
    files: &mut Vec<(PathBuf, bool)>,
    warnings: &mut Vec<String>,
) -> std::io::Result<()> {
    let meta = std::fs::metadata(path)?;
    if meta.is_dir() {
        if !named
            && path
                .file_name()
                .is_some_and(|name| name.to_string_lossy().ends_with(".subagents"))
        {
            return Ok(());
        }
        for entry in std::fs::read_dir(path)? {
            let entry = match entry {
                Ok(entry) => entry.path(),
                Err(error) => {
                    warnings.push(format!("{}: {error} (skipped)", path.display()));
                    continue;
                }
            };
            if let Err(error) = collect(&entry, false, files, warnings) {
                warnings.push(format!("{}: {error} (skipped)", entry.display()));
            }
        }
    } else if named || path.extension().is_some_and(|e| e == "jsonl") {
        files.push((path.to_path_buf(), named));
    }
    Ok(())
}

/// Reads one log: a session (its first line a `session` header, its delegated sessions read
/// beside it) or a Claude Code log, priced from `catalog` where the file recorded no cost.
/// A file that is neither kind of log is an error; problems inside one are `warnings`.
pub fn read_log(
    path: &Path,
    catalog: &Catalog,
    warnings: &mut Vec<String>,
) -> Result<LogStats, LogError> {
    let meta = std::fs::metadata(path).map_err(LogError::Metadata)?;
    if !meta.is_file() {
        return Err(LogError::NotAFile);
    }
    let mut attributed = Vec::new();
    let header = strata_session::header_json(path).map_err(LogError::Read)?;
    let (kind, records, cache, children) = if header.is_some() {
        let opened = Session::open(path)?;
        warnings.extend(opened.diagnostics.iter().map(ToString::to_string));
        let tree = opened.session.tree();
        attributed = attributions(tree);
        let (kind, records) = session_records(tree, catalog);
        let cache = cache_report(Some(tree), &records, catalog);
        (kind, records, cache, read_children(path, catalog, warnings))
    } else {
        let bytes = std::fs::read(path).map_err(LogError::Read)?;
        let text = lossy_text(path, bytes, warnings);
        let records = claude_code_records(path, &text, catalog, warnings)?;
        let cache = cache_report(None, &records, catalog);
        ("claude-code", records, cache, Vec::new())
    };
    Ok(LogStats {
        path: path.to_path_buf(),
        kind,
        requests: records.iter().map(RequestUsage::of).collect(),
        records,
        cache,
        children,
        attributed,
    })
}

/// The sessions `parent` delegated to (as every view lists them), read like any session (a
/// child that cannot be read is a warning and left out). A fork's copy of the parent's
/// requests is left out: the parent counted them.
fn read_children(parent: &Path, catalog: &Catalog, warnings: &mut Vec<String>) -> Vec<ChildStats> {
    let delegated = match strata_session::try_delegated_from(parent) {
        Ok(delegated) => delegated,
        Err(error) => {
            warnings.push(format!("the children of {}: {error}", parent.display()));
            return Vec::new();
        }
    };
    let mut children = Vec::new();
    for child in delegated {
        let mut log = match read_log(child.path(), catalog, warnings) {
            Ok(log) => log,
            Err(error) => {
                warnings.push(format!(
                    "{}: {}, skipped",
                    child.path().display(),
                    error_chain(&error)
                ));
                continue;
            }
        };
        let (dropped, read_from_parent) = own_part(&child, &mut log.records);
        log.requests.drain(..dropped);
        children.push(ChildStats {
            start: child.start,
            description: child.description,
            read_from_parent,
            log,
        });
    }
    children
}

/// The file as text, each line that is not UTF-8 a warning by number and read with
/// replacement characters, so one bad byte costs no more than its line.
fn lossy_text(path: &Path, bytes: Vec<u8>, warnings: &mut Vec<String>) -> String {
    let bytes = match String::from_utf8(bytes) {
        Ok(text) => return text,
        Err(error) => error.into_bytes(),
    };
    for (number, raw) in bytes.split(|&b| b == b'\n').enumerate() {
        if let Err(error) = std::str::from_utf8(raw) {
            warnings.push(format!(
                "{}: line {}: invalid UTF-8 at byte {}, read with replacement characters",
                path.display(),
                number + 1,
                error.valid_up_to()
            ));
        }
    }
    String::from_utf8_lossy(&bytes).into_owned()
}

/// A Pi / strata session's billed requests, priced from the table where the file recorded no
/// cost; `strata` when it holds entries only strata writes.
fn session_records(
    tree: &strata_session::Tree,
    catalog: &Catalog,
) -> (&'static str, Vec<RequestRecord>) {
    let strata = tree.iter().any(|entry| {
        matches!(
            entry.kind(),
            EntryKind::System | EntryKind::ContextEdit | EntryKind::Leaf
        )
    });
    let records = priced_records(tree, catalog);
    (if strata { "strata" } else { "pi" }, records)
}

/// A Claude Code project log's requests: it writes one line per content block of a response,
/// each with the same usage, so a request is counted once.
fn claude_code_records(
    path: &Path,
    text: &str,
    catalog: &Catalog,
    warnings: &mut Vec<String>,
) -> Result<Vec<RequestRecord>, LogError> {
    let mut records: Vec<RequestRecord> = Vec::new();
    let mut json_lines = false;
    let mut claude_code_lines = false;
    for (number, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let Ok(value) = serde_json::from_str::<Value>(line) else {
            warnings.push(format!(
                "{}: line {}: not JSON, skipped",
                path.display(),
                number + 1
            ));
            continue;
        };
        json_lines = true;
        claude_code_lines |= value.get("sessionId").is_some()
            && matches!(
                value["type"].as_str(),
                Some("user" | "assistant" | "summary")
            );
        if let Some(record) = claude_code_request(&value, catalog)
            && records.last().is_none_or(|last| last.id != record.id)
        {
            records.push(record);
        }
    }
    if !json_lines {
        return Err(LogError::NotALog("it holds no JSON lines"));
    }
    if !claude_code_lines && records.is_empty() {
        return Err(LogError::NotALog(
            "the first line is not a `session` header and no line is a Claude Code message",
        ));
    }
    Ok(records)
}

/// An `assistant` line of a Claude Code project log (Anthropic usage field names; it does
/// not say which writes were for an hour, so all are priced as 5-minute writes).
fn claude_code_request(line: &Value, catalog: &Catalog) -> Option<RequestRecord> {
    if line["type"] != "assistant" {
        return None;
    }
    let message = &line["message"];
    let usage = message.get("usage")?;
    let number = |key: &str| usage[key].as_u64().unwrap_or(0);
    let model = message["model"].as_str().unwrap_or("");
    let id = line["requestId"]
        .as_str()
        .or_else(|| message["id"].as_str())
        .unwrap_or("")
        .to_owned();
    let mut record = RequestRecord {
        id,
        kind: RequestKind::Answer,
        provider: "anthropic".to_owned(),
        model: model.to_owned(),
        usage: Usage {
            input: number("input_tokens"),
            cache_read: number("cache_read_input_tokens"),
            cache_write_5m: number("cache_creation_input_tokens"),
            output: number("output_tokens"),
            ..Usage::default()
        },
        cost: 0.0,
        timestamp_ms: line["timestamp"]
            .as_str()
            .and_then(strata_session::parse_iso_millis),
        aborted: false,
        provider_diagnosis: None,
    };
    if let Some(model) = catalog.model("anthropic", model) {
        record.price_if_missing(&model.prices);
    }
    Some(record)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(unix)]
    #[test]
    fn a_dangling_symlink_does_not_hide_the_rest_of_a_directory() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.jsonl"), "{}\n").unwrap();
        std::os::unix::fs::symlink(dir.path().join("gone"), dir.path().join("b.jsonl")).unwrap();
        let mut files = Vec::new();
        let mut warnings = Vec::new();
        collect(dir.path(), true, &mut files, &mut warnings).unwrap();
        assert_eq!(files, [(dir.path().join("a.jsonl"), false)]);
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert!(warnings[0].contains("b.jsonl"), "{warnings:?}");
    }

    #[test]
    fn a_keep_warm_ping_without_a_recorded_cost_is_priced_from_its_model_at_its_lifetime() {
        let catalog = Catalog::builtin().unwrap();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.jsonl");
        std::fs::write(
            &path,
            concat!(
                r#"{"type":"session","version":3,"id":"s1","timestamp":"2026-03-01T10:00:00.000Z","cwd":"/w"}"#,
                "\n",
                r#"{"type":"custom","id":"k0000001","parentId":null,"timestamp":"2026-03-01T10:05:00.000Z","customType":"strata.keep_warm","data":{"provider":"anthropic","model":"claude-opus-4-8","usage":{"input":0,"output":1,"cacheRead":1000000,"cacheWrite":1000000,"cacheWrite1h":1000000}}}"#,
                "\n"
            ),
        )
        .unwrap();
        let log = read_log(&path, &catalog, &mut Vec::new()).unwrap();
        let request = &log.requests[0];
        assert_eq!(request.id, "k0000001 (keep-warm)");
        assert_eq!(request.model, "anthropic/claude-opus-4-8");
        // A million read at $0.50, a million written for an hour at $10, one output token at $25
        // per million: the hour's rate, not the 5-minute $6.25.
        assert!((request.cost - 10.500025).abs() < 1e-9, "{}", request.cost);
    }

    #[test]
    fn a_bad_line_of_a_claude_code_log_is_a_warning_by_number_and_the_rest_is_read() {
        let catalog = Catalog::builtin().unwrap();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("cc.jsonl");
        let mut bytes = br#"{"type":"assistant","sessionId":"x","requestId":"r1","message":{"model":"claude-sonnet-4-5","usage":{"input_tokens":10,"cache_read_input_tokens":90,"output_tokens":5}}}"#.to_vec();
        bytes.extend_from_slice(b"\nnot json \xff\n");
        std::fs::write(&path, bytes).unwrap();
        let mut warnings = Vec::new();
        let log = read_log(&path, &catalog, &mut warnings).unwrap();
        assert_eq!(log.kind, "claude-code");
        assert_eq!(log.requests.len(), 1);
        assert_eq!(log.requests[0].cache_read, 90);
        assert!(
            warnings
                .iter()
                .any(|w| w.ends_with("line 2: not JSON, skipped")),
            "{warnings:?}"
        );
        assert!(
            warnings
                .iter()
                .any(|w| w.contains("line 2: invalid UTF-8 at byte 9")),
            "{warnings:?}"
        );
        // A file that is neither kind of log says why, through its chain.
        std::fs::write(&path, "plain text\n").unwrap();
        let error = read_log(&path, &catalog, &mut Vec::new()).unwrap_err();
        assert_eq!(
            error_chain(&error),
            "not a session or Claude Code log: it holds no JSON lines"
        );
    }
}
