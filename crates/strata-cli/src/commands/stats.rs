//! `strata stats PATH…`: what each request of a session read from cache, wrote, and cost, and
//! where the cache broke — for strata and Pi session files and Claude Code project logs.

use std::io::Write as _;
use std::path::{Path, PathBuf};

use anyhow::Context as _;
use serde::Serialize;
use serde_json::Value;
use strata_provider::{Catalog, Prices};

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

/// A request that read much less from cache than the previous request's prompt held.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CacheBreak {
    /// 1-based request number.
    pub request: usize,
    /// Its id.
    pub id: String,
    /// Tokens the previous prompt held.
    pub previous_prompt: u64,
    /// Tokens this request read from cache.
    pub cache_read: u64,
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
    pub breaks: Vec<CacheBreak>,
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

/// A request breaks the cache when it reads less than half of what the previous prompt held
/// and that prompt was big enough to be cached at all.
const MIN_CACHEABLE: u64 = 1024;

fn find_breaks(requests: &[RequestUsage]) -> Vec<CacheBreak> {
    let mut breaks = Vec::new();
    for (index, pair) in requests.windows(2).enumerate() {
        let (previous, current) = (&pair[0], &pair[1]);
        let previous_prompt = previous.prompt();
        if previous_prompt >= MIN_CACHEABLE && current.cache_read * 2 < previous_prompt {
            breaks.push(CacheBreak {
                request: index + 2,
                id: current.id.clone(),
                previous_prompt,
                cache_read: current.cache_read,
            });
        }
    }
    breaks
}

