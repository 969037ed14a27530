//! `strata sessions` and `strata providers`.

use serde_json::Value;

use crate::support::{strata_ok, workspace};

/// Sessions under a root are listed newest first with name or first message; `--cwd` keeps
/// only that directory's sessions.
#[test]
fn sessions_lists_by_directory_and_all() {
    let root = tempfile::tempdir().unwrap();
    let tour = std::fs::read_to_string(workspace().join("examples/sessions/tour.jsonl")).unwrap();
    // Pi's directory naming for the tour's cwd /home/ada/projects/tinycalc.
    let dir = root.path().join("--home-ada-projects-tinycalc--");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("2026-11-30T09-00-00-000Z_tour.jsonl"), &tour).unwrap();
    let other = root.path().join("--srv-other--");
    std::fs::create_dir_all(&other).unwrap();
    let header = r#"{"type":"session","version":3,"id":"0000","timestamp":"2026-11-29T08:00:00.000Z","cwd":"/srv/other"}"#;
    let user = r#"{"type":"message","id":"b0000001","parentId":null,"timestamp":"2026-11-29T08:00:01.000Z","message":{"role":"user","content":"hello from other","timestamp":1795852801000}}"#;
    std::fs::write(other.join("s.jsonl"), format!("{header}\n{user}\n")).unwrap();
    let root_arg = root.path().to_str().unwrap();

    let all = strata_ok(&["sessions", "--all", "--root", root_arg]);
    let lines: Vec<&str> = all.lines().collect();
    assert_eq!(lines.len(), 2, "{all}");
    assert!(
        lines[0].contains("fix add() and add subtract()"),
        "newest first, named: {all}"
    );
    assert!(lines[1].contains("hello from other"), "{all}");

    let one = strata_ok(&[
        "sessions",
        "--cwd",
        "/srv/other",
        "--root",
        root_arg,
        "--json",
    ]);
    let rows: Vec<Value> = one
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(rows.len(), 1, "{one}");
    assert_eq!(rows[0]["cwd"], "/srv/other");
    assert_eq!(rows[0]["firstMessage"], "hello from other");
    assert!(rows[0]["path"].as_str().unwrap().ends_with("s.jsonl"));
}

/// The table lists 41 providers, each with a protocol; JSON has the same rows.
#[test]
fn providers_lists_the_whole_table() {
    let json: Value = serde_json::from_str(&strata_ok(&["providers", "--json"])).unwrap();
    let rows = json.as_array().unwrap();
    assert_eq!(rows.len(), 41);
    let anthropic = rows.iter().find(|r| r["id"] == "anthropic").unwrap();
    assert_eq!(anthropic["protocol"], "anthropic-messages");
    assert_eq!(anthropic["cache"], "explicit");
    assert!(anthropic["models"].as_u64().unwrap() > 0);
    let text = strata_ok(&["providers"]);
    assert!(
        text.contains("deepseek") && text.contains("41 providers"),
        "{text}"
    );
}

