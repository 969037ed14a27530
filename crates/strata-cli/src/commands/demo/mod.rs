//! `strata demo`: a real coding task against strata-mock, in process, with the bill.
//!
//! The scripted model (bundled `demo/scenario.toml`, sequence playback) asks for the tool
//! calls; the agent really runs them in a temporary copy of the bundled repository (`demo/repo`:
//! a POSIX shell library whose `max` is wrong, and its tests). The session reads, runs the
//! failing tests with bash, edits, runs them again, gains grep/find/ls, compacts twice and
//! returns to an earlier entry with a branch summary. The same session is played six times —
//! the strata renderer and a naive one that rewrites its prefix on every change, on each of
//! three cache models (Anthropic explicit breakpoints, OpenAI automatic prefix, DeepSeek disk
//! cache) — each on a fresh mock and a fresh copy, and every figure printed is strata-mock's
//! own accounting of the requests it received.

mod bill;
mod bundle;
mod script;

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::Context as _;
use serde::Serialize;
use strata_context::RenderPolicy;
use strata_mock::RequestRecord;
use strata_provider::{Catalog, Prices, Usage};

use crate::args::DemoArgs;
use bill::{Row, Totals};
use script::{TARGETS, Target};

/// One play of the session, as printed with `--json`.
#[derive(Debug, Serialize)]
struct RunReport {
    provider: &'static str,
    model: &'static str,
    cache_model: &'static str,
    /// `strata` or `naive`.
    renderer: &'static str,
    /// USD per million tokens, from the capability table.
    prices: Prices,
    rows: Vec<Row>,
    totals: Totals,
    /// Every request exactly as strata-mock recorded it (bodies left out).
    mock_records: Vec<RequestRecord>,
    /// Usage of each answered turn as the agent's adapter read it from the stream.
    client_usage: Vec<Usage>,
    /// The output of every `sh test.sh` the agent ran.
    test_runs: Vec<String>,
    session_file: PathBuf,
    working_copy: PathBuf,
}

/// Strata against naive on one provider.
#[derive(Debug, Serialize)]
struct Comparison {
    provider: &'static str,
    model: &'static str,
    cache_model: &'static str,
    strata_usd: f64,
    naive_usd: f64,
    strata_hit_rate: f64,
    naive_hit_rate: f64,
    /// `naive_usd / strata_usd`.
    ratio: f64,
}

#[derive(Debug, Serialize)]
struct Report {
    runs: Vec<RunReport>,
    comparison: Vec<Comparison>,
}

/// Runs the demo.
pub fn run(args: &DemoArgs) -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    let catalog = Catalog::builtin().context("loading the capability table")?;
    let (root, _temp) = match &args.keep {
        Some(dir) => {
            std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
            let dir = dir
                .canonicalize()
                .with_context(|| format!("resolving {}", dir.display()))?;
            (dir, None)
        }
        None => {
            let temp = tempfile::Builder::new()
                .prefix("strata-demo-")
                .tempdir()
                .context("creating a temporary directory")?;
            (temp.path().to_path_buf(), Some(temp))
        }
    };
    if args.interactive {
        return interactive(&runtime, &catalog, &root);
    }
    let started = Instant::now();
    let report = runtime.block_on(play_all(&catalog, &root, !args.json))?;
    let elapsed = started.elapsed();
    if args.json {
        let mut stdout = std::io::stdout().lock();
        serde_json::to_writer_pretty(&mut stdout, &report).context("writing JSON")?;
        println!();
        return Ok(());
    }
    print_tables(&report);
    let requests: usize = report.runs.iter().map(|r| r.rows.len()).sum();
    println!(
        "\n{} sessions, {requests} requests, played in {} ms on a virtual clock (no waits, no network).",
        report.runs.len(),
        elapsed.as_millis()
    );
    match &args.keep {
        Some(_) => println!(
            "Working copies and session files are under {} (open one with `strata tree FILE`).",
            root.display()
        ),
        None => println!("Pass --keep DIR to keep the working copies and session files."),
    }
    Ok(())
}

