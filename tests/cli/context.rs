//! `strata context`: Pi's shape for every Pi fixture, strata's JSON and text views.

use pretty_assertions::assert_eq;
use serde_json::Value;

use crate::support::{fixture, strata, strata_ok, workspace};

const PI_FIXTURES: &[&str] = &[
    "branches",
    "compactions",
    "every-entry-type",
    "images",
    "legacy-v1",
    "legacy-v2",
    "strata-entries",
];

/// `--format pi` prints exactly what Pi's `buildSessionContext` returned for the file's own
/// leaf and for a sample of other leaves (the library test covers every leaf).
#[test]
fn pi_format_matches_pi_for_every_fixture() {
    for name in PI_FIXTURES {
        let session = fixture(&format!("pi/{name}.jsonl"));
        let expected: Value = serde_json::from_str(
            &std::fs::read_to_string(fixture(&format!("pi/{name}.expected.json"))).unwrap(),
        )
        .unwrap();
        let expected = expected.as_object().unwrap();
        let session = session.to_str().unwrap();
        let actual: Value =
            serde_json::from_str(&strata_ok(&["context", session, "--format", "pi"])).unwrap();
        assert_eq!(actual, expected["$default"], "{name}: default leaf");
        // Pi gives legacy entries random ids when it migrates them, so only the default leaf
        // of a legacy file is comparable by id (the library test maps them by position).
        if name.starts_with("legacy") {
            continue;
        }
        for (leaf, want) in expected.iter().filter(|(k, _)| *k != "$default").step_by(3) {
            let actual: Value = serde_json::from_str(&strata_ok(&[
                "context", session, "--format", "pi", "--leaf", leaf,
            ]))
            .unwrap();
            assert_eq!(&actual, want, "{name}: leaf {leaf}");
        }
    }
}

/// The bundled tour (strata's own additions) in text: the compaction's folded snapshot, the
/// removed tool, the summary first and the kept tail after it.
#[test]
fn text_view_of_the_tour_shows_snapshot_tools_and_entry_ids() {
    let tour = workspace().join("examples/sessions/tour.jsonl");
    let text = strata_ok(&["context", tour.to_str().unwrap()]);
    assert!(text.contains("leaf a100001a"), "{text}");
    assert!(text.contains("compaction a1000019"), "{text}");
    assert!(text.contains("grep"), "{text}");
    // The kept tail starts at the user message the compaction names.
    let summary = text.find("compactionSummary").expect("summary line");
    let kept = text.find("a1000010").expect("first kept entry");
    assert!(summary < kept, "{text}");
    // Entries before the kept tail are not sent.
    assert!(!text.contains("a1000004"), "{text}");
}

/// `--format json` has the system sections, the tool ledger, the model and thinking level.
#[test]
fn json_view_has_system_tools_model_and_thinking() {
    let tour = workspace().join("examples/sessions/tour.jsonl");
    let json: Value = serde_json::from_str(&strata_ok(&[
        "context",
        tour.to_str().unwrap(),
        "--format",
        "json",
        "--leaf",
        "a1000016",
    ]))
    .unwrap();
    let text = json.to_string();
    for needle in [
        "\"intro\"",
        "\"cwd\"",
        "claude-sonnet-4-5",
        "medium",
        "\"grep\"",
        "\"write\"",
    ] {
        assert!(text.contains(needle), "{needle} missing in {text}");
    }
}

/// Errors name the file; an unknown leaf names the id.
#[test]
fn errors_name_the_file_and_the_id() {
    let missing = strata(&["context", "/nonexistent/session.jsonl"]);
    assert!(!missing.status.success());
    let stderr = String::from_utf8_lossy(&missing.stderr);
    assert!(stderr.contains("/nonexistent/session.jsonl"), "{stderr}");

    let tour = workspace().join("examples/sessions/tour.jsonl");
    let unknown = strata(&["context", tour.to_str().unwrap(), "--leaf", "zzzzzzzz"]);
    assert!(!unknown.status.success());
    let stderr = String::from_utf8_lossy(&unknown.stderr);
    assert!(
        stderr.contains("zzzzzzzz") && stderr.contains("tour.jsonl"),
        "{stderr}"
    );
}

/// A malformed middle line is reported with file and line on stderr; the rest still builds.
#[test]
fn malformed_line_is_reported_and_skipped() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("damaged.jsonl");
    let tour = std::fs::read_to_string(workspace().join("examples/sessions/tour.jsonl")).unwrap();
    let mut lines: Vec<&str> = tour.lines().collect();
    lines.insert(3, "{\"type\":\"message\",\"id\":");
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    let output = strata(&["context", path.to_str().unwrap()]);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("damaged.jsonl") && stderr.contains('4'),
        "{stderr}"
    );
    assert!(String::from_utf8_lossy(&output.stdout).contains("leaf a100001a"));
}

/// `--format request` renders for the session's provider: the request, the chapter report
/// with divergence from another leaf, and Anthropic's wire body.
#[test]
fn request_format_shows_request_report_and_wire_body() {
    let tour = workspace().join("examples/sessions/tour.jsonl");
    let tour = tour.to_str().unwrap();
    let out: Value = serde_json::from_str(&strata_ok(&[
        "context",
        tour,
        "--format",
        "request",
        "--leaf",
        "a1000016",
        "--against",
        "a1000013",
    ]))
    .unwrap();
    assert_eq!(out["provider"], "anthropic");
    assert_eq!(out["model"], "claude-sonnet-4-5");
    // a1000016 extends a1000013: the earlier request is a byte prefix of the later one.
    assert_eq!(out["report"]["divergence"]["kind"], "extends");
    let tools = out["request"]["tools"].as_array().unwrap();
    assert!(tools.iter().any(|t| t["name"] == "read"));
    assert!(
        out["wire"]["url"]
            .as_str()
            .unwrap()
            .ends_with("/v1/messages")
    );
    assert!(out["wire"]["body"]["messages"].is_array());
    let bytes = |c: &str| out["report"][c]["bytes"].as_u64().unwrap();
    assert!(bytes("tools") > 0 && bytes("system") > 0 && bytes("messages") > 0);

    // The same leaf against itself: identical.
    let same: Value = serde_json::from_str(&strata_ok(&[
        "context",
        tour,
        "--format",
        "request",
        "--leaf",
        "a1000016",
        "--against",
        "a1000016",
    ]))
    .unwrap();
    assert_eq!(same["report"]["divergence"]["kind"], "identical");

    // Another provider's rules: OpenAI Chat has no Anthropic wire body here.
    let openai: Value = serde_json::from_str(&strata_ok(&[
        "context",
        tour,
        "--format",
        "request",
        "--provider",
        "openai",
        "--model",
        "gpt-4.1",
    ]))
    .unwrap();
    assert_eq!(openai["provider"], "openai");
    assert!(openai.get("wire").is_none());
}
