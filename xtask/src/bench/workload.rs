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
    /// Tasks that need facts only an earlier tool output held (see [`RecallSpec`]).
    #[serde(default)]
    pub recall: Option<RecallSpec>,
}

/// A workload that sees forgetting: task *k* first reads `facts/f<k>.txt`, whose one fact
/// line (`fact-<k>: <value>`) sits among filler lines, and then writes a note that needs the
/// fact of a task 1 to `back_max` tasks earlier. The scripted model uses the fact while its
/// context still holds it and reads the file again when not (strata-mock's recall turns); the
/// task is done only when its note holds the right value.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RecallSpec {
    /// The farthest back a task reaches, in tasks.
    pub back_max: usize,
    /// Filler lines in each fact file around the fact.
    pub fact_lines: usize,
}

/// The fact a task needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recall {
    /// The task (0-based) whose fact file holds it.
    pub fact: usize,
    /// Its value.
    pub value: String,
}

impl Recall {
    /// The text right before the value in the fact file.
    pub fn marker(&self) -> String {
        fact_marker(self.fact)
    }

    /// The fact file, relative to the working directory.
    pub fn file(&self) -> String {
        fact_file(self.fact)
    }
}

/// `fact-<k>: `, the text before fact *k*'s value.
pub fn fact_marker(fact: usize) -> String {
    format!("fact-{fact}: ")
}

/// `facts/f<k>.txt`.
pub fn fact_file(fact: usize) -> String {
    format!("facts/f{fact}.txt")
}

/// Fact *k*'s value: eight hex digits, fixed per *k*.
pub fn fact_value(fact: usize) -> String {
    format!("{:08x}", mix(fact as u64 ^ 0x5eed) as u32)
}

/// The note task *n* (1-based) writes, relative to the working directory.
pub fn note_file(task_number: usize) -> String {
    format!("notes/task_{task_number}.md")
}

/// What task *n*'s note says when the recalled value is `value`.
pub fn note_text(task_number: usize, value: &str) -> String {
    format!("Task {task_number} uses {value}.\n")
}

