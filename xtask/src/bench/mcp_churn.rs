//! `cargo xtask bench-mcp`: the `tools-churn` pattern on real MCP servers. Sixteen tasks of six
//! requests; every two tasks an MCP server disconnects and another connects. The servers are
//! the ones this project did not write and `.ci/install-mcp` installs into `.mcp-deps/`: the
//! reference `@modelcontextprotocol/server-everything` over stdio (`everything`) and over
//! streamable HTTP (`remote`), and a server on the official Python SDK (`churn`,
//! `crates/strata-mcp/tests/fixtures/churn_server.py`).
//!
//! strata plays it through strata-mcp's `McpManager` (servers enabled and disabled between
//! tasks, tools entering the ledger) with the strategies strata and naive; Pi 1.6 plays it with
//! the same servers through its built-in MCP support (an extension registers and unregisters
//! them: `xtask/peers/pi-bench-mcp.ts`). Every request goes through strata-mock's cache
//! simulator and the same ideal, as in `cargo xtask bench`; the figures go to
//! `docs/bench-mcp.md`.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use serde_json::{Map, Value, json};
use strata_agent::{Agent, AgentEvent};
use strata_mcp::config::{Exposure, Source, SourceKind};
use strata_mcp::{McpManager, ServerConfig, ServerSpec, TokenPrices, Transport};
use strata_mock::config::builtin_profile;
use strata_mock::{MockConfig, MockServer, ModelRule, Scenario};
use strata_session::{Session, WriteOptions};
use strata_tools::{ToolSet, ToolSource};

use crate::bench::ideal::{BodyShape, IdealCache};
use crate::bench::model::{CacheModel, endpoint};
use crate::bench::peers::rows::Rows;
use crate::bench::peers::{Install, Launch, Peer, PeerSession, pi, script, wire};
use crate::bench::run::Run;
use crate::bench::strategy::Strategy;
use crate::bench::workload::{
    BUILTIN_TOOLS, FileSpec, Phase, ScriptedCall, Task, Workload, WorkloadSpec,
};

/// The workload's name in tables.
pub const NAME: &str = "tools-churn-mcp";

/// Usage of `cargo xtask bench-mcp`.
pub const USAGE: &str = "  bench-mcp [--cache MODEL]... [--every N] [--no-pi] [--out FILE]
      tools-churn on real MCP servers (server-everything over stdio and streamable HTTP, a
      Python-SDK server; installed by .ci/install-mcp): strata and naive through strata-mcp,
      and Pi 1.6 with the same servers ($STRATA_PEERS_DIR, see docs/peers.md). Writes
      docs/bench-mcp.md.
      --cache M   only cache model M (repeatable; default anthropic-5m, anthropic-1h, openai)
      --every N   a server change every N tasks (default 2, the bench's tools-churn)
      --no-pi     skip Pi
      --out FILE  write the document to FILE instead of docs/bench-mcp.md
      STRATA_BENCH_MCP_EXPOSURE=direct|deferred forces strata's route for every server (a
      diagnostic; default auto); STRATA_BENCH_MCP_ROWS=FILE writes every request as JSON";

/// The servers connected from the start.
const START: [&str; 1] = ["churn"];

/// Tasks of six requests.
const TASKS: usize = 16;

/// How many tasks pass between two server changes in the bench's `tools-churn`.
pub const PERIOD: usize = 2;

/// Which servers are connected from task `index` on, the others disconnected: every `period`
/// tasks the one of `everything` / `remote` that is connected leaves and the other comes.
fn live_servers(index: usize, period: usize) -> Vec<&'static str> {
    let mut live = START.to_vec();
    match index / period.max(1) {
        0 => {}
        n if n % 2 == 1 => live.push("everything"),
        _ => live.push("remote"),
    }
    live
}

/// The calls one MCP server's tools get (tool, arguments for call `n`); their answers are
/// fixed, so every harness sees the same bytes.
fn server_calls(server: &str, n: usize) -> Vec<(String, Value)> {
    match server {
        "churn" => vec![
            (
                "mcp__churn__alpha".into(),
                json!({"text": format!("item {n}")}),
            ),
            ("mcp__churn__beta".into(), json!({"a": n, "b": 2})),
        ],
        other => vec![
            (
                format!("mcp__{other}__echo"),
                json!({"message": format!("item {n}")}),
            ),
            (format!("mcp__{other}__get_sum"), json!({"a": n, "b": 3})),
        ],
    }
}

