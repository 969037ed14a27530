//! `cargo xtask bench`: what the work costs on each provider's prompt cache, strata against the
//! strategies other harnesses use, on scripted workloads played through the real agent loop
//! against strata-mock; plus the speed figures. Writes `docs/benchmarks.md` and
//! `docs/bench/*.svg`.
//!
//! - [`workload`]: the TOML workloads under `xtask/workloads/` and the scenarios made from them.
//! - [`strategy`]: strata, naive, dynamic-tools, window-trigger — library policies, not forks.
//! - [`model`]: the cache models (Anthropic 5m / 1h, OpenAI automatic, DeepSeek disk).
//! - [`driver`]: one run: `Agent` + in-process strata-mock + real tools in a temp dir.
//! - [`run`]: the result type any harness's run fills ([`Run`], [`RequestRow`]).
//! - [`table`], [`chart`], [`report`]: the tables, SVG charts and the document.

pub mod binary;
pub mod chart;
pub mod delegate;
pub mod driver;
pub mod forgetting;
pub mod gemini_cache;
pub mod ideal;
pub mod mcp_churn;
pub mod model;
pub mod peers;
pub mod plays;
pub mod report;
pub mod run;
pub mod speed;
pub mod strategy;
pub mod table;
pub mod threads;
pub mod tools;
pub mod transport;
pub mod workload;

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, Result, bail};

pub use model::CacheModel;
pub use run::{MissCause, RequestKind, RequestRow, Run, Totals};
pub use strategy::Strategy;
pub use workload::Workload;

/// A harness other than strata that can play a workload (the peers: Pi, Claude Code):
/// returns its runs, in the same row format, for the cache models it supports.
pub type PeerRunner = fn(&Workload, &[CacheModel]) -> Result<Vec<Run>>;

/// The peer harnesses run after strata's strategies (see [`peers::runners`]).
pub fn peer_runners() -> Vec<(&'static str, PeerRunner)> {
    peers::runners()
}

