//! Peer runs: Pi and Claude Code play the same workloads as strata — same prompts, same
//! scripted model turns, same window — against an in-process strata-mock, so their requests go
//! through the same cache simulator and become [`Run`]s in the same tables.
//!
//! The harnesses are the npm packages pinned in `xtask/peers/package.json`, installed with
//! `cargo xtask bench-peers --install` into `target/peers/` (or `$STRATA_PEERS_DIR`). Where
//! node or the packages are absent a peer is skipped with a message; the peer runs are not part
//! of CI. See `docs/peers.md`.
//!
//! Pi gets the bench's MCP-like tools and their changes from an extension
//! (`xtask/peers/pi-bench-tools.ts`); Claude Code cannot, so for it those calls become shell
//! commands (see [`script`]), its tool set stays fixed, and it skips workloads made of tool
//! churn. Neither plays a branch back (no tree navigation a driver can call). Idle gaps,
//! AGENTS.md edits, the window, compaction settings and the virtual time between requests are
//! played as for strata.

pub mod claude;
pub mod install;
pub mod pi;
pub mod process;
pub mod rows;
pub mod script;
pub mod startup;

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use strata_mock::config::builtin_profile;
use strata_mock::{MockConfig, MockServer, ModelRule, Protocol, Scenario};

use crate::bench::PeerRunner;
use crate::bench::ideal::{BodyShape, IdealCache};
use crate::bench::model::{CacheModel, endpoint};
use crate::bench::run::Run;
use crate::bench::workload::Workload;
pub use install::Install;
use rows::{Left, Rows};

/// The peer harnesses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Peer {
    /// Pi 1.6, `@earendil-works/pi-coding-agent`, in RPC mode.
    Pi,
    /// Claude Code, `@anthropic-ai/claude-code`, in `-p` stream-json mode.
    ClaudeCode,
}

impl Peer {
    /// Both, in table order.
    pub const ALL: [Self; 2] = [Self::Pi, Self::ClaudeCode];

    /// The harness name in tables (`Run::harness`, `Run::strategy`).
    pub fn name(self) -> &'static str {
        match self {
            Self::Pi => "pi",
            Self::ClaudeCode => "claude-code",
        }
    }

    /// The executable under `node_modules/.bin`.
    pub fn bin(self) -> &'static str {
        match self {
            Self::Pi => "pi",
            Self::ClaudeCode => "claude",
        }
    }

    /// Parses a name from [`Self::name`].
    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|peer| peer.name() == name)
    }

    /// The cache models it can be measured on: Claude Code speaks only Anthropic Messages;
    /// Pi also OpenAI Responses and Chat Completions (`api` in its `models.json`).
    pub fn cache_models(self) -> &'static [CacheModel] {
        match self {
            Self::Pi => &CacheModel::ALL,
            Self::ClaudeCode => &PEER_CACHE_MODELS,
        }
    }

    /// Whether the driver can give it the bench's MCP-like tools and change them mid-session.
    pub fn has_bench_tools(self) -> bool {
        matches!(self, Self::Pi)
    }

    /// Why it does not play `workload`, if it does not: a workload whose tool set changes more
    /// than once is about tool churn, which a harness with a fixed tool set cannot show.
    pub fn skips(self, workload: &Workload) -> Option<String> {
        let changes = workload
            .spec
            .events
            .iter()
            .filter(|e| !e.tools_add.is_empty() || !e.tools_remove.is_empty())
            .count();
        (!self.has_bench_tools() && changes > 1).then(|| {
            format!(
                "{} changes its tool set {changes} times; {} cannot be given the bench's tools",
                workload.spec.name,
                self.name()
            )
        })
    }
}

/// The peer runners for `cargo xtask bench` (see [`crate::bench::peer_runners`]).
pub fn runners() -> Vec<(&'static str, PeerRunner)> {
    vec![("pi", run_pi), ("claude-code", run_claude_code)]
}

fn run_pi(workload: &Workload, cache_models: &[CacheModel]) -> Result<Vec<Run>> {
    run_peer(Peer::Pi, workload, cache_models)
}

fn run_claude_code(workload: &Workload, cache_models: &[CacheModel]) -> Result<Vec<Run>> {
    run_peer(Peer::ClaudeCode, workload, cache_models)
}

