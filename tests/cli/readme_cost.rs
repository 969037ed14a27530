//! The README's mock scenario (`strata -p "fix the greeting"` on strata-mock's demo script,
//! Claude Sonnet 4.5's cache rules) costs strata no more than Pi 1.6 doing the same work on
//! the same mock: both bills are priced from the mock's own records at the catalog's prices.
//! Skips with a message without node 22 and Pi 1.6 (`.ci/install-pi`).

use std::path::Path;

use strata_mock::RequestRecord;
use strata_provider::{Catalog, Usage};

use crate::support::{Pi16, demo_mock, text, workspace};

/// The scenario's project, as the README copies it.
fn greeting_copy(dir: &Path) {
    std::fs::create_dir_all(dir.join("src")).unwrap();
    std::fs::copy(
        workspace().join("examples/greeting/src/greeting.rs"),
        dir.join("src/greeting.rs"),
    )
    .unwrap();
}

/// The dollars `records` cost at `prices`, with each request's prompt and cache split.
fn bill(label: &str, records: &[RequestRecord], prices: &strata_provider::Prices) -> f64 {
    let mut total = 0.0;
    for record in records {
        let cache = record.cache.as_ref().expect("every request is accounted");
        let usage = Usage {
            input: cache.uncached,
            output: record.output_tokens,
            cache_read: cache.cache_read,
            cache_write_5m: cache.cache_write_5m,
            cache_write_1h: cache.cache_write_1h,
            cache_storage: 0,
            cache_create: 0,
        };
        let cost = usage.cost(prices).total();
        println!(
            "{label} request {}: prompt {} (read {}, written {}, uncached {}), output {}: ${cost:.5}",
            record.seq,
            cache.input_tokens,
            cache.cache_read,
            cache.cache_write,
            cache.uncached,
            record.output_tokens
        );
        total += cost;
    }
    total
}

#[test]
fn the_readme_scenario_costs_strata_no_more_than_pi_16() {
    let Some(pi) = Pi16::find() else {
        println!("{}", Pi16::skip_message());
        return;
    };
    let server = demo_mock();
    let home = tempfile::tempdir().unwrap();
    let strata_dir = home.path().join("strata");
    greeting_copy(&strata_dir);
    let out = crate::first_run::fresh(
        &strata_dir,
        &[
            "-p",
            "fix the greeting",
            "--model",
            "anthropic/claude-sonnet-4-5",
            "--base-url",
            &server.base_url(),
            "--api-key",
            "any",
        ],
        &[],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let strata_requests = server.requests().len();

    let pi_dir = home.path().join("pi");
    greeting_copy(&pi_dir);
    let out = pi
        .command(&pi_dir, &server.base_url())
        .args(["-p", "--no-session", "fix the greeting"])
        .output()
        .expect("node runs");
    assert!(out.status.success(), "{}", text(&out.stderr));
    let records = server.requests();
    let (strata_records, pi_records) = records.split_at(strata_requests);
    assert_eq!(
        strata_records.len(),
        pi_records.len(),
        "the same work takes the same requests"
    );

    let catalog = Catalog::builtin().unwrap();
    let prices = catalog
        .model("anthropic", "claude-sonnet-4-5")
        .expect("Sonnet 4.5 is in the table")
        .prices;
    let strata = bill("strata", strata_records, &prices);
    let pi = bill("Pi 1.6", pi_records, &prices);
    println!("the README scenario: strata ${strata:.4}, Pi 1.6 ${pi:.4}");
    // strata's own prompt is under Sonnet's minimum of 1,024 tokens: filled to it, the first
    // request writes the prefix and the second reads it.
    let cache = |record: &RequestRecord| record.cache.unwrap();
    let (first, second) = (cache(&strata_records[0]), cache(&strata_records[1]));
    assert!(
        first.cache_write >= 1024 && first.uncached < first.input_tokens / 10,
        "{first:?}"
    );
    assert!(second.cache_read >= first.cache_write, "{second:?}");
    assert!(strata <= pi, "strata ${strata:.4} > Pi 1.6 ${pi:.4}");
}
