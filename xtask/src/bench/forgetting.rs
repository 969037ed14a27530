//! The document's sections on what a smaller context costs and saves: the bill of every run
//! split into reads, writes, uncached input and output, with each run's hit rate against its
//! own ideal and the re-fetches it caused; strata against Pi 1.6 on the recall workloads; and
//! the table that picks the default policy (lowest bill with every task done).

use std::collections::BTreeMap;
use std::fmt::Write as _;

use crate::bench::model::CacheModel;
use crate::bench::run::{Bill, MissCause, RequestKind, Run};
use crate::bench::table::percent;

/// Largest allowed ratio of strata's default cost to Pi 1.6's on the recall workloads.
pub const PI_COST_RATIO: f64 = 0.6;

/// The workloads that see forgetting.
pub fn is_recall(workload: &str) -> bool {
    workload.starts_with("recall")
}

fn label(run: &Run) -> String {
    if run.harness == "strata" {
        run.strategy.clone()
    } else {
        format!("{} 1.6.0 ({})", run.strategy, run.harness)
    }
}

/// Every run's bill split by what it paid for, its hit rate against the ideal of its own
/// requests, and its re-fetches.
pub fn bill_table(runs: &[Run]) -> String {
    let mut out = String::from(
        "| workload | cache | strategy | cost (USD) | reads | writes | uncached | output | hit rate | own ideal | gap (pp) | re-fetches (USD) | tasks done |\n\
         |---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|\n",
    );
    for run in runs {
        let totals = run.totals();
        let bill = totals.bill;
        let _ = writeln!(
            out,
            "| {} | {} | {} | {:.4} | {:.4} | {:.4} | {:.4} | {:.4} | {} | {} | {:+.2} | {} ({:.4}) | {}/{} |",
            run.workload,
            run.cache_model,
            label(run),
            totals.cost,
            bill.reads,
            bill.writes,
            bill.uncached,
            bill.output,
            percent(totals.hit_rate()),
            percent(totals.ideal_hit_rate()),
            (totals.hit_rate() - totals.ideal_hit_rate()) * 100.0,
            totals.refetches,
            totals.refetch_cost,
            run.tasks_completed,
            run.tasks_total,
        );
    }
    out
}

/// Pi 1.6's run of `workload` on `cache`.
fn pi<'a>(runs: &'a [Run], workload: &str, cache: &str) -> Option<&'a Run> {
    runs.iter()
        .find(|run| run.workload == workload && run.cache_model == cache && run.harness == "pi")
}

/// Every strata strategy against Pi 1.6 on each recall workload and cache model, and the
/// verdict for `default_strategy` (the library defaults).
pub fn against_pi(runs: &[Run], default_strategy: &str) -> String {
    let mut out = String::from(
        "| workload | cache | strata strategy | strata (USD) | Pi 1.6.0 (USD) | ratio | strata re-fetches | Pi re-fetches | strata tasks | Pi tasks |\n\
         |---|---|---|---:|---:|---:|---:|---:|---|---|\n",
    );
    let mut met = 0;
    let mut compared = 0;
    for run in runs
        .iter()
        .filter(|run| is_recall(&run.workload) && run.harness == "strata")
    {
        let Some(peer) = pi(runs, &run.workload, &run.cache_model) else {
            continue;
        };
        let ratio = run.totals().cost / peer.totals().cost.max(1e-12);
        let is_default = run.strategy == default_strategy;
        if is_default {
            compared += 1;
            if ratio <= PI_COST_RATIO && run.all_tasks_completed() {
                met += 1;
            }
        }
        let _ = writeln!(
            out,
            "| {} | {} | {}{} | {:.4} | {:.4} | {ratio:.2}x | {} | {} | {}/{} | {}/{} |",
            run.workload,
            run.cache_model,
            run.strategy,
            if is_default { " (defaults)" } else { "" },
            run.totals().cost,
            peer.totals().cost,
            run.totals().refetches,
            peer.totals().refetches,
            run.tasks_completed,
            run.tasks_total,
            peer.tasks_completed,
            peer.tasks_total,
        );
    }
    let _ = writeln!(
        out,
        "\nstrata on its defaults at most {PI_COST_RATIO}x Pi 1.6.0 with every task done: \
         **{met} of {compared}** workload × cache pairs."
    );
    out
}