/// The workload with a server change every `period` tasks: tasks whose calls cycle read, an
/// MCP tool, grep, an MCP tool, ls.
pub fn workload(period: usize) -> Workload {
    let files = FileSpec {
        count: 8,
        lines: 30,
    };
    let pattern = ["read", "mcp", "grep", "mcp", "ls"];
    let mut cursor = 0usize;
    let mut tasks = Vec::new();
    for index in 0..TASKS {
        let live = live_servers(index, period);
        let mut calls = Vec::new();
        for wanted in pattern {
            cursor += 1;
            let file = format!("src/file_{}.rs", cursor % files.count);
            let (tool, args) = match wanted {
                "read" => ("read".to_owned(), json!({"path": file})),
                "grep" => (
                    "grep".to_owned(),
                    json!({"pattern": format!("item_{}_1\\b", cursor % files.count), "path": "src"}),
                ),
                "ls" => ("ls".to_owned(), json!({"path": "src"})),
                _ => {
                    let pool: Vec<(String, Value)> = live
                        .iter()
                        .flat_map(|server| server_calls(server, cursor))
                        .collect();
                    pool[cursor % pool.len()].clone()
                }
            };
            let args = match args {
                Value::Object(map) => map,
                _ => Map::new(),
            };
            calls.push(ScriptedCall { tool, args });
        }
        tasks.push(Task {
            index,
            prompt: format!(
                "Task {}: check the next item against the external tracker.",
                index + 1
            ),
            events: Vec::new(),
            calls,
            recall: None,
            final_text: format!("Task {} is done.", index + 1),
            idle_after: 0,
        });
    }
    let (name, every) = if period == PERIOD {
        (NAME.to_owned(), "every 2 tasks".to_owned())
    } else {
        (
            format!("{NAME}-every-{period}"),
            format!("every {period} tasks"),
        )
    };
    let spec = WorkloadSpec {
        name,
        description: format!(
            "16 tasks of 6 requests; {every} a real MCP server disconnects and another connects \
             (server-everything over stdio and over streamable HTTP, 14 tools each; a \
             Python-SDK server stays connected)."
        ),
        context_window: 200_000,
        reserve_tokens: strata_compaction::DEFAULT_RESERVE_TOKENS,
        keep_recent_tokens: strata_compaction::DEFAULT_KEEP_RECENT_TOKENS,
        seconds_between_requests: 20,
        files,
        start_tools: Vec::new(),
        phases: vec![Phase {
            tasks: TASKS,
            requests_per_task: 6,
            tools: pattern.iter().map(|t| (*t).to_owned()).collect(),
            prompt: "Task {n}: check the next item against the external tracker.".to_owned(),
            idle_seconds_after_task: 0,
        }],
        events: Vec::new(),
        recall: None,
    };
    Workload {
        spec,
        tasks,
        source: PathBuf::from("xtask/src/bench/mcp_churn.rs"),
    }
}

/// Where `.ci/install-mcp` put the servers (`$STRATA_MCP_DEPS` overrides).
fn deps_dir(root: &Path) -> PathBuf {
    std::env::var_os("STRATA_MCP_DEPS")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join(".mcp-deps"))
}

/// The installed servers: how to start each.
#[derive(Debug, Clone)]
pub struct Servers {
    node: PathBuf,
    everything: PathBuf,
    python: PathBuf,
    churn: PathBuf,
    /// server-everything's streamable HTTP endpoint (a process this bench started).
    remote_url: String,
}

impl Servers {
    /// `(name, command, args)` of the stdio servers and the HTTP one's URL, as mcp.json
    /// entries (Pi's format), all with direct exposure.
    fn mcp_json(&self) -> Value {
        json!({
            "churn": {"command": self.python, "args": [self.churn], "exposure": "direct"},
            "everything": {"command": self.node, "args": [self.everything, "stdio"], "exposure": "direct"},
            "remote": {"url": self.remote_url, "exposure": "direct"},
        })
    }

    /// strata-mcp's configs, `enabled` as at the start, every server with `exposure`.
    fn configs(&self, exposure: Exposure) -> Vec<ServerConfig> {
        let stdio = |command: &Path, args: Vec<String>| Transport::Stdio {
            command: command.display().to_string(),
            args,
            env: Default::default(),
            cwd: None,
        };
        let config = |name: &str, transport: Transport| ServerConfig {
            name: name.to_owned(),
            transport,
            enabled: START.contains(&name),
            timeout: Duration::from_secs(30),
            allow_tools: Vec::new(),
            deny_tools: Vec::new(),
            exposure,
            description: None,
            source: Source {
                kind: SourceKind::Session,
                path: None,
            },
            spec: ServerSpec::default(),
            token_dir: None,
        };
        vec![
            config(
                "churn",
                stdio(&self.python, vec![self.churn.display().to_string()]),
            ),
            config(
                "everything",
                stdio(
                    &self.node,
                    vec![self.everything.display().to_string(), "stdio".to_owned()],
                ),
            ),
            config(
                "remote",
                Transport::Http {
                    url: self.remote_url.clone(),
                    headers: Default::default(),
                },
            ),
        ]
    }
}

/// The HTTP server-everything, killed when dropped.
struct RemoteServer {
    child: std::process::Child,
}

