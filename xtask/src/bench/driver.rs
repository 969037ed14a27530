//! Plays a workload through the real agent loop (strata-agent `Agent`) against an in-process
//! strata-mock, with real tools in a temporary directory, and turns the mock's records into
//! [`Run`] rows.

use std::collections::HashSet;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use strata_agent::{Agent, AgentConfig, AgentEvent};
use strata_compaction::CompactionSettings;
use strata_mock::{MockConfig, MockServer, Scenario};
use strata_provider::{ApiKey, StreamOptions};
use strata_session::{EntryId, Session, WriteOptions};

use crate::bench::ideal::IdealCache;
use crate::bench::model::{CacheModel, Endpoint, endpoint};
use crate::bench::peers::wire;
use crate::bench::run::{
    MissCause, RequestKind, RequestRow, Run, TakenRecords, floor_cost, record_bill,
};
use crate::bench::strategy::Strategy;
use crate::bench::tools::tool_set;
use crate::bench::workload::{BUILTIN_TOOLS, Workload, note_failure};

/// Text only the summary requests carry (strata's and Pi's summary instructions).
const SUMMARY_MARKERS: [&str; 3] = [
    "Use exactly this format:",
    "Rules for the update:",
    "Summarize it so the kept remainder of the turn makes sense",
];

/// Runs `workload` with `strategy` on `cache_model`.
pub fn run(workload: &Workload, strategy: Strategy, cache_model: CacheModel) -> Result<Run> {
    run_with_usage(workload, strategy, cache_model).map(|(run, _)| run)
}

/// The usage the agent itself reported (its `usage` and `compaction_end` events), to check
/// against the provider's accounting.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AgentUsage {
    /// Requests reported.
    pub requests: usize,
    /// Uncached input.
    pub uncached: u64,
    /// Read from the cache.
    pub cache_read: u64,
    /// Written to the cache.
    pub cache_write: u64,
    /// Output.
    pub output: u64,
}

impl AgentUsage {
    fn add(&mut self, usage: &strata_provider::Usage) {
        self.requests += 1;
        self.uncached += usage.input;
        self.cache_read += usage.cache_read;
        self.cache_write += usage.cache_write();
        self.output += usage.output;
    }
}

/// [`run`], with the usage the agent reported for its turns and compactions.
pub fn run_with_usage(
    workload: &Workload,
    strategy: Strategy,
    cache_model: CacheModel,
) -> Result<(Run, AgentUsage)> {
    runtime()?.block_on(play(workload, strategy, cache_model))
}

/// The runtime every bench plays on: two workers, as on the CI machine.
pub(crate) fn runtime() -> Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("starting the runtime")
}

/// Whether the linked strata-mock plays `playback = "sequence"` scenarios.
pub fn mock_plays_sequences() -> bool {
    Scenario::from_toml("playback = \"sequence\"\n", "probe").is_ok()
}

/// The agent settings of a bench run: `strategy`'s layout, compaction (on the workload's
/// limits) and cache, requests to `server` with the bench's key, tools run in `cwd`. The
/// scripted runs and the MCP runs share it, so their strata rows differ only in the work.
pub(crate) fn agent_config(
    workload: &Workload,
    strategy: Strategy,
    cache_model: CacheModel,
    endpoint: &Endpoint,
    server: &MockServer,
    cwd: &Path,
) -> AgentConfig {
    let base = CompactionSettings {
        reserve_tokens: workload.spec.reserve_tokens,
        keep_recent_tokens: workload.spec.keep_recent_tokens,
        ..CompactionSettings::default()
    };
    AgentConfig {
        cwd: cwd.to_path_buf(),
        model: endpoint.model.clone(),
        capabilities: strategy.capabilities(&endpoint.capabilities),
        api: endpoint.api.clone(),
        max_tokens: Some(4096),
        global_dir: None,
        custom_intro: None,
        append_system_prompt: None,
        stream: StreamOptions {
            base_url: Some(server.base_url()),
            api_key: Some(ApiKey::new("bench-key")),
            ..StreamOptions::default()
        },
        render_policy: strategy.render_policy(),
        compaction: strategy.compaction(&base),
        summary_model: None,
        cache: strategy.cache(cache_model),
        tool_settings: strata_tools::ToolSettings::default(),
    }
}

