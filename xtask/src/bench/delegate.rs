//! `cargo xtask bench --only delegate`: delegation priced by the cache. A parent must register
//! four handlers of a generated project in `src/registry.rs`: for each it has to find, inside
//! a module of large files, where the handler is defined and the value of its ID constant —
//! exploration whose file reads the parent does not need in full — and then edit the registry.
//!
//! strata plays it through the real agent loop and strata-subagents' `task` tool against
//! strata-mock, in four modes: `none` (the parent explores itself, no delegation tool),
//! `fresh` and `fork` (every child starts that way) and `auto` (strata-subagents' choice by
//! price). The model is a script (strata-mock's sequence playback; one child at a time, so the
//! order of requests is fixed); what each request reads and writes comes from the mock's cache
//! simulation. The task is right when `src/registry.rs` ends as it should: every ID came from
//! what the parent's context held when it edited (strata-mock's recall turns fill them from the
//! request, and re-read the defining file when the request lacks them).

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use serde_json::{Map, Value, json};
use strata_agent::{Agent, AgentEvent};
use strata_mock::scenario::{RecallSpec, ToolCallSpec};
use strata_mock::{MockConfig, MockServer, Playback, Scenario, TurnSpec};
use strata_session::{Session, WriteOptions};
use strata_subagents::{
    ChildEventKind, Loaded, ParentSetup, SpawnMode, SubagentSettings, Subagents,
};

use crate::bench::ideal::IdealCache;
use crate::bench::model::{CacheModel, endpoint};
use crate::bench::peers::rows::Rows;
use crate::bench::peers::wire;
use crate::bench::run::Run;
use crate::bench::strategy::Strategy;
use crate::bench::tools::tool_set;
use crate::bench::workload::{BUILTIN_TOOLS, FileSpec, Workload, WorkloadSpec};

mod bill;
mod peers;
pub use bill::{BILL_HEAD, Floor, Split, bill_row, child_of_turns};
pub use peers::*;
use peers::{PEER_GOAL_READING, PEERS_DRIVEN};

/// The workload's name (`--only delegate`).
pub const NAME: &str = "delegate";

/// Usage of `cargo xtask bench --only delegate`.
pub const USAGE: &str =
    "  bench --only delegate [--cache MODEL]... [--out FILE] [--no-peers] [--peer NAME]...
      The delegate workload: a parent registers four handlers after finding each one's
      definition in a module of large files; strata without delegation, with fresh children,
      forked children and `auto` (strata-subagents), against strata-mock; then the peers'
      own subagents (Claude Code, Pi with pi-subagents; installed by `cargo xtask bench-peers
      --install`) unless --no-peers, or only those named by --peer claude-code|pi. Writes
      docs/bench-delegate.md (default caches: anthropic-5m, openai, deepseek).";

/// Whether the arguments select this workload.
pub fn selected(args: &[String]) -> bool {
    args.windows(2)
        .any(|pair| pair[0] == "--only" && pair[1] == NAME)
}

/// The modules, one handler each.
const MODULES: [&str; 4] = ["storage", "network", "render", "billing"];
/// Files per module.
const FILES_PER_MODULE: usize = 6;
/// Lines per module file.
const LINES_PER_FILE: usize = 220;
/// Lines of the architecture notes the parent reads before it starts.
const NOTES_LINES: usize = 160;
/// Virtual seconds between two requests.
const SECONDS_BETWEEN_REQUESTS: u64 = 5;
/// The model's window: large enough that nothing is compacted.
const CONTEXT_WINDOW: u64 = 400_000;
/// The registry the parent edits.
const REGISTRY: &str = "src/registry.rs";
/// The notes the parent reads first.
const NOTES: &str = "docs/architecture.md";

/// How much the parent does after the exploration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// One registry edit per handler, then the closing answer.
    Lean,
    /// Per handler, the registry edit, a note on the handler's definition and a check that
    /// both landed: the parent works on after the exploration, as a coding task does.
    FollowUp,
}

impl Shape {
    /// Both, in table order.
    pub const ALL: [Self; 2] = [Self::FollowUp, Self::Lean];

    /// Its name in tables.
    pub fn name(self) -> &'static str {
        match self {
            Self::Lean => "delegate-lean",
            Self::FollowUp => "delegate",
        }
    }
}

/// How strata runs the parent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// No delegation tool: the parent explores itself.
    None,
    /// Every child starts fresh.
    Fresh,
    /// Every child is forked from the parent.
    Fork,
    /// strata-subagents chooses by price.
    Auto,
}

impl Mode {
    /// Every mode, in table order.
    pub const ALL: [Self; 4] = [Self::None, Self::Fresh, Self::Fork, Self::Auto];

    /// Its name in tables.
    pub fn name(self) -> &'static str {
        match self {
            Self::None => "none",
            Self::Fresh => "fresh",
            Self::Fork => "fork",
            Self::Auto => "auto",
        }
    }

    fn spawn_mode(self) -> Option<SpawnMode> {
        match self {
            Self::None => None,
            Self::Fresh => Some(SpawnMode::Fresh),
            Self::Fork => Some(SpawnMode::Fork),
            Self::Auto => Some(SpawnMode::Auto),
        }
    }
}

/// One handler to find: its module, the file that defines it, its ID.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Handler {
    /// The module under `src/`.
    pub module: &'static str,
    /// The file (0-based) of the module that defines it.
    pub defined_in: usize,
    /// Another file of the module that calls it.
    pub used_in: usize,
    /// The value of its ID constant.
    pub id: String,
}

impl Handler {
    /// `handle_<module>`.
    pub fn function(&self) -> String {
        format!("handle_{}", self.module)
    }

    /// `<MODULE>_ID`.
    pub fn constant(&self) -> String {
        format!("{}_ID", self.module.to_ascii_uppercase())
    }

    /// The text right before the ID's value wherever the constant is quoted.
    pub fn marker(&self) -> String {
        format!("{}: &str = \"", self.constant())
    }

    /// The file defining it.
    pub fn definition_file(&self) -> String {
        module_file(self.module, self.defined_in)
    }

    /// The doc line above the handler before the follow-up edit.
    pub fn doc_line(&self) -> String {
        format!("/// Entry point of the {} module.", self.module)
    }

    /// The doc line the follow-up edit leaves.
    pub fn registered_doc_line(&self) -> String {
        format!(
            "/// Entry point of the {} module; registered in {REGISTRY}.",
            self.module
        )
    }

