//! The cache report on small session files written as Pi writes them: each kind of break gets
//! its cause, an aborted request is not judged, a prompt under the row's minimum is said as such.

#![allow(clippy::unwrap_used)] // helpers of tests: a failure is the test failing

use strata_accounting::{BreakCause, CacheReport, cache_report, records};
use strata_provider::Catalog;
use strata_session::Session;

const HEADER: &str =
    r#"{"type":"session","version":3,"id":"s1","timestamp":"2026-03-01T10:00:00.000Z","cwd":"/w"}"#;

/// One line of a session file, built up entry by entry.
struct File(Vec<String>);

impl File {
    fn new() -> Self {
        Self(vec![HEADER.to_owned()])
    }

    fn user(&mut self, id: &str, parent: Option<&str>, minute: u32) -> &mut Self {
        self.0.push(format!(
            r#"{{"type":"message","id":"{id}","parentId":{},"timestamp":"2026-03-01T10:{minute:02}:00.000Z","message":{{"role":"user","content":"q","timestamp":0}}}}"#,
            parent_json(parent)
        ));
        self
    }

    /// An answer with `uncached`, `read` and `written` prompt tokens.
    #[allow(clippy::too_many_arguments)]
    fn answer(
        &mut self,
        id: &str,
        parent: &str,
        minute: u32,
        model: &str,
        (uncached, read, written): (u64, u64, u64),
        stop: &str,
    ) -> &mut Self {
        self.0.push(format!(
            r#"{{"type":"message","id":"{id}","parentId":"{parent}","timestamp":"2026-03-01T10:{minute:02}:00.000Z","message":{{"role":"assistant","content":[{{"type":"text","text":"a"}}],"api":"anthropic-messages","provider":"anthropic","model":"{model}","usage":{{"input":{uncached},"output":10,"cacheRead":{read},"cacheWrite":{written},"totalTokens":0,"cost":{{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0.001}}}},"stopReason":"{stop}","timestamp":0}}}}"#
        ));
        self
    }

    /// The last line's usage gets the provider's cache diagnosis, as the agent stores it.
    fn diagnosed(&mut self, reason: &str, missed: u64) -> &mut Self {
        let last = self.0.pop().unwrap();
        let mut value: serde_json::Value = serde_json::from_str(&last).unwrap();
        value["message"]["usage"]["cacheDiagnosis"] =
            serde_json::json!({"reason": reason, "missedTokens": missed});
        self.0.push(value.to_string());
        self
    }

    fn line(&mut self, line: &str) -> &mut Self {
        self.0.push(line.to_owned());
        self
    }

    fn report(&self) -> CacheReport {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.jsonl");
        std::fs::write(&path, self.0.join("\n") + "\n").unwrap();
        let opened = Session::open(&path).unwrap();
        assert!(opened.diagnostics.is_empty(), "{:?}", opened.diagnostics);
        let tree = opened.session.tree();
        let catalog = Catalog::builtin().unwrap();
        cache_report(Some(tree), &records(tree), &catalog)
    }
}

fn parent_json(parent: Option<&str>) -> String {
    parent.map_or_else(|| "null".to_owned(), |p| format!("\"{p}\""))
}

const SONNET: &str = "claude-sonnet-4-5";

/// Two answers that build a 5,000-token cached prefix.
fn warm() -> File {
    let mut file = File::new();
    file.user("u1", None, 0)
        .answer("a1", "u1", 0, SONNET, (10, 0, 5_000), "stop")
        .user("u2", Some("a1"), 1);
    file
}

#[test]
fn an_extension_that_reads_the_prefix_is_no_break() {
    let mut file = warm();
    file.answer("a2", "u2", 1, SONNET, (10, 5_000, 100), "stop");
    let report = file.report();
    assert_eq!(report.breaks, []);
    assert_eq!(report.below_minimum, []);
}

#[test]
fn a_prefix_that_changed_under_unchanged_messages_is_unexpected_and_named() {
    let mut file = warm();
    file.answer("a2", "u2", 1, SONNET, (10, 0, 5_100), "stop");
    let report = file.report();
    assert_eq!(report.breaks.len(), 1);
    let only = &report.breaks[0];
    assert_eq!(
        (only.request, only.previous_prompt, only.cache_read),
        (2, 5_010, 0)
    );
    assert_eq!(
        only.cause,
        BreakCause::ChangedPrefix {
            through: Some("a1".to_owned()),
            byte: None,
            chapter: None
        }
    );
    assert!(!only.cause.is_expected());
    assert_eq!(report.unexpected().count(), 1);
    assert!(
        only.cause.describe().starts_with("unexpected"),
        "{}",
        only.cause.describe()
    );
}