async fn play(
    workload: &Workload,
    strategy: Strategy,
    cache_model: CacheModel,
) -> Result<(Run, AgentUsage)> {
    let sequence = mock_plays_sequences();
    let needs_sequence = workload.tasks.len() > 1
        || workload
            .tasks
            .iter()
            .any(|task| task.events.iter().any(|e| e.branch_back_tasks.is_some()));
    if needs_sequence && !sequence {
        bail!(
            "workload {} needs strata-mock's sequence playback (`playback = \"sequence\"`), which \
             this build of strata-mock does not have yet",
            workload.spec.name
        );
    }
    let scenario_text = workload.scenario_toml(sequence)?;
    let scenario = Scenario::from_toml(&scenario_text, &workload.source.display().to_string())
        .context("loading the generated scenario")?;
    let server = Arc::new(
        MockServer::start(MockConfig::new().with_scenario(scenario))
            .await
            .context("starting strata-mock")?,
    );
    let step = Duration::from_secs(workload.spec.seconds_between_requests);
    let clock_server = Arc::clone(&server);
    let clock = Arc::new(move || {
        clock_server.advance_clock(step);
    });
    let endpoint = endpoint(cache_model, workload.spec.context_window, clock)?;
    let prices = endpoint.model.prices;
    let shape = wire(cache_model).1;
    let (increment, min_tokens) = cache_model.granularity(&endpoint.capabilities);
    let mut ideal = IdealCache::new(shape, increment, min_tokens);

    let cwd = tempfile::tempdir().context("creating the working directory")?;
    let home = tempfile::tempdir().context("creating the session directory")?;
    workload.seed(cwd.path())?;
    let session = Session::create(
        home.path().join("session.jsonl"),
        &cwd.path().display().to_string(),
        WriteOptions::default(),
    )
    .context("creating the session")?;
    let mut builtins: Vec<&str> = BUILTIN_TOOLS.to_vec();
    let mut bench_tools: Vec<String> = workload.spec.start_tools.clone();
    let config = agent_config(
        workload,
        strategy,
        cache_model,
        &endpoint,
        &server,
        cwd.path(),
    );
    let session_path = home.path().join("session.jsonl");
    let mut agent = Agent::new(
        session,
        endpoint.provider.clone(),
        tool_set(&builtins, &bench_tools),
        config.clone(),
    );
    let play = crate::bench::plays::for_strategy(strategy, cwd.path())?;
    crate::bench::plays::attach(&mut agent, play.as_ref(), cwd.path());
    let mut events = agent.subscribe();
    let mut restarts = Vec::new();

    let start_ms = server.requests().first().map_or(0, |r| r.at_ms);
    let mut collector = Collector {
        rows: Vec::new(),
        taken: TakenRecords::default(),
        namespaces: HashSet::new(),
        start_ms,
        prices,
        scripted_turns: workload.scripted_requests(),
    };
    let mut leaves: Vec<Option<EntryId>> = Vec::new();
    let mut completed = 0;
    let mut compactions = 0;
    let mut prepared = 0;
    let mut reported = AgentUsage::default();
    for task in &workload.tasks {
        for event in &task.events {
            if event.idle_seconds > 0 {
                let pause = Duration::from_secs(event.idle_seconds);
                idle(&mut agent, &server, pause, step).await?;
                drain(&mut events, &mut reported, &mut compactions, &mut prepared);
                collector.take(&server, &mut ideal, Some(RequestKind::KeepWarm))?;
            }
            if !event.tools_remove.is_empty() || !event.tools_add.is_empty() {
                builtins.retain(|name| !event.tools_remove.iter().any(|r| r == name));
                bench_tools.retain(|name| !event.tools_remove.contains(name));
                for name in &event.tools_add {
                    if !bench_tools.contains(name) {
                        bench_tools.push(name.clone());
                    }
                }
                agent.set_tools(tool_set(&builtins, &bench_tools));
            }
            if let Some(level) = &event.thinking {
                let level: strata_provider::ThinkingLevel = level.parse().map_err(|_| {
                    anyhow::anyhow!("workload {}: thinking level `{level}`", workload.spec.name)
                })?;
                agent
                    .set_thinking(level)
                    .with_context(|| format!("thinking before task {}", task.index + 1))?;
            }
            if let Some(text) = &event.agents_md {
                let path = cwd.path().join("AGENTS.md");
                std::fs::write(&path, text)
                    .with_context(|| format!("writing {}", path.display()))?;
            }
            if event.restart {
                // The harness exits and is started again on the same session file, as a user
                // resumes it: a new agent, nothing carried over but the file.
                drop(agent);
                let session = Session::open_writable(&session_path, WriteOptions::default())
                    .context("reopening the session")?
                    .session;
                agent = Agent::new(
                    session,
                    endpoint.provider.clone(),
                    tool_set(&builtins, &bench_tools),
                    config.clone(),
                );
                crate::bench::plays::attach(&mut agent, play.as_ref(), cwd.path());
                events = agent.subscribe();
                restarts.push(collector.rows.len() + 1);
            }
            if let Some(back) = event.branch_back_tasks {
                let Some(target) = leaves.len().checked_sub(back).and_then(|i| leaves.get(i))
                else {
                    bail!(
                        "workload {}: cannot go back {back} tasks before task {}",
                        workload.spec.name,
                        task.index
                    );
                };
                let target = target.clone();
                agent
                    .navigate(target.as_ref(), true, None)
                    .await
                    .with_context(|| format!("branching before task {}", task.index + 1))?;
                collector.take(&server, &mut ideal, Some(RequestKind::BranchSummary))?;
                // The user reads the tree's summary and types the prompt.
                crate::bench::plays::user_pause(&agent, play.as_ref()).await;
            }
        }
        leaves.push(agent.session().leaf().cloned());
        let summary = agent
            .prompt(task.prompt.clone())
            .await
            .with_context(|| format!("{}: task {}", workload.spec.name, task.index + 1))?;
        let note = note_failure(cwd.path(), task);
        if summary.reason == "stop" && summary.final_text == task.final_text && note.is_none() {
            completed += 1;
        }
        if let Some(why) = note {
            eprintln!("{}: task {}: {why}", workload.spec.name, task.index + 1);
        }
        drain(&mut events, &mut reported, &mut compactions, &mut prepared);
        collector.take(&server, &mut ideal, None)?;
        // The user reads the answer and types the next prompt: the time a play prepares in.
        crate::bench::plays::user_pause(&agent, play.as_ref()).await;
        if task.idle_after > 0 {
            idle(
                &mut agent,
                &server,
                Duration::from_secs(task.idle_after),
                step,
            )
            .await?;
            drain(&mut events, &mut reported, &mut compactions, &mut prepared);
            collector.take(&server, &mut ideal, Some(RequestKind::KeepWarm))?;
        }
    }
    let run = Run {
        harness: "strata".to_owned(),
        strategy: strategy.name().to_owned(),
        workload: workload.spec.name.clone(),
        cache_model: cache_model.name().to_owned(),
        requests: collector.rows,
        tasks_completed: completed,
        tasks_total: workload.tasks.len(),
        compactions,
        restarts,
        prepared_compactions: prepared,
    };
    Ok((run, reported))
}