/// The cache models every peer can be measured on: both speak Anthropic Messages to the mock,
/// with their own breakpoints, 5-minute by default and 1-hour where the harness is asked to
/// (`PI_CACHE_RETENTION=long`, `ENABLE_PROMPT_CACHING_1H=1`). Pi also runs on the others
/// ([`Peer::cache_models`]).
pub const PEER_CACHE_MODELS: [CacheModel; 2] = [
    CacheModel::AnthropicFiveMinutes,
    CacheModel::AnthropicOneHour,
];

/// Runs `peer` on `workload` for each of `cache_models` it supports; fails (so the caller
/// prints why and goes on) when the harness is not installed.
pub fn run_peer(peer: Peer, workload: &Workload, cache_models: &[CacheModel]) -> Result<Vec<Run>> {
    let install = Install::locate()?;
    install.check(peer)?;
    if let Some(why) = peer.skips(workload) {
        bail!("skipped: {why}");
    }
    let mut runs = Vec::new();
    for cache_model in cache_models {
        if !peer.cache_models().contains(cache_model) {
            continue;
        }
        let played = play(peer, &install, workload, *cache_model)?;
        eprintln!("{}", played.summary());
        runs.push(played.run);
    }
    Ok(runs)
}

/// One peer run with what the rows leave out.
#[derive(Debug, Clone)]
pub struct PeerRun {
    /// The run, in the bench's format.
    pub run: Run,
    /// Requests not in the rows.
    pub left: Left,
    /// Why tasks did not complete, by task number.
    pub failures: Vec<(usize, String)>,
    /// Wall-clock seconds the run took.
    pub seconds: f64,
    /// The usage the harness reported for its turns (not its summary requests).
    pub reported: Reported,
}

impl PeerRun {
    /// One line for the console.
    pub fn summary(&self) -> String {
        let totals = self.run.totals();
        let mut line = format!(
            "{}: {} requests, ${:.4}, hit {:.2}% (ideal {:.2}%), {}/{} tasks, {} compactions, {:.1}s",
            self.run.label(),
            totals.requests,
            totals.cost,
            totals.hit_rate() * 100.0,
            totals.ideal_hit_rate() * 100.0,
            self.run.tasks_completed,
            self.run.tasks_total,
            self.run.compactions,
            self.seconds
        );
        if !self.left.other_model.is_empty() {
            line.push_str(&format!(
                "; {} side requests for other models left out",
                self.left.other_model.len()
            ));
        }
        if !self.left.refused.is_empty() {
            line.push_str(&format!(
                "; {} refused (first: {} {})",
                self.left.refused.len(),
                self.left.refused[0].0,
                self.left.refused[0].1
            ));
        }
        if self.run.cache_model == CacheModel::AnthropicOneHour.name() && self.left.written_1h == 0
        {
            line.push_str("; the harness wrote nothing with the 1-hour lifetime");
        }
        if let Some((task, why)) = self.failures.first() {
            line.push_str(&format!("; task {task} not completed: {why}"));
        }
        line
    }
}

/// What a harness needs to start on a run.
pub struct Launch<'a> {
    /// Where the harness is installed.
    pub install: &'a Install,
    /// The working directory (seeded by the workload).
    pub cwd: &'a Path,
    /// The harness's home and config directory for this run.
    pub home: &'a Path,
    /// strata-mock's base URL.
    pub base_url: String,
    /// The base URL the harness's client for `api` is given (with `/v1` for OpenAI's).
    pub api_base_url: String,
    /// The wire protocol, as Pi names it (`anthropic-messages`, `openai-responses`,
    /// `openai-completions`).
    pub api: &'static str,
    /// The model id.
    pub model: &'a str,
    /// The context window, tokens.
    pub window: u64,
    /// Most output tokens per request.
    pub max_tokens: u64,
    /// Compaction reserve, tokens.
    pub reserve_tokens: u64,
    /// Recent tokens kept by a compaction.
    pub keep_recent_tokens: u64,
    /// Virtual seconds between requests.
    pub seconds_between_requests: u64,
    /// Bench tools live from the start.
    pub start_tools: &'a [String],
    /// Ask the harness for the 1-hour cache lifetime.
    pub one_hour_cache: bool,
}

impl Launch<'_> {
    /// The mock's clock route.
    pub fn clock_url(&self) -> String {
        format!("{}/_mock/clock/advance", self.base_url)
    }
}

