//! An agent run from the command line: `-p` print mode, `--mode json`, `--mode rpc`, and the
//! interactive terminal UI when none of those applies.

mod factory;
pub mod model;
mod output;
pub mod rpc;
pub mod setup;

use std::io::{IsTerminal as _, Read as _};

use anyhow::Context as _;

use crate::args::{Mode, RunArgs};

pub use setup::Setup;

/// Runs the agent the way the flags say: rpc, a single prompt, or the terminal UI.
pub fn run(run: &RunArgs) -> anyhow::Result<()> {
    let setup = Setup::load(run)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    if run.mode == Mode::Rpc {
        return runtime.block_on(rpc::serve(setup));
    }
    match prompt_text(run)? {
        Some(prompt) => runtime.block_on(run_prompt(&setup, prompt)),
        None => crate::tui::run(setup, &runtime),
    }
}

/// `-p` text, with piped stdin appended; piped stdin alone when there is no `-p`.
fn prompt_text(run: &RunArgs) -> anyhow::Result<Option<String>> {
    let stdin = std::io::stdin();
    let mut piped = String::new();
    if !stdin.is_terminal() {
        stdin
            .lock()
            .read_to_string(&mut piped)
            .context("reading stdin")?;
    }
    let piped = piped.trim();
    Ok(match (&run.print, piped.is_empty()) {
        (Some(prompt), true) => Some(prompt.clone()),
        (Some(prompt), false) => Some(format!("{prompt}\n\n{piped}")),
        (None, false) => Some(piped.to_owned()),
        (None, true) => None,
    })
}

async fn run_prompt(setup: &Setup, prompt: String) -> anyhow::Result<()> {
    let mode = setup.run.mode;
    let built = setup.build_agent()?;
    let mut agent = built.agent;
    let events = agent.subscribe();
    let printer = tokio::spawn(output::print_events(events, mode));
    let result = agent.prompt(prompt).await;
    drop(agent);
    let mcp = setup.mcp_manager();
    for line in crate::mcp::failure_lines(&mcp) {
        eprintln!("strata: {line}");
    }
    mcp.shutdown().await;
    let printed = printer.await.context("the output task failed")?;
    let summary = result.context("the run failed")?;
    if mode == Mode::Text {
        output::print_final(&summary.final_text)?;
    }
    printed?;
    drop(built.temp);
    if summary.reason == "error" || summary.reason == "aborted" {
        anyhow::bail!("the run ended: {}", summary.reason);
    }
    Ok(())
}