/// Adds what the agent reported (answers, summaries, keep-warm pings) to `reported`.
fn drain(
    events: &mut tokio::sync::mpsc::UnboundedReceiver<AgentEvent>,
    reported: &mut AgentUsage,
    compactions: &mut usize,
    prepared: &mut usize,
) {
    while let Ok(event) = events.try_recv() {
        match event {
            AgentEvent::Usage { usage, .. } | AgentEvent::KeepWarm { usage, .. } => {
                reported.add(&usage);
            }
            AgentEvent::CompactionEnd {
                entry_id, usage, ..
            } => {
                if entry_id.is_some() {
                    *compactions += 1;
                    // No usage: no summary request, the summary was a play's.
                    if usage.is_none() {
                        *prepared += 1;
                    }
                }
                if let Some(usage) = usage {
                    reported.add(&usage);
                }
            }
            _ => {}
        }
    }
}

/// Lets `pause` pass on the virtual clock as a front end does while the user is away: a
/// keep-warm ping whenever the agent's plan says one is due before the user is back. Every
/// request moves the clock by `step` first (see `BenchProvider`), the next task's first one
/// included, so a ping `interval` after the last request idles `interval − step` here.
async fn idle(
    agent: &mut Agent,
    server: &MockServer,
    pause: Duration,
    step: Duration,
) -> Result<()> {
    let back_at = pause + step;
    let mut elapsed = Duration::ZERO;
    while let Some(plan) = agent.keep_warm_plan() {
        if plan.interval <= step || elapsed + plan.interval >= back_at {
            break;
        }
        server.advance_clock(plan.interval - step);
        agent
            .keep_warm()
            .await
            .context("keeping the cache warm while idle")?;
        elapsed += plan.interval;
    }
    server.advance_clock(pause.saturating_sub(elapsed));
    Ok(())
}