/// How one task went, as the harness reported it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Outcome {
    /// The last assistant text.
    pub final_text: String,
    /// Why the last assistant message stopped (`stop` when it finished its turn).
    pub stop_reason: String,
    /// Tool calls made.
    pub tool_calls: usize,
    /// Compactions made.
    pub compactions: usize,
    /// Provider retries reported.
    pub retries: usize,
    /// Errors: failed tools, a run that ended in error.
    pub errors: Vec<String>,
    /// The provider error of the last assistant message, if it failed.
    pub provider_error: Option<String>,
    /// The usage the harness itself reported for the task's model requests.
    pub reported: Reported,
}

/// Usage as a harness reported it (its own parse of strata-mock's usage fields), to check
/// against the rows.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Reported {
    /// Uncached input tokens.
    pub uncached: u64,
    /// Read from the cache.
    pub cache_read: u64,
    /// Written to the cache.
    pub cache_write: u64,
}

impl Reported {
    fn add(&mut self, other: Self) {
        self.uncached += other.uncached;
        self.cache_read += other.cache_read;
        self.cache_write += other.cache_write;
    }
}

/// A running harness that plays one task per prompt.
pub trait PeerSession {
    /// Sends `text` as the user's prompt and waits until the harness is idle again.
    fn prompt(&mut self, text: &str, deadline: Instant) -> Result<Outcome>;
    /// Makes exactly `names` the live bench tools; false when the harness cannot.
    fn set_bench_tools(&mut self, names: &[String], deadline: Instant) -> Result<bool>;
    /// Ends the harness.
    fn finish(self: Box<Self>) -> Result<()>;
}

/// Longest wait for one task.
const TASK_TIMEOUT: Duration = Duration::from_secs(300);

/// The mock's protocol, the bench's body shape, Pi's `api` name and the base URL's path for
/// the wire `cache_model` is priced on (strata's runs use the same: see `model::endpoint`).
pub fn wire(cache_model: CacheModel) -> (Protocol, BodyShape, &'static str, &'static str) {
    match cache_model {
        CacheModel::AnthropicFiveMinutes | CacheModel::AnthropicOneHour => (
            Protocol::Anthropic,
            BodyShape::Anthropic,
            "anthropic-messages",
            "",
        ),
        CacheModel::OpenAiAutomatic => (
            Protocol::Responses,
            BodyShape::Responses,
            "openai-responses",
            "/v1",
        ),
        CacheModel::DeepSeekDisk => (Protocol::Chat, BodyShape::Chat, "openai-completions", "/v1"),
    }
}