impl Drop for RemoteServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn locate_servers(root: &Path) -> Result<(Servers, RemoteServer)> {
    let deps = deps_dir(root);
    let everything =
        deps.join("node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    let python = deps.join("venv/bin/python");
    if !everything.exists() || !python.exists() {
        bail!(
            "the MCP servers are not installed in {} (run `bash .ci/install-mcp`)",
            deps.display()
        );
    }
    let node = which("node").context("no node on PATH for server-everything")?;
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .context("finding a free port")?
        .port();
    let child = std::process::Command::new(&node)
        .arg(&everything)
        .arg("streamableHttp")
        .env("PORT", port.to_string())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .context("starting server-everything over streamable HTTP")?;
    let remote = RemoteServer { child };
    let started = Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        if started.elapsed() > Duration::from_secs(30) {
            bail!("server-everything did not open port {port} within 30 s");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let servers = Servers {
        node,
        everything,
        python,
        churn: root.join("crates/strata-mcp/tests/fixtures/churn_server.py"),
        remote_url: format!("http://127.0.0.1:{port}/mcp"),
    };
    Ok((servers, remote))
}

fn which(program: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(program))
        .find(|candidate| candidate.is_file())
}

/// The search round trips of a run: how many requests answered with an `mcp_tool_search` call,
/// and what those requests cost (USD), already in the run's bill.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Searches {
    /// Requests whose reply was a search.
    pub requests: usize,
    /// Their cost.
    pub cost: f64,
    /// Searches the provider's own tool search made inside a response (no request of their
    /// own): the first call of each tool of a server it serves.
    pub in_response: usize,
}

/// The servers of a run by how their tools are found (the others are declared).
#[derive(Debug, Clone, Default)]
struct Routes {
    /// Behind `mcp_tool_search` / `mcp_tool_call`.
    client: Vec<String>,
    /// Declared with `defer_loading`, found by the provider's tool search.
    provider: Vec<String>,
}

/// What the row's own tool search shows of a deferred tool (as the CLI sets it).
fn searchable(cache_model: CacheModel) -> strata_mcp::Searchable {
    match cache_model {
        CacheModel::AnthropicFiveMinutes | CacheModel::AnthropicOneHour => {
            strata_mcp::Searchable::Nothing
        }
        _ => strata_mcp::Searchable::NameAndDescription,
    }
}

/// Distinct tools of `servers` the workload calls: each is found once by the provider's search.
fn provider_searches(workload: &Workload, servers: &[String]) -> usize {
    let mut found: Vec<&str> = Vec::new();
    for call in workload.tasks.iter().flat_map(|task| &task.calls) {
        let server = call
            .tool
            .strip_prefix("mcp__")
            .and_then(|rest| rest.split("__").next());
        if server.is_some_and(|server| servers.iter().any(|s| s == server))
            && !found.contains(&call.tool.as_str())
        {
            found.push(&call.tool);
        }
    }
    found.len()
}

/// Runs strata (with `strategy`) on the workload over the real servers.
pub fn run_strata(
    workload: &Workload,
    period: usize,
    servers: &Servers,
    strategy: Strategy,
    cache_model: CacheModel,
) -> Result<(Run, Searches)> {
    let runtime = super::driver::runtime()?;
    runtime.block_on(play_strata(
        workload,
        period,
        servers,
        strategy,
        cache_model,
    ))
}

/// strata's exposure of every server: `auto` (its default), or the one
/// `STRATA_BENCH_MCP_EXPOSURE` names (`direct`, `deferred`), to take one route apart.
fn strata_exposure() -> Result<Exposure> {
    match std::env::var("STRATA_BENCH_MCP_EXPOSURE").as_deref() {
        Err(_) | Ok("auto") => Ok(Exposure::Auto),
        Ok("direct") => Ok(Exposure::Direct),
        Ok("deferred") => Ok(Exposure::Deferred),
        Ok(other) => bail!("STRATA_BENCH_MCP_EXPOSURE={other}: expected auto, direct or deferred"),
    }
}

fn body_shape(cache_model: CacheModel) -> BodyShape {
    wire(cache_model).1
}

