//! `strata stats PATH…`: what each request of a session read from cache, wrote, and cost, and
//! where the cache broke — for strata and Pi session files and Claude Code project logs.

use std::io::Write as _;

use anyhow::Context as _;
use strata_runtime::logs::{LogStats, collect, error_chain, read_log};
use strata_runtime::{CacheReport, Catalog, Totals, attribution_lines};

use crate::args::StatsArgs;

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
        let mut warnings = Vec::new();
        let collected = collect(path, true, &mut files, &mut warnings);
        warn(&warnings);
        if let Err(error) = collected {
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
        let mut warnings = Vec::new();
        let read = read_log(file, &catalog, &mut warnings);
        warn(&warnings);
        match read {
            Ok(log) if log.requests.is_empty() => {}
            Ok(log) => logs.push(log),
            Err(error) if *named => {
                eprintln!("strata: {}: {}", file.display(), error_chain(&error));
                failures += 1;
            }
            Err(error) => eprintln!(
                "strata: warning: {}: {}, skipped",
                file.display(),
                error_chain(&error)
            ),
        }
    }
    print_logs(args, &logs)?;
    match failures {
        0 => Ok(()),
        1 => anyhow::bail!("1 path could not be read as a log"),
        n => anyhow::bail!("{n} paths could not be read as logs"),
    }
}

fn warn(warnings: &[String]) {
    for warning in warnings {
        eprintln!("strata: warning: {warning}");
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
    attributed: &[strata_runtime::Attribution],
) -> anyhow::Result<()> {
    for line in attribution_lines(attributed) {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_providers_reason_is_printed_beside_strata_and_a_disagreement_warned() {
        let cause = strata_runtime::BreakCause::TtlExpiry {
            idle_secs: 1200,
            ttl_secs: 300,
        };
        let provider = strata_runtime::CacheDiagnosis {
            reason: "tools_changed".into(),
            missed_tokens: Some(5000),
        };
        let report = CacheReport {
            breaks: vec![strata_runtime::CacheBreak {
                request: 2,
                id: "a2".into(),
                previous_prompt: 5010,
                cache_read: 0,
                cause: cause.clone(),
                provider: Some(provider.clone()),
            }],
            disagreements: vec![strata_runtime::Disagreement {
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