/// `--interactive`: the same scripted session in the terminal UI, on Anthropic with strata's
/// renderer. The prompts are offered one per Enter; the banner says when to `/compact` and
/// `/tree`.
fn interactive(
    runtime: &tokio::runtime::Runtime,
    catalog: &Catalog,
    root: &Path,
) -> anyhow::Result<()> {
    let target = TARGETS[0];
    let dir = root.join("interactive");
    let repo = dir.join("textkit");
    bundle::write_repo(&repo)?;
    let scenario = bundle::scenario()?;
    let queued_prompts: Vec<String> = scenario
        .user_prompts()
        .into_iter()
        .map(str::to_owned)
        .collect();
    let server = runtime.block_on(script::start_mock(catalog, target))?;
    server.load_scenario(scenario);
    let mut setup = script::setup(catalog, target, server.base_url(), &repo);
    setup.config.compaction.keep_recent_tokens = script::KEEP_RECENT_TOKENS;
    setup.run.session = Some(dir.join("session.jsonl"));
    let banner = format!(
        "strata demo: a scripted model on strata-mock (in process, no key, no network); tool calls run in {}. \
         Press Enter to send each prepared prompt. After the first answer, turn `write` off with `/tools -write`; \
         after the second, /compact; after the fifth, /tree back to before the fourth question \
         (with a summary), then /compact again.",
        repo.display()
    );
    let result = crate::tui::run_with(
        setup,
        runtime,
        crate::tui::TuiOptions {
            queued_prompts,
            banner: Some(banner),
            resume: false,
        },
    );
    drop(server);
    result
}

fn policy_name(policy: RenderPolicy) -> &'static str {
    match policy {
        RenderPolicy::Strata => "strata",
        RenderPolicy::Naive => "naive",
        _ => "other",
    }
}

async fn play_all(catalog: &Catalog, root: &Path, verbose: bool) -> anyhow::Result<Report> {
    let plays: Vec<(Target, RenderPolicy)> = TARGETS
        .iter()
        .flat_map(|target| [RenderPolicy::Strata, RenderPolicy::Naive].map(|p| (*target, p)))
        .collect();
    let Some((&(first_target, first_policy), rest)) = plays.split_first() else {
        anyhow::bail!("the demo has nothing to play");
    };
    // The first play is narrated as it goes; the others replay the same work silently, each
    // on its own mock and copy, at the same time.
    let dir = |target: Target, policy: RenderPolicy| {
        root.join(format!("{}-{}", target.provider, policy_name(policy)))
    };
    if verbose {
        print_opening(first_target, &dir(first_target, first_policy));
    }
    let mut print = |line: &str| println!("{line}");
    let progress: script::Progress<'_> = if verbose { Some(&mut print) } else { None };
    let first = script::play(
        catalog,
        first_target,
        first_policy,
        &dir(first_target, first_policy),
        progress,
    )
    .await
    .with_context(|| context(first_target, first_policy))?;
    if verbose {
        println!(
            "\nThe same session again, each on a fresh mock and a fresh copy: the naive renderer, then OpenAI and DeepSeek with both renderers …"
        );
    }
    let mut others = tokio::task::JoinSet::new();
    for (index, &(target, policy)) in rest.iter().enumerate() {
        let catalog = catalog.clone();
        let dir = dir(target, policy);
        others.spawn(async move {
            let play = script::play(&catalog, target, policy, &dir, None).await;
            (index, play)
        });
    }
    let mut played: Vec<Option<script::Play>> = rest.iter().map(|_| None).collect();
    while let Some(joined) = others.join_next().await {
        let (index, play) = joined.context("a demo play stopped")?;
        let (target, policy) = rest[index];
        let play = play.with_context(|| context(target, policy))?;
        if let Some(slot) = played.get_mut(index) {
            *slot = Some(play);
        }
    }
    let mut runs = vec![report(catalog, first_target, first_policy, first)?];
    for (&(target, policy), play) in rest.iter().zip(played) {
        let play = play.context("a demo play did not finish")?;
        runs.push(report(catalog, target, policy, play)?);
    }
    let comparison = TARGETS
        .iter()
        .filter_map(|target| {
            let find = |renderer: &str| {
                runs.iter()
                    .find(|r| r.provider == target.provider && r.renderer == renderer)
            };
            let (strata, naive) = (find("strata")?, find("naive")?);
            Some(Comparison {
                provider: target.provider,
                model: target.model,
                cache_model: target.cache,
                strata_usd: strata.totals.cost_usd,
                naive_usd: naive.totals.cost_usd,
                strata_hit_rate: strata.totals.hit_rate,
                naive_hit_rate: naive.totals.hit_rate,
                ratio: if strata.totals.cost_usd > 0.0 {
                    naive.totals.cost_usd / strata.totals.cost_usd
                } else {
                    0.0
                },
            })
        })
        .collect();
    Ok(Report { runs, comparison })
}

