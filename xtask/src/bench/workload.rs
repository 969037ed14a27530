//! Workloads: a TOML file under `xtask/workloads/` describes tasks, the tools they call and the
//! events between them (tool-set changes, an AGENTS.md edit, idle gaps, a branch); from it the
//! harness generates the strata-mock scenario (sequence playback) and the driver's steps.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use crate::bench::tools::BENCH_TOOL_NAMES;

/// The built-in tools every run starts with (all seven of strata-tools).
pub const BUILTIN_TOOLS: [&str; 7] = ["read", "bash", "edit", "write", "grep", "find", "ls"];

/// A workload file.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorkloadSpec {
    /// Its name (`short`, `long`, `pause`, `tools-churn`).
    pub name: String,
    /// One sentence for the report.
    pub description: String,
    /// The model's context window for this run, tokens (small, so compactions happen).
    pub context_window: u64,
    /// `compaction.reserve_tokens`.
    #[serde(default = "default_reserve")]
    pub reserve_tokens: u64,
    /// `compaction.keep_recent_tokens`.
    #[serde(default = "default_keep_recent")]
    pub keep_recent_tokens: u64,
    /// Virtual seconds between two requests.
    pub seconds_between_requests: u64,
    /// Files seeded in the working directory.
    pub files: FileSpec,
    /// Bench-only tools (MCP-like) live from the start, by name.
    #[serde(default)]
    pub start_tools: Vec<String>,
    /// Groups of tasks.
    #[serde(rename = "phase")]
    pub phases: Vec<Phase>,
    /// Things that happen before a task.
    #[serde(default, rename = "event")]
    pub events: Vec<Event>,
}

fn default_reserve() -> u64 {
    strata_compaction::DEFAULT_RESERVE_TOKENS
}

fn default_keep_recent() -> u64 {
    strata_compaction::DEFAULT_KEEP_RECENT_TOKENS
}

/// The files `read`, `grep` and `find` work on.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileSpec {
    /// How many files under `src/`.
    pub count: usize,
    /// Lines per file.
    pub lines: usize,
}

/// A run of similar tasks.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Phase {
    /// How many tasks.
    pub tasks: usize,
    /// Requests per task: one tool call each, then a closing answer.
    pub requests_per_task: usize,
    /// Tools called, cycled; `mcp` stands for the live bench tools in turn. A tool not live at
    /// that point is skipped.
    pub tools: Vec<String>,
    /// The user's prompt; `{n}` is the task number.
    pub prompt: String,
    /// Virtual seconds of idleness after each task.
    #[serde(default)]
    pub idle_seconds_after_task: u64,
}

/// Something that happens before task `before_task` (0-based).
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Event {
    /// The task it precedes.
    pub before_task: usize,
    /// Tools withdrawn.
    #[serde(default)]
    pub tools_remove: Vec<String>,
    /// Bench tools added.
    #[serde(default)]
    pub tools_add: Vec<String>,
    /// New text of AGENTS.md in the working directory.
    #[serde(default)]
    pub agents_md: Option<String>,
    /// Go back this many tasks (`agent.navigate` with a branch summary) and continue there.
    #[serde(default)]
    pub branch_back_tasks: Option<usize>,
    /// Virtual seconds of idleness before the task.
    #[serde(default)]
    pub idle_seconds: u64,
}

/// One tool call of a scripted turn.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ScriptedCall {
    /// Tool name.
    pub tool: String,
    /// Arguments.
    pub args: Map<String, Value>,
}

/// One task as the driver plays it.
#[derive(Debug, Clone, PartialEq)]
pub struct Task {
    /// 0-based index.
    pub index: usize,
    /// The prompt sent.
    pub prompt: String,
    /// Events before it.
    pub events: Vec<Event>,
    /// Tool calls, one per request before the closing answer.
    pub calls: Vec<ScriptedCall>,
    /// The closing answer: the task is complete when the run ends with it.
    pub final_text: String,
    /// Idle seconds after it.
    pub idle_after: u64,
}

/// A workload ready to play.
#[derive(Debug, Clone, PartialEq)]
pub struct Workload {
    /// The file's settings.
    pub spec: WorkloadSpec,
    /// The tasks in order.
    pub tasks: Vec<Task>,
    /// The TOML file it came from, relative to the workspace.
    pub source: PathBuf,
}

/// Names of the workloads in the default order.
pub const WORKLOADS: [&str; 4] = ["short", "long", "pause", "tools-churn"];

/// The directory holding the workload files.
pub fn workloads_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("workloads")
}

