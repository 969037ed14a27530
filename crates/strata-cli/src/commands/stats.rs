//! `strata stats PATH…`: what each request of a session read from cache, wrote, and cost, and
//! where the cache broke — for strata and Pi session files and Claude Code project logs.

use std::io::Write as _;
use std::path::{Path, PathBuf};

use anyhow::Context as _;
use serde::Serialize;
use serde_json::Value;
use strata_accounting::{CacheReport, RequestKind, RequestRecord, Totals, cache_report};
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
    pub attributed: Vec<strata_accounting::Attribution>,
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
    fn child_records(&self) -> Vec<&RequestRecord> {
        self.children
            .iter()
            .flat_map(|child| child.log.records.iter().chain(child.log.child_records()))
            .collect()
    }

    /// Tokens forked children (at any depth) read from their parent's prefix.
    fn read_from_parents(&self) -> u64 {
        self.children
            .iter()
            .map(|child| child.read_from_parent + child.log.read_from_parents())
            .sum()
    }
}

pub fn run(args: &StatsArgs) -> anyhow::Result<()> {
    let catalog = Catalog::builtin().context("loading the capability table")?;
    // Problems with a path named on the command line fail the command (after the rest is
    // reported); a file found while walking a directory that is not a log is only a warning.
    let mut failures = 0usize;
    let mut files = Vec::new();
    let mut missing = 0usize;
    for path in &args.paths {
        // A folder that does not exist holds no logs: `strata stats ~/.strata/sessions
        // ~/.pi/agent/sessions ~/.claude/projects` works for someone who has only one tool.
        // A named log file that is missing is still an error.
        let named_log = path.extension().is_some_and(|e| e == "jsonl");
        if !path.exists() && !named_log {
            eprintln!("strata: {}: not found, skipped", path.display());
            missing += 1;
            continue;
        }
        if let Err(error) = collect(path, true, &mut files) {
            eprintln!("strata: {}: {error}", path.display());
            failures += 1;
        }
    }
    if missing == args.paths.len() {
        anyhow::bail!("none of the paths exists");
    }
    files.sort();
    let mut logs = Vec::new();
    for (file, named) in &files {
        match read_log(file, &catalog) {
            Ok(log) if log.requests.is_empty() => {}
            Ok(log) => logs.push(log),
            Err(error) if *named => {
                eprintln!("strata: {}: {error:#}", file.display());
                failures += 1;
            }
            Err(error) => eprintln!("strata: warning: {}: {error:#}, skipped", file.display()),
        }
    }
    print_logs(args, &logs)?;
    match failures {
        0 => Ok(()),
        1 => anyhow::bail!("1 path could not be read as a log"),
        n => anyhow::bail!("{n} paths could not be read as logs"),
    }
}