    /// A module file that neither defines nor calls it: where an exploration looks first.
    pub fn dead_end(&self) -> usize {
        (0..FILES_PER_MODULE)
            .find(|file| *file != self.defined_in && *file != self.used_in)
            .unwrap_or(0)
    }

    /// The registry's line for it before the edit.
    pub fn todo_line(&self) -> String {
        format!("    // TODO: register {}", self.function())
    }

    /// The registry's line for it with `id`.
    pub fn registered_line(&self, id: &str) -> String {
        format!("    (\"{}\", \"{id}\"),", self.function())
    }
}

fn module_file(module: &str, file: usize) -> String {
    format!("src/{module}/file_{file}.rs")
}

/// splitmix64, for fixed well-spread choices.
fn mix(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The four handlers.
pub fn handlers() -> Vec<Handler> {
    MODULES
        .iter()
        .enumerate()
        .map(|(k, module)| {
            let defined_in = (mix(k as u64) % FILES_PER_MODULE as u64) as usize;
            Handler {
                module,
                defined_in,
                used_in: (defined_in + 1 + k) % FILES_PER_MODULE,
                id: format!("{:08x}", mix(k as u64 ^ 0xde1e) as u32),
            }
        })
        .collect()
}

/// The user's prompt.
pub fn prompt() -> String {
    let names: Vec<String> = handlers().iter().map(Handler::function).collect();
    format!(
        "Register the handlers {} in {REGISTRY}: each one's TODO line becomes \
         `(\"<handler>\", \"<its ID constant's value>\"),`. Each handler is defined somewhere \
         in its module under src/<module>/, next to its `<MODULE>_ID` constant. Read {NOTES} \
         first.",
        names.join(", ")
    )
}

/// The registry as it must end.
pub fn expected_registry() -> String {
    registry_text(|handler| handler.registered_line(&handler.id))
}

fn registry_text(line: impl Fn(&Handler) -> String) -> String {
    let mut text = String::from(
        "//! Every handler the dispatcher knows, by name, with its ID.\n\npub const HANDLERS: &[(&str, &str)] = &[\n",
    );
    for handler in handlers() {
        text.push_str(&line(&handler));
        text.push('\n');
    }
    text.push_str("];\n");
    text
}

/// Writes the project: the modules' files, the registry, the notes.
pub fn seed(cwd: &Path) -> Result<()> {
    let handlers = handlers();
    for (k, handler) in handlers.iter().enumerate() {
        let dir = cwd.join("src").join(handler.module);
        std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
        for file in 0..FILES_PER_MODULE {
            let mut text = format!("//! {} module, part {file}.\n\n", handler.module);
            for line in 0..LINES_PER_FILE {
                if file == handler.defined_in && line == LINES_PER_FILE / 2 {
                    let _ = writeln!(
                        text,
                        "pub const {}: &str = \"{}\";\n{}\npub fn {}(request: &[u8]) -> usize {{ request.len() ^ {k} }}",
                        handler.constant(),
                        handler.id,
                        handler.doc_line(),
                        handler.function()
                    );
                }
                if file == handler.used_in && line == LINES_PER_FILE / 3 {
                    let _ = writeln!(
                        text,
                        "pub fn route_{file}(request: &[u8]) -> usize {{ super::file_{}::{}(request) }}",
                        handler.defined_in,
                        handler.function()
                    );
                }
                let _ = writeln!(
                    text,
                    "pub fn {}_{file}_{line}(input: u32) -> u32 {{ input.wrapping_mul({}) ^ {line} }}",
                    handler.module,
                    mix((k * 10_000 + file * 1_000 + line) as u64) % 9_973
                );
            }
            let path = dir.join(format!("file_{file}.rs"));
            std::fs::write(&path, text).with_context(|| format!("writing {}", path.display()))?;
        }
    }
    let registry = cwd.join(REGISTRY);
    std::fs::write(&registry, registry_text(Handler::todo_line))
        .with_context(|| format!("writing {}", registry.display()))?;
    let docs = cwd.join("docs");
    std::fs::create_dir_all(&docs).with_context(|| format!("creating {}", docs.display()))?;
    let mut notes = String::from("# Architecture\n\n");
    for line in 0..NOTES_LINES {
        let module = MODULES[line % MODULES.len()];
        let _ = writeln!(
            notes,
            "- {module}: stage {line} hands its buffer to the next stage after at most {} ms and keeps {} entries in flight.",
            mix(line as u64) % 900 + 10,
            mix(line as u64 ^ 7) % 90 + 2
        );
    }
    let path = cwd.join(NOTES);
    std::fs::write(&path, notes).with_context(|| format!("writing {}", path.display()))?;
    std::fs::write(
        cwd.join("AGENTS.md"),
        crate::bench::workload::INITIAL_AGENTS_MD,
    )
    .context("writing AGENTS.md")?;
    Ok(())
}

fn call(tool: &str, args: Value) -> ToolCallSpec {
    ToolCallSpec {
        tool: tool.to_owned(),
        args: match args {
            Value::Object(map) => map,
            _ => Map::new(),
        },
    }
}

fn turn(text: String, calls: Vec<ToolCallSpec>) -> TurnSpec {
    TurnSpec {
        text: Some(text),
        tool_calls: calls,
        ..TurnSpec::default()
    }
}

/// The exploration of one handler: a look at a file of its module that turns out a dead end,
/// a search over the project, then the defining file and a calling file read whole.
pub fn exploration(handler: &Handler) -> Vec<ToolCallSpec> {
    vec![
        call(
            "read",
            json!({ "path": module_file(handler.module, handler.dead_end()) }),
        ),
        call(
            "grep",
            json!({ "pattern": format!("{}|{}", handler.function(), handler.constant()), "path": "src" }),
        ),
        call("read", json!({ "path": handler.definition_file() })),
        call(
            "read",
            json!({ "path": module_file(handler.module, handler.used_in) }),
        ),
    ]
}

/// A child's answer: what the parent needs, not the files.
pub fn child_answer(handler: &Handler) -> String {
    format!(
        "`{}` is defined in {} next to `pub const {}{}\";` and is called from {} (route_{}).",
        handler.function(),
        handler.definition_file(),
        handler.marker(),
        handler.id,
        module_file(handler.module, handler.used_in),
        handler.used_in
    )
}

/// The delegation call for one handler.
pub fn delegation(handler: &Handler) -> ToolCallSpec {
    call(
        "task",
        json!({
            "description": format!("Find {}", handler.function()),
            "prompt": format!(
                "In this Rust project, find where `{}` is defined under src/{}/ and the value of \
                 its `{}` constant, and which file calls it. Answer with the defining file, the \
                 constant's line verbatim and the caller; nothing else.",
                handler.function(),
                handler.module,
                handler.constant()
            ),
        }),
    )
}

/// The registry edit for one handler: `{recall}` is the ID as the request holds it.
pub fn registry_edit(handler: &Handler) -> TurnSpec {
    TurnSpec {
        text: Some(format!("Registering {}.", handler.function())),
        tool_calls: vec![call(
            "edit",
            json!({
                "path": REGISTRY,
                "oldText": handler.todo_line(),
                "newText": handler.registered_line("{recall}"),
            }),
        )],
        recall: Some(RecallSpec {
            marker: handler.marker(),
            fetch: vec![call("read", json!({ "path": handler.definition_file() }))],
            fetch_text: Some(format!("Reading {} again.", handler.definition_file())),
        }),
        ..TurnSpec::default()
    }
}

/// The follow-up for one handler: its definition says where it is registered, and a check
/// that the registry and the note both hold.
pub fn follow_up(handler: &Handler) -> Vec<TurnSpec> {
    vec![
        turn(
            format!("Noting the registration next to {}.", handler.function()),
            vec![call(
                "edit",
                json!({
                    "path": handler.definition_file(),
                    "oldText": handler.doc_line(),
                    "newText": handler.registered_doc_line(),
                }),
            )],
        ),
        turn(
            format!("Checking {}.", handler.function()),
            vec![call(
                "bash",
                json!({ "command": format!(
                    "grep -n '{}' {REGISTRY} && grep -n 'registered in' {}",
                    handler.function(),
                    handler.definition_file()
                ) }),
            )],
        ),
    ]
}

/// The parent's closing answer.
pub const FINAL_TEXT: &str = "All four handlers are registered.";

/// The script: the parent reads the notes and the registry, then explores each handler itself
/// (`delegates = false`) or hands each to a child (whose turns follow its delegation call), then
/// edits the registry once per handler (with the follow-up of `shape`) and closes.
pub fn scenario(delegates: bool, shape: Shape) -> Scenario {
    let handlers = handlers();
    let mut turns = vec![TurnSpec {
        user: Some(prompt()),
        ..turn(
            "Reading the notes and the registry first.".to_owned(),
            vec![
                call("read", json!({ "path": NOTES })),
                call("read", json!({ "path": REGISTRY })),
            ],
        )
    }];
    for handler in &handlers {
        if delegates {
            turns.push(turn(
                format!("Handing the search for {} to a child.", handler.function()),
                vec![delegation(handler)],
            ));
            for step in exploration(handler) {
                turns.push(turn(format!("Checking with {}.", step.tool), vec![step]));
            }
            turns.push(turn(child_answer(handler), Vec::new()));
        } else {
            for step in exploration(handler) {
                turns.push(turn(format!("Checking with {}.", step.tool), vec![step]));
            }
        }
    }
    for handler in &handlers {
        turns.push(registry_edit(handler));
        if shape == Shape::FollowUp {
            turns.extend(follow_up(handler));
        }
    }
    turns.push(turn(FINAL_TEXT.to_owned(), Vec::new()));
    Scenario {
        name: format!("bench-{NAME}"),
        playback: Playback::Sequence,
        turns,
        ..Scenario::default()
    }
}

/// A strata run, with what its children did.
#[derive(Debug, Clone)]
pub struct StrataRun {
    /// The rows.
    pub run: Run,
    /// Requests the children made.
    pub child_requests: usize,
    /// How each child started (`fork`, `fresh`), in order.
    pub starts: Vec<String>,
    /// Why `auto` chose as it did, per child.
    pub reasons: Vec<String>,
    /// Why the task is not right, if it is not.
    pub failure: Option<String>,
    /// Its bill, the parent's and the children's.
    pub split: Split,
    /// The script's floor as this run's requests give it (meaningful for `fresh`).
    pub floor: Floor,
}

/// The workload as the bench's agent settings want it (strata's defaults on its window).
fn workload_settings() -> Result<Workload> {
    Workload::from_spec(
        WorkloadSpec {
            name: NAME.to_owned(),
            description: "delegation".to_owned(),
            context_window: CONTEXT_WINDOW,
            reserve_tokens: strata_compaction::DEFAULT_RESERVE_TOKENS,
            keep_recent_tokens: strata_compaction::DEFAULT_KEEP_RECENT_TOKENS,
            seconds_between_requests: SECONDS_BETWEEN_REQUESTS,
            files: FileSpec { count: 1, lines: 1 },
            start_tools: Vec::new(),
            phases: vec![crate::bench::workload::Phase {
                tasks: 1,
                requests_per_task: 1,
                tools: vec!["read".to_owned()],
                prompt: prompt(),
                idle_seconds_after_task: 0,
            }],
            events: Vec::new(),
            recall: None,
        },
        PathBuf::from(format!("xtask/src/bench/{NAME}.rs")),
    )
}

/// Plays the workload with strata in `mode` on `cache_model`.
pub fn run_strata(shape: Shape, mode: Mode, cache_model: CacheModel) -> Result<StrataRun> {
    let runtime = super::driver::runtime()?;
    runtime.block_on(play_strata(shape, mode, cache_model))
}

async fn play_strata(shape: Shape, mode: Mode, cache_model: CacheModel) -> Result<StrataRun> {
    let workload = workload_settings()?;
    let script = scenario(mode != Mode::None, shape);
    let scripted_turns = script.turns.len();
    let server = Arc::new(
        MockServer::start(MockConfig::new().with_scenario(script))
            .await
            .context("starting strata-mock")?,
    );
    let step = Duration::from_secs(SECONDS_BETWEEN_REQUESTS);
    let clock_server = Arc::clone(&server);
    let clock = Arc::new(move || {
        clock_server.advance_clock(step);
    });
    let endpoint = endpoint(cache_model, CONTEXT_WINDOW, clock)?;
    let (increment, min_tokens) = cache_model.granularity(&endpoint.capabilities);
    let ideal = IdealCache::new(wire(cache_model).1, increment, min_tokens);
    let mut rows = Rows::new(&endpoint.model.id, endpoint.model.prices, ideal);
    rows.scripted_turns = Some(scripted_turns);

    let cwd = tempfile::tempdir().context("creating the working directory")?;
    let home = tempfile::tempdir().context("creating the session directory")?;
    seed(cwd.path())?;
    let session = Session::create(
        home.path().join("session.jsonl"),
        &cwd.path().display().to_string(),
        WriteOptions::default(),
    )
    .context("creating the session")?;
    let config = crate::bench::driver::agent_config(
        &workload,
        Strategy::Strata,
        cache_model,
        &endpoint,
        &server,
        cwd.path(),
    );
    let tools = tool_set(&BUILTIN_TOOLS, &[]);
    let mut parent_tools = tools.clone();
    let mut children = None;
    if let Some(spawn_mode) = mode.spawn_mode() {
        let subagents = Subagents::new(
            ParentSetup {
                provider: endpoint.provider.clone(),
                config: config.clone(),
                tools,
                project_skills: true,
                // The bench's parent runs without a permission gate: so do its children.
                rules: Default::default(),
            },
            Loaded::default(),
            SubagentSettings {
                mode: spawn_mode,
                // One child at a time: the script's order of requests is then fixed.
                max_parallel: 1,
                ..SubagentSettings::default()
            },
        );
        parent_tools.insert(subagents.tool());
        children = Some(subagents.subscribe());
    }
    let mut agent = Agent::new(session, endpoint.provider.clone(), parent_tools, config);
    let summary = agent.prompt(prompt()).await.with_context(|| {
        format!(
            "{} / {} / {}",
            shape.name(),
            cache_model.name(),
            mode.name()
        )
    })?;
    let records = server.requests();
    let prices = endpoint.model.prices;
    let owners = if mode == Mode::None {
        Vec::new()
    } else {
        child_of_turns(shape)
    };
    let split = Split::of(&records, &endpoint.model.id, &owners, &prices);
    let floor = Floor::of(&records, &endpoint.model.id, &owners, &prices);
    rows.take(records)?;
    if !rows.left.refused.is_empty() {
        bail!("requests were refused: {:?}", rows.left.refused);
    }

    let mut child_requests = 0;
    let mut starts = Vec::new();
    let mut reasons = Vec::new();
    if let Some(mut events) = children {
        while let Ok(event) = events.try_recv() {
            match event.kind {
                ChildEventKind::Started { start, reason, .. } => {
                    starts.push(start.to_owned());
                    reasons.push(reason);
                }
                ChildEventKind::Agent(AgentEvent::Usage { .. }) => child_requests += 1,
                _ => {}
            }
        }
    }
    let failure = task_failure(cwd.path(), shape, &summary.reason, &summary.final_text);
    let run = Run {
        // The workload never nears a compaction.
        prepared_compactions: 0,
        harness: "strata".to_owned(),
        strategy: mode.name().to_owned(),
        workload: shape.name().to_owned(),
        cache_model: cache_model.name().to_owned(),
        requests: rows.rows,
        tasks_completed: usize::from(failure.is_none()),
        tasks_total: 1,
        compactions: 0,
        restarts: Vec::new(),
    };
    Ok(StrataRun {
        run,
        child_requests,
        starts,
        reasons,
        failure,
        split,
        floor,
    })
}

/// Why the run did not do the task, if it did not: it must end with the closing answer and
/// the registry as [`expected_registry`] (and, with the follow-up, every definition noted).
pub fn task_failure(cwd: &Path, shape: Shape, reason: &str, final_text: &str) -> Option<String> {
    if reason != "stop" || final_text != FINAL_TEXT {
        return Some(format!("ended with `{reason}`: {final_text:?}"));
    }
    let path = cwd.join(REGISTRY);
    match std::fs::read_to_string(&path) {
        Ok(text) if text == expected_registry() => {}
        Ok(text) => return Some(format!("{REGISTRY} is {text:?}")),
        Err(error) => return Some(format!("{REGISTRY} unreadable: {error}")),
    }
    if shape == Shape::FollowUp {
        for handler in handlers() {
            let file = handler.definition_file();
            match std::fs::read_to_string(cwd.join(&file)) {
                Ok(text) if text.contains(&handler.registered_doc_line()) => {}
                Ok(_) => return Some(format!("{file} lacks the registration note")),
                Err(error) => return Some(format!("{file} unreadable: {error}")),
            }
        }
    }
    None
}

/// What to run.
#[derive(Debug, Clone, PartialEq)]
pub struct Options {
    /// Cache models.
    pub cache_models: Vec<CacheModel>,
    /// Where the document goes, relative to the workspace.
    pub out: PathBuf,
    /// The command line.
    pub command: String,
    /// Run the peers.
    pub peers: bool,
    /// Only these peers (`--peer NAME`); every one when empty.
    pub only_peers: Vec<PeerHarness>,
}

impl Options {
    /// Parses the arguments after `bench`.
    pub fn parse(args: &[String]) -> Result<Self> {
        let mut cache_models = Vec::new();
        let mut out = PathBuf::from("docs/bench-delegate.md");
        let mut peers = true;
        let mut only_peers = Vec::new();
        let mut iter = args.iter();
        while let Some(arg) = iter.next() {
            match arg.as_str() {
                "--only" => {
                    let name = iter.next().context("--only needs a workload")?;
                    if name != NAME {
                        bail!("`--only {NAME}` runs alone (not with `{name}`)");
                    }
                }
                "--cache" => {
                    let name = iter.next().context("--cache needs a cache model")?;
                    cache_models.push(
                        CacheModel::parse(name)
                            .with_context(|| format!("unknown cache model `{name}`"))?,
                    );
                }
                "--out" => out = PathBuf::from(iter.next().context("--out needs a file")?),
                "--no-peers" => peers = false,
                "--peer" => {
                    let name = iter.next().context("--peer needs a harness")?;
                    only_peers.push(
                        PeerHarness::ALL
                            .into_iter()
                            .find(|harness| harness.name().starts_with(name.as_str()))
                            .with_context(|| {
                                format!("unknown peer `{name}` (known: claude-code, pi)")
                            })?,
                    );
                }
                "--debug" | "--no-speed" => {}
                other => bail!("unknown option `{other}` for `--only {NAME}`\n\n{USAGE}"),
            }
        }
        if cache_models.is_empty() {
            cache_models = vec![
                CacheModel::AnthropicFiveMinutes,
                CacheModel::OpenAiAutomatic,
                CacheModel::DeepSeekDisk,
            ];
        }
        let command = std::iter::once("cargo xtask bench".to_owned())
            .chain(args.iter().cloned())
            .collect::<Vec<_>>()
            .join(" ");
        Ok(Self {
            cache_models,
            out,
            command,
            peers,
            only_peers,
        })
    }
}

/// Runs every mode on every cache model and writes the document.
pub fn main(root: &Path, args: &[String]) -> Result<()> {
    let options = Options::parse(args)?;
    let started = Instant::now();
    let mut runs = Vec::new();
    for (shape, cache_model) in Shape::ALL.into_iter().flat_map(|shape| {
        options
            .cache_models
            .iter()
            .map(move |model| (shape, *model))
    }) {
        for mode in Mode::ALL {
            let run_started = Instant::now();
            let run = run_strata(shape, mode, cache_model).with_context(|| {
                format!(
                    "{} / {} / {}",
                    shape.name(),
                    cache_model.name(),
                    mode.name()
                )
            })?;
            let totals = run.run.totals();
            eprintln!(
                "{}: {} requests ({} by children, starts {:?}), ${:.4}, task {}, {:.1}s",
                run.run.label(),
                totals.requests,
                run.child_requests,
                run.starts,
                totals.cost,
                run.failure.as_deref().unwrap_or("right"),
                run_started.elapsed().as_secs_f64()
            );
            runs.push(run);
        }
    }
    let mut peers = Vec::new();
    if options.peers {
        for harness in PeerHarness::ALL
            .into_iter()
            .filter(|harness| options.only_peers.is_empty() || options.only_peers.contains(harness))
        {
            for (shape, cache_model) in Shape::ALL.into_iter().flat_map(|shape| {
                options
                    .cache_models
                    .iter()
                    .filter(|model| harness.speaks(**model))
                    .map(move |model| (shape, *model))
            }) {
                for start in harness.starts() {
                    let run_started = Instant::now();
                    match run_peer(harness, shape, cache_model, start) {
                        Ok((run, failure, split)) => {
                            let totals = run.totals();
                            eprintln!(
                                "{} / {}: {} requests, ${:.4}, task {}, {:.1}s",
                                run.harness,
                                run.label(),
                                totals.requests,
                                totals.cost,
                                failure.as_deref().unwrap_or("right"),
                                run_started.elapsed().as_secs_f64()
                            );
                            peers.push(PeerRow::measured(&run, failure.as_deref(), split));
                        }
                        Err(error) => {
                            eprintln!(
                                "{} / {} / {} {start} did not run: {error:#}",
                                shape.name(),
                                cache_model.name(),
                                harness.name()
                            );
                        }
                    }
                }
            }
        }
    }
    let out = root.join(&options.out);
    if peers.is_empty() {
        // The peers could not run here: the rows the document being replaced measured stay,
        // marked as carried.
        peers = std::fs::read_to_string(&out)
            .map(|previous| PeerRow::carried_from(&previous))
            .unwrap_or_default();
    }
    let document = document(&options, &runs, &peers, started.elapsed().as_secs_f64());
    std::fs::write(&out, document).with_context(|| format!("writing {}", out.display()))?;
    println!("wrote {}", options.out.display());
    Ok(())
}

/// The cost of `mode` on `workload` and `cache_model`, if it ran.
fn cost_of(runs: &[StrataRun], workload: &str, cache_model: &str, mode: Mode) -> Option<f64> {
    runs.iter()
        .find(|r| {
            r.run.workload == workload
                && r.run.cache_model == cache_model
                && r.run.strategy == mode.name()
        })
        .map(|r| r.run.totals().cost)
}

/// The table: one row per run.
pub fn table(runs: &[StrataRun]) -> String {
    let mut out = String::from(
        "| workload | cache | harness / mode | cost (USD) | × auto | output (USD) | requests | by children | re-reads | children started | hit rate | written | task right |\n\
         |---|---|---|---:|---:|---:|---:|---:|---:|---|---:|---:|---|\n",
    );
    for run in runs {
        let totals = run.run.totals();
        let auto = cost_of(runs, &run.run.workload, &run.run.cache_model, Mode::Auto);
        let ratio = auto.filter(|cost| *cost > 0.0).map_or_else(
            || "–".to_owned(),
            |cost| format!("{:.2}x", totals.cost / cost),
        );
        let started = if run.starts.is_empty() {
            "–".to_owned()
        } else {
            summarize_starts(&run.starts)
        };
        let _ = writeln!(
            out,
            "| {} | {} | strata {} | {:.4} | {} | {:.4} | {} | {} | {} | {} | {} | {} | {} |",
            run.run.workload,
            run.run.cache_model,
            run.run.strategy,
            totals.cost,
            ratio,
            totals.bill.output,
            totals.requests,
            run.child_requests,
            totals.refetches,
            started,
            crate::bench::table::percent(totals.hit_rate()),
            crate::bench::table::thousands(totals.cache_write),
            if run.failure.is_none() { "yes" } else { "no" },
        );
    }
    out
}

/// `["fork", "fork", "fresh"]` → `2 fork, 1 fresh`.
fn summarize_starts(starts: &[String]) -> String {
    let forks = starts.iter().filter(|s| *s == "fork").count();
    let fresh = starts.len() - forks;
    match (forks, fresh) {
        (0, n) => format!("{n} fresh"),
        (n, 0) => format!("{n} fork"),
        (f, n) => format!("{f} fork, {n} fresh"),
    }
}

/// Within this share of the cheapest, `auto` counts as tied with it: two runs making the same
/// starts differ from run to run by the identifiers they carry (session and call ids), which
/// can move a cache block boundary (DeepSeek's 64 tokens: ±0.5% of its small totals here).
pub const TIE: f64 = 0.01;

/// A verdict on one workload and cache model.
#[derive(Debug, Clone, PartialEq)]
pub struct Verdict {
    /// The workload.
    pub workload: String,
    /// The cache model.
    pub cache_model: String,
    /// Whether `auto` costs no more than `fresh` and `fork` (within [`TIE`]).
    pub cheapest_start: bool,
    /// Whether `auto` costs no more than every mode, `none` included (within [`TIE`]).
    pub cheapest: bool,
    /// One line for the document.
    pub text: String,
}

/// Per workload and cache model: whether `auto` is the cheapest of strata's modes.
pub fn verdicts(runs: &[StrataRun]) -> Vec<Verdict> {
    let mut keys: Vec<(String, String)> = Vec::new();
    for run in runs {
        let key = (run.run.workload.clone(), run.run.cache_model.clone());
        if !keys.contains(&key) {
            keys.push(key);
        }
    }
    keys.into_iter()
        .filter_map(|(workload, cache)| {
            let auto = cost_of(runs, &workload, &cache, Mode::Auto)?;
            let cost = |mode| cost_of(runs, &workload, &cache, mode);
            let within = |other: Option<f64>| other.is_none_or(|o| auto <= o * (1.0 + TIE));
            let cheapest_start = within(cost(Mode::Fresh)) && within(cost(Mode::Fork));
            let cheapest = cheapest_start && within(cost(Mode::None));
            let others: Vec<String> = [Mode::None, Mode::Fresh, Mode::Fork]
                .into_iter()
                .filter_map(|mode| {
                    cost(mode).map(|c| format!("{} ${c:.4} ({:.2}x)", mode.name(), c / auto))
                })
                .collect();
            let text = format!(
                "{workload} / {cache}: auto ${auto:.4} {} — {}",
                match (cheapest_start, cheapest) {
                    (true, true) => "is the cheapest of strata's modes".to_owned(),
                    (true, false) =>
                        "is the cheapest way to delegate, but not delegating is cheaper".to_owned(),
                    _ => "is NOT the cheapest way to delegate".to_owned(),
                },
                others.join(", ")
            );
            Some(Verdict {
                workload,
                cache_model: cache,
                cheapest_start,
                cheapest,
                text,
            })
        })
        .collect()
}

fn document(options: &Options, runs: &[StrataRun], peers: &[PeerRow], seconds: f64) -> String {
    let mut out = String::from("# Benchmark: delegation (`delegate`)\n\n");
    let _ = writeln!(
        out,
        "Generated by `{}` ({seconds:.0} s). Every figure is strata-mock's cache simulation of the \
         requests the harness really sent, priced at the capability table's row for the model \
         (see docs/benchmarks.md for the cache models); costs include the output.\n",
        options.command
    );
    out.push_str(
        "## The work\n\n\
         A generated Rust project has four modules (`storage`, `network`, `render`, `billing`) \
         of six files of 220 lines each (about 7k tokens a file). The user asks the parent to \
         register the four handlers `handle_<module>` in `src/registry.rs`, each with the value \
         of its `<MODULE>_ID` constant, which sits next to the handler in one file of its \
         module. The parent reads `docs/architecture.md` and the registry, then, per handler, \
         explores: reads a file of the module that turns out a dead end, searches the project, \
         and reads the defining file and a calling file whole — itself (`none`), or in a child \
         through the `task` tool, which answers in one line with the defining file, the \
         constant's line and the caller. Then the parent edits the registry once per handler; \
         in `delegate` it also notes the registration above each handler's definition and \
         checks both edits with `grep` (the parent works on after the exploration, as a coding \
         task does), in `delegate-lean` it closes right after the registry edits. The model is \
         a script (strata-mock's sequence playback), the same calls in every mode; children run \
         one at a time so the order of requests is fixed.\n\n\
         **Task right** means the run ended with the scripted answer, `src/registry.rs` holds \
         every handler with its right ID and (in `delegate`) every definition carries its note. \
         Each registry edit is a recall turn: strata-mock fills the ID from what the parent's \
         request holds (the file it read, or the child's answer) and re-reads the defining \
         file first when the request no longer holds it (strata's masking of old tool outputs \
         drops them in `none`) — such re-reads are counted in `re-reads`.\n\n\
         Modes: `none` has no delegation tool; `fresh` and `fork` force every child's start; \
         `auto` is strata-subagents' default, choosing per child by the estimate in \
         `crates/strata-subagents/src/pricing.rs` (default settings: 6 expected requests per \
         child; these children make 5). Requests counts include the children's.\n\n",
    );
    out.push_str("## Results\n\n");
    out.push_str(&table(runs));
    out.push('\n');
    out.push_str(
        "### Where the bill goes\n\n\
         Each run's cost (USD) split between the parent's requests and its children's (by the \
         scripted turn each request played), and within each between cache writes, cache reads, \
         uncached input and output.\n\n",
    );
    out.push_str(BILL_HEAD);
    for run in runs {
        bill_row(
            &mut out,
            &run.run.workload,
            &run.run.cache_model,
            &format!("strata {}", run.run.strategy),
            &run.split,
        );
    }
    for peer in peers {
        if let Some(split) = &peer.split {
            bill_row(
                &mut out,
                &peer.workload,
                &peer.cache_model,
                &format!("{} {}", peer.harness, peer.start),
                split,
            );
        }
    }
    if peers.iter().any(|peer| peer.split.is_none()) {
        out.push_str(
            "\nThe peers' rows carried from an earlier document (below) have no split: it is \
             made from each request's record, which the carried rows do not keep.\n",
        );
    }
    out.push('\n');
    out.push_str("## Goal: `auto` is the cheapest of strata's modes on every cache\n\n");
    for verdict in verdicts(runs) {
        let _ = writeln!(out, "- {}", verdict.text);
    }
    out.push_str(
        "\n`auto` chooses how a child starts, not whether the model delegates: where `none` is \
         cheaper, delegating at all was the dearer choice for that cache (DeepSeek reads its \
         cache at about 2% of a miss, so carrying the explorations in the parent costs little, \
         and the children's own writes and extra requests outweigh it).\n\n",
    );
    out.push_str("## Peers: Claude Code's subagents, Pi 1.6 with pi-subagents\n\n");
    out.push_str(PEERS_DRIVEN);
    if peers.is_empty() {
        out.push_str(
            "Not run for this document (`--no-peers`, or the install was absent: see the \
             command's output). The goal's second half is not measured here.\n\n",
        );
    } else {
        if peers.iter().any(|peer| peer.carried) {
            out.push_str(
                "The peers could not be run where this document was generated (no install of \
                 `cargo xtask bench-peers --install`): their rows below are carried unchanged \
                 from the document this one replaced, measured against the same script and \
                 mock; the ratios to `auto` are recomputed against this run's `auto`.\n\n",
            );
        }
        out.push_str(&peer_table(runs, peers));
        out.push('\n');
        // The parent's first request is its system prompt, its tools and the user's prompt:
        // what each harness sends around the same work.
        let sizes: Vec<String> = runs
            .iter()
            .filter(|r| r.run.strategy == Mode::Auto.name())
            .take(1)
            .filter_map(|r| {
                r.run
                    .requests
                    .first()
                    .map(|row| format!("strata {}", crate::bench::table::thousands(row.input)))
            })
            .chain(PeerHarness::ALL.into_iter().filter_map(|harness| {
                peers
                    .iter()
                    .filter(|p| p.harness == harness.name())
                    .find_map(|p| p.first_input)
                    .map(|input| {
                        format!(
                            "{} {}",
                            harness.name(),
                            crate::bench::table::thousands(input)
                        )
                    })
            }))
            .collect();
        let _ = writeln!(out, "{FIRST_REQUEST_SIZES}{}.\n", sizes.join(", "));
        out.push_str("## Goal: `auto` at most 0.6x the fresh-child peers\n\n");
        let verdicts = peer_verdicts(runs, peers);
        for (_, text) in &verdicts {
            let _ = writeln!(out, "- {text}");
        }
        let met = verdicts.iter().filter(|(met, _)| *met).count();
        let _ = writeln!(
            out,
            "\nMet in {met} of {} comparisons. {}",
            verdicts.len(),
            PEER_GOAL_READING
        );
        // How much more than `auto` the fresh-child peers spend, to set against the 1/0.6.
        let more: Vec<f64> = peers
            .iter()
            .filter(|peer| peer.start == "fresh")
            .filter_map(|peer| {
                let auto = cost_of(runs, &peer.workload, &peer.cache_model, Mode::Auto)?;
                Some(peer.cost / auto - 1.0)
            })
            .collect();
        if let (Some(low), Some(high)) = (
            more.iter().copied().reduce(f64::min),
            more.iter().copied().reduce(f64::max),
        ) {
            let _ = writeln!(
                out,
                "Most of every harness's cost here is the same work: the children's twelve file \
                 reads (three per handler, about 7k tokens each, some 86k tokens), which every \
                 harness writes into its cache once however its children start. The goal asks \
                 a fresh-child peer to spend {:.0}% more than `auto`; on this script the peers' \
                 own overheads come to {:.0}% to {:.0}% more.",
                (1.0 / PEER_GOAL - 1.0) * 100.0,
                low * 100.0,
                high * 100.0
            );
        }
        out.push('\n');
    }
    out.push_str(&floor_section(runs, peers));
    out.push_str("### Why `auto` chose what it did\n\n");
    for run in runs.iter().filter(|r| r.run.strategy == Mode::Auto.name()) {
        if let Some(reason) = run.reasons.first() {
            let _ = writeln!(
                out,
                "- {} / {} (first child): {reason}",
                run.run.workload, run.run.cache_model
            );
        }
    }
    out.push('\n');
    for run in runs.iter().filter(|r| r.failure.is_some()) {
        let _ = writeln!(
            out,
            "- {} / {} / {}: task not right: {}",
            run.run.workload,
            run.run.cache_model,
            run.run.strategy,
            run.failure.as_deref().unwrap_or_default()
        );
    }
    out
}

/// The floor per workload and cache, against `auto` and against the goal's 0.6x of each
/// fresh-child peer.
fn floor_section(runs: &[StrataRun], peers: &[PeerRow]) -> String {
    let mut out = String::from(
        "## The floor: the least any harness could pay for this script\n\n\
         Every harness plays the same calls with the same answers, so some of the bill is the \
         script's own. The floor counts only that: each request carries the conversation it \
         continues and nothing else — the parent's, or its child's from the task on (a fresh \
         child's, the smallest a child's can be) — with no system prompt and no tools; it reads \
         all that the previous request of its conversation sent and writes only what is new, so \
         the prompt, each task, each tool output and each answer is written once at the write \
         price (the input price where the provider bills no write premium), except what a \
         conversation's last request adds, which nothing reads again and is paid at the cheaper \
         of writing and plain input; the output is the script's. Dropping content a \
         conversation has already sent (masking) is left out: it pays off only when the harness \
         knows the content is no longer needed, which here would be reading the script. The conversations' tokens are those of strata's `fresh` run on that cache \
         (its tool outputs as its tools render them). `with head` adds the smallest head here, \
         strata's tools and system chapters, written once and read by every other request.\n\n\
         `last tails written` is what writing the tails sent but not read again costs over \
         sending them: a harness cannot know a request is its conversation's last (a child may \
         always call another tool), and not writing a tail that is read again costs its input \
         price once more, so strata writes every tail and pays this. `auto uncached` is the \
         input `auto` paid neither read nor written: where a cache keeps whole blocks (OpenAI \
         128 tokens, DeepSeek 64) each request pays the part past its last whole block as \
         input, and the next request pays it again.\n\n\
         | workload | cache | requests | written | sent, not read again | read | output | floor (USD) | with head (USD) | strata auto (USD) | auto ÷ floor with head | auto − floor with head | last tails written | auto uncached |\n\
         |---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n",
    );
    let mut lines = Vec::new();
    let mut below = 0;
    for fresh in runs.iter().filter(|r| r.run.strategy == Mode::Fresh.name()) {
        let (workload, cache) = (&fresh.run.workload, &fresh.run.cache_model);
        let floor = &fresh.floor;
        let auto = cost_of(runs, workload, cache, Mode::Auto);
        let _ = writeln!(
            out,
            "| {workload} | {cache} | {} | {} | {} | {} | {} | {:.4} | {:.4} | {} | {} | {} | {:.4} | {} |",
            floor.requests,
            crate::bench::table::thousands(floor.written),
            crate::bench::table::thousands(floor.unread),
            crate::bench::table::thousands(floor.read),
            crate::bench::table::thousands(floor.output),
            floor.cost,
            floor.cost_with_head,
            auto.map_or_else(|| "–".to_owned(), |a| format!("{a:.4}")),
            auto.map_or_else(
                || "–".to_owned(),
                |a| format!("{:.2}x", a / floor.cost_with_head)
            ),
            auto.map_or_else(
                || "–".to_owned(),
                |a| format!("{:.4}", a - floor.cost_with_head)
            ),
            floor.tail_premium,
            runs.iter()
                .find(|r| {
                    &r.run.workload == workload
                        && &r.run.cache_model == cache
                        && r.run.strategy == Mode::Auto.name()
                })
                .map_or_else(
                    || "–".to_owned(),
                    |r| format!("{:.4}", r.split.parent.uncached + r.split.children.uncached)
                ),
        );
        for peer in peers
            .iter()
            .filter(|p| p.start == "fresh" && &p.workload == workload && &p.cache_model == cache)
        {
            let target = peer.cost * PEER_GOAL;
            below += usize::from(target < floor.cost);
            lines.push(format!(
                "- {workload} / {cache}: {PEER_GOAL}x {} fresh ${:.4} is ${target:.4}, {} the \
                 floor ${:.4} ({:.2}x it; with head ${:.4}, {:.2}x)",
                peer.harness,
                peer.cost,
                if target >= floor.cost_with_head {
                    "above"
                } else if target >= floor.cost {
                    "above only the headless"
                } else {
                    "BELOW"
                },
                floor.cost,
                target / floor.cost,
                floor.cost_with_head,
                target / floor.cost_with_head,
            ));
        }
    }
    out.push('\n');
    if let Some(fresh) = runs.iter().find(|r| r.run.strategy == Mode::Fresh.name()) {
        let _ = writeln!(
            out,
            "Savings looked for in strata's own requests, none taken: the head (strata's tools \
             and system chapters, {} tokens) costs ${:.4} over the whole {} / {} run, every \
             child reading the parent's cached copy; a child with fewer tools would write a head \
             of its own, which costs more than the reads it saves. strata writes each new tail \
             once (its `written` above is the floor's written and last tails plus the head), so \
             no breakpoint moves pay. A child's dead-end read could be masked after it, but only \
             a harness knowing it a dead end could drop it, which here means reading the \
             script. The child's answer reaches the parent as the tool result's text alone.\n",
            crate::bench::table::thousands(fresh.floor.head),
            fresh.floor.cost_with_head - fresh.floor.cost,
            fresh.run.workload,
            fresh.run.cache_model,
        );
    }
    if !lines.is_empty() {
        out.push_str(
            "The goal's target for each fresh-child peer against the floor: a target below the \
             floor cannot be met by any harness on this script; above it, the gap between \
             `auto` and the target is overhead a harness could in principle shed.\n\n",
        );
        out.push_str(&lines.join("\n"));
        let _ = writeln!(
            out,
            "\n\n{below} of the {} targets are below even the headless floor{}.\n",
            lines.len(),
            if below == lines.len() {
                ": on this script no harness, however it builds its requests, can cost 0.6x \
                 of these peers, and `auto` stands within a few percent of the floor with \
                 strata's own head"
            } else {
                ""
            }
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_project_holds_each_handler_where_the_script_looks() {
        let dir = tempfile::tempdir().unwrap();
        seed(dir.path()).unwrap();
        for handler in handlers() {
            let text = std::fs::read_to_string(dir.path().join(handler.definition_file())).unwrap();
            assert!(text.contains(&format!("{}{}\"", handler.marker(), handler.id)));
            assert!(text.contains(&format!("pub fn {}(", handler.function())));
            let registry = std::fs::read_to_string(dir.path().join(REGISTRY)).unwrap();
            assert!(registry.contains(&handler.todo_line()));
            // The child's answer carries the marker and the value the edit needs.
            let marker = RecallSpec {
                marker: handler.marker(),
                fetch: Vec::new(),
                fetch_text: None,
            };
            assert_eq!(
                marker.find(&child_answer(&handler)),
                Some(handler.id.clone())
            );
            assert_eq!(marker.find(&text), Some(handler.id.clone()));
        }
        assert_ne!(
            std::fs::read_to_string(dir.path().join(REGISTRY)).unwrap(),
            expected_registry()
        );
    }

    #[test]
    fn each_peer_delegates_through_its_own_tool_in_the_foreground() {
        let delegations = |harness, start| -> Vec<ToolCallSpec> {
            peer_scenario(harness, Shape::Lean, "m", start)
                .turns
                .iter()
                .flat_map(|turn| turn.tool_calls.clone())
                .filter(|call| call.tool == CLAUDE_TASK_TOOL || call.tool == PI_TASK_TOOL)
                .collect()
        };
        for (start, agent_type) in [("fresh", "general-purpose"), ("fork", "fork")] {
            let calls = delegations(PeerHarness::ClaudeCode, start);
            assert_eq!(calls.len(), MODULES.len());
            assert!(calls.iter().all(|call| call.tool == CLAUDE_TASK_TOOL
                && call.args["subagent_type"] == agent_type
                && call.args["run_in_background"] == false
                && call.args["prompt"].as_str().is_some()));
            let calls = delegations(PeerHarness::PiSubagents, start);
            assert_eq!(calls.len(), MODULES.len());
            assert!(calls.iter().all(|call| call.tool == PI_TASK_TOOL
                && call.args["agent"] == PI_AGENT
                && call.args["context"] == start
                && call.args["async"] == false
                && call.args["task"].as_str().is_some()));
        }
        // Neither parent has a grep tool on: the search is a shell command.
        let script = peer_scenario(PeerHarness::PiSubagents, Shape::Lean, "m", "fresh");
        assert!(
            script
                .turns
                .iter()
                .all(|turn| turn.tool_calls.iter().all(|c| c.tool != "grep"))
        );
        assert_eq!(script.model.as_deref(), Some("m"));
        assert!(!PeerHarness::ClaudeCode.speaks(CacheModel::OpenAiAutomatic));
        assert!(PeerHarness::PiSubagents.speaks(CacheModel::DeepSeekDisk));
    }

    #[test]
    fn both_scripts_make_the_same_edits() {
        let alone = scenario(false, Shape::FollowUp);
        let delegating = scenario(true, Shape::FollowUp);
        let edits = |s: &Scenario| -> Vec<TurnSpec> {
            s.turns
                .iter()
                .filter(|t| t.recall.is_some())
                .cloned()
                .collect()
        };
        assert_eq!(edits(&alone), edits(&delegating));
        assert_eq!(edits(&alone).len(), MODULES.len());
        // The delegating script adds one call and one answer per handler.
        assert_eq!(
            delegating.turns.len(),
            alone.turns.len() + 2 * MODULES.len()
        );
    }
}