impl Workload {
    /// Loads `xtask/workloads/<name>.toml`.
    pub fn load(name: &str) -> Result<Self> {
        let path = workloads_dir().join(format!("{name}.toml"));
        let text = std::fs::read_to_string(&path)
            .with_context(|| format!("reading {}", path.display()))?;
        let spec: WorkloadSpec =
            toml::from_str(&text).with_context(|| format!("parsing {}", path.display()))?;
        Self::from_spec(spec, PathBuf::from(format!("xtask/workloads/{name}.toml")))
    }

    /// Generates the tasks of `spec`.
    pub fn from_spec(spec: WorkloadSpec, source: PathBuf) -> Result<Self> {
        let mut live: BTreeSet<String> = spec.start_tools.iter().cloned().collect();
        for name in &live {
            check_bench_tool(&spec.name, name)?;
        }
        for event in &spec.events {
            for name in &event.tools_add {
                check_bench_tool(&spec.name, name)?;
            }
        }
        let mut tasks = Vec::new();
        let mut builtins: BTreeSet<String> =
            BUILTIN_TOOLS.iter().map(|s| (*s).to_owned()).collect();
        let mut cursor = 0usize;
        for phase in &spec.phases {
            if phase.requests_per_task == 0 || phase.tools.is_empty() {
                bail!(
                    "workload {}: a phase needs requests_per_task > 0 and some tools",
                    spec.name
                );
            }
            for _ in 0..phase.tasks {
                let index = tasks.len();
                let events: Vec<Event> = spec
                    .events
                    .iter()
                    .filter(|event| event.before_task == index)
                    .cloned()
                    .collect();
                for event in &events {
                    for name in &event.tools_remove {
                        live.remove(name);
                        builtins.remove(name);
                    }
                    live.extend(event.tools_add.iter().cloned());
                }
                let mut calls = Vec::new();
                let mut attempts = 0;
                while calls.len() + 1 < phase.requests_per_task {
                    attempts += 1;
                    if attempts > 64 * phase.requests_per_task {
                        bail!(
                            "workload {}: task {index} has no live tool among {:?}",
                            spec.name,
                            phase.tools
                        );
                    }
                    let wanted = &phase.tools[cursor % phase.tools.len()];
                    cursor += 1;
                    let tool = if wanted == "mcp" {
                        let pool: Vec<&String> = live.iter().collect();
                        if pool.is_empty() {
                            continue;
                        }
                        pool[cursor % pool.len()].clone()
                    } else if builtins.contains(wanted) || live.contains(wanted) {
                        wanted.clone()
                    } else {
                        continue;
                    };
                    calls.push(ScriptedCall {
                        args: arguments(&tool, cursor, &spec.files),
                        tool,
                    });
                }
                tasks.push(Task {
                    index,
                    prompt: phase.prompt.replace("{n}", &(index + 1).to_string()),
                    events,
                    calls,
                    final_text: format!("Task {} is done.", index + 1),
                    idle_after: phase.idle_seconds_after_task,
                });
            }
        }
        if let Some(event) = spec.events.iter().find(|e| e.before_task >= tasks.len()) {
            bail!(
                "workload {}: an event is set before task {}, but there are {} tasks",
                spec.name,
                event.before_task,
                tasks.len()
            );
        }
        Ok(Self {
            spec,
            tasks,
            source,
        })
    }

    /// Requests the scripted turns make (summaries not counted).
    pub fn scripted_requests(&self) -> usize {
        self.tasks.iter().map(|task| task.calls.len() + 1).sum()
    }

    /// The strata-mock scenario: one `[[turn]]` per request in order, each task's first turn
    /// carrying its user prompt, and summaries for the compactions and the branch.
    pub fn scenario_toml(&self, sequence: bool) -> Result<String> {
        let mut turns = Vec::new();
        for task in &self.tasks {
            for (position, call) in task.calls.iter().enumerate() {
                turns.push(TurnOut {
                    user: (sequence && position == 0).then(|| task.prompt.clone()),
                    text: Some(format!("Checking with {}.", call.tool)),
                    tool_call: vec![call.clone()],
                });
            }
            turns.push(TurnOut {
                user: (sequence && task.calls.is_empty()).then(|| task.prompt.clone()),
                text: Some(task.final_text.clone()),
                tool_call: Vec::new(),
            });
        }
        let summaries = if sequence {
            (1..=24)
                .map(|n| SummaryOut {
                    text: summary_text(n),
                })
                .collect()
        } else {
            Vec::new()
        };
        let scenario = ScenarioOut {
            name: format!("bench-{}", self.spec.name),
            playback: sequence.then(|| "sequence".to_owned()),
            turn: turns,
            summary: summaries,
        };
        toml::to_string(&scenario).context("writing the scenario")
    }

