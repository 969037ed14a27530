//! `--mode json` speaks Pi 1.x's json-mode stream (Pi's docs/json.md): the session header, then
//! the same session events rpc sends, with strata's request and cache records beside them under
//! a `strata_` type. Checked against the grammar Pi documents and, where node 22 and Pi 1.6 are
//! installed (`.ci/install-pi`), against a recording of Pi 1.6 itself on the same scripted work.

use std::process::Command;

use serde_json::Value;

use crate::support::{Pi16, demo_mock, project, text};

/// strata's json-mode records for the demo scenario's task in a fresh project.
fn strata_records() -> Vec<Value> {
    let server = demo_mock();
    let dir = project();
    let output = Command::new(env!("CARGO_BIN_EXE_strata"))
        .current_dir(dir.path())
        .args(["-p", "fix the greeting", "--mode", "json", "--no-session"])
        .args(["--model", "anthropic/claude-sonnet-4-5", "--api-key", "k"])
        .args(["--base-url", &server.base_url()])
        .env("HOME", dir.path())
        .env_remove("XDG_CONFIG_HOME")
        .env_remove("STRATA_MODEL")
        .output()
        .expect("strata runs");
    assert!(output.status.success(), "{}", text(&output.stderr));
    parse_lines(&output.stdout)
}

fn parse_lines(stdout: &[u8]) -> Vec<Value> {
    String::from_utf8_lossy(stdout)
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

fn kind(record: &Value) -> &str {
    record["type"].as_str().unwrap_or("")
}

/// Pi's records only, each named by its type (a `message_*` by its role too, a
/// `message_update` by its nested event), with repeats of one name folded: how many deltas a
/// stream is cut into is the provider's business, not the grammar's.
fn grammar(records: &[Value]) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for record in records.iter().filter(|r| !kind(r).starts_with("strata_")) {
        let name = match kind(record) {
            "message_start" | "message_end" => {
                format!(
                    "{}:{}",
                    kind(record),
                    record["message"]["role"].as_str().unwrap_or("")
                )
            }
            "message_update" => format!(
                "message_update:{}",
                record["assistantMessageEvent"]["type"]
                    .as_str()
                    .unwrap_or("")
            ),
            other => other.to_owned(),
        };
        if names.last() != Some(&name) {
            names.push(name);
        }
    }
    names
}

#[test]
fn json_mode_writes_the_header_then_pi_events_with_strata_records_beside() {
    let records = strata_records();
    let header = &records[0];
    assert_eq!(kind(header), "session", "{header}");
    assert_eq!(header["version"], 3);
    for field in ["id", "timestamp", "cwd"] {
        assert!(header[field].is_string(), "{field}: {header}");
    }
    let names = grammar(&records[1..]);
    assert_eq!(names.first().map(String::as_str), Some("agent_start"));
    assert_eq!(
        &names[names.len() - 2..],
        ["agent_end".to_owned(), "agent_settled".to_owned()]
    );
    // The system snapshot is a message of the first turn, before the prompt, as Pi reports it.
    assert_eq!(
        &names[1..6],
        [
            "turn_start",
            "message_start:system",
            "message_end:system",
            "message_start:user",
            "message_end:user"
        ]
    );
    assert_eq!(names.iter().filter(|n| *n == "turn_start").count(), 4);
    assert_eq!(
        names.iter().filter(|n| *n == "tool_execution_end").count(),
        3
    );
    // Every tool that ran reports how long it took; strata's usage rides beside Pi's records.
    for end in records.iter().filter(|r| kind(r) == "tool_execution_end") {
        assert!(end["durationMs"].is_u64(), "{end}");
        assert!(end["toolCallId"].is_string() && end["result"]["content"].is_array());
    }
    let usage: Vec<&Value> = records
        .iter()
        .filter(|r| kind(r) == "strata_usage")
        .collect();
    assert_eq!(usage.len(), 4);
    assert!(usage[0]["usage"]["input"].is_u64(), "{}", usage[0]);
    let settled = records.last().unwrap();
    assert_eq!(settled["aborted"], false);
    // Nothing of strata's own event grammar leaks under Pi's names.
    assert!(
        !records
            .iter()
            .any(|r| kind(r) == "tool_end" || kind(r) == "usage")
    );
}

/// Pi 1.6's own `--mode json` on the same scripted task against strata-mock.
fn pi_records(pi: &Pi16) -> Vec<Value> {
    let server = demo_mock();
    let dir = project();
    let output = pi
        .command(dir.path(), &server.base_url())
        .args(["--mode", "json", "--no-session", "fix the greeting"])
        .output()
        .expect("node runs");
    assert!(output.status.success(), "{}", text(&output.stderr));
    parse_lines(&output.stdout)
}

/// The top-level fields of each of Pi's record types strata writes, per the recording.
fn fields(records: &[Value]) -> std::collections::BTreeMap<String, Vec<String>> {
    let mut out = std::collections::BTreeMap::new();
    for record in records.iter().filter(|r| !kind(r).starts_with("strata_")) {
        let mut keys: Vec<String> = record
            .as_object()
            .map(|o| o.keys().cloned().collect())
            .unwrap_or_default();
        keys.sort();
        out.entry(kind(record).to_owned()).or_insert(keys);
    }
    out
}

#[test]
fn json_mode_has_pi_16s_event_grammar_on_the_same_work() {
    let Some(pi16) = Pi16::find() else {
        println!("{}", Pi16::skip_message());
        return;
    };
    let pi = pi_records(&pi16);
    let strata = strata_records();
    assert_eq!(grammar(&strata), grammar(&pi));
    assert_eq!(fields(&strata), fields(&pi));
}
