//! End-to-end tests of `strata demo`: the built binary plays the bundled session against
//! strata-mock in process, and what it prints adds up to what the mock recorded.

use serde_json::Value;

use crate::support::strata;

fn demo_json(keep: &std::path::Path) -> Value {
    let keep = keep.to_str().unwrap();
    let output = strata(&["demo", "--json", "--keep", keep]);
    assert!(
        output.status.success(),
        "strata demo failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).expect("strata demo --json prints JSON")
}

fn u(value: &Value) -> u64 {
    value.as_u64().expect("a token count")
}

fn f(value: &Value) -> f64 {
    value.as_f64().expect("a number")
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0)
}

#[test]
fn the_demo_exits_0_its_totals_match_the_mocks_accounting_and_its_tests_really_ran() {
    let keep = tempfile::tempdir().unwrap();
    let report = demo_json(keep.path());
    check_test_runs(&report);
    let runs = report["runs"].as_array().unwrap();
    let labels: Vec<(String, String)> = runs
        .iter()
        .map(|run| {
            (
                run["provider"].as_str().unwrap().to_owned(),
                run["renderer"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    for provider in ["anthropic", "openai", "deepseek"] {
        for renderer in ["strata", "naive"] {
            assert!(
                labels.contains(&(provider.to_owned(), renderer.to_owned())),
                "{labels:?}"
            );
        }
    }
    for run in runs {
        let label = format!("{} {}", run["provider"], run["renderer"]);
        let rows = run["rows"].as_array().unwrap();
        let records = run["mock_records"].as_array().unwrap();
        assert_eq!(rows.len(), records.len(), "{label}");
        let prices = &run["prices"];
        let (mut read, mut write, mut uncached, mut input, mut output, mut cost) =
            (0, 0, 0, 0, 0, 0.0);
        for (row, record) in rows.iter().zip(records) {
            assert_eq!(row["seq"], record["seq"], "{label}");
            assert_eq!(record["status"], 200, "{label}: {record}");
            let cache = &record["cache"];
            // Each printed row is the mock's own accounting of that request.
            assert_eq!(u(&row["cache_read"]), u(&cache["cache_read"]), "{label}");
            assert_eq!(u(&row["cache_write"]), u(&cache["cache_write"]), "{label}");
            assert_eq!(u(&row["uncached"]), u(&cache["uncached"]), "{label}");
            assert_eq!(u(&row["input"]), u(&cache["input_tokens"]), "{label}");
            assert_eq!(u(&row["output"]), u(&record["output_tokens"]), "{label}");
            let chapters: u64 = ["tools", "system", "messages"]
                .iter()
                .map(|c| {
                    u(&cache[*c]["read"]) + u(&cache[*c]["written"]) + u(&cache[*c]["uncached"])
                })
                .sum();
            assert_eq!(
                u(&row["tools"]) + u(&row["system"]) + u(&row["messages"]),
                chapters,
                "{label}"
            );
            assert_eq!(chapters, u(&cache["input_tokens"]), "{label}");
            // Priced from the capability table's prices (an unpriced write is billed as input).
            let write_price = if f(&prices["cache_write_5m"]) > 0.0 {
                f(&prices["cache_write_5m"])
            } else {
                f(&prices["input"])
            };
            let expected = (u(&cache["uncached"]) as f64 * f(&prices["input"])
                + u(&cache["cache_read"]) as f64 * f(&prices["cache_read"])
                + u(&cache["cache_write_5m"]) as f64 * write_price
                + u(&cache["cache_write_1h"]) as f64
                    * if f(&prices["cache_write_1h"]) > 0.0 {
                        f(&prices["cache_write_1h"])
                    } else {
                        write_price
                    }
                + u(&record["output_tokens"]) as f64 * f(&prices["output"]))
                / 1_000_000.0;
            assert!(close(f(&row["cost_usd"]), expected), "{label}: {row}");
            read += u(&cache["cache_read"]);
            write += u(&cache["cache_write"]);
            uncached += u(&cache["uncached"]);
            input += u(&cache["input_tokens"]);
            output += u(&record["output_tokens"]);
            cost += expected;
        }
        let totals = &run["totals"];
        assert_eq!(u(&totals["requests"]), records.len() as u64, "{label}");
        assert_eq!(u(&totals["cache_read"]), read, "{label}");
        assert_eq!(u(&totals["cache_write"]), write, "{label}");
        assert_eq!(u(&totals["uncached"]), uncached, "{label}");
        assert_eq!(u(&totals["input"]), input, "{label}");
        assert_eq!(u(&totals["output"]), output, "{label}");
        assert!(close(f(&totals["cost_usd"]), cost), "{label}");
        assert!(
            close(f(&totals["hit_rate"]), read as f64 / input as f64),
            "{label}"
        );

        // What the agent's adapter read from each answered turn equals the mock's accounting.
        let turns: Vec<&Value> = records.iter().filter(|r| !r["turn"].is_null()).collect();
        let client = run["client_usage"].as_array().unwrap();
        assert_eq!(client.len(), turns.len(), "{label}");
        for (usage, record) in client.iter().zip(&turns) {
            let cache = &record["cache"];
            assert_eq!(u(&usage["cache_read"]), u(&cache["cache_read"]), "{label}");
            assert_eq!(u(&usage["output"]), u(&record["output_tokens"]), "{label}");
        }

        // Two compactions and one branch summary, none of them taking a scripted turn.
        let summaries: Vec<&str> = records
            .iter()
            .filter_map(|r| r["summary"].as_str())
            .collect();
        assert_eq!(
            summaries.iter().filter(|s| **s == "branch").count(),
            1,
            "{label}: {summaries:?}"
        );
        // Each compaction is one request, a split turn answered in two parts.
        assert_eq!(
            summaries
                .iter()
                .filter(|s| **s == "history" || **s == "split_turn")
                .count(),
            2,
            "{label}: {summaries:?}"
        );
        assert!(
            !summaries.contains(&"turn_prefix"),
            "{label}: {summaries:?}"
        );
        let played: Vec<u64> = turns.iter().map(|r| u(&r["turn"])).collect();
        assert_eq!(
            played,
            (0..played.len() as u64).collect::<Vec<_>>(),
            "{label}"
        );
    }

    // The comparison is the runs' own totals.
    for comparison in report["comparison"].as_array().unwrap() {
        let find = |renderer: &str| {
            runs.iter()
                .find(|r| r["provider"] == comparison["provider"] && r["renderer"] == renderer)
                .unwrap()
        };
        assert!(close(
            f(&comparison["strata_usd"]),
            f(&find("strata")["totals"]["cost_usd"])
        ));
        assert!(close(
            f(&comparison["naive_usd"]),
            f(&find("naive")["totals"]["cost_usd"])
        ));
    }
}

/// The demo really runs the tests: they fail before the fix and pass after.
fn check_test_runs(report: &Value) {
    for run in report["runs"].as_array().unwrap() {
        let tests: Vec<&str> = run["test_runs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t.as_str().unwrap())
            .collect();
        assert!(tests.len() >= 2, "{tests:?}");
        assert!(tests[0].contains("FAILED: 2 of 4 tests fail"), "{tests:?}");
        assert!(tests[1].contains("PASS: 4 of 4 tests pass"), "{tests:?}");
        // The working copy kept with --keep holds the fixed library and the new function.
        let repo = std::path::PathBuf::from(run["working_copy"].as_str().unwrap());
        let lib = std::fs::read_to_string(repo.join("lib.sh")).unwrap();
        assert!(lib.contains(r#"if [ "$1" -gt "$2" ]; then"#), "{lib}");
        assert!(lib.contains("min() {"), "{lib}");
        assert!(std::path::Path::new(run["session_file"].as_str().unwrap()).exists());
    }
}

#[test]
fn the_demo_prints_its_progress_and_the_bill() {
    let output = strata(&["demo"]);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let text = String::from_utf8(output.stdout).unwrap();
    for expected in [
        "› The tests in this repository fail. Find the bug and fix it.",
        "▸ bash sh test.sh",
        "PASS: 4 of 4 tests pass",
        "⟳ compact",
        "↶ /tree",
        "summary: branch",
        "anthropic/claude-opus-4-8",
        "openai/gpt-5.5",
        "deepseek/deepseek-v4-flash",
    ] {
        assert!(text.contains(expected), "missing {expected:?} in:\n{text}");
    }
}

/// `--interactive` in a real terminal (tmux): the banner, the first prepared prompt sent with
/// Enter, and the scripted fix run by the agent. Skipped where tmux is not installed.
#[test]
fn the_interactive_demo_offers_the_prompts_and_runs_them_in_the_terminal_ui() {
    use std::process::Command;
    use std::time::{Duration, Instant};

    if !crate::support::tmux_available() {
        return;
    }
    let keep = tempfile::tempdir().unwrap();
    let socket = format!("strata-demo-test-{}", std::process::id());
    let tmux = |args: &[&str]| {
        Command::new("tmux")
            .args(["-L", &socket, "-u"])
            .args(args)
            .env("LANG", "C.UTF-8")
            .env("LC_ALL", "C.UTF-8")
            .output()
            .expect("tmux runs")
    };
    struct Kill<'a>(&'a str);
    impl Drop for Kill<'_> {
        fn drop(&mut self) {
            let _ = Command::new("tmux")
                .args(["-L", self.0, "kill-server"])
                .output();
        }
    }
    let _kill = Kill(&socket);
    let command = format!(
        "env -u XDG_CONFIG_HOME HOME='{}' TERM=xterm-256color '{}' demo --interactive --keep '{}'",
        keep.path().display(),
        env!("CARGO_BIN_EXE_strata"),
        keep.path().display()
    );
    let started = tmux(&[
        "new-session",
        "-d",
        "-s",
        "demo",
        "-x",
        "140",
        "-y",
        "45",
        &command,
    ]);
    assert!(started.status.success(), "{started:?}");
    let _ = tmux(&["set-option", "-t", "demo", "remain-on-exit", "on"]);
    let wait_for = |needle: &str| {
        let start = Instant::now();
        loop {
            let screen =
                String::from_utf8_lossy(&tmux(&["capture-pane", "-p", "-J", "-t", "demo"]).stdout)
                    .into_owned();
            if screen.contains(needle) {
                return screen;
            }
            assert!(
                start.elapsed() < Duration::from_secs(30),
                "timed out waiting for {needle:?}; the pane shows:\n{screen}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    };
    wait_for("strata demo: a scripted model on strata-mock");
    wait_for("The tests in this repository fail");
    let _ = tmux(&["send-keys", "-t", "demo", "Enter"]);
    wait_for("All 4 tests pass");
    let lib = keep.path().join("interactive/textkit/lib.sh");
    let text = std::fs::read_to_string(&lib).unwrap();
    assert!(text.contains(r#"if [ "$1" -gt "$2" ]; then"#), "{text}");
}

/// `strata stats` on the demo's own session names each expected break (two compactions and a
/// branch summary), finds no unexpected one, and says which request was too small to cache:
/// the branch summary's. The first request is not: without a deferred placeholder (inline tool
/// definitions need none) its prefix falls under the minimum by strata's estimate, and the
/// render pads it to the minimum so that it caches.
#[test]
fn stats_on_the_demo_session_names_every_expected_break_and_finds_no_unexpected_one() {
    let keep = tempfile::tempdir().unwrap();
    demo_json(keep.path());
    let session = keep.path().join("anthropic-strata/session.jsonl");
    let session = session.to_str().unwrap();
    let json: Value =
        serde_json::from_str(&crate::support::strata_ok(&["stats", "--json", session])).unwrap();
    let breaks = json[0]["breaks"].as_array().unwrap();
    let causes: Vec<&str> = breaks
        .iter()
        .map(|b| b["cause"]["cause"].as_str().unwrap())
        .collect();
    assert_eq!(
        causes,
        ["compaction", "branch_summary", "compaction"],
        "{breaks:?}"
    );
    let branch = breaks
        .iter()
        .find(|b| b["cause"]["cause"] == "branch_summary")
        .map(|b| b["request"].clone());
    let below: Vec<&Value> = json[0]["below_minimum"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| &b["request"])
        .collect();
    assert_eq!(below, [branch.as_ref().unwrap()], "{json}");
    let text = crate::support::strata_ok(&["stats", session]);
    assert!(
        text.contains("cache breaks: 0 unexpected, 3 expected"),
        "{text}"
    );
    assert!(!text.contains("UNEXPECTED"), "{text}");
    assert!(
        text.contains("replaced the history with its summary"),
        "{text}"
    );
    assert!(
        text.contains("below the model's cache minimum of 1024"),
        "{text}"
    );
}