/// Usage of `cargo xtask bench`.
pub const USAGE: &str =
    "  bench [--quick] [--only WORKLOAD]... [--cache MODEL]... [--no-speed] [--out FILE]
      Cache-efficiency benchmark: every workload (short, long, pause, tools-churn) with the
      strategies strata, naive, dynamic-tools (and cost-trigger, window-trigger on long and recall; no-fold on all but short) on each cache model
      (anthropic-5m, anthropic-1h, openai, deepseek) through the agent loop against strata-mock;
      then the speed benches. Rewrites docs/benchmarks.md and docs/bench/*.svg.
      --quick      cache models anthropic-5m and openai only, no speed section
      --only W     only workload W (repeatable); `--only binary` instead measures strata's
                   release binary with and without the demo feature (its own section)
      --cache M    only cache model M (repeatable)
      --strategy S only strata strategy S (repeatable; for trying a policy, the tables then
                   lack the others)
      --no-peers   skip the peer harnesses (Pi)
      --no-speed   skip the speed section (the document keeps the earlier figures)
      --out FILE   write the document to FILE instead of docs/benchmarks.md
      `--only delegate` instead runs the delegation workload (its own document,
                   docs/bench-delegate.md)
      `--only transport` instead plays a 40-call tool loop over HTTP and over the Responses
                   WebSocket mode: bytes uploaded and time to first token (the mock's latency
                   model), docs/bench-transport.md
      `--only threads` instead compares Anthropic message threads with full requests on a
                   long tool loop: upload bytes and time to first token (docs/bench-threads.md)
      `--only gemini-cache` instead compares Gemini explicit caches with implicit caching on
                   a long tool loop: cost with creates and storage (docs/bench-gemini-cache.md)
      --json FILE  also write every run, request by request, as JSON
      --debug      run in the debug build (by default the command re-runs itself in release)";

/// What to run.
#[derive(Debug, Clone, PartialEq)]
pub struct Options {
    /// Workloads, by name.
    pub workloads: Vec<String>,
    /// Cache models.
    pub cache_models: Vec<CacheModel>,
    /// Run the speed section.
    pub speed: bool,
    /// Where the document goes (relative to the workspace root).
    pub out: PathBuf,
    /// The command line, for the document.
    pub command: String,
    /// Also write every run, row by row, as JSON here.
    pub json: Option<PathBuf>,
    /// Only these strata strategies (all of [`strategies_for`] when empty).
    pub strategies: Vec<Strategy>,
    /// Run the peer harnesses.
    pub peers: bool,
}

impl Options {
    /// Parses the arguments after `bench`.
    pub fn parse(args: &[String]) -> Result<Self> {
        let mut workloads = Vec::new();
        let mut cache_models = Vec::new();
        let mut quick = false;
        let mut speed = true;
        let mut out = PathBuf::from("docs/benchmarks.md");
        let mut json = None;
        let mut strategies = Vec::new();
        let mut peers = true;
        let mut iter = args.iter();
        while let Some(arg) = iter.next() {
            match arg.as_str() {
                "--quick" => quick = true,
                "--no-speed" => speed = false,
                "--only" => {
                    let name = iter.next().context("--only needs a workload")?;
                    if !workload::WORKLOADS.contains(&name.as_str()) {
                        bail!(
                            "unknown workload `{name}` (known: {:?})",
                            workload::WORKLOADS
                        );
                    }
                    workloads.push(name.clone());
                }
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
                "--out" => out = PathBuf::from(iter.next().context("--out needs a file")?),
                "--strategy" => {
                    let name = iter.next().context("--strategy needs a strategy")?;
                    strategies.push(
                        Strategy::parse(name)
                            .with_context(|| format!("unknown strategy `{name}`"))?,
                    );
                }
                "--no-peers" => peers = false,
                "--json" => json = Some(PathBuf::from(iter.next().context("--json needs a file")?)),
                other => bail!("unknown option `{other}`\n\n{USAGE}"),
            }
        }
        if workloads.is_empty() {
            workloads = workload::WORKLOADS.map(str::to_owned).to_vec();
        }
        if cache_models.is_empty() {
            cache_models = if quick {
                vec![
                    CacheModel::AnthropicFiveMinutes,
                    CacheModel::OpenAiAutomatic,
                ]
            } else {
                CacheModel::ALL.to_vec()
            };
        }
        if quick {
            speed = false;
        }
        let command = std::iter::once("cargo xtask bench".to_owned())
            .chain(args.iter().cloned())
            .collect::<Vec<_>>()
            .join(" ");
        Ok(Self {
            workloads,
            cache_models,
            speed,
            out,
            command,
            json,
            strategies,
            peers,
        })
    }
}

/// `" (wait at a compaction: median M s, worst W s over N attempts)"`, or nothing without
/// one.
fn waits_note(sorted_ms: &[u64]) -> String {
    let Some(&worst) = sorted_ms.last() else {
        return String::new();
    };
    let mid = sorted_ms.len() / 2;
    let median = if sorted_ms.len().is_multiple_of(2) {
        (sorted_ms[mid - 1] + sorted_ms[mid]) as f64 / 2.0
    } else {
        sorted_ms[mid] as f64
    };
    format!(
        " (wait at a compaction: median {:.1} s, worst {:.1} s over {} attempts)",
        median / 1000.0,
        worst as f64 / 1000.0,
        sorted_ms.len()
    )
}

/// The strategies run on `workload`.
pub fn strategies_for(workload: &str) -> Vec<Strategy> {
    let mut strategies = Strategy::COMPARED.to_vec();
    if workload == "long" || workload.starts_with("recall") {
        // The defaults (`strata`: cost trigger and masking) beside the cost trigger alone and
        // the window trigger alone (the earlier defaults), so the choice stays measured.
        strategies.push(Strategy::CostTrigger);
        strategies.push(Strategy::WindowTrigger);
    }
    if workload == "long" || workload.starts_with("recall") {
        // Each memory play beside the defaults it changes one slot of.
        strategies.extend([
            Strategy::LosslessPlay,
            Strategy::PrecomputePlay,
            Strategy::StickyNotePlay,
        ]);
    }
    if workload != "short" {
        // The defaults beside the defaults before task folding: what folding gains, the
        // re-reads of what it forgets included (the recall workloads).
        strategies.push(Strategy::NoFold);
    }
    if workload == "pause" || workload == "effort" {
        // The defaults beside the row without the 2026 cache features (output-free pre-warm,
        // mid-conversation effort): what they gain on the workloads that use them.
        strategies.push(Strategy::NoCacheFeatures);
    }
    if workload.starts_with("recall") {
        // The layouts dynamic-tools stands for are measured elsewhere; recall is about what
        // a smaller context forgets.
        strategies.retain(|strategy| *strategy != Strategy::DynamicTools);
    }
    strategies
}

/// Set in the release build this command re-runs itself as.
const RELEASE_ENV: &str = "STRATA_BENCH_RELEASE";

/// Runs the benchmark and writes the document and charts under `root`. A debug build (what
/// `cargo xtask` gives) re-runs itself as a release build first: the mock's tokenizer and cache
/// simulator are several times faster optimized. `--debug` stays in the debug build.
pub fn main(root: &Path, args: &[String]) -> Result<()> {
    if binary::selected(args) {
        return binary::main(root, args);
    }
    if threads::selected(args) {
        return threads::main(root, args);
    }
    if gemini_cache::selected(args) {
        // Forty-odd requests: the debug build is enough.
        return gemini_cache::main(root, args);
    }
    if delegate::selected(args) {
        // Small enough for the debug build: no release re-run.
        return delegate::main(root, args);
    }
    if transport::selected(args) {
        // Forty requests: the debug build is enough.
        return transport::main(root, args);
    }
    if cfg!(debug_assertions)
        && std::env::var_os(RELEASE_ENV).is_none()
        && !args.iter().any(|arg| arg == "--debug")
    {
        let status = std::process::Command::new(
            std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned()),
        )
        .args([
            "run",
            "--release",
            "--quiet",
            "--package",
            "xtask",
            "--",
            "bench",
        ])
        .args(args)
        .env(RELEASE_ENV, "1")
        .current_dir(root)
        .status()
        .context("re-running the benchmark as a release build")?;
        if !status.success() {
            bail!("the release build of the benchmark failed ({status})");
        }
        return Ok(());
    }
    let args: Vec<String> = args
        .iter()
        .filter(|arg| *arg != "--debug")
        .cloned()
        .collect();
    let options = Options::parse(&args)?;
    let started = Instant::now();
    let mut workloads = Vec::new();
    let mut runs = Vec::new();
    for name in &options.workloads {
        let workload = Workload::load(name)?;
        for cache_model in &options.cache_models {
            for strategy in strategies_for(name)
                .into_iter()
                .filter(|s| options.strategies.is_empty() || options.strategies.contains(s))
            {
                let run_started = Instant::now();
                let run = driver::run(&workload, strategy, *cache_model).with_context(|| {
                    format!("{name} / {} / {}", cache_model.name(), strategy.name())
                })?;
                let totals = run.totals();
                eprintln!(
                    "{}: {} requests, ${:.4}, hit {:.2}% (ideal {:.2}%), {}/{} tasks, {} compactions{}, {:.1}s",
                    run.label(),
                    totals.requests,
                    totals.cost,
                    totals.hit_rate() * 100.0,
                    totals.ideal_hit_rate() * 100.0,
                    run.tasks_completed,
                    run.tasks_total,
                    run.compactions,
                    waits_note(&run.compaction_waits_ms()),
                    run_started.elapsed().as_secs_f64()
                );
                runs.push(run);
            }
        }
        for (peer, runner) in peer_runners().into_iter().filter(|_| options.peers) {
            match runner(&workload, &options.cache_models) {
                Ok(peer_runs) => runs.extend(peer_runs),
                Err(error) => eprintln!("{name}: peer {peer} did not run: {error:#}"),
            }
        }
        workloads.push(workload);
    }
    let cache_seconds = started.elapsed().as_secs_f64();
    if let Some(path) = &options.json {
        let text = serde_json::to_string_pretty(&runs).context("serializing the runs")?;
        std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))?;
    }
    let speed = options.speed.then(|| speed::measure(root));
    let charts = report::charts(root, &runs)?;
    let document = report::document(&report::Inputs {
        options: &options,
        workloads: &workloads,
        runs: &runs,
        speed: speed.as_ref(),
        charts: &charts,
        cache_seconds,
        total_seconds: started.elapsed().as_secs_f64(),
    });
    let out = root.join(&options.out);
    let document = match std::fs::read_to_string(&out) {
        Ok(previous) => binary::keep_section(&previous, document),
        Err(_) => document,
    };
    std::fs::write(&out, document).with_context(|| format!("writing {}", out.display()))?;
    println!("wrote {}", options.out.display());
    for chart in &charts {
        println!("wrote {}", chart.display());
    }
    Ok(())
}
