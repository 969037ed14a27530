//! The workload's script as a peer harness can play it: the same tasks, prompts, request count
//! and closing answers, with each scripted call turned into a call of a tool every harness
//! has (`read` and `bash`; strata-mock renames them to the harness's own names and argument
//! names, see its `scenario.rs`).
//!
//! Pi's default tools are read/bash/edit/write (its grep and find need ripgrep and fd, which it
//! would download) and Claude Code 2.1 declares no grep/find/ls tool: `ls`, `grep` and `find`
//! become the shell command that gives the same answer. The bench's MCP-like tools stay tool
//! calls for Pi, which gets them from the extension `xtask/peers/pi-bench-tools.ts`; Claude Code
//! has no way to get them here, so for it they become a shell command printing their answer.

use anyhow::{Context, Result};
use serde::Serialize;
use serde_json::{Map, Value};

use crate::bench::workload::{RecallOut, ScriptedCall, Workload, recall_parts};

/// One scripted call as a peer plays it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PeerCall {
    /// `read` or `bash`: a role strata-mock resolves against the declared tools.
    pub tool: String,
    /// Arguments in strata's names (`path`, `command`).
    pub args: Map<String, Value>,
}

/// Turns a workload call into a call of `read` or `bash`, or keeps a bench tool's call when the
/// harness has the bench tools.
pub fn peer_call(call: &ScriptedCall, bench_tools: bool) -> PeerCall {
    let text = |key: &str| {
        call.args
            .get(key)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    let bash = |command: String| PeerCall {
        tool: "bash".to_owned(),
        args: Map::from_iter([("command".to_owned(), Value::String(command))]),
    };
    match call.tool.as_str() {
        "read" | "bash" => PeerCall {
            tool: call.tool.clone(),
            args: call.args.clone(),
        },
        "ls" => bash(format!("ls {}", quote(&text("path")))),
        "grep" => bash(format!(
            "grep -rnE -- {} {}",
            quote(&text("pattern")),
            quote(&text("path"))
        )),
        "find" => bash(format!(
            "find {} -name {}",
            quote(&text("path")),
            quote(&text("pattern"))
        )),
        _ if bench_tools => PeerCall {
            tool: call.tool.clone(),
            args: call.args.clone(),
        },
        // A bench (MCP-like) tool: the shell prints what the tool answers (bench/tools.rs).
        name => {
            let query = text("query");
            let lines: Vec<String> = (0..6)
                .map(|record| {
                    format!(
                        "{name}: record {record} for \"{query}\" — status ok, updated at step {record}"
                    )
                })
                .collect();
            bash(format!("printf '%s\\n' {}", quote_all(&lines)))
        }
    }
}

/// Single-quotes `text` for sh.
fn quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

fn quote_all(items: &[String]) -> String {
    items
        .iter()
        .map(|item| quote(item))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The strata-mock scenario (sequence playback) a peer plays for `workload`: one turn per
/// scripted request, each task's first turn carrying its prompt, the workload's summaries.
/// `bench_tools`: the harness has the bench's MCP-like tools. The script plays `model` only: a
/// request for another model (a side request) gets a fixed reply and takes no turn.
pub fn scenario_toml(workload: &Workload, model: &str, bench_tools: bool) -> Result<String> {
    let mut turns = Vec::new();
    for task in &workload.tasks {
        for (position, call) in task.calls.iter().enumerate() {
            turns.push(TurnOut {
                user: (position == 0).then(|| task.prompt.clone()),
                text: Some(format!("Checking with {}.", call.tool)),
                tool_call: vec![peer_call(call, bench_tools)],
                recall: None,
            });
        }
        if let Some(recall) = &task.recall {
            // The write and the fetch are calls every harness has, as they are.
            let (text, call, out) = recall_parts(task, recall);
            turns.push(TurnOut {
                user: None,
                text: Some(text),
                tool_call: vec![PeerCall {
                    tool: call.tool,
                    args: call.args,
                }],
                recall: Some(out),
            });
        }
        turns.push(TurnOut {
            user: task.calls.is_empty().then(|| task.prompt.clone()),
            text: Some(task.final_text.clone()),
            tool_call: Vec::new(),
            recall: None,
        });
    }
    // The summaries are the workload's own (same text, same order).
    let own: toml::Value = toml::from_str(&workload.scenario_toml(true)?)
        .context("reading the workload's scenario")?;
    let summary = own
        .get("summary")
        .and_then(toml::Value::as_array)
        .cloned()
        .unwrap_or_default();
    let scenario = ScenarioOut {
        name: format!("bench-{}-peer", workload.spec.name),
        playback: "sequence",
        model: model.to_owned(),
        turn: turns,
        summary,
    };
    toml::to_string(&scenario).context("writing the peer scenario")
}

#[derive(Serialize)]
struct ScenarioOut {
    name: String,
    playback: &'static str,
    model: String,
    turn: Vec<TurnOut>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    summary: Vec<toml::Value>,
}

#[derive(Serialize)]
struct TurnOut {
    #[serde(skip_serializing_if = "Option::is_none")]
    user: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    text: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tool_call: Vec<PeerCall>,
    #[serde(skip_serializing_if = "Option::is_none")]
    recall: Option<RecallOut>,
}

#[cfg(test)]
mod tests {
    use std::process::Command;

    use serde_json::json;

    use super::*;

    fn call(tool: &str, args: Value) -> ScriptedCall {
        ScriptedCall {
            tool: tool.to_owned(),
            args: args.as_object().cloned().unwrap_or_default(),
        }
    }

    fn sh(command: &str, cwd: &std::path::Path) -> String {
        let out = Command::new("sh")
            .arg("-c")
            .arg(command)
            .current_dir(cwd)
            .output()
            .unwrap();
        assert!(out.status.success(), "{command}: {out:?}");
        String::from_utf8(out.stdout).unwrap()
    }

    #[test]
    fn read_and_bash_stay_what_they_are() {
        let read = call("read", json!({"path": "src/file_1.rs"}));
        assert_eq!(
            peer_call(&read, false),
            PeerCall {
                tool: "read".into(),
                args: read.args.clone()
            }
        );
        let bash = call("bash", json!({"command": "wc -l src/file_1.rs"}));
        assert_eq!(peer_call(&bash, false).tool, "bash");
        assert_eq!(peer_call(&bash, false).args, bash.args);
    }

    #[test]
    fn ls_grep_find_become_shell_commands_with_the_same_answer() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("src")).unwrap();
        std::fs::write(
            dir.path().join("src/file_3.rs"),
            "pub fn item_3_1(x: u32) -> u32 { x }\npub fn item_3_10(x: u32) -> u32 { x }\n",
        )
        .unwrap();
        std::fs::write(dir.path().join("src/file_4.rs"), "fn other() {}\n").unwrap();
        let command = |c: &ScriptedCall| {
            let peer = peer_call(c, true);
            assert_eq!(peer.tool, "bash");
            peer.args["command"].as_str().unwrap().to_owned()
        };
        let ls = command(&call("ls", json!({"path": "src"})));
        assert_eq!(sh(&ls, dir.path()), "file_3.rs\nfile_4.rs\n");
        let grep = command(&call(
            "grep",
            json!({"pattern": "item_3_1\\b", "path": "src"}),
        ));
        assert_eq!(
            sh(&grep, dir.path()),
            "src/file_3.rs:1:pub fn item_3_1(x: u32) -> u32 { x }\n"
        );
        let find = command(&call(
            "find",
            json!({"pattern": "file_3*.rs", "path": "src"}),
        ));
        assert_eq!(sh(&find, dir.path()), "src/file_3.rs\n");
    }

    #[test]
    fn a_bench_tool_becomes_a_shell_command_printing_its_answer() {
        let dir = tempfile::tempdir().unwrap();
        let search = call("web_search", json!({"query": "it's topic 7"}));
        assert_eq!(
            peer_call(&search, true).tool,
            "web_search",
            "Pi has the bench tools"
        );
        let peer = peer_call(&search, false);
        let out = sh(peer.args["command"].as_str().unwrap(), dir.path());
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines.len(), 6);
        assert_eq!(
            lines[0],
            "web_search: record 0 for \"it's topic 7\" — status ok, updated at step 0"
        );
    }

    #[test]
    fn the_peer_scenario_has_the_workloads_requests_prompts_and_summaries() {
        let workload = Workload::load("short").unwrap();
        let text = scenario_toml(&workload, "claude-sonnet-4-5", false).unwrap();
        let scenario = strata_mock::Scenario::from_toml(&text, "peer").unwrap();
        assert!(scenario.is_side_request("claude-haiku-4-5"));
        assert!(!scenario.is_side_request("claude-sonnet-4-5"));
        assert_eq!(scenario.turns.len(), workload.scripted_requests());
        assert_eq!(scenario.user_prompts(), [workload.tasks[0].prompt.as_str()]);
        let own = strata_mock::Scenario::from_toml(&workload.scenario_toml(true).unwrap(), "own")
            .unwrap();
        assert_eq!(scenario.summaries, own.summaries);
        for turn in &scenario.turns {
            for call in &turn.tool_calls {
                assert!(["read", "bash"].contains(&call.tool.as_str()), "{call:?}");
            }
        }
        assert_eq!(
            scenario.turns.last().unwrap().text.as_deref(),
            Some(workload.tasks[0].final_text.as_str())
        );
    }
}
