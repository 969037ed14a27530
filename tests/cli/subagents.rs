//! Delegation from the `strata` binary: `task` offered when `tools` names it, a child held to
//! the run's permission mode, its answer back as the call's result, its file linked to the
//! parent, and its progress in `--mode json` as the call's updates.

use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;

use crate::support::{mock_with, project, text};

/// The parent delegates; the child runs `echo ran > ran.txt` and answers; the parent ends.
fn delegation_scenario() -> strata_mock::Scenario {
    let toml = r#"name = "delegate"
playback = "sequence"
[[turn]]
[[turn.tool_call]]
tool = "task"
args = { description = "make a file", prompt = "Run `echo ran > ran.txt` and say what happened." }

[[turn]]
[[turn.tool_call]]
tool = "bash"
args = { command = "echo ran > ran.txt" }

[[turn]]
text = "the child's answer: the command was refused"

[[turn]]
text = "done"
"#;
    strata_mock::Scenario::from_toml(toml, "test").unwrap()
}

/// `strata -p go` in `dir` (also its HOME) with delegation on, writing `session`.
fn run(dir: &Path, url: &str, session: &Path, extra: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_strata"))
        .current_dir(dir)
        .args([
            "-p",
            "go",
            "--model",
            "anthropic/claude-sonnet-4-5",
            "--base-url",
            url,
            "--tools",
            "read,bash,edit,write,task",
            "--session",
        ])
        .arg(session)
        .args(extra)
        .env("HOME", dir)
        .env("ANTHROPIC_API_KEY", "sk-ant-test")
        .env_remove("XDG_CONFIG_HOME")
        .env_remove("STRATA_MODEL")
        .env_remove("STRATA_API_KEY")
        .output()
        .expect("strata runs")
}

/// The text of every `tool_result` block in a request body, in order.
fn tool_results(body: &Value) -> Vec<String> {
    body["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|m| m["content"].as_array().cloned().unwrap_or_default())
        .filter(|block| block["type"] == "tool_result")
        .map(|block| block["content"].to_string())
        .collect()
}

#[test]
fn a_child_is_held_to_the_runs_permission_mode_and_its_answer_is_the_result() {
    let dir = project();
    let server = mock_with(delegation_scenario());
    let session = dir.path().join("parent.jsonl");
    let out = run(
        dir.path(),
        &server.base_url(),
        &session,
        &["--permission-mode", "plan"],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(
        text(&out.stdout).trim(),
        "done",
        "{}\n{}",
        text(&out.stderr),
        std::fs::read_to_string(&session).unwrap_or_default()
    );
    // The child's bash call met the parent's gate.
    assert!(!dir.path().join("ran.txt").exists());
    let requests = server.requests();
    assert_eq!(requests.len(), 4, "parent, child twice, parent");
    // The parent's first request offered `task`, after the built-in tools.
    let first = requests[0].body.clone().unwrap();
    let names: Vec<&str> = first["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    let position = |name: &str| names.iter().position(|n| *n == name);
    assert!(position("task") > position("write"), "{names:?}");
    // The child read the refusal; the parent read only the child's answer.
    let child = requests[2].body.clone().unwrap();
    assert!(
        tool_results(&child)
            .iter()
            .any(|r| r.contains("Permission denied")),
        "{:?}",
        tool_results(&child)
    );
    let parent = requests[3].body.clone().unwrap();
    let results = tool_results(&parent);
    assert_eq!(results.len(), 1, "{results:?}");
    assert!(
        results[0].contains("the child's answer: the command was refused"),
        "{results:?}"
    );
    // The child's file sits beside the parent's and names it.
    let children: Vec<_> = std::fs::read_dir(dir.path().join("parent.subagents"))
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .collect();
    assert_eq!(children.len(), 1, "{children:?}");
    let header: Value = serde_json::from_str(
        std::fs::read_to_string(&children[0])
            .unwrap()
            .lines()
            .next()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(
        header["parentSession"].as_str(),
        Some(session.display().to_string().as_str()),
        "{header}"
    );
    assert_eq!(header["spawnedBy"]["depth"], 1, "{header}");
}

#[test]
fn json_mode_carries_the_childs_progress_as_the_calls_updates() {
    let dir = project();
    let server = mock_with(delegation_scenario());
    let session = dir.path().join("parent.jsonl");
    let out = run(
        dir.path(),
        &server.base_url(),
        &session,
        &["--mode", "json", "--yes"],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    // Without a gate the child's command ran.
    assert!(dir.path().join("ran.txt").exists());
    let lines: Vec<Value> = text(&out.stdout)
        .lines()
        .filter_map(|line| serde_json::from_str(line).ok())
        .collect();
    let call_id = lines
        .iter()
        .find(|l| l["type"] == "tool_execution_start" && l["toolName"] == "task")
        .map(|l| l["toolCallId"].clone())
        .expect("the task call started");
    let updates: Vec<String> = lines
        .iter()
        .filter(|l| l["type"] == "tool_execution_update" && l["toolCallId"] == call_id)
        .map(|l| l["partialResult"].to_string())
        .collect();
    assert!(
        updates
            .iter()
            .any(|u| u.contains("child (") && u.contains("bash")),
        "{updates:?}"
    );
    let end = lines
        .iter()
        .find(|l| l["type"] == "tool_execution_end" && l["toolCallId"] == call_id)
        .expect("the task call ended");
    assert_eq!(end["isError"], false, "{end}");
}
