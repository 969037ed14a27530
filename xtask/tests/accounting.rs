//! The benchmark's accounting adds up: `short` played in-process through the agent loop against
//! strata-mock, on every cache model.

use pretty_assertions::assert_eq;
use xtask::bench::driver::run_with_usage;
use xtask::bench::{CacheModel, RequestKind, Strategy, Totals, Workload};

#[test]
fn short_adds_up_on_every_cache_model() {
    let workload = Workload::load("short").unwrap();
    for cache_model in CacheModel::ALL {
        let (run, reported) = run_with_usage(&workload, Strategy::Strata, cache_model).unwrap();
        let label = run.label();
        assert_eq!(run.requests.len(), 20, "{label}");
        assert!(run.all_tasks_completed(), "{label}");
        for row in &run.requests {
            assert_eq!(
                row.cache_read + row.cache_write + row.uncached,
                row.input,
                "{label}: request {}",
                row.seq
            );
            assert!(row.new_tokens <= row.input, "{label}: request {}", row.seq);
            assert!(row.cost > 0.0, "{label}: request {}", row.seq);
            assert_eq!(row.kind, RequestKind::Turn);
        }
        // The session totals are the sum of the requests.
        let totals = run.totals();
        let mut summed = Totals::default();
        for row in &run.requests {
            summed.requests += 1;
            summed.input += row.input;
            summed.cache_read += row.cache_read;
            summed.cache_write += row.cache_write;
            summed.uncached += row.uncached;
            summed.output += row.output;
            summed.cost += row.cost;
            summed.new_tokens += row.new_tokens;
        }
        assert_eq!(totals.input, summed.input, "{label}");
        assert_eq!(totals.cache_read, summed.cache_read, "{label}");
        assert!((totals.cost - summed.cost).abs() < 1e-12, "{label}");
        // What the agent recorded from the provider's usage equals the provider's accounting
        // (automatic caches report no writes: what they store is billed as plain input).
        assert_eq!(reported.requests, totals.requests, "{label}");
        assert_eq!(
            reported.uncached + reported.cache_read + reported.cache_write,
            totals.input,
            "{label}"
        );
        assert_eq!(reported.cache_read, totals.cache_read, "{label}");
        assert_eq!(reported.output, totals.output, "{label}");
        if matches!(
            cache_model,
            CacheModel::AnthropicFiveMinutes | CacheModel::AnthropicOneHour
        ) {
            assert_eq!(reported.cache_write, totals.cache_write, "{label}");
            assert_eq!(reported.uncached, totals.uncached, "{label}");
        }
        // An append-only session reads almost everything it sent before.
        assert!(totals.hit_rate() > 0.5, "{label}: {}", totals.hit_rate());
        assert!(
            totals.hit_rate() <= totals.ideal_hit_rate() + 1e-9,
            "{label}"
        );
    }
}