#[test]
fn an_aborted_request_is_not_a_break_and_the_next_one_is_judged_against_the_one_before() {
    let mut file = warm();
    file.answer("a2", "u2", 1, SONNET, (0, 0, 0), "aborted")
        .user("u3", Some("a1"), 2)
        .answer("a3", "u3", 2, SONNET, (10, 5_000, 50), "stop");
    let report = file.report();
    assert_eq!(report.breaks, []);
    assert_eq!(report.aborted, [2]);
}

#[test]
fn a_model_switch_and_an_idle_gap_past_the_lifetime_are_expected() {
    let mut file = warm();
    file.answer("a2", "u2", 1, "claude-opus-4-8", (10, 0, 5_100), "stop")
        .user("u3", Some("a2"), 30)
        .answer("a3", "u3", 30, "claude-opus-4-8", (10, 0, 5_200), "stop");
    let report = file.report();
    assert_eq!(report.breaks.len(), 2, "{report:?}");
    assert_eq!(
        report.breaks[0].cause,
        BreakCause::ModelSwitch {
            from: format!("anthropic/{SONNET}"),
            to: "anthropic/claude-opus-4-8".to_owned()
        }
    );
    assert_eq!(
        report.breaks[1].cause,
        BreakCause::TtlExpiry {
            idle_secs: 29 * 60,
            ttl_secs: 300
        }
    );
    assert_eq!(report.unexpected().count(), 0);
    assert_eq!(report.expected().count(), 2);
}

