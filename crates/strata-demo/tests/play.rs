//! One play of the demo against its in-process mock: the agent's tool calls really ran, and
//! the naive renderer pays more than strata's for the same work.

use strata_context::RenderPolicy;
use strata_demo::{TARGETS, bill, script};
use strata_provider::Catalog;

#[tokio::test]
async fn the_scripted_session_fixes_the_bug_and_naive_rendering_costs_more() {
    let catalog = Catalog::builtin().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let target = TARGETS[0];
    let prices = catalog.model(target.provider, target.model).unwrap().prices;
    let mut cost = Vec::new();
    for (policy, name) in [
        (RenderPolicy::Strata, "strata"),
        (RenderPolicy::Naive, "naive"),
    ] {
        let play = script::play(&catalog, target, policy, &dir.path().join(name), None)
            .await
            .unwrap();
        let first = play.test_runs.first().unwrap();
        let last = play.test_runs.last().unwrap();
        assert!(
            first.contains("FAIL"),
            "the bundled tests fail first: {first}"
        );
        assert!(!last.contains("FAIL"), "and pass after the edit: {last}");
        assert!(play.session_file.is_file());
        assert!(
            play.records.iter().any(|r| r.summary.is_some()),
            "the compactions sent summary requests"
        );
        let rows: Vec<_> = play.records.iter().map(|r| bill::row(r, &prices)).collect();
        cost.push(bill::totals(&rows).cost_usd);
    }
    assert!(
        cost[1] > cost[0],
        "naive {} against strata {}",
        cost[1],
        cost[0]
    );
}