/// Plays `workload` with `peer` on `cache_model`.
pub fn play(
    peer: Peer,
    install: &Install,
    workload: &Workload,
    cache_model: CacheModel,
) -> Result<PeerRun> {
    let started = Instant::now();
    let spec = &workload.spec;
    let (_, model_id) = cache_model.qualified_model();
    let scenario_text = script::scenario_toml(workload, model_id, peer.has_bench_tools())?;
    let scenario = Scenario::from_toml(&scenario_text, "peer scenario")
        .context("loading the peer scenario")?;
    let scripted_turns = scenario.turns.len();
    // The same profile strata's runs get, with the workload's window: an over-window prompt
    // is refused with the provider's own error.
    let (protocol, shape, api, path) = wire(cache_model);
    let mut profile = builtin_profile(protocol, model_id);
    profile.context_window = spec.context_window;
    let config = MockConfig::new()
        .with_scenario(scenario)
        .with_model(ModelRule {
            protocol: Some(protocol),
            pattern: model_id.to_owned(),
            profile,
        });
    let server = Arc::new(MockServer::start_in_thread(config).context("starting strata-mock")?);
    let endpoint = endpoint(cache_model, spec.context_window, Arc::new(|| {}))?;
    let (increment, min_tokens) = cache_model.granularity(&endpoint.capabilities);
    let mut rows = Rows::new(
        model_id,
        endpoint.model.prices,
        IdealCache::new(shape, increment, min_tokens),
    );
    rows.scripted_turns = Some(scripted_turns);

    let cwd = tempfile::tempdir().context("creating the working directory")?;
    let home = tempfile::tempdir().context("creating the harness home")?;
    workload.seed(cwd.path())?;
    let launch = Launch {
        install,
        cwd: cwd.path(),
        home: home.path(),
        base_url: server.base_url(),
        api_base_url: format!("{}{path}", server.base_url()),
        api,
        model: model_id,
        window: spec.context_window,
        max_tokens: 4096,
        reserve_tokens: spec.reserve_tokens,
        keep_recent_tokens: spec.keep_recent_tokens,
        seconds_between_requests: spec.seconds_between_requests,
        start_tools: &spec.start_tools,
        one_hour_cache: cache_model == CacheModel::AnthropicOneHour,
    };
    let mut session: Box<dyn PeerSession> = match peer {
        Peer::Pi => Box::new(pi::start(&launch)?),
        Peer::ClaudeCode => Box::new(claude::start(&launch)?),
    };
    let mut completed = 0;
    let mut compactions = 0;
    let mut failures = Vec::new();
    let mut bench_tools = spec.start_tools.clone();
    let mut reported = Reported::default();
    for task in &workload.tasks {
        for event in &task.events {
            if !event.tools_add.is_empty() || !event.tools_remove.is_empty() {
                bench_tools.retain(|name| !event.tools_remove.contains(name));
                for name in &event.tools_add {
                    if !bench_tools.contains(name) {
                        bench_tools.push(name.clone());
                    }
                }
                session.set_bench_tools(&bench_tools, Instant::now() + TASK_TIMEOUT)?;
            }
            if event.idle_seconds > 0 {
                server.advance_clock(Duration::from_secs(event.idle_seconds));
            }
            if let Some(text) = &event.agents_md {
                let path = cwd.path().join("AGENTS.md");
                std::fs::write(&path, text)
                    .with_context(|| format!("writing {}", path.display()))?;
            }
        }
        let outcome = session
            .prompt(&task.prompt, Instant::now() + TASK_TIMEOUT)
            .with_context(|| {
                format!("{} on {}: task {}", peer.name(), spec.name, task.index + 1)
            })?;
        compactions += outcome.compactions;
        reported.add(outcome.reported);
        let failure = task_failure(task, &outcome)
            .or_else(|| crate::bench::workload::note_failure(cwd.path(), task));
        match failure {
            None => completed += 1,
            Some(why) => failures.push((task.index + 1, why)),
        }
        rows.take(server.requests())?;
        if task.idle_after > 0 {
            server.advance_clock(Duration::from_secs(task.idle_after));
        }
    }
    session.finish()?;
    if std::env::var_os("STRATA_BENCH_KEEP_PEER_HOME").is_some() {
        // To read what the peer stored (its session files) after the run.
        let kept = home.keep();
        eprintln!(
            "{} / {} / {}: the peer's home is kept in {}",
            peer.name(),
            workload.spec.name,
            cache_model.name(),
            kept.display()
        );
    }
    rows.take(server.requests())?;
    if rows.rows.is_empty() {
        bail!(
            "{} sent no request for {} to strata-mock",
            peer.name(),
            model_id
        );
    }
    Ok(PeerRun {
        run: Run {
            harness: peer.name().to_owned(),
            strategy: peer.name().to_owned(),
            workload: spec.name.clone(),
            cache_model: cache_model.name().to_owned(),
            requests: rows.rows,
            tasks_completed: completed,
            tasks_total: workload.tasks.len(),
            compactions,
            restarts: Vec::new(),
            prepared_compactions: 0,
        },
        left: rows.left,
        failures,
        seconds: started.elapsed().as_secs_f64(),
        reported,
    })
}

/// Why a task did not end as scripted: every scripted call made without error, and the run
/// ended with the task's closing answer.
fn task_failure(task: &crate::bench::workload::Task, outcome: &Outcome) -> Option<String> {
    if let Some(error) = outcome.errors.first().or(outcome.provider_error.as_ref()) {
        return Some(error.clone());
    }
    // A recall task writes its note, after as many fetches as the model needed.
    let scripted = task.calls.len() + usize::from(task.recall.is_some());
    let fetches_allowed = if task.recall.is_some() {
        strata_mock::scenario::RecallSpec::MAX_FETCHES
    } else {
        0
    };
    if outcome.tool_calls < scripted || outcome.tool_calls > scripted + fetches_allowed {
        return Some(format!(
            "{} tool calls made, {} scripted",
            outcome.tool_calls, scripted
        ));
    }
    if outcome.final_text != task.final_text {
        return Some(format!(
            "ended with {:?}, not {:?}",
            outcome.final_text, task.final_text
        ));
    }
    if outcome.stop_reason != "stop" {
        return Some(format!("stopped with {:?}", outcome.stop_reason));
    }
    None
}