#[test]
fn a_compaction_names_its_entry_and_a_move_to_another_branch_names_the_fork() {
    let mut file = warm();
    file.answer("a2", "u2", 1, SONNET, (10, 5_000, 100), "stop")
        .line(r#"{"type":"compaction","id":"c1","parentId":"a2","timestamp":"2026-03-01T10:02:00.000Z","summary":"s","firstKeptEntryId":"u2","tokensBefore":5100}"#)
        .user("u3", Some("c1"), 2)
        .answer("a3", "u3", 2, SONNET, (10, 0, 1_500), "stop")
        // Back to a1 without a summary: a branch beside u2.
        .user("u4", Some("a1"), 3)
        .answer("a4", "u4", 3, SONNET, (10, 0, 5_050), "stop");
    let report = file.report();
    let causes: Vec<&BreakCause> = report.breaks.iter().map(|b| &b.cause).collect();
    assert_eq!(
        causes,
        [
            &BreakCause::Compaction {
                entry: "c1".to_owned()
            },
            &BreakCause::BranchSwitch {
                fork: Some("a1".to_owned())
            }
        ]
    );
}

#[test]
fn a_tool_change_in_a_system_message_is_expected() {
    let mut file = warm();
    file.line(r#"{"type":"message","id":"sys2","parentId":"u2","timestamp":"2026-03-01T10:01:00.000Z","message":{"role":"system","content":"","toolsRemoved":[{"name":"bash"}],"timestamp":0}}"#)
        .answer("a2", "sys2", 1, SONNET, (10, 0, 4_900), "stop");
    let report = file.report();
    assert_eq!(
        report.breaks[0].cause,
        BreakCause::ToolChange {
            entry: "sys2".to_owned()
        }
    );
}

#[test]
fn a_prompt_under_the_rows_minimum_is_said_as_such_and_breaks_nothing() {
    let mut file = File::new();
    file.user("u1", None, 0)
        .answer("a1", "u1", 0, SONNET, (900, 0, 0), "stop")
        .user("u2", Some("a1"), 1)
        .answer("a2", "u2", 1, SONNET, (0, 0, 1_100), "stop");
    let report = file.report();
    assert_eq!(report.breaks, []);
    assert_eq!(report.below_minimum.len(), 1);
    let small = &report.below_minimum[0];
    assert_eq!((small.request, small.prompt, small.minimum), (1, 900, 1024));
}

#[test]
fn the_providers_reason_stands_beside_strata_and_a_contradiction_is_flagged() {
    // A system section changed under unchanged messages: strata sees a changed prefix, the
    // provider says the system changed. They agree.
    let mut file = warm();
    file.answer("a2", "u2", 1, SONNET, (10, 0, 5_100), "stop")
        .diagnosed("system_changed", 4_900);
    let report = file.report();
    let only = &report.breaks[0];
    let provider = only.provider.as_ref().unwrap();
    assert_eq!(provider.reason, "system_changed");
    assert_eq!(provider.missed_tokens, Some(4_900));
    assert_eq!(report.disagreements, []);

    // strata blames the idle gap; the provider says the tools changed: one of them is wrong.
    let mut file = warm();
    file.user("u3", Some("a1"), 20);
    let mut file = File(
        file.0
            .into_iter()
            .filter(|l| !l.contains("\"u2\""))
            .collect(),
    );
    file.answer("a3", "u3", 20, SONNET, (10, 0, 5_100), "stop")
        .diagnosed("tools_changed", 5_000);
    let report = file.report();
    assert!(
        matches!(report.breaks[0].cause, BreakCause::TtlExpiry { .. }),
        "{report:?}"
    );
    assert_eq!(report.disagreements.len(), 1);
    let said = report.disagreements[0].describe();
    assert!(
        said.contains("idle") && said.contains("tools changed"),
        "{said}"
    );

    // The provider says nearly everything was missed, yet the request read the prefix.
    let mut file = warm();
    file.answer("a2", "u2", 1, SONNET, (10, 5_000, 100), "stop")
        .diagnosed("messages_changed", 5_000);
    let report = file.report();
    assert_eq!(report.breaks, []);
    assert_eq!(report.disagreements.len(), 1);
    assert!(report.disagreements[0].strata.contains("read 5000"));
}

/// `records` reads an answer's usage from its line without building the message; on every
/// session fixture Pi 1.x and strata wrote it must give exactly what the typed read gives.
#[test]
fn the_lean_answer_read_agrees_with_the_typed_read_on_every_fixture() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut files = Vec::new();
    for dir in [
        "tests/fixtures/pi",
        "tests/fixtures/pi1",
        "examples/sessions",
    ] {
        for entry in std::fs::read_dir(root.join(dir)).unwrap() {
            let path = entry.unwrap().path();
            let name = path.display().to_string();
            if name.ends_with(".jsonl") && !name.ends_with(".migrated.jsonl") {
                files.push(path);
            }
        }
    }
    let mut answers = 0;
    for path in &files {
        let opened = Session::open(path).unwrap();
        let tree = opened.session.tree();
        let typed: Vec<_> = tree
            .iter()
            .enumerate()
            .filter_map(|(at, reference)| {
                let mut record = strata_accounting::record_of(&reference.entry().ok()?)?;
                record.timestamp_ms = reference.timestamp_millis();
                Some((at, record))
            })
            .collect();
        let lean = records(tree);
        let all: Vec<_> = typed.iter().map(|(_, r)| r.clone()).collect();
        assert_eq!(lean, all, "{}", path.display());
        // Counting on from a position gives the records of the entries from there on: the
        // runtime adds only what a session appended since it last counted.
        let half = tree.len() / 2;
        let later: Vec<_> = typed
            .iter()
            .filter(|(at, _)| *at >= half)
            .map(|(_, r)| r.clone())
            .collect();
        assert_eq!(
            strata_accounting::records_from(tree, half),
            later,
            "{}",
            path.display()
        );
        answers += lean
            .iter()
            .filter(|r| r.kind == strata_accounting::RequestKind::Answer)
            .count();
    }
    assert!(
        files.len() >= 10 && answers >= 20,
        "{} files, {answers} answers",
        files.len()
    );
}

/// An answer whose content is damaged (a block the typed read refuses) was still billed:
/// its request is counted from the usage its line records.
#[test]
fn an_answer_with_damaged_content_is_still_billed() {
    let mut file = File::new();
    file.user("u1", None, 0);
    file.0.push(
        r#"{"type":"message","id":"a1","parentId":"u1","timestamp":"2026-03-01T10:01:00.000Z","message":{"role":"assistant","content":[{"type":"text","text":7}],"api":"anthropic-messages","provider":"anthropic","model":"claude-opus-4-8","usage":{"input":10,"output":5,"cacheRead":100,"cacheWrite":0,"totalTokens":115,"cost":{"input":0.1,"output":0.2,"cacheRead":0.3,"cacheWrite":0,"total":0.6}},"stopReason":"stop","timestamp":0}}"#
            .to_owned(),
    );
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.jsonl");
    std::fs::write(&path, file.0.join("\n") + "\n").unwrap();
    let opened = Session::open(&path).unwrap();
    let tree = opened.session.tree();
    assert!(
        tree.entry("a1").is_err(),
        "the typed read refuses the content"
    );
    let records = records(tree);
    assert_eq!(records.len(), 1);
    assert_eq!(records[0].usage.cache_read, 100);
    assert!((records[0].cost - 0.6).abs() < 1e-12);
}
