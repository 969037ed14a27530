//! `strata stats PATH…`: what each request of a session read from cache, wrote, and cost, and
//! where the cache broke — for strata and Pi session files and Claude Code project logs.

use std::io::Write as _;
use std::path::{Path, PathBuf};

use anyhow::Context as _;
use serde::Serialize;
use serde_json::Value;
use strata_accounting::{RequestKind, RequestRecord, find_breaks, records};
use strata_provider::{Catalog, Usage};
use strata_session::{EntryKind, Session};

use crate::args::StatsArgs;

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
    fn prompt(&self) -> u64 {
        self.input + self.cache_read + self.cache_write
    }
}

impl RequestUsage {
    /// The row for an accounted request (its id marked with its kind).
    fn of(record: &RequestRecord) -> Self {
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

/// Totals of one log.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LogStats {
    /// The file.
    pub path: PathBuf,
    /// `strata`, `pi` or `claude-code`.
    pub kind: &'static str,
    /// Every request in file order.
    pub requests: Vec<RequestUsage>,
    /// Requests whose cached prefix broke.
    pub breaks: Vec<strata_accounting::CacheBreak>,
}

impl LogStats {
    fn total(&self) -> RequestUsage {
        let mut total = RequestUsage::default();
        for r in &self.requests {
            total.input += r.input;
            total.cache_read += r.cache_read;
            total.cache_write += r.cache_write;
            total.output += r.output;
            total.cost += r.cost;
        }
        total
    }
}

/// Token-weighted hit rate: read / (uncached + read + written).
pub fn hit_rate(usage: &RequestUsage) -> f64 {
    let prompt = usage.prompt();
    if prompt == 0 {
        0.0
    } else {
        usage.cache_read as f64 / prompt as f64
    }
}

pub fn run(args: &StatsArgs) -> anyhow::Result<()> {
    let catalog = Catalog::builtin().context("loading the capability table")?;
    let mut files = Vec::new();
    for path in &args.paths {
        collect(path, true, &mut files).with_context(|| format!("reading {}", path.display()))?;
    }
    files.sort();
    let mut logs = Vec::new();
    for file in &files {
        match read_log(file, &catalog) {
            Ok(Some(log)) => logs.push(log),
            Ok(None) => {}
            Err(error) => eprintln!("strata: warning: {}: {error:#}", file.display()),
        }
    }
    let mut out = std::io::stdout().lock();
    if args.json {
        serde_json::to_writer_pretty(&mut out, &logs)?;
        writeln!(out)?;
        return Ok(());
    }
    let mut all = LogStats {
        path: PathBuf::new(),
        kind: "all",
        requests: Vec::new(),
        breaks: Vec::new(),
    };
    for log in &logs {
        write_log(&mut out, log, args.requests)?;
        all.requests.extend(log.requests.iter().cloned());
    }
    if logs.len() > 1 {
        let total = all.total();
        writeln!(
            out,
            "all {} logs: {} requests, hit rate {:.1}%, ${:.4}",
            logs.len(),
            all.requests.len(),
            hit_rate(&total) * 100.0,
            total.cost
        )?;
    }
    if logs.is_empty() {
        writeln!(out, "no requests with usage found")?;
    }
    Ok(())
}

fn write_log(
    out: &mut impl std::io::Write,
    log: &LogStats,
    per_request: bool,
) -> anyhow::Result<()> {
    let total = log.total();
    writeln!(out, "{} ({})", log.path.display(), log.kind)?;
    writeln!(
        out,
        "  {} requests  uncached {}  cache read {}  cache write {}  output {}  hit rate {:.1}%  cost ${:.4}",
        log.requests.len(),
        total.input,
        total.cache_read,
        total.cache_write,
        total.output,
        hit_rate(&total) * 100.0,
        total.cost
    )?;
    if per_request {
        writeln!(
            out,
            "  {:>4}  {:<36} {:>9} {:>9} {:>9} {:>7} {:>6} {:>9}",
            "#", "id", "uncached", "read", "write", "out", "hit", "cost"
        )?;
        for (index, r) in log.requests.iter().enumerate() {
            writeln!(
                out,
                "  {:>4}  {:<36} {:>9} {:>9} {:>9} {:>7} {:>5.1}% {:>9.5}",
                index + 1,
                r.id,
                r.input,
                r.cache_read,
                r.cache_write,
                r.output,
                hit_rate(r) * 100.0,
                r.cost
            )?;
        }
    }
    for b in &log.breaks {
        writeln!(
            out,
            "  cache broke at request {} ({}): read {} of the {} tokens the previous prompt held",
            b.request, b.id, b.cache_read, b.previous_prompt
        )?;
    }
    Ok(())
}

/// A file named on the command line is read whatever its name; a directory is walked for
/// `*.jsonl`.
fn collect(path: &Path, named: bool, files: &mut Vec<PathBuf>) -> std::io::Result<()> {
    if path.is_dir() {
        for entry in std::fs::read_dir(path)? {
            collect(&entry?.path(), false, files)?;
        }
    } else if named || path.extension().is_some_and(|e| e == "jsonl") {
        files.push(path.to_path_buf());
    }
    Ok(())
}

/// Reads one log: a session (first line is a `session` header) or a Claude Code log.
fn read_log(path: &Path, catalog: &Catalog) -> anyhow::Result<Option<LogStats>> {
    let text = std::fs::read_to_string(path)?;
    let first = text
        .lines()
        .find(|line| !line.trim().is_empty())
        .and_then(|line| serde_json::from_str::<Value>(line).ok());
    let is_session = first.is_some_and(|value| value["type"] == "session");
    let (kind, records) = if is_session {
        session_records(path, catalog)?
    } else {
        ("claude-code", claude_code_records(path, &text, catalog))
    };
    if records.is_empty() {
        return Ok(None);
    }
    Ok(Some(LogStats {
        path: path.to_path_buf(),
        kind,
        breaks: find_breaks(&records),
        requests: records.iter().map(RequestUsage::of).collect(),
    }))
}

/// A Pi / strata session's billed requests (the accounting's), priced from the table where
/// the file recorded no cost; `strata` when it holds entries only strata writes.
fn session_records(
    path: &Path,
    catalog: &Catalog,
) -> anyhow::Result<(&'static str, Vec<RequestRecord>)> {
    let opened = Session::open(path)?;
    for problem in &opened.diagnostics {
        eprintln!("strata: warning: {problem}");
    }
    let tree = opened.session.tree();
    let strata = tree.iter().any(|entry| {
        matches!(
            entry.kind(),
            EntryKind::System | EntryKind::ContextEdit | EntryKind::Leaf
        )
    });
    let mut records = records(tree);
    for record in &mut records {
        if let Some(model) = catalog.model(&record.provider, &record.model) {
            record.price_if_missing(&model.prices);
        }
    }
    Ok((if strata { "strata" } else { "pi" }, records))
}

/// A Claude Code project log's requests: it writes one line per content block of a response,
/// each with the same usage, so a request is counted once.
fn claude_code_records(path: &Path, text: &str, catalog: &Catalog) -> Vec<RequestRecord> {
    let mut records: Vec<RequestRecord> = Vec::new();
    for (number, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let Ok(value) = serde_json::from_str::<Value>(line) else {
            eprintln!(
                "strata: warning: {}: line {}: not JSON, skipped",
                path.display(),
                number + 1
            );
            continue;
        };
        if let Some(record) = claude_code_request(&value, catalog)
            && records.last().is_none_or(|last| last.id != record.id)
        {
            records.push(record);
        }
    }
    records
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
            cache_write_1h: 0,
            output: number("output_tokens"),
        },
        cost: 0.0,
    };
    if let Some(model) = catalog.model("anthropic", model) {
        record.price_if_missing(&model.prices);
    }
    Some(record)
}

#[cfg(test)]
mod tests {
    use super::*;

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
        let log = read_log(&path, &catalog).unwrap().unwrap();
        let request = &log.requests[0];
        assert_eq!(request.id, "k0000001 (keep-warm)");
        assert_eq!(request.model, "anthropic/claude-opus-4-8");
        // A million read at $0.50, a million written for an hour at $10, one output token at $25
        // per million: the hour's rate, not the 5-minute $6.25.
        assert!((request.cost - 10.500025).abs() < 1e-9, "{}", request.cost);
    }
}