/// Turns the mock's records into rows as they arrive (the mock keeps only recent bodies).
struct Collector {
    rows: Vec<RequestRow>,
    /// The records already taken.
    taken: TakenRecords,
    namespaces: HashSet<Option<String>>,
    start_ms: u64,
    prices: strata_provider::Prices,
    /// Turns in the scenario.
    scripted_turns: usize,
}

impl Collector {
    fn take(
        &mut self,
        server: &MockServer,
        ideal: &mut IdealCache,
        kind: Option<RequestKind>,
    ) -> Result<()> {
        for record in self.taken.fresh(server.requests()) {
            if record.status != 200 {
                bail!(
                    "request {} was refused ({}): {}",
                    record.seq,
                    record.status,
                    record.error.unwrap_or_default()
                );
            }
            let Some(cache) = record.cache else {
                bail!("request {} has no cache accounting", record.seq);
            };
            let Some(body) = &record.body else {
                bail!("request {} has no recorded body", record.seq);
            };
            if let Some(dir) = std::env::var_os("STRATA_BENCH_DUMP_BODIES") {
                let path = std::path::Path::new(&dir).join(format!("{}.json", record.seq));
                let _ = std::fs::write(path, body.to_string());
            }
            let (body_new_tokens, body_total) = ideal.account(body)?;
            // A provider tool search run inside the response (the model called a deferred tool
            // no search had loaded) bills what it loads with this request, beyond the body:
            // new tokens, which the next request carries back (strata_mock::tool_search).
            let loaded = record.search_loaded_tokens;
            let (new_tokens, total) = (body_new_tokens + loaded, body_total + loaded);
            if total != cache.input_tokens {
                bail!(
                    "request {}: the bench counts {total} prompt tokens, the mock {}",
                    record.seq,
                    cache.input_tokens
                );
            }
            let text = body.to_string();
            let kind = kind.unwrap_or_else(|| {
                if SUMMARY_MARKERS.iter().any(|marker| text.contains(marker)) {
                    RequestKind::Summary
                } else {
                    RequestKind::Turn
                }
            });
            let first = self.namespaces.insert(record.cache_key.clone()) || self.rows.is_empty();
            let cause = MissCause::of(first, &record, &cache);
            let bill = record_bill(&cache, record.output_tokens, &self.prices);
            let cost = bill.total();
            let floor_cost = floor_cost(&cache, new_tokens, record.output_tokens, &self.prices);
            self.rows.push(RequestRow {
                seq: self.rows.len() + 1,
                at_ms: record.at_ms.saturating_sub(self.start_ms),
                kind,
                input: cache.input_tokens,
                cache_read: cache.cache_read,
                cache_write: cache.cache_write,
                uncached: cache.uncached,
                output: record.output_tokens,
                cost,
                floor_cost,
                new_tokens,
                cause,
                bill,
                // A recall turn's fetch is numbered past the script's turns.
                refetch: record.turn.is_some_and(|turn| turn >= self.scripted_turns),
            });
        }
        Ok(())
    }
}