async fn play_strata(
    workload: &Workload,
    period: usize,
    servers: &Servers,
    strategy: Strategy,
    cache_model: CacheModel,
) -> Result<(Run, Searches)> {
    // strata on its defaults: every server `auto` (declared or searched as the model's prices
    // decide, strata_mcp::exposure), the row's tool search as the CLI sets it; naive declares
    // every tool of every connected server.
    let exposure = match strategy {
        Strategy::Naive => Exposure::Direct,
        _ => strata_exposure()?,
    };
    let probe = endpoint(cache_model, workload.spec.context_window, Arc::new(|| {}))?;
    let prices = token_prices(&probe.model.prices, cache_model);
    let native = probe.capabilities.deferred_tools;
    let searchable = searchable(cache_model);
    let routes = if exposure == Exposure::Auto {
        searched_servers(servers, prices, native, searchable).await?
    } else {
        Routes::default()
    };
    let played = with_searches(workload, &routes.client);
    let scenario = Scenario::from_toml(&played.scenario_toml(true)?, NAME)
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
    let (increment, min_tokens) = cache_model.granularity(&endpoint.capabilities);
    let (_, model_id) = cache_model.qualified_model();
    let mut rows = Rows::new(
        model_id,
        endpoint.model.prices,
        IdealCache::new(body_shape(cache_model), increment, min_tokens),
    );

    let cwd = tempfile::tempdir().context("creating the working directory")?;
    let home = tempfile::tempdir().context("creating the session directory")?;
    workload.seed(cwd.path())?;
    let session = Session::create(
        home.path().join("session.jsonl"),
        &cwd.path().display().to_string(),
        WriteOptions::default(),
    )
    .context("creating the session")?;
    let config = crate::bench::driver::agent_config(
        workload,
        strategy,
        cache_model,
        &endpoint,
        &server,
        cwd.path(),
    );
    let manager = McpManager::new(servers.configs(exposure), Duration::from_secs(60));
    manager.set_native_deferral(native);
    manager.set_searchable(searchable);
    manager.set_prices(prices);
    let mut agent = Agent::new(
        session,
        endpoint.provider.clone(),
        ToolSet::builtins(&BUILTIN_TOOLS),
        config,
    );
    agent.set_tool_source(Some(Arc::new(manager.clone())));
    let mut events = agent.subscribe();
    let mut live: Vec<&str> = START.to_vec();
    let mut completed = 0;
    let mut compactions = 0;
    for task in &played.tasks {
        let wanted = live_servers(task.index, period);
        for name in &live {
            if !wanted.contains(name) {
                manager
                    .set_enabled(name, false)
                    .await
                    .with_context(|| format!("disconnecting {name}"))?;
            }
        }
        for name in &wanted {
            if !live.contains(name) {
                manager
                    .set_enabled(name, true)
                    .await
                    .with_context(|| format!("connecting {name}"))?;
            }
        }
        live = wanted;
        manager.settle().await;
        let summary = agent
            .prompt(task.prompt.clone())
            .await
            .with_context(|| format!("{NAME}: task {}", task.index + 1))?;
        let mut failed = Vec::new();
        while let Ok(event) = events.try_recv() {
            match event {
                AgentEvent::ToolEnd {
                    name,
                    is_error: true,
                    ..
                } => failed.push(name),
                AgentEvent::CompactionEnd {
                    entry_id: Some(_), ..
                } => compactions += 1,
                _ => {}
            }
        }
        if summary.reason == "stop" && summary.final_text == task.final_text && failed.is_empty() {
            completed += 1;
        } else {
            eprintln!(
                "{NAME} / {} / {}: task {} not completed (failed tools: {failed:?}, ended {:?})",
                cache_model.name(),
                strategy.name(),
                task.index + 1,
                summary.reason
            );
        }
        rows.take(server.requests())?;
    }
    manager.shutdown().await;
    // The scripted turns are played one request each, in order (no summary requests on this
    // workload's window): request k is turn k.
    let search_turns: Vec<usize> = played
        .tasks
        .iter()
        .flat_map(|task| {
            task.calls
                .iter()
                .map(|call| call.tool == strata_mcp::search::SEARCH_TOOL)
                .chain(std::iter::once(false))
        })
        .enumerate()
        .filter_map(|(turn, search)| search.then_some(turn))
        .collect();
    let searches = Searches {
        requests: search_turns.len(),
        cost: search_turns
            .iter()
            .filter_map(|turn| rows.rows.get(*turn))
            .map(|row| row.cost)
            .sum(),
        in_response: provider_searches(&played, &routes.provider),
    };
    let run = Run {
        harness: "strata".to_owned(),
        strategy: strategy.name().to_owned(),
        workload: workload.spec.name.clone(),
        cache_model: cache_model.name().to_owned(),
        requests: rows.rows,
        tasks_completed: completed,
        tasks_total: played.tasks.len(),
        compactions,
        restarts: Vec::new(),
        prepared_compactions: 0,
    };
    Ok((run, searches))
}

/// The prices the `auto` exposure rule weighs: the model's, with the writes of the lifetime the
/// cache model uses.
fn token_prices(prices: &strata_provider::Prices, cache_model: CacheModel) -> TokenPrices {
    TokenPrices {
        cache_read: prices.cache_read,
        cache_write: if cache_model == CacheModel::AnthropicOneHour {
            prices.cache_write_1h
        } else {
            prices.cache_write_5m
        },
        output: prices.output,
    }
}

/// The servers strata's `auto` exposure reaches through `mcp_tool_search` at `prices`: every
/// server connected once to a manager configured as the run's, its decision read back.
async fn searched_servers(
    servers: &Servers,
    prices: TokenPrices,
    native: bool,
    searchable: strata_mcp::Searchable,
) -> Result<Routes> {
    let configs = servers
        .configs(Exposure::Auto)
        .into_iter()
        .map(|mut config| {
            config.enabled = true;
            config
        })
        .collect();
    let manager = McpManager::new(configs, Duration::from_secs(60));
    manager.set_native_deferral(native);
    manager.set_searchable(searchable);
    manager.set_prices(prices);
    manager.wait_ready().await;
    let status = manager.status();
    manager.shutdown().await;
    for server in &status {
        if server.state != strata_mcp::ServerState::Connected {
            bail!("{} did not connect: {:?}", server.name, server.state);
        }
        eprintln!("{NAME}: {}: {}", server.name, server.exposure_note);
    }
    let mut routes = Routes::default();
    for server in status {
        match (server.exposure, server.provider_search) {
            ("deferred", true) => routes.provider.push(server.name),
            ("deferred", false) => routes.client.push(server.name),
            _ => {}
        }
    }
    Ok(routes)
}