/// Usage of `cargo xtask bench-peers`.
pub const USAGE: &str =
    "  bench-peers [--install] [--only WORKLOAD]... [--peer pi|claude-code]... [--cache MODEL]... [--startup] [--rows]
      The peer harnesses (Pi, Claude Code, pinned in xtask/peers/package.json) on the bench's
      workloads against strata-mock; prints per-run totals, with --rows every request.
      Default workloads: short and long; cache models: anthropic-5m and anthropic-1h.
      --cache M    only cache model M (repeatable; Pi runs on every one, Claude Code on the
                   anthropic ones)
      --install    npm ci the pinned packages into target/peers (or $STRATA_PEERS_DIR) first
      --startup    also time `--version` of each harness (wall time, peak RSS)
      --rows       print every request row as JSON lines";

/// `cargo xtask bench-peers ARGS`.
pub fn main(args: &[String]) -> Result<()> {
    let mut workloads = Vec::new();
    let mut peers = Vec::new();
    let mut install_first = false;
    let mut startup_too = false;
    let mut print_rows = false;
    let mut cache_models = Vec::new();
    let mut iter = args.iter();
    while let Some(arg) = iter.next() {
        match arg.as_str() {
            "--install" => install_first = true,
            "--startup" => startup_too = true,
            "--rows" => print_rows = true,
            "--only" => workloads.push(iter.next().context("--only needs a workload")?.clone()),
            "--cache" => {
                let name = iter.next().context("--cache needs a cache model")?;
                let model = CacheModel::parse(name).with_context(|| {
                    format!(
                        "unknown cache model `{name}` (known: {:?})",
                        CacheModel::ALL.map(CacheModel::name)
                    )
                })?;
                cache_models.push(model);
            }
            "--peer" => {
                let name = iter.next().context("--peer needs a harness")?;
                peers.push(
                    Peer::parse(name).with_context(|| {
                        format!("unknown peer `{name}` (known: pi, claude-code)")
                    })?,
                );
            }
            other => bail!("unknown option `{other}`\n\n{USAGE}"),
        }
    }
    if workloads.is_empty() {
        workloads = vec!["short".to_owned(), "long".to_owned()];
    }
    if peers.is_empty() {
        peers = Peer::ALL.to_vec();
    }
    if cache_models.is_empty() {
        cache_models = PEER_CACHE_MODELS.to_vec();
    }
    let install = Install::locate()?;
    if install_first {
        install.install()?;
    }
    if startup_too {
        for (peer, startup) in startup::measure_peers(5) {
            if !peers.contains(&peer) {
                continue;
            }
            match startup {
                Ok(s) => println!(
                    "startup {}: {} --version {:.3} s, peak RSS {} (median of {})",
                    s.harness,
                    s.version,
                    s.seconds,
                    s.peak_rss_mib
                        .map_or_else(|| "not measured".to_owned(), |m| format!("{m:.1} MiB")),
                    s.runs
                ),
                Err(error) => println!("startup {}: skipped: {error:#}", peer.name()),
            }
        }
    }
    for name in &workloads {
        let workload = Workload::load(name)?;
        for peer in &peers {
            if let Err(error) = install.check(*peer) {
                println!("{name} / {}: skipped: {error:#}", peer.name());
                continue;
            }
            if let Some(why) = peer.skips(&workload) {
                println!("{name} / {}: skipped: {why}", peer.name());
                continue;
            }
            for cache_model in &cache_models {
                if !peer.cache_models().contains(cache_model) {
                    continue;
                }
                match play(*peer, &install, &workload, *cache_model) {
                    Ok(played) => {
                        println!("{}", played.summary());
                        if print_rows {
                            for row in &played.run.requests {
                                println!("{}", serde_json::to_string(row)?);
                            }
                        }
                    }
                    Err(error) => println!(
                        "{name} / {} / {}: did not run: {error:#}",
                        cache_model.name(),
                        peer.name()
                    ),
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Opt-in (needs the harnesses installed, see docs/peers.md):
    /// `STRATA_PEERS_DIR=… cargo test -p xtask peers::tests::peers_play_short -- --ignored`.
    #[test]
    #[ignore = "needs Pi and Claude Code installed (cargo xtask bench-peers --install)"]
    fn peers_play_short() {
        let workload = Workload::load("short").unwrap();
        let install = Install::locate().unwrap();
        for peer in Peer::ALL {
            install.check(peer).unwrap();
            let played = play(peer, &install, &workload, CacheModel::AnthropicFiveMinutes).unwrap();
            eprintln!("{}", played.summary());
            for row in &played.run.requests {
                eprintln!("{}", serde_json::to_string(row).unwrap());
            }
            assert_eq!(
                played.run.requests.len(),
                workload.scripted_requests(),
                "{peer:?}"
            );
            assert!(played.run.all_tasks_completed(), "{:?}", played.failures);
            assert!(played.left.other_model.is_empty(), "{:?}", played.left);
            // The harness read the mock's usage fields as the rows account them.
            let totals = played.run.totals();
            let rows = Reported {
                uncached: totals.uncached,
                cache_read: totals.cache_read,
                cache_write: totals.cache_write,
            };
            assert_eq!(played.reported, rows, "{peer:?}");
            for row in &played.run.requests {
                assert_eq!(row.cache_read + row.cache_write + row.uncached, row.input);
            }
        }
    }

    /// Opt-in, as above: `long` (330 scripted requests, window 24,000) for each peer; prints
    /// the summary and rows, asserts only that the rows add up.
    #[test]
    #[ignore = "needs Pi and Claude Code installed; takes minutes"]
    fn peers_play_long() {
        let workload = Workload::load("long").unwrap();
        let install = Install::locate().unwrap();
        // STRATA_PEERS_ONLY=pi (or claude-code) plays one of them.
        let only = std::env::var("STRATA_PEERS_ONLY").ok();
        for peer in Peer::ALL
            .into_iter()
            .filter(|peer| only.as_deref().is_none_or(|name| name == peer.name()))
        {
            install.check(peer).unwrap();
            match play(peer, &install, &workload, CacheModel::AnthropicFiveMinutes) {
                Ok(played) => {
                    eprintln!("{}", played.summary());
                    for row in &played.run.requests {
                        eprintln!("{}", serde_json::to_string(row).unwrap());
                        assert_eq!(row.cache_read + row.cache_write + row.uncached, row.input);
                    }
                }
                Err(error) => eprintln!("long / {}: did not run: {error:#}", peer.name()),
            }
        }
    }

    #[test]
    fn only_a_peer_without_bench_tools_skips_tool_churn() {
        let churn = Workload::load("tools-churn").unwrap();
        let long = Workload::load("long").unwrap();
        let short = Workload::load("short").unwrap();
        assert_eq!(Peer::Pi.skips(&churn), None);
        let why = Peer::ClaudeCode.skips(&churn).unwrap();
        assert!(why.contains("tools-churn changes its tool set"), "{why}");
        assert_eq!(
            Peer::ClaudeCode.skips(&long),
            None,
            "long changes tools once"
        );
        assert_eq!(Peer::ClaudeCode.skips(&short), None);
    }

    #[test]
    fn a_missed_closing_answer_or_a_failed_tool_fails_the_task() {
        let workload = Workload::load("short").unwrap();
        let task = &workload.tasks[0];
        let good = Outcome {
            final_text: task.final_text.clone(),
            stop_reason: "stop".into(),
            tool_calls: task.calls.len(),
            ..Outcome::default()
        };
        assert_eq!(task_failure(task, &good), None);
        let wrong_text = Outcome {
            final_text: "something else".into(),
            ..good.clone()
        };
        assert!(
            task_failure(task, &wrong_text)
                .unwrap()
                .contains("ended with")
        );
        let failed_tool = Outcome {
            errors: vec!["tool read failed".into()],
            ..good.clone()
        };
        assert_eq!(
            task_failure(task, &failed_tool).unwrap(),
            "tool read failed"
        );
        let fewer_calls = Outcome {
            tool_calls: 1,
            ..good
        };
        assert!(
            task_failure(task, &fewer_calls)
                .unwrap()
                .contains("tool calls made")
        );
    }
}