fn report(
    catalog: &Catalog,
    target: Target,
    policy: RenderPolicy,
    play: script::Play,
) -> anyhow::Result<RunReport> {
    let prices = catalog
        .model(target.provider, target.model)
        .with_context(|| {
            format!(
                "the capability table has no {}/{}",
                target.provider, target.model
            )
        })?
        .prices;
    let mock_records: Vec<RequestRecord> = play
        .records
        .into_iter()
        .map(|mut record| {
            record.body = None;
            record
        })
        .collect();
    let rows: Vec<Row> = mock_records
        .iter()
        .map(|record| bill::row(record, &prices))
        .collect();
    let totals = bill::totals(&rows);
    Ok(RunReport {
        provider: target.provider,
        model: target.model,
        cache_model: target.cache,
        renderer: policy_name(policy),
        prices,
        rows,
        totals,
        mock_records,
        client_usage: play.client_usage,
        test_runs: play.test_runs,
        session_file: play.session_file,
        working_copy: play.repo,
    })
}

fn context(target: Target, policy: RenderPolicy) -> String {
    format!(
        "playing the demo on {}/{} with the {} renderer",
        target.provider,
        target.model,
        policy_name(policy)
    )
}

fn print_opening(target: Target, dir: &Path) {
    println!("strata demo — a scripted model on strata-mock, in process: no key, no network.");
    println!(
        "The model's tool calls are real: they run in {} ({}).",
        dir.join("textkit").display(),
        bundle::repo_files().join(", ")
    );
    println!(
        "Model: {}/{} ({}), strata's renderer.",
        target.provider, target.model, target.cache
    );
}

fn print_tables(report: &Report) {
    let Some(strata) = report.runs.first() else {
        return;
    };
    let naive = report
        .runs
        .iter()
        .find(|r| r.provider == strata.provider && r.renderer == "naive");
    println!(
        "\nEvery request on {}/{} ({}), as strata-mock accounted it (tokens; chapters = tools / system / messages):",
        strata.provider, strata.model, strata.cache_model
    );
    println!(
        "{:>3}  {:<21} {:>6} {:>6} {:>8}  {:>7} {:>7} {:>8} {:>5}  {:>9}   {:>11} {:>9}",
        "#",
        "request",
        "tools",
        "system",
        "messages",
        "read",
        "write",
        "uncached",
        "hit",
        "cost",
        "naive: hit",
        "cost"
    );
    for (index, row) in strata.rows.iter().enumerate() {
        // Pair by kind and occurrence: a compaction's two summary requests arrive in no fixed
        // order, so the naive run's row at the same index may be the other one.
        let occurrence = strata.rows[..index]
            .iter()
            .filter(|r| r.kind == row.kind)
            .count();
        let other =
            naive.and_then(|n| n.rows.iter().filter(|r| r.kind == row.kind).nth(occurrence));
        let (naive_hit, naive_cost) = other.map_or_else(
            || ("-".to_owned(), "-".to_owned()),
            |o| (percent(o.hit_rate), usd(o.cost_usd)),
        );
        println!(
            "{:>3}  {:<21} {:>6} {:>6} {:>8}  {:>7} {:>7} {:>8} {:>5}  {:>9}   {:>11} {:>9}",
            row.seq,
            row.kind,
            row.tools,
            row.system,
            row.messages,
            row.cache_read,
            row.cache_write,
            row.uncached,
            percent(row.hit_rate),
            usd(row.cost_usd),
            naive_hit,
            naive_cost
        );
    }
    let t = &strata.totals;
    println!(
        "{:>3}  {:<21} {:>6} {:>6} {:>8}  {:>7} {:>7} {:>8} {:>5}  {:>9}   {:>11} {:>9}",
        "",
        "total",
        "",
        "",
        t.input,
        t.cache_read,
        t.cache_write,
        t.uncached,
        percent(t.hit_rate),
        usd(t.cost_usd),
        naive.map_or_else(|| "-".to_owned(), |n| percent(n.totals.hit_rate)),
        naive.map_or_else(|| "-".to_owned(), |n| usd(n.totals.cost_usd)),
    );

    println!(
        "\nTotals for the same work (prices per the capability table; naive = a renderer that rewrites its prefix on every change):"
    );
    println!(
        "{:<34} {:<21} {:>9} {:>9}  {:>10} {:>10}  {:>6}",
        "model", "cache", "hit", "naive hit", "strata", "naive", "naive÷strata"
    );
    for c in &report.comparison {
        println!(
            "{:<34} {:<21} {:>9} {:>9}  {:>10} {:>10}  {:>11.2}×",
            format!("{}/{}", c.provider, c.model),
            c.cache_model,
            percent(c.strata_hit_rate),
            percent(c.naive_hit_rate),
            usd(c.strata_usd),
            usd(c.naive_usd),
            c.ratio
        );
    }
}

fn percent(rate: f64) -> String {
    format!("{:.0}%", rate * 100.0)
}

fn usd(value: f64) -> String {
    format!("${value:.4}")
}