fn print_logs(args: &StatsArgs, logs: &[LogStats]) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    if args.json {
        serde_json::to_writer_pretty(&mut out, logs)?;
        writeln!(out)?;
        return Ok(());
    }
    for log in logs {
        write_log(&mut out, log, args.requests)?;
    }
    if logs.len() > 1 {
        let total = Totals::of(
            logs.iter()
                .flat_map(|log| log.records.iter().chain(log.child_records())),
        );
        let unexpected: usize = logs.iter().map(|log| log.cache.unexpected().count()).sum();
        writeln!(
            out,
            "all {} logs: {} requests, hit rate {:.1}%, ${:.4}, {unexpected} unexpected cache break(s)",
            logs.len(),
            total.requests,
            total.hit_rate().unwrap_or(0.0) * 100.0,
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
    let total = Totals::of(&log.records);
    writeln!(out, "{} ({})", log.path.display(), log.kind)?;
    writeln!(
        out,
        "  {} requests  uncached {}  cache read {}  cache write {}  output {}  hit rate {:.1}%  cost ${:.4}",
        total.requests,
        total.usage.input,
        total.usage.cache_read,
        total.usage.cache_write(),
        total.usage.output,
        total.hit_rate().unwrap_or(0.0) * 100.0,
        total.cost
    )?;
    if per_request {
        writeln!(
            out,
            "  {:>4}  {:<36} {:>9} {:>9} {:>9} {:>7} {:>6} {:>9}",
            "#", "id", "uncached", "read", "write", "out", "hit", "cost"
        )?;
        for (index, (r, record)) in log.requests.iter().zip(&log.records).enumerate() {
            writeln!(
                out,
                "  {:>4}  {:<36} {:>9} {:>9} {:>9} {:>7} {:>5.1}% {:>9.5}",
                index + 1,
                r.id,
                r.input,
                r.cache_read,
                r.cache_write,
                r.output,
                record.usage.cache_hit_rate() * 100.0,
                r.cost
            )?;
        }
    }
    write_cache(out, &log.cache)?;
    write_attributed(out, &log.attributed)?;
    write_children(out, log, total.cost)?;
    Ok(())
}

/// What each hook and extension cost in cache writes (the TUI's `/context` says the same).
fn write_attributed(
    out: &mut impl std::io::Write,
    attributed: &[strata_accounting::Attribution],
) -> anyhow::Result<()> {
    for line in strata_tui::stats::attribution_lines(attributed) {
        writeln!(out, "  {line}")?;
    }
    Ok(())
}

/// The delegated sessions: their totals, what forks read from the parent's prefix, the
/// parent's bill with them, and one line per child.
fn write_children(
    out: &mut impl std::io::Write,
    log: &LogStats,
    own_cost: f64,
) -> anyhow::Result<()> {
    if log.children.is_empty() {
        return Ok(());
    }
    let records = log.child_records();
    let total = Totals::of(records.iter().copied());
    writeln!(
        out,
        "  delegated: {} requests in child sessions  cache read {} ({} of it from this session's prefix, read by forked children)  cache write {}  cost ${:.4}; with children ${:.4}",
        total.requests,
        total.usage.cache_read,
        log.read_from_parents(),
        total.usage.cache_write(),
        total.cost,
        own_cost + total.cost
    )?;
    write_child_lines(out, log, 1)
}

fn write_child_lines(
    out: &mut impl std::io::Write,
    log: &LogStats,
    depth: usize,
) -> anyhow::Result<()> {
    for child in &log.children {
        let own = Totals::of(&child.log.records);
        writeln!(
            out,
            "  {}└ child ({}): {}  {} requests  hit rate {:.1}%  cost ${:.4}  {}",
            "  ".repeat(depth),
            child.start,
            child.description,
            own.requests,
            own.hit_rate().unwrap_or(0.0) * 100.0,
            own.cost,
            child.log.path.display()
        )?;
        write_child_lines(out, &child.log, depth + 1)?;
    }
    Ok(())
}

/// The cache report in words: each break with its cause, expected ones first counted, then
/// the requests too small to cache and those not judged.
fn write_cache(out: &mut impl std::io::Write, cache: &CacheReport) -> anyhow::Result<()> {
    let expected = cache.expected().count();
    let unexpected = cache.unexpected().count();
    writeln!(
        out,
        "  cache breaks: {unexpected} unexpected, {expected} expected"
    )?;
    for b in &cache.breaks {
        writeln!(
            out,
            "  {} at request {} ({}): read {} of the {} tokens the previous prompt held — {}",
            if b.cause.is_expected() {
                "expected break"
            } else {
                "UNEXPECTED break"
            },
            b.request,
            b.id,
            b.cache_read,
            b.previous_prompt,
            b.cause.describe()
        )?;
        if let Some(provider) = &b.provider {
            writeln!(out, "    provider reports: {}", provider.describe())?;
        }
    }
    for d in &cache.disagreements {
        writeln!(
            out,
            "  WARNING: provider and strata disagree on {} — a bug in one of them",
            d.describe()
        )?;
    }
    for small in &cache.below_minimum {
        writeln!(
            out,
            "  request {} ({}): its {}-token prompt is below the model's cache minimum of {}: nothing could be cached",
            small.request, small.id, small.prompt, small.minimum
        )?;
    }
    match cache.aborted.as_slice() {
        [] => {}
        numbers => writeln!(
            out,
            "  aborted or failed, not judged for the cache: request(s) {}",
            numbers
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        )?,
    }
    Ok(())
}

/// A file named on the command line is read whatever its name (and marked `true`); a
/// directory is walked for `*.jsonl`.
fn collect(path: &Path, named: bool, files: &mut Vec<(PathBuf, bool)>) -> std::io::Result<()> {
    let meta = std::fs::metadata(path)?;
    if meta.is_dir() {
        // Delegated sessions are reported under the session that delegated them.
        if !named
            && path
                .file_name()
                .is_some_and(|name| name.to_string_lossy().ends_with(".subagents"))
        {
            return Ok(());
        }
        for entry in std::fs::read_dir(path)? {
            // One unreadable entry (a dangling symlink, a denied folder) is said and skipped:
            // it does not hide the rest of the directory.
            let entry = match entry {
                Ok(entry) => entry.path(),
                Err(error) => {
                    eprintln!("strata: warning: {}: {error} (skipped)", path.display());
                    continue;
                }
            };
            if let Err(error) = collect(&entry, false, files) {
                eprintln!("strata: warning: {}: {error} (skipped)", entry.display());
            }
        }
    } else if named || path.extension().is_some_and(|e| e == "jsonl") {
        files.push((path.to_path_buf(), named));
    }
    Ok(())
}

/// Reads one log: a session (first line is a `session` header) or a Claude Code log. A line
/// that is not JSON or not UTF-8 is reported by number and the rest is still read; a file
/// that is neither kind of log is an error. A session is read through the session crate's
/// index (its lines stay in the file, parsed one at a time), so a large one costs its index,
/// not its size.
fn read_log(path: &Path, catalog: &Catalog) -> anyhow::Result<LogStats> {
    let meta = std::fs::metadata(path).context("reading its metadata")?;
    if !meta.is_file() {
        anyhow::bail!("not a regular file");
    }
    let mut attributed = Vec::new();
    let header = strata_session::header_json(path).context("reading it")?;
    let (kind, records, cache, children) = if header.is_some() {
        let opened = open_session(path)?;
        let tree = opened.session.tree();
        attributed = strata_accounting::attributions(tree);
        let (kind, records) = session_records(tree, catalog);
        let cache = cache_report(Some(tree), &records, catalog);
        (kind, records, cache, read_children(path, catalog))
    } else {
        let bytes = std::fs::read(path).context("reading it")?;
        let text = lossy_text(path, bytes);
        let records = claude_code_records(path, &text, catalog)?;
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
/// child that cannot be read is said and left out).
fn read_children(parent: &Path, catalog: &Catalog) -> Vec<ChildStats> {
    let delegated = match strata_session::try_delegated_from(parent) {
        Ok(delegated) => delegated,
        Err(error) => {
            eprintln!(
                "strata: warning: the children of {}: {error}",
                parent.display()
            );
            return Vec::new();
        }
    };
    let mut children = Vec::new();
    for child in delegated {
        let mut log = match read_log(child.path(), catalog) {
            Ok(log) => log,
            Err(error) => {
                eprintln!(
                    "strata: warning: {}: {error:#}, skipped",
                    child.path().display()
                );
                continue;
            }
        };
        // A fork's copy of the parent's requests left out, as rpc's stats leave it out.
        let (dropped, read_from_parent) = strata_accounting::own_part(&child, &mut log.records);
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

/// The file as text, each line that is not UTF-8 reported by number and read with
/// replacement characters, so one bad byte costs no more than its line.
fn lossy_text(path: &Path, bytes: Vec<u8>) -> String {
    let bytes = match String::from_utf8(bytes) {
        Ok(text) => return text,
        Err(error) => error.into_bytes(),
    };
    for (number, raw) in bytes.split(|&b| b == b'\n').enumerate() {
        if let Err(error) = std::str::from_utf8(raw) {
            eprintln!(
                "strata: warning: {}: line {}: invalid UTF-8 at byte {}, read with replacement characters",
                path.display(),
                number + 1,
                error.valid_up_to()
            );
        }
    }
    String::from_utf8_lossy(&bytes).into_owned()
}

/// Opens a session, its problems reported as warnings.
fn open_session(path: &Path) -> anyhow::Result<strata_session::Opened> {
    let opened = Session::open(path)?;
    for diagnostic in &opened.diagnostics {
        eprintln!("strata: warning: {diagnostic}");
    }
    Ok(opened)
}

/// A Pi / strata session's billed requests (the accounting's), priced from the table where
/// the file recorded no cost; `strata` when it holds entries only strata writes.
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
    let records = strata_accounting::priced_records(tree, catalog);
    (if strata { "strata" } else { "pi" }, records)
}

/// A Claude Code project log's requests: it writes one line per content block of a response,
/// each with the same usage, so a request is counted once.
fn claude_code_records(
    path: &Path,
    text: &str,
    catalog: &Catalog,
) -> anyhow::Result<Vec<RequestRecord>> {
    let mut records: Vec<RequestRecord> = Vec::new();
    let mut json_lines = false;
    let mut claude_code_lines = false;
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
        anyhow::bail!("not a session or Claude Code log: it holds no JSON lines");
    }
    if !claude_code_lines && records.is_empty() {
        anyhow::bail!(
            "not a session or Claude Code log: the first line is not a `session` header and no line is a Claude Code message"
        );
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

    #[cfg(unix)]
    #[test]
    fn a_dangling_symlink_does_not_hide_the_rest_of_a_directory() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.jsonl"), "{}\n").unwrap();
        std::os::unix::fs::symlink(dir.path().join("gone"), dir.path().join("b.jsonl")).unwrap();
        let mut files = Vec::new();
        collect(dir.path(), true, &mut files).unwrap();
        assert_eq!(files, [(dir.path().join("a.jsonl"), false)]);
    }

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
        let log = read_log(&path, &catalog).unwrap();
        let request = &log.requests[0];
        assert_eq!(request.id, "k0000001 (keep-warm)");
        assert_eq!(request.model, "anthropic/claude-opus-4-8");
        // A million read at $0.50, a million written for an hour at $10, one output token at $25
        // per million: the hour's rate, not the 5-minute $6.25.
        assert!((request.cost - 10.500025).abs() < 1e-9, "{}", request.cost);
    }

    #[test]
    fn the_providers_reason_is_printed_beside_strata_and_a_disagreement_warned() {
        let cause = strata_accounting::BreakCause::TtlExpiry {
            idle_secs: 1200,
            ttl_secs: 300,
        };
        let provider = strata_provider::CacheDiagnosis {
            reason: "tools_changed".into(),
            missed_tokens: Some(5000),
        };
        let report = CacheReport {
            breaks: vec![strata_accounting::CacheBreak {
                request: 2,
                id: "a2".into(),
                previous_prompt: 5010,
                cache_read: 0,
                cause: cause.clone(),
                provider: Some(provider.clone()),
            }],
            disagreements: vec![strata_accounting::Disagreement {
                request: 2,
                id: "a2".into(),
                strata: cause.describe(),
                provider: provider.describe(),
            }],
            ..CacheReport::default()
        };
        let mut out = Vec::new();
        write_cache(&mut out, &report).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(
            text.contains("provider reports: tools changed (5000 tokens missed)"),
            "{text}"
        );
        assert!(
            text.contains("WARNING: provider and strata disagree on request 2 (a2)"),
            "{text}"
        );
    }
}