/// `strata stats` on each log kind: a strata session, a Pi session, a Claude Code project log
/// (one line per content block, counted once per request); a directory is walked.
#[test]
fn stats_reads_strata_pi_and_claude_code_logs() {
    let cc = crate::support::fixture("claude-code/project.jsonl");
    let json: Value =
        serde_json::from_str(&strata_ok(&["stats", "--json", cc.to_str().unwrap()])).unwrap();
    let log = &json[0];
    assert_eq!(log["kind"], "claude-code");
    let requests = log["requests"].as_array().unwrap();
    assert_eq!(
        requests.len(),
        3,
        "three requests, not one per content block"
    );
    assert_eq!(requests[1]["cache_read"], 14200);
    // The third request came after a 9-minute gap and read nothing: a break.
    assert_eq!(log["breaks"][0]["request"], 3);
    assert!(
        requests[0]["cost"].as_f64().unwrap() > 0.0,
        "priced from the table"
    );

    let tour = workspace().join("examples/sessions/tour.jsonl");
    let text = strata_ok(&["stats", "--requests", tour.to_str().unwrap()]);
    assert!(text.contains("(strata)"), "{text}");
    assert!(text.contains("7 requests"), "{text}");

    // A compaction's summary request, whose usage strata stores on the entry, is a request too.
    let dir = tempfile::tempdir().unwrap();
    let with_compaction = dir.path().join("c.jsonl");
    let mut text = std::fs::read_to_string(&tour).unwrap();
    text.push_str(r#"{"type":"compaction","id":"c0000001","parentId":"a100001a","timestamp":"2026-11-30T10:00:00.000Z","summary":"s","firstKeptEntryId":"a100001a","tokensBefore":3000,"usage":{"input":40,"output":300,"cacheRead":2900,"cacheWrite":0,"totalTokens":3240,"cost":{"input":0.0001,"output":0.0045,"cacheRead":0.00087,"cacheWrite":0,"total":0.00547}},"summaryMode":"cache_friendly"}"#);
    text.push('\n');
    std::fs::write(&with_compaction, text).unwrap();
    let json: Value = serde_json::from_str(&strata_ok(&[
        "stats",
        "--json",
        with_compaction.to_str().unwrap(),
    ]))
    .unwrap();
    let requests = json[0]["requests"].as_array().unwrap();
    assert_eq!(requests.len(), 8);
    assert_eq!(requests[7]["id"], "c0000001 (compaction)");
    assert_eq!(requests[7]["cache_read"], 2900);

    let pi_dir = crate::support::fixture("pi");
    let all = strata_ok(&["stats", pi_dir.to_str().unwrap()]);
    assert!(all.contains("(pi)") && all.contains("all "), "{all}");
}

/// One bad byte costs a line's text, never the file; missing, unreadable and non-log paths
/// fail the command, after the readable ones are reported.
#[test]
fn stats_survives_a_bad_byte_and_fails_on_paths_that_are_not_logs() {
    let tour = workspace().join("examples/sessions/tour.jsonl");
    let dir = tempfile::tempdir().unwrap();
    let damaged = dir.path().join("damaged.jsonl");
    let bytes = std::fs::read(&tour).unwrap();
    let mark = b"Look at calc.py first.";
    let at = bytes.windows(mark.len()).position(|w| w == mark).unwrap();
    let mut broken = bytes[..at].to_vec();
    broken.push(0xff);
    broken.extend_from_slice(&bytes[at..]);
    std::fs::write(&damaged, broken).unwrap();
    let out = crate::support::strata(&["stats", damaged.to_str().unwrap()]);
    assert!(out.status.success());
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(stdout.contains("7 requests"), "{stdout}");
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(
        stderr.contains("damaged.jsonl:6: invalid UTF-8"),
        "{stderr}"
    );

    let text = dir.path().join("notes.txt");
    std::fs::write(&text, "just some notes\n").unwrap();
    let missing = dir.path().join("missing.jsonl");
    for bad in [
        missing.to_str().unwrap(),
        text.to_str().unwrap(),
        "/dev/null",
    ] {
        let out = crate::support::strata(&["stats", tour.to_str().unwrap(), bad]);
        assert!(!out.status.success(), "{bad} was accepted");
        let stdout = String::from_utf8(out.stdout).unwrap();
        assert!(
            stdout.contains("7 requests"),
            "the good path is still reported: {stdout}"
        );
        let stderr = String::from_utf8(out.stderr).unwrap();
        assert!(stderr.contains(bad), "{stderr}");
    }
}

/// `strata providers | head -0`: the reader leaves before strata writes; strata stops quietly
/// with success instead of "Broken pipe" and exit status 1.
#[test]
fn a_reader_that_leaves_early_is_not_an_error() {
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_strata"))
        .arg("providers")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let output = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{:?}: {stderr}", output.status);
    assert!(!stderr.contains("Broken pipe"), "{stderr}");
}

/// A capability learned from a provider's refusal is listed by `strata providers` and
/// `strata models` with its date and the error that taught it; a lesson made against another
/// version of the row (the table was refreshed since) is forgotten and not listed.
#[test]
fn learned_capabilities_are_listed_until_the_table_changes() {
    use strata_provider::{Catalog, Learnable, LearnedCapabilities};
    let home = tempfile::tempdir().unwrap();
    let state = home.path().join("state");
    let file = state.join("strata/learned-capabilities.json");
    let catalog = Catalog::builtin().unwrap();
    let caps = catalog.capabilities("anthropic", "claude-opus-4-8");
    let learned = LearnedCapabilities::open(&file).unwrap();
    let error = "diagnostics: Extra inputs are not permitted";
    learned
        .learn(
            "anthropic",
            "claude-opus-4-8",
            &caps,
            Learnable::CacheDiagnostics,
            error,
        )
        .unwrap();
    // Learned against an older row for this model: the refresh forgot it.
    let older = strata_provider::Capabilities {
        min_cacheable_tokens: caps.min_cacheable_tokens + 1,
        ..catalog.capabilities("anthropic", "claude-opus-4-7")
    };
    learned
        .learn(
            "anthropic",
            "claude-opus-4-7",
            &older,
            Learnable::Prewarm,
            "max_tokens: >= 1",
        )
        .unwrap();
    let date = learned.lessons()[0].learned_at.clone();
    let run = |args: &[&str]| {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_strata"))
            .args(args)
            .env("HOME", home.path())
            .env("XDG_STATE_HOME", &state)
            .env_remove("XDG_CONFIG_HOME")
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    };
    let note = format!(
        "# learned: anthropic/claude-opus-4-8 does without cache-diagnostics since {date}: {error}"
    );
    let providers = run(&["providers"]);
    assert!(providers.contains(&note), "{providers}");
    assert!(
        !providers.contains("claude-opus-4-7 does without"),
        "{providers}"
    );
    let json: Value = serde_json::from_str(&run(&["providers", "--json"])).unwrap();
    let row = json
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["id"] == "anthropic")
        .unwrap();
    assert_eq!(row["learned"].as_array().unwrap().len(), 1, "{row}");
    assert_eq!(row["learned"][0]["feature"], "cache-diagnostics");
    assert_eq!(row["learned"][0]["learned_at"], date.as_str());
    assert_eq!(row["learned"][0]["error"], error);

    let models = run(&["models", "anthropic", "--offline"]);
    let at = models
        .find("anthropic/claude-opus-4-8 ")
        .expect("the model is listed");
    // The note follows the model's own line.
    let after = &models[at..];
    let next_line = after.lines().nth(1).unwrap_or_default();
    assert_eq!(next_line, note, "{models}");
    assert!(!models.contains("claude-opus-4-7 does without"), "{models}");
    let lines = run(&["models", "anthropic", "--offline", "--json"]);
    let listed: Vec<Value> = lines
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let opus = listed
        .iter()
        .find(|m| m["id"] == "claude-opus-4-8")
        .unwrap();
    assert_eq!(opus["learned"][0]["error"], error);
    let older_row = listed
        .iter()
        .find(|m| m["id"] == "claude-opus-4-7")
        .unwrap();
    assert_eq!(older_row["learned"], serde_json::json!([]));
}
