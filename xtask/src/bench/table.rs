//! Markdown tables from [`Run`]s of any source: cost first, then hit rates against the ideal,
//! then where the misses come from.

use std::fmt::Write as _;

use crate::bench::run::{MissCause, Run};

/// The run every other run of its workload and cache model is compared with.
pub const BASELINE_STRATEGY: &str = "naive";
/// The reference for the ideal hit rate of a workload.
pub const REFERENCE_STRATEGY: &str = "strata";

/// The headline table: one row per run, grouped by workload and cache model, cost first.
pub fn cost_table(runs: &[Run]) -> String {
    let mut out = String::from(
        "| workload | cache | strategy | cost (USD) | × naive | hit rate | ideal | gap (pp) | requests | tokens/request | written | tasks done |\n\
         |---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|\n",
    );
    for run in runs {
        let totals = run.totals();
        let baseline = runs
            .iter()
            .find(|other| {
                other.workload == run.workload
                    && other.cache_model == run.cache_model
                    && other.strategy == BASELINE_STRATEGY
            })
            .map(|other| other.totals().cost);
        let ideal = ideal_hit_rate(runs, &run.workload, &run.cache_model);
        let ratio = baseline.filter(|cost| *cost > 0.0).map_or_else(
            || "–".to_owned(),
            |cost| format!("{:.2}x", totals.cost / cost),
        );
        let (ideal_text, gap_text) = match ideal {
            Some(ideal) => (
                percent(ideal),
                format!("{:+.2}", (totals.hit_rate() - ideal) * 100.0),
            ),
            None => ("–".to_owned(), "–".to_owned()),
        };
        let _ = writeln!(
            out,
            "| {} | {} | {} | {:.4} | {} | {} | {} | {} | {} | {:.0} | {} | {}/{} |",
            run.workload,
            run.cache_model,
            strategy_label(run),
            totals.cost,
            ratio,
            percent(totals.hit_rate()),
            ideal_text,
            gap_text,
            totals.requests,
            totals.mean_input(),
            thousands(totals.cache_write),
            run.tasks_completed,
            run.tasks_total,
        );
    }
    out
}

/// Missed tokens (written + uncached) by the chapter where the request diverged.
pub fn misses_table(runs: &[Run]) -> String {
    let mut out = String::from("| workload | cache | strategy |");
    for cause in MissCause::ALL {
        let _ = write!(out, " {} |", cause.name());
    }
    out.push_str(" compactions |\n|---|---|---|");
    for _ in MissCause::ALL {
        out.push_str("---:|");
    }
    out.push_str("---:|\n");
    for run in runs {
        let _ = write!(
            out,
            "| {} | {} | {} |",
            run.workload,
            run.cache_model,
            strategy_label(run)
        );
        for (_, missed) in run.misses_by_cause() {
            let _ = write!(out, " {} |", thousands(missed));
        }
        let _ = writeln!(out, " {} |", run.compactions);
    }
    out
}

/// The ideal hit rate of a workload on a cache model: that of the reference strategy's
/// requests (strata's layout), when it ran.
pub fn ideal_hit_rate(runs: &[Run], workload: &str, cache_model: &str) -> Option<f64> {
    runs.iter()
        .find(|run| {
            run.workload == workload
                && run.cache_model == cache_model
                && run.strategy == REFERENCE_STRATEGY
                && run.harness == "strata"
        })
        .map(|run| run.totals().ideal_hit_rate())
}

fn strategy_label(run: &Run) -> String {
    if run.harness == "strata" {
        run.strategy.clone()
    } else {
        format!("{} ({})", run.strategy, run.harness)
    }
}

/// `0.98765` → `98.77%`.
pub fn percent(value: f64) -> String {
    format!("{:.2}%", value * 100.0)
}

/// `1234567` → `1,234,567`.
pub fn thousands(value: u64) -> String {
    let digits = value.to_string();
    let mut out = String::new();
    for (i, digit) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(digit);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::run::{RequestKind, RequestRow};

    fn run(strategy: &str, harness: &str, cost: f64) -> Run {
        Run {
            harness: harness.to_owned(),
            strategy: strategy.to_owned(),
            workload: "short".to_owned(),
            cache_model: "openai".to_owned(),
            requests: vec![RequestRow {
                seq: 1,
                at_ms: 0,
                kind: RequestKind::Turn,
                input: 1000,
                cache_read: 900,
                cache_write: 0,
                uncached: 100,
                output: 5,
                cost,
                floor_cost: cost,
                new_tokens: 50,
                cause: MissCause::Appended,
                bill: crate::bench::run::Bill::default(),
                refetch: false,
            }],
            tasks_completed: 1,
            tasks_total: 1,
            compactions: 0,
            restarts: Vec::new(),
            prepared_compactions: 0,
        }
    }

    #[test]
    fn rows_from_any_source_compare_with_naive_and_the_ideal() {
        let runs = [
            run("strata", "strata", 0.5),
            run("naive", "strata", 2.0),
            run("pi", "pi", 1.0),
        ];
        let table = cost_table(&runs);
        let lines: Vec<&str> = table.lines().collect();
        assert_eq!(lines.len(), 5);
        assert!(
            lines[2].contains("| 0.5000 | 0.25x | 90.00% | 95.00% | -5.00 |"),
            "{}",
            lines[2]
        );
        assert!(lines[4].contains("pi (pi)"), "{}", lines[4]);
        assert!(lines[4].contains("0.50x"), "{}", lines[4]);
        assert_eq!(thousands(1_234_567), "1,234,567");
        assert!(misses_table(&runs).contains("| 100 |"));
    }
}
