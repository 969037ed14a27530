//! `strata demo`: the scripted session of [`strata_demo`] against its in-process mock, printed
//! as it plays with the bill, or (`--interactive`) in the terminal UI.

use std::path::Path;
use std::time::Instant;

use anyhow::Context as _;
use strata_demo::{TARGETS, Target, bundle, script};
use strata_runtime::Catalog;

use crate::args::DemoArgs;
use strata_host::Setup;

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
    let mut print = |line: &str| println!("{line}");
    let progress: strata_demo::Progress<'_> = if args.json { None } else { Some(&mut print) };
    let report = runtime.block_on(strata_demo::play_all(&catalog, &root, progress))?;
    let elapsed = started.elapsed();
    let mut stdout = std::io::stdout().lock();
    if args.json {
        serde_json::to_writer_pretty(&mut stdout, &report).context("writing JSON")?;
        println!();
        return Ok(());
    }
    strata_demo::print_tables(&report, &mut stdout).context("writing the tables")?;
    drop(stdout);
    let requests: usize = report
        .runs
        .iter()
        .map(strata_demo::RunReport::requests)
        .sum();
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
    let mut setup = setup(catalog, target, server.base_url(), &repo);
    setup.config.compaction.keep_recent_tokens = strata_demo::KEEP_RECENT_TOKENS;
    setup.run.session = Some(dir.join("session.jsonl"));
    let banner = format!(
        "strata demo: a scripted model on strata-mock (in process, no key, no network); tool calls run in {}. \
         Press Enter to send each prepared prompt. After the first answer, turn `write` off with `/tools -write`; \
         after the second, /compact; after the fifth, /tree back to before the fourth question \
         (with a summary), then /compact again.",
        repo.display()
    );
    let result = strata_tui::run_with(
        setup,
        runtime,
        strata_tui::TuiOptions {
            queued_prompts,
            banner: Some(banner),
            ..strata_tui::TuiOptions::default()
        },
    );
    // The bill, as the non-interactive demo ends: every request the session made, priced.
    if result.is_ok()
        && let Some(model) = catalog.model(target.provider, target.model)
    {
        let rows: Vec<strata_demo::bill::Row> = server
            .requests()
            .iter()
            .map(|record| strata_demo::bill::row(record, &model.prices))
            .collect();
        if !rows.is_empty() {
            strata_demo::print_bill(&rows, &mut std::io::stdout().lock())
                .context("writing the bill")?;
        }
    }
    drop(server);
    result
}

/// A setup whose only model is `target` on the in-process mock: no key, no network, no
/// user configuration.
fn setup(catalog: &Catalog, target: Target, base_url: String, cwd: &Path) -> Setup {
    Setup::in_process(
        catalog.clone(),
        &format!("{}/{}", target.provider, target.model),
        base_url,
        cwd,
        crate::exit::run_temp_dir(),
    )
}