/// The strategies' bills over the workloads where the compaction policies differ (`long` and
/// the recall workloads) on the cache models the issue names, counted only where every task
/// was done; the lowest is the default's candidate.
/// Returns the table and the winner.
pub fn choose_default(runs: &[Run]) -> (String, Option<String>) {
    let caches = [
        CacheModel::AnthropicFiveMinutes,
        CacheModel::OpenAiAutomatic,
        CacheModel::DeepSeekDisk,
    ]
    .map(CacheModel::name);
    // strategy → (runs, all done, summed cost relative to Pi or to naive)
    let mut sums: BTreeMap<String, (usize, bool, f64)> = BTreeMap::new();
    for run in runs.iter().filter(|run| {
        run.harness == "strata"
            && (is_recall(&run.workload) || run.workload == "long")
            && caches.contains(&&*run.cache_model)
    }) {
        // Each pair weighs the same: cost relative to naive on the same pair.
        let Some(naive) = runs.iter().find(|other| {
            other.harness == "strata"
                && other.strategy == "naive"
                && other.workload == run.workload
                && other.cache_model == run.cache_model
        }) else {
            continue;
        };
        let entry = sums.entry(run.strategy.clone()).or_insert((0, true, 0.0));
        entry.0 += 1;
        entry.1 &= run.all_tasks_completed();
        entry.2 += run.totals().cost / naive.totals().cost.max(1e-12);
    }
    let mut out = String::from(
        "| strategy | pairs | every task done | mean cost × naive |\n|---|---:|---|---:|\n",
    );
    let mut best: Option<(String, f64)> = None;
    for (strategy, (count, done, sum)) in &sums {
        let mean = sum / (*count).max(1) as f64;
        let _ = writeln!(
            out,
            "| {strategy} | {count} | {} | {mean:.3}x |",
            if *done { "yes" } else { "no" }
        );
        if *done && best.as_ref().is_none_or(|(_, cost)| mean < *cost) {
            best = Some((strategy.clone(), mean));
        }
    }
    (out, best.map(|(strategy, _)| strategy))
}

/// What an oracle policy would pay for a recall run's work, estimated from the window-trigger
/// run (nothing masked, fewest rewrites) on the same workload and cache: every scripted
/// message written once as that run paid it (its first and appended misses, re-fetches and
/// summaries left out), its scripted output, and on each scripted request a read of only the
/// fixed prefix (the first request's prompt) and half a task (what the task has appended so
/// far, on average) — a context that holds nothing of earlier tasks and never has to fetch a
/// fact again, at no cost to get there. No policy pays less; most pay more.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Floor {
    /// The floor's bill.
    pub bill: Bill,
    /// Scripted requests it counts.
    pub requests: usize,
}

/// [`Floor`] of `run` (a window-trigger run), or `None` when it has no requests.
pub fn oracle_floor(run: &Run) -> Option<Floor> {
    let first = run.requests.first()?;
    let mut bill = Bill::default();
    let mut appended_tokens = 0u64;
    let mut requests = 0usize;
    let mut after_refetch = false;
    for row in &run.requests {
        let scripted = row.kind == RequestKind::Turn && !row.refetch && !after_refetch;
        after_refetch = row.refetch;
        if !scripted {
            continue;
        }
        requests += 1;
        bill.output += row.bill.output;
        if matches!(row.cause, MissCause::First | MissCause::Appended) {
            bill.writes += row.bill.writes;
            bill.uncached += row.bill.uncached;
            appended_tokens += row.missed();
        }
    }
    let (read_tokens, read_usd) = run.requests.iter().fold((0u64, 0.0), |(t, u), row| {
        (t + row.cache_read, u + row.bill.reads)
    });
    let read_price = if read_tokens == 0 {
        0.0
    } else {
        read_usd / read_tokens as f64
    };
    let half_task = appended_tokens as f64 / run.tasks_total.max(1) as f64 / 2.0;
    bill.reads = requests as f64 * (first.input as f64 + half_task) * read_price;
    Some(Floor { bill, requests })
}