/// splitmix64: a fixed, well-spread hash for the workload's choices.
fn mix(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
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
    /// The user changes the thinking level (`off`, `minimal`, `low`, `medium`, `high`,
    /// `xhigh`): the effort of the next requests.
    #[serde(default)]
    pub thinking: Option<String>,
    /// Go back this many tasks (`agent.navigate` with a branch summary) and continue there.
    #[serde(default)]
    pub branch_back_tasks: Option<usize>,
    /// Virtual seconds of idleness before the task.
    #[serde(default)]
    pub idle_seconds: u64,
    /// The harness exits and is started again on its session file (after the other changes
    /// of this event: an AGENTS.md edit on resume).
    #[serde(default)]
    pub restart: bool,
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
    /// The fact its note needs (recall workloads), written after the calls.
    pub recall: Option<Recall>,
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
pub const WORKLOADS: [&str; 7] = [
    "short",
    "long",
    "pause",
    "effort",
    "tools-churn",
    "recall",
    "recall-long",
];

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
                if spec.recall.is_some() {
                    calls.push(ScriptedCall {
                        tool: "read".to_owned(),
                        args: Map::from_iter([(
                            "path".to_owned(),
                            Value::String(fact_file(index)),
                        )]),
                    });
                }
                let recall = spec.recall.as_ref().filter(|_| index > 0).map(|recall| {
                    let reach = recall.back_max.clamp(1, index);
                    let back = 1 + (mix(index as u64) % reach as u64) as usize;
                    Recall {
                        fact: index - back,
                        value: fact_value(index - back),
                    }
                });
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
                    recall,
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

    /// Requests the scripted turns make (summaries and re-fetches not counted).
    pub fn scripted_requests(&self) -> usize {
        self.tasks
            .iter()
            .map(|task| task.calls.len() + usize::from(task.recall.is_some()) + 1)
            .sum()
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
                    recall: None,
                });
            }
            if let Some(recall) = &task.recall {
                turns.push(recall_turn(task, recall));
            }
            turns.push(TurnOut {
                user: (sequence && task.calls.is_empty()).then(|| task.prompt.clone()),
                text: Some(task.final_text.clone()),
                tool_call: Vec::new(),
                recall: None,
            });
        }
        let summaries = if sequence {
            (1..=64)
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
        if let Some(recall) = &self.spec.recall {
            let facts = cwd.join("facts");
            std::fs::create_dir_all(&facts)
                .with_context(|| format!("creating {}", facts.display()))?;
            let notes = cwd.join("notes");
            std::fs::create_dir_all(&notes)
                .with_context(|| format!("creating {}", notes.display()))?;
            for fact in 0..self.tasks.len() {
                let path = cwd.join(fact_file(fact));
                std::fs::write(&path, fact_file_text(fact, recall.fact_lines))
                    .with_context(|| format!("writing {}", path.display()))?;
            }
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

/// The text of fact file *k*: filler lines about the module, the fact line in the middle.
pub fn fact_file_text(fact: usize, lines: usize) -> String {
    let mut text = format!("# Facts gathered for task {}\n", fact + 1);
    for line in 0..lines {
        if line == lines / 2 {
            text.push_str(&format!("{}{}\n", fact_marker(fact), fact_value(fact)));
        }
        text.push_str(&format!(
            "- observation {fact}.{line}: module_{line} keeps its state in a table of {} rows and flushes it every {} ms\n",
            (mix((fact * 1000 + line) as u64) % 9000) + 100,
            (mix((fact * 7 + line) as u64) % 900) + 10
        ));
    }
    text
}

/// The turn that writes a task's note with the recalled fact: its text, its call and its
/// `[turn.recall]` (strata-mock fills `{recall}` from the request, or fetches the fact file
/// first when the request no longer holds it).
pub fn recall_parts(task: &Task, recall: &Recall) -> (String, ScriptedCall, RecallOut) {
    let number = task.index + 1;
    let call = ScriptedCall {
        tool: "write".to_owned(),
        args: Map::from_iter([
            ("path".to_owned(), Value::String(note_file(number))),
            (
                "content".to_owned(),
                Value::String(note_text(number, "{recall}")),
            ),
        ]),
    };
    let out = RecallOut {
        marker: recall.marker(),
        fetch_text: format!("Reading {} again.", recall.file()),
        fetch: vec![ScriptedCall {
            tool: "read".to_owned(),
            args: Map::from_iter([("path".to_owned(), Value::String(recall.file()))]),
        }],
    };
    (format!("Writing task {number}'s note."), call, out)
}

fn recall_turn(task: &Task, recall: &Recall) -> TurnOut {
    let (text, call, out) = recall_parts(task, recall);
    TurnOut {
        user: None,
        text: Some(text),
        tool_call: vec![call],
        recall: Some(out),
    }
}

/// Why task `task`'s note in `cwd` is not what its recall needs, if it is not.
pub fn note_failure(cwd: &Path, task: &Task) -> Option<String> {
    let recall = task.recall.as_ref()?;
    let number = task.index + 1;
    let path = cwd.join(note_file(number));
    let expected = note_text(number, &recall.value);
    match std::fs::read_to_string(&path) {
        Ok(text) if text.trim() == expected.trim() => None,
        Ok(text) => Some(format!(
            "{} says {:?}, not {:?} (fact {} of task {})",
            note_file(number),
            text.trim(),
            expected.trim(),
            recall.fact,
            recall.fact + 1
        )),
        Err(error) => Some(format!("{} not written: {error}", note_file(number))),
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
    text.push_str(
        "- Facts for the task notes come from facts/f<k>.txt (one per task); their values are in those files, not in this summary.\n",
    );
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
    #[serde(skip_serializing_if = "Option::is_none")]
    recall: Option<RecallOut>,
}

/// A recall turn's `[turn.recall]` (strata-mock's `RecallSpec`).
#[derive(Debug, Clone, Serialize)]
pub struct RecallOut {
    /// The text before the value.
    pub marker: String,
    /// Said with the fetch.
    pub fetch_text: String,
    /// The fetch.
    pub fetch: Vec<ScriptedCall>,
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