/// The workload as a model plays it when the tools of `searched` servers are not declared: the
/// first call of each such tool is preceded by an `mcp_tool_search` for it (its result, with the
/// schema, stays in the conversation), and every call goes through `mcp_tool_call`. The extra
/// requests are part of the run and of its bill.
fn with_searches(workload: &Workload, searched: &[String]) -> Workload {
    let mut played = workload.clone();
    let mut found: Vec<String> = Vec::new();
    for task in &mut played.tasks {
        let mut calls = Vec::with_capacity(task.calls.len());
        for call in &task.calls {
            let server = call
                .tool
                .strip_prefix("mcp__")
                .and_then(|rest| rest.split("__").next());
            if !server.is_some_and(|server| searched.iter().any(|s| s == server)) {
                calls.push(call.clone());
                continue;
            }
            if !found.contains(&call.tool) {
                let words = call
                    .tool
                    .rsplit("__")
                    .next()
                    .unwrap_or_default()
                    .replace('_', " ");
                calls.push(ScriptedCall {
                    tool: strata_mcp::search::SEARCH_TOOL.to_owned(),
                    args: json_object(json!({"query": words})),
                });
                found.push(call.tool.clone());
            }
            calls.push(ScriptedCall {
                tool: strata_mcp::search::CALL_TOOL.to_owned(),
                args: json_object(json!({"name": call.tool, "arguments": call.args})),
            });
        }
        task.calls = calls;
    }
    played
}

fn json_object(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        _ => Map::new(),
    }
}

/// Longest wait for one task of Pi's.
const PI_TASK_TIMEOUT: Duration = Duration::from_secs(300);