pub fn run(args: &StatsArgs) -> anyhow::Result<()> {
    let catalog = Catalog::builtin().context("loading the capability table")?;
    // Problems with a path named on the command line fail the command (after the rest is
    // reported); a file found while walking a directory that is not a log is only a warning.
    let mut failures = 0usize;
    let mut files = Vec::new();
    for path in &args.paths {
        if let Err(error) = collect(path, true, &mut files) {
            eprintln!("strata: {}: {error}", path.display());
            failures += 1;
        }
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
    let mut all = LogStats {
        path: PathBuf::new(),
        kind: "all",
        requests: Vec::new(),
        breaks: Vec::new(),
    };
    for log in logs {
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

/// A file named on the command line is read whatever its name (and marked `true`); a
/// directory is walked for `*.jsonl`.
fn collect(path: &Path, named: bool, files: &mut Vec<(PathBuf, bool)>) -> std::io::Result<()> {
    let meta = std::fs::metadata(path)?;
    if meta.is_dir() {
        for entry in std::fs::read_dir(path)? {
            collect(&entry?.path(), false, files)?;
        }
    } else if named || path.extension().is_some_and(|e| e == "jsonl") {
        files.push((path.to_path_buf(), named));
    }
    Ok(())
}

/// Reads one log: a session (first line is a `session` header) or a Claude Code log. A line
/// that is not JSON or not UTF-8 is reported by number and the rest is still read; a file
/// that is neither kind of log is an error.
fn read_log(path: &Path, catalog: &Catalog) -> anyhow::Result<LogStats> {
    let meta = std::fs::metadata(path).context("reading its metadata")?;
    if !meta.is_file() {
        anyhow::bail!("not a regular file");
    }
    let bytes = std::fs::read(path).context("reading it")?;
    // Decided by the first JSON line: a session header, or a Claude Code log.
    let mut is_session: Option<bool> = None;
    let mut claude_code_lines = false;
    let mut strata_entries = false;
    let mut requests: Vec<RequestUsage> = Vec::new();
    for (number, raw) in bytes.split(|&b| b == b'\n').enumerate() {
        let line = match std::str::from_utf8(raw) {
            Ok(line) => std::borrow::Cow::Borrowed(line),
            Err(error) => {
                eprintln!(
                    "strata: warning: {}: line {}: invalid UTF-8 at byte {}, read with replacement characters",
                    path.display(),
                    number + 1,
                    error.valid_up_to()
                );
                String::from_utf8_lossy(raw)
            }
        };
        if line.trim().is_empty() {
            continue;
        }
        let Ok(value) = serde_json::from_str::<Value>(&line) else {
            eprintln!(
                "strata: warning: {}: line {}: not JSON, skipped",
                path.display(),
                number + 1
            );
            continue;
        };
        if *is_session.get_or_insert_with(|| value["type"] == "session") {
            strata_entries |= matches!(
                value["type"].as_str(),
                Some("system" | "context_edit" | "leaf")
            );
            if let Some(request) = session_request(&value, catalog) {
                requests.push(request);
            }
            continue;
        }
        claude_code_lines |= value.get("sessionId").is_some()
            && matches!(
                value["type"].as_str(),
                Some("user" | "assistant" | "summary")
            );
        if let Some(request) = claude_code_request(&value, catalog) {
            // Claude Code writes one line per content block of a response, each with the
            // same usage: count a request once.
            if requests.last().is_some_and(|last| last.id == request.id) {
                continue;
            }
            requests.push(request);
        }
    }
    let kind = match (is_session, strata_entries) {
        (Some(true), true) => "strata",
        (Some(true), false) => "pi",
        _ if claude_code_lines || !requests.is_empty() => "claude-code",
        (None, _) => anyhow::bail!("not a session or Claude Code log: it holds no JSON lines"),
        _ => anyhow::bail!(
            "not a session or Claude Code log: the first line is not a `session` header and no line is a Claude Code message"
        ),
    };
    let breaks = find_breaks(&requests);
    Ok(LogStats {
        path: path.to_path_buf(),
        kind,
        requests,
        breaks,
    })
}

/// A request recorded in a Pi / strata session: an assistant `message`, a compaction whose
/// summary request's usage strata stored on it, strata's `strata.usage` custom entry
/// (branch summaries) or a `strata.keep_warm` one (a ping while idle). Pi drops its summary requests' usage, so its files have only the first.
fn session_request(entry: &Value, catalog: &Catalog) -> Option<RequestUsage> {
    let (usage, provider, model, kind) = match entry["type"].as_str() {
        Some("message") if entry["message"]["role"] == "assistant" => {
            let message = &entry["message"];
            (
                &message["usage"],
                message["provider"].as_str(),
                message["model"].as_str(),
                "",
            )
        }
        Some("compaction") if entry["usage"].is_object() => {
            (&entry["usage"], None, None, " (compaction)")
        }
        Some("custom") if entry["customType"] == strata_compaction::USAGE_CUSTOM_TYPE => {
            (&entry["data"]["usage"], None, None, " (summary)")
        }
        Some("custom") if entry["customType"] == strata_agent::KEEP_WARM_CUSTOM_TYPE => {
            let data = &entry["data"];
            (
                &data["usage"],
                data["provider"].as_str(),
                data["model"].as_str(),
                " (keep-warm)",
            )
        }
        _ => return None,
    };
    let mut request = usage_of(
        entry,
        usage,
        provider.unwrap_or(""),
        model.unwrap_or(""),
        catalog,
    )?;
    request.id.push_str(kind);
    Some(request)
}

fn usage_of(
    entry: &Value,
    usage: &Value,
    provider: &str,
    model: &str,
    catalog: &Catalog,
) -> Option<RequestUsage> {
    if !usage.is_object() {
        return None;
    }
    let number = |key: &str| usage[key].as_u64().unwrap_or(0);
    let mut request = RequestUsage {
        id: entry["id"].as_str().unwrap_or("").to_owned(),
        model: format!("{provider}/{model}"),
        input: number("input"),
        cache_read: number("cacheRead"),
        cache_write: number("cacheWrite"),
        output: number("output"),
        cost: usage["cost"]["total"].as_f64().unwrap_or(0.0),
    };
    if request.cost == 0.0
        && let Some(model) = catalog.model(provider, model)
    {
        request.cost = price(&request, &model.prices);
    }
    Some(request)
}

/// An `assistant` line of a Claude Code project log (Anthropic usage field names).
fn claude_code_request(line: &Value, catalog: &Catalog) -> Option<RequestUsage> {
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
    let mut request = RequestUsage {
        id,
        model: format!("anthropic/{model}"),
        input: number("input_tokens"),
        cache_read: number("cache_read_input_tokens"),
        cache_write: number("cache_creation_input_tokens"),
        output: number("output_tokens"),
        cost: 0.0,
    };
    if let Some(model) = catalog.model("anthropic", model) {
        request.cost = price(&request, &model.prices);
    }
    Some(request)
}

/// Cost at list prices, cache writes at the 5-minute rate (logs do not say which).
fn price(usage: &RequestUsage, prices: &Prices) -> f64 {
    (usage.input as f64 * prices.input
        + usage.cache_read as f64 * prices.cache_read
        + usage.cache_write as f64 * prices.cache_write_5m
        + usage.output as f64 * prices.output)
        / 1_000_000.0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn usage(id: &str, input: u64, read: u64, write: u64) -> RequestUsage {
        RequestUsage {
            id: id.into(),
            input,
            cache_read: read,
            cache_write: write,
            ..RequestUsage::default()
        }
    }

    #[test]
    fn a_keep_warm_entry_is_a_request_priced_from_its_model() {
        let catalog = Catalog::builtin().unwrap();
        let entry = serde_json::json!({"type": "custom", "id": "k1", "customType": "strata.keep_warm",
            "data": {"provider": "anthropic", "model": "claude-opus-4-8",
                "usage": {"input": 0, "output": 1, "cacheRead": 1_000_000, "cacheWrite": 0}}});
        let request = session_request(&entry, &catalog).unwrap();
        assert_eq!(request.id, "k1 (keep-warm)");
        assert_eq!(request.model, "anthropic/claude-opus-4-8");
        assert_eq!(request.cache_read, 1_000_000);
        // A million tokens read at Opus 4.8's $0.50, one output token at $25 per million.
        assert!((request.cost - 0.500025).abs() < 1e-9, "{}", request.cost);
    }

    #[test]
    fn a_break_is_a_request_reading_less_than_half_the_previous_prompt() {
        let requests = [
            usage("a", 10, 0, 5000),
            usage("b", 20, 5000, 100),
            usage("c", 30, 1000, 4100),
            usage("d", 10, 5100, 40),
        ];
        let breaks = find_breaks(&requests);
        assert_eq!(breaks.len(), 1);
        assert_eq!(breaks[0].request, 3);
        assert_eq!(breaks[0].id, "c");
        assert_eq!(breaks[0].previous_prompt, 5120);
        let total = usage("t", 70, 11100, 9240);
        assert!((hit_rate(&total) - 11100.0 / 20410.0).abs() < 1e-12);
    }
}