    /// Creates the working directory's files: `src/file_<k>.rs` and AGENTS.md.
    pub fn seed(&self, cwd: &Path) -> Result<()> {
        let src = cwd.join("src");
        std::fs::create_dir_all(&src).with_context(|| format!("creating {}", src.display()))?;
        for k in 0..self.spec.files.count {
            let mut text = String::new();
            for line in 0..self.spec.files.lines {
                text.push_str(&format!(
                    "pub fn item_{k}_{line}(input: u32) -> u32 {{ input.wrapping_mul({}) ^ {line} }}\n",
                    k * 31 + line
                ));
            }
            let path = src.join(format!("file_{k}.rs"));
            std::fs::write(&path, text).with_context(|| format!("writing {}", path.display()))?;
        }
        let agents = cwd.join("AGENTS.md");
        std::fs::write(&agents, INITIAL_AGENTS_MD)
            .with_context(|| format!("writing {}", agents.display()))?;
        Ok(())
    }
}

/// AGENTS.md as the run starts.
pub const INITIAL_AGENTS_MD: &str =
    "# Project rules\n\n- Keep answers short.\n- Run the tests after every change.\n";

fn check_bench_tool(workload: &str, name: &str) -> Result<()> {
    if BENCH_TOOL_NAMES.contains(&name) {
        Ok(())
    } else {
        bail!("workload {workload}: `{name}` is not a bench tool (known: {BENCH_TOOL_NAMES:?})")
    }
}

/// Cheap arguments for one call of `tool`.
fn arguments(tool: &str, n: usize, files: &FileSpec) -> Map<String, Value> {
    let file = format!("src/file_{}.rs", n % files.count.max(1));
    let value = match tool {
        "read" => json!({ "path": file }),
        "ls" => json!({ "path": "src" }),
        "grep" => {
            json!({ "pattern": format!("item_{}_1\\b", n % files.count.max(1)), "path": "src" })
        }
        "find" => json!({ "pattern": format!("file_{}*.rs", n % 10), "path": "src" }),
        "bash" => json!({ "command": format!("wc -l {file}") }),
        _ => json!({ "query": format!("topic {n}") }),
    };
    match value {
        Value::Object(map) => map,
        _ => Map::new(),
    }
}

fn summary_text(n: usize) -> String {
    let mut text = format!(
        "## Goal\nWork through the numbered tasks on the project (summary {n}).\n\n## Progress\n"
    );
    for line in 0..24 {
        text.push_str(&format!(
            "- Looked at src/file_{line}.rs: item_{line}_* functions mix their input with a constant; nothing to change there.\n"
        ));
    }
    text.push_str("\n## Next Steps\n- Continue with the next task.\n");
    text
}

#[derive(Serialize)]
struct ScenarioOut {
    name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    playback: Option<String>,
    turn: Vec<TurnOut>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    summary: Vec<SummaryOut>,
}

#[derive(Serialize)]
struct TurnOut {
    #[serde(skip_serializing_if = "Option::is_none")]
    user: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    text: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tool_call: Vec<ScriptedCall>,
}

#[derive(Serialize)]
struct SummaryOut {
    text: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_workload_file_loads_and_has_its_shape() {
        for name in WORKLOADS {
            let workload = Workload::load(name).unwrap();
            assert_eq!(workload.spec.name, name);
            assert!(!workload.tasks.is_empty());
            for task in &workload.tasks {
                assert!(!task.prompt.contains("{n}"));
            }
        }
        let short = Workload::load("short").unwrap();
        assert_eq!(short.tasks.len(), 1);
        assert_eq!(short.scripted_requests(), 20);
        assert!(Workload::load("long").unwrap().scripted_requests() >= 300);
    }

    #[test]
    fn removed_tools_are_not_called_after_their_removal() {
        let long = Workload::load("long").unwrap();
        let mut removed: BTreeSet<String> = BTreeSet::new();
        for task in &long.tasks {
            for event in &task.events {
                removed.extend(event.tools_remove.iter().cloned());
                for added in &event.tools_add {
                    removed.remove(added);
                }
            }
            for call in &task.calls {
                assert!(
                    !removed.contains(&call.tool),
                    "task {}: {}",
                    task.index,
                    call.tool
                );
            }
        }
        assert_eq!(
            removed.len(),
            7,
            "long removes seven tools (and adds one back)"
        );
    }

    #[test]
    fn the_scenario_puts_each_prompt_on_its_tasks_first_turn() {
        let short = Workload::load("short").unwrap();
        let text = short.scenario_toml(true).unwrap();
        let value: toml::Value = toml::from_str(&text).unwrap();
        let turns = value["turn"].as_array().unwrap();
        assert_eq!(turns.len(), 20);
        assert_eq!(
            turns[0]["user"].as_str(),
            Some(short.tasks[0].prompt.as_str())
        );
        assert!(turns[1].get("user").is_none());
        assert_eq!(value["playback"].as_str(), Some("sequence"));
        assert!(!short.scenario_toml(false).unwrap().contains("playback"));
    }
}