/// Runs Pi 1.6 on the workload with the same servers, through its own MCP support.
pub fn run_pi(
    workload: &Workload,
    period: usize,
    servers: &Servers,
    cache_model: CacheModel,
) -> Result<Run> {
    let install = Install::locate()?;
    install.check(Peer::Pi)?;
    let spec = &workload.spec;
    let (_, model_id) = cache_model.qualified_model();
    let scenario_text = script::scenario_toml(workload, model_id, true)?;
    let scenario =
        Scenario::from_toml(&scenario_text, "pi scenario").context("loading the Pi scenario")?;
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

    let cwd = tempfile::tempdir().context("creating the working directory")?;
    let home = tempfile::tempdir().context("creating Pi's home")?;
    workload.seed(cwd.path())?;
    // Pi discovers extensions in its agent dir; the servers' entries sit beside it.
    let agent_dir = home.path().join("pi-agent");
    let extensions = agent_dir.join("extensions");
    std::fs::create_dir_all(&extensions)
        .with_context(|| format!("creating {}", extensions.display()))?;
    std::fs::copy(
        install.script("pi-bench-mcp.ts"),
        extensions.join("bench-mcp.ts"),
    )
    .context("copying the MCP extension into Pi's agent dir")?;
    std::fs::write(
        agent_dir.join("bench-mcp.json"),
        serde_json::to_vec_pretty(&servers.mcp_json())?,
    )
    .context("writing the servers' entries")?;
    let launch = Launch {
        install: &install,
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
    let mut session: Box<dyn PeerSession> = Box::new(pi::start(&launch)?);
    let mut completed = 0;
    let mut compactions = 0;
    for task in &workload.tasks {
        let text = format!(
            "[[bench-mcp:{}]] {}",
            live_servers(task.index, period).join(","),
            task.prompt
        );
        let outcome = session
            .prompt(&text, Instant::now() + PI_TASK_TIMEOUT)
            .with_context(|| format!("pi on {NAME}: task {}", task.index + 1))?;
        compactions += outcome.compactions;
        let scripted = outcome.tool_calls == task.calls.len();
        if outcome.errors.is_empty()
            && outcome.provider_error.is_none()
            && scripted
            && outcome.final_text == task.final_text
        {
            completed += 1;
        } else {
            eprintln!(
                "{NAME} / {} / pi: task {} not completed ({} of {} calls; errors {:?}; ended {:?})",
                cache_model.name(),
                task.index + 1,
                outcome.tool_calls,
                task.calls.len(),
                outcome.errors,
                outcome.final_text
            );
        }
        rows.take(server.requests())?;
    }
    session.finish()?;
    rows.take(server.requests())?;
    if std::env::var_os("STRATA_BENCH_KEEP_PEER_HOME").is_some() {
        eprintln!("pi's home is kept in {}", home.keep().display());
    }
    Ok(Run {
        harness: "pi".to_owned(),
        strategy: "pi".to_owned(),
        workload: workload.spec.name.clone(),
        cache_model: cache_model.name().to_owned(),
        requests: rows.rows,
        tasks_completed: completed,
        tasks_total: workload.tasks.len(),
        compactions,
        restarts: Vec::new(),
        prepared_compactions: 0,
    })
}

/// What to run.
#[derive(Debug, Clone, PartialEq)]
pub struct Options {
    /// Cache models.
    pub cache_models: Vec<CacheModel>,
    /// Run Pi too.
    pub pi: bool,
    /// Tasks between two server changes.
    pub period: usize,
    /// Where the document goes (relative to the workspace root).
    pub out: PathBuf,
    /// The command line, for the document.
    pub command: String,
}

impl Options {
    /// Parses the arguments after `bench-mcp`.
    pub fn parse(args: &[String]) -> Result<Self> {
        let mut cache_models = Vec::new();
        let mut pi = true;
        let mut period = PERIOD;
        let mut out = PathBuf::from("docs/bench-mcp.md");
        let mut iter = args.iter();
        while let Some(arg) = iter.next() {
            match arg.as_str() {
                "--no-pi" => pi = false,
                "--every" => {
                    let n = iter.next().context("--every needs a number of tasks")?;
                    period = n
                        .parse()
                        .ok()
                        .filter(|n| *n > 0)
                        .with_context(|| format!("--every {n}: not a positive number"))?;
                }
                "--cache" => {
                    let name = iter.next().context("--cache needs a cache model")?;
                    cache_models.push(
                        CacheModel::parse(name)
                            .with_context(|| format!("unknown cache model `{name}`"))?,
                    );
                }
                "--out" => out = PathBuf::from(iter.next().context("--out needs a file")?),
                other => bail!("unknown option `{other}`\n\n{USAGE}"),
            }
        }
        if cache_models.is_empty() {
            cache_models = vec![
                CacheModel::AnthropicFiveMinutes,
                CacheModel::AnthropicOneHour,
                CacheModel::OpenAiAutomatic,
            ];
        }
        let command = std::iter::once("cargo xtask bench-mcp".to_owned())
            .chain(args.iter().cloned())
            .collect::<Vec<_>>()
            .join(" ");
        Ok(Self {
            cache_models,
            pi,
            period,
            out,
            command,
        })
    }
}

/// Runs the workload and writes the document under `root`.
pub fn main(root: &Path, args: &[String]) -> Result<()> {
    let options = Options::parse(args)?;
    let started = Instant::now();
    let (servers, _remote) = locate_servers(root)?;
    let workload = workload(options.period);
    let period = options.period;
    let mut runs = Vec::new();
    let mut searches = Vec::new();
    for cache_model in &options.cache_models {
        // no-fold is strata's defaults without task folding, cost-trigger without masking or
        // folding: what they do here (diagnostic rows; the verdict is on `strata`).
        for strategy in [
            Strategy::Strata,
            Strategy::NoFold,
            Strategy::CostTrigger,
            Strategy::Naive,
        ] {
            let (run, search) = run_strata(&workload, period, &servers, strategy, *cache_model)
                .with_context(|| {
                    format!("{NAME} / {} / {}", cache_model.name(), strategy.name())
                })?;
            eprintln!("{}", line(&run));
            searches.push((run.label(), search));
            runs.push(run);
        }
        if options.pi && Peer::Pi.cache_models().contains(cache_model) {
            match run_pi(&workload, period, &servers, *cache_model) {
                Ok(run) => {
                    eprintln!("{}", line(&run));
                    runs.push(run);
                }
                Err(error) => {
                    eprintln!("{NAME} / {}: pi did not run: {error:#}", cache_model.name())
                }
            }
        }
    }
    // Every request of every run, one JSON line each, where asked (for reading a run closely).
    if let Some(path) = std::env::var_os("STRATA_BENCH_MCP_ROWS") {
        let mut lines = String::new();
        for run in &runs {
            for row in &run.requests {
                let mut value = serde_json::to_value(row)?;
                value["run"] = json!(run.label());
                lines.push_str(&value.to_string());
                lines.push('\n');
            }
        }
        std::fs::write(&path, lines).context("writing the rows")?;
    }
    let document = document(
        &options,
        &workload,
        &runs,
        &searches,
        started.elapsed().as_secs_f64(),
    );
    let out = root.join(&options.out);
    std::fs::write(&out, document).with_context(|| format!("writing {}", out.display()))?;
    println!("wrote {}", options.out.display());
    Ok(())
}

fn line(run: &Run) -> String {
    let totals = run.totals();
    format!(
        "{}: {} requests, ${:.4}, hit {:.2}% (ideal {:.2}%), {}/{} tasks",
        run.label(),
        totals.requests,
        totals.cost,
        totals.hit_rate() * 100.0,
        totals.ideal_hit_rate() * 100.0,
        run.tasks_completed,
        run.tasks_total
    )
}

/// The figures of one cache model: strata against its ideal, naive and Pi.
#[derive(Debug, Clone, PartialEq)]
pub struct Verdict {
    /// The cache model.
    pub cache_model: String,
    /// strata's hit rate minus its ideal's, percentage points.
    pub gap_pp: f64,
    /// strata's cost over naive's.
    pub vs_naive: f64,
    /// strata's cost over Pi's, when Pi ran.
    pub vs_pi: Option<f64>,
}

/// The verdicts, one per cache model that has both a strata and a naive run.
pub fn verdicts(runs: &[Run]) -> Vec<Verdict> {
    let mut models: Vec<&str> = runs.iter().map(|r| r.cache_model.as_str()).collect();
    models.dedup();
    models
        .into_iter()
        .filter_map(|model| {
            let find = |strategy: &str| {
                runs.iter()
                    .find(|r| r.cache_model == model && r.strategy == strategy)
                    .map(Run::totals)
            };
            let strata = find("strata")?;
            let naive = find("naive")?;
            Some(Verdict {
                cache_model: model.to_owned(),
                gap_pp: (strata.hit_rate() - strata.ideal_hit_rate()) * 100.0,
                vs_naive: strata.cost / naive.cost,
                vs_pi: find("pi").map(|pi| strata.cost / pi.cost),
            })
        })
        .collect()
}

fn document(
    options: &Options,
    workload: &Workload,
    runs: &[Run],
    searches: &[(String, Searches)],
    seconds: f64,
) -> String {
    let mut out = String::new();
    out.push_str("# tools-churn on real MCP servers\n\n");
    out.push_str(&format!(
        "Generated by `{}` in {seconds:.0} s ({}). {}\n\n",
        options.command, "xtask/src/bench/mcp_churn.rs", workload.spec.description
    ));
    out.push_str(
        "Servers: `churn` (the official Python SDK, `crates/strata-mcp/tests/fixtures/churn_server.py`, \
         stdio, connected throughout), `everything` (`@modelcontextprotocol/server-everything` over \
         stdio) and `remote` (the same server over streamable HTTP), connected in turn every two \
         tasks. strata runs on its defaults: every server `auto`, declared, found by the \
         provider's own tool search (`defer_loading`; the search runs inside the response, its \
         items kept in the session and replayed unchanged) or reached through \
         `mcp_tool_search` / `mcp_tool_call`, as the model's prices decide \
         (`strata_mcp::exposure`); naive declares every tool of every connected server and cuts \
         them when the server leaves; Pi 1.6 gets the servers with `direct` exposure through its \
         built-in MCP support (`pi.registerMcpServer` / `unregisterMcpServer` from \
         `xtask/peers/pi-bench-mcp.ts`). The scripted model calls the same tools with the same \
         arguments in every run; where strata's tools are behind `mcp_tool_search`, the first call \
         of each tool is preceded by a search request for it and calls go through \
         `mcp_tool_call`, and those extra requests are in strata's rows and bill; where the \
         provider's search finds them, strata-mock plays the search inside the response that \
         calls the tool and bills what it loads (`strata_mock::tool_search`). Requests are \
         priced by strata-mock's cache simulator (deferred tools as the providers document \
         them, `strata_mock::deferred`), the \
         ideal is the same prefix cache as in `docs/benchmarks.md`.\n\n",
    );
    out.push_str(
        "| cache | harness | cost ($) | vs naive | hit rate | ideal | Δ pp | read | written | uncached | output | requests | tasks |\n",
    );
    out.push_str("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    for run in runs {
        let totals = run.totals();
        let naive = runs
            .iter()
            .find(|r| r.cache_model == run.cache_model && r.strategy == "naive")
            .map(|r| r.totals().cost);
        out.push_str(&format!(
            "| {} | {} | {:.4} | {} | {:.2}% | {:.2}% | {:+.2} | {} | {} | {} | {} | {} | {}/{} |\n",
            run.cache_model,
            run.strategy,
            totals.cost,
            naive.map_or("—".to_owned(), |n| format!("{:.2}x", totals.cost / n)),
            totals.hit_rate() * 100.0,
            totals.ideal_hit_rate() * 100.0,
            (totals.hit_rate() - totals.ideal_hit_rate()) * 100.0,
            totals.cache_read,
            totals.cache_write,
            totals.uncached,
            totals.output,
            totals.requests,
            run.tasks_completed,
            run.tasks_total
        ));
    }
    out.push_str(
        "\nThe bill split (USD): reads, writes, uncached input and output; `searches` are the \
         requests whose reply was an `mcp_tool_search` call and what they cost (already in the \
         bill); `in-response` the searches the provider's tool search made inside a response \
         that called the tool (no request of their own; what they loaded is in the bill). \
         `no-fold` is strata's defaults without task folding and `cost-trigger` without \
         observation masking or folding, diagnostic rows: what they do on this workload.\n\n",
    );
    out.push_str(
        "| cache | harness | reads | writes | uncached | output | searches | search cost | in-response |\n",
    );
    out.push_str("|---|---|---:|---:|---:|---:|---:|---:|---:|\n");
    for run in runs {
        let bill = run.totals().bill;
        let search = searches
            .iter()
            .find(|(label, _)| *label == run.label())
            .map(|(_, s)| *s)
            .unwrap_or_default();
        out.push_str(&format!(
            "| {} | {} | {:.4} | {:.4} | {:.4} | {:.4} | {} | {:.4} | {} |\n",
            run.cache_model,
            run.strategy,
            bill.reads,
            bill.writes,
            bill.uncached,
            bill.output,
            search.requests,
            search.cost,
            search.in_response
        ));
    }
    out.push_str("\nIssue #19's bar, per cache model:\n\n");
    for verdict in verdicts(runs) {
        let met = |ok: bool| if ok { "met" } else { "**not met**" };
        out.push_str(&format!(
            "- {}: hit rate {:+.2} pp from the ideal ({}); cost {:.2}x naive ({}); {}\n",
            verdict.cache_model,
            verdict.gap_pp,
            met(verdict.gap_pp.abs() <= 0.2),
            verdict.vs_naive,
            met(verdict.vs_naive <= 0.5),
            match verdict.vs_pi {
                Some(ratio) => format!("{ratio:.2}x Pi ({})", met(ratio < 1.0)),
                None => "Pi did not run".to_owned(),
            }
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn servers_take_turns_every_two_tasks_and_churn_stays() {
        let live = |i| live_servers(i, PERIOD);
        assert_eq!(live(0), ["churn"]);
        assert_eq!(live(2), ["churn", "everything"]);
        assert_eq!(live(4), ["churn", "remote"]);
        assert_eq!(live(12), ["churn", "remote"]);
        assert_eq!(live(15), ["churn", "everything"]);
        let changes = (1..TASKS).filter(|&i| live(i) != live(i - 1)).count();
        assert_eq!(changes, 7);
        let every_task = (1..TASKS)
            .filter(|&i| live_servers(i, 1) != live_servers(i - 1, 1))
            .count();
        assert_eq!(every_task, 15);
    }

    #[test]
    fn a_searched_servers_tools_are_searched_once_each_and_called_through_mcp_tool_call() {
        let workload = workload(PERIOD);
        let searched = vec!["everything".to_owned(), "remote".to_owned()];
        let played = with_searches(&workload, &searched);
        let calls = |w: &Workload| -> Vec<ScriptedCall> {
            w.tasks.iter().flat_map(|t| t.calls.clone()).collect()
        };
        let (before, after) = (calls(&workload), calls(&played));
        let searched_tools: Vec<&str> = {
            let mut tools: Vec<&str> = before
                .iter()
                .map(|c| c.tool.as_str())
                .filter(|t| t.starts_with("mcp__everything__") || t.starts_with("mcp__remote__"))
                .collect();
            tools.sort_unstable();
            tools.dedup();
            tools
        };
        let searches = after
            .iter()
            .filter(|c| c.tool == strata_mcp::search::SEARCH_TOOL)
            .count();
        assert_eq!(
            searches,
            searched_tools.len(),
            "one search per distinct tool"
        );
        assert_eq!(after.len(), before.len() + searches);
        assert!(
            after
                .iter()
                .all(|c| !c.tool.starts_with("mcp__everything__")
                    && !c.tool.starts_with("mcp__remote__")),
            "no searched tool is called directly"
        );
        // Each wrapped call names the tool and keeps its arguments; a search comes first.
        for (i, call) in after.iter().enumerate() {
            if call.tool != strata_mcp::search::CALL_TOOL {
                continue;
            }
            let name = call.args["name"].as_str().unwrap();
            let first = after
                .iter()
                .position(|c| c.tool == strata_mcp::search::CALL_TOOL && c.args["name"] == name)
                .unwrap();
            assert_eq!(
                after[first - 1].tool,
                strata_mcp::search::SEARCH_TOOL,
                "{name}"
            );
            assert!(i >= first);
            assert!(call.args["arguments"].is_object(), "{call:?}");
        }
        // The Python server's tools are declared, so its calls are as scripted.
        let churn = |w: &[ScriptedCall]| {
            w.iter()
                .filter(|c| c.tool.starts_with("mcp__churn__"))
                .count()
        };
        assert_eq!(churn(&before), churn(&after));
        assert_eq!(with_searches(&workload, &[]).tasks, workload.tasks);
    }

    #[test]
    fn every_mcp_call_names_a_tool_of_a_server_connected_for_its_task() {
        let workload = workload(PERIOD);
        assert_eq!(workload.spec.name, NAME);
        assert_eq!(workload.scripted_requests(), TASKS * 6);
        for task in &workload.tasks {
            let live = live_servers(task.index, PERIOD);
            for call in task.calls.iter().filter(|c| c.tool.starts_with("mcp__")) {
                let server = call.tool.split("__").nth(1).unwrap();
                assert!(live.contains(&server), "task {}: {}", task.index, call.tool);
            }
        }
        let remote_calls = workload
            .tasks
            .iter()
            .flat_map(|t| &t.calls)
            .filter(|c| c.tool.starts_with("mcp__remote__"))
            .count();
        assert!(remote_calls > 0, "the HTTP server is called");
    }
}