/// The oracle floor of every recall workload and cache, against Pi 1.6 and strata's defaults,
/// and how far above the floor each part of the defaults' bill is: the lever that closes the
/// gap is the largest column.
pub fn floor_table(runs: &[Run]) -> Option<String> {
    let mut out = String::from(
        "| workload | cache | floor (USD) | floor reads / writes / uncached / output | floor × Pi | defaults × Pi | defaults above the floor: reads / writes / uncached / output |\n\
         |---|---|---:|---|---:|---:|---|\n",
    );
    let mut any = false;
    for window in runs.iter().filter(|run| {
        is_recall(&run.workload) && run.harness == "strata" && run.strategy == "window-trigger"
    }) {
        let Some(floor) = oracle_floor(window) else {
            continue;
        };
        let find = |harness: &str, strategy: &str| {
            runs.iter().find(|run| {
                run.workload == window.workload
                    && run.cache_model == window.cache_model
                    && run.harness == harness
                    && run.strategy == strategy
            })
        };
        let (Some(defaults), Some(peer)) = (find("strata", "strata"), find("pi", "pi")) else {
            continue;
        };
        any = true;
        let pi_cost = peer.totals().cost.max(1e-12);
        let ours = defaults.totals().bill;
        let f = floor.bill;
        let _ = writeln!(
            out,
            "| {} | {} | {:.4} | {:.4} / {:.4} / {:.4} / {:.4} | {:.2}x | {:.2}x | {:+.4} / {:+.4} / {:+.4} / {:+.4} |",
            window.workload,
            window.cache_model,
            f.total(),
            f.reads,
            f.writes,
            f.uncached,
            f.output,
            f.total() / pi_cost,
            ours.total() / pi_cost,
            ours.reads - f.reads,
            ours.writes - f.writes,
            ours.uncached - f.uncached,
            ours.output - f.output,
        );
    }
    any.then_some(out)
}

/// For every run with a restart: the share of the last prompt before it that the first
/// request after it read from the cache.
pub fn restart_table(runs: &[Run]) -> Option<String> {
    let mut out = String::from(
        "| workload | cache | strategy | previous prefix read after the restart |\n|---|---|---|---:|\n",
    );
    let mut any = false;
    for run in runs {
        for share in run.restart_reads() {
            any = true;
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} |",
                run.workload,
                run.cache_model,
                label(run),
                percent(share)
            );
        }
    }
    any.then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::run::RequestRow;

    fn row(
        kind: RequestKind,
        cause: MissCause,
        input: u64,
        read: u64,
        refetch: bool,
    ) -> RequestRow {
        let write = input - read;
        RequestRow {
            seq: 0,
            at_ms: 0,
            kind,
            input,
            cache_read: read,
            cache_write: write,
            uncached: 0,
            output: 10,
            cost: 0.0,
            floor_cost: 0.0,
            new_tokens: write,
            cause,
            bill: Bill {
                reads: read as f64 * 0.5e-6,
                writes: write as f64 * 6.25e-6,
                uncached: 0.0,
                output: 10.0 * 25e-6,
            },
            refetch,
        }
    }

    #[test]
    fn the_floor_counts_scripted_requests_only_and_reads_the_prefix_and_half_a_task() {
        let run = Run {
            harness: "strata".into(),
            strategy: "window-trigger".into(),
            workload: "recall".into(),
            cache_model: "anthropic-5m".into(),
            requests: vec![
                row(RequestKind::Turn, MissCause::First, 1_000, 0, false),
                row(RequestKind::Turn, MissCause::Appended, 1_600, 1_000, false),
                // A re-fetch and the request that carries its output: not scripted work.
                row(RequestKind::Turn, MissCause::Appended, 1_700, 1_600, true),
                row(RequestKind::Turn, MissCause::Appended, 2_700, 1_700, false),
                // A summary: not scripted work either.
                row(
                    RequestKind::Summary,
                    MissCause::Appended,
                    2_800,
                    2_700,
                    false,
                ),
                // A rewrite: written by the run's policy, not by the work.
                row(RequestKind::Turn, MissCause::Messages, 1_500, 1_000, false),
            ],
            tasks_completed: 1,
            tasks_total: 1,
            compactions: 1,
            restarts: Vec::new(),
            prepared_compactions: 0,
        };
        let floor = oracle_floor(&run).unwrap();
        assert_eq!(floor.requests, 3);
        // Written once: the first request's 1,000 and the append's 600.
        assert!((floor.bill.writes - 1_600.0 * 6.25e-6).abs() < 1e-12);
        assert!((floor.bill.output - 3.0 * 10.0 * 25e-6).abs() < 1e-12);
        // Each of the 3 reads the 1,000-token prefix and half of the task's 1,600 tokens.
        assert!((floor.bill.reads - 3.0 * (1_000.0 + 800.0) * 0.5e-6).abs() < 1e-12);
    }
}
