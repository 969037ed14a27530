//! An agent run from the command line: `-p` print mode, `--mode json`, `--mode rpc`, and the
//! interactive terminal UI when none of those applies.

mod output;

use std::io::{IsTerminal as _, Read as _};

use anyhow::Context as _;

use strata_runtime::{Op, RunEnd, UserInput};

use crate::args::{Mode, RunArgs};

pub use strata_host::Setup;

/// Runs the agent the way the flags say: rpc, a single prompt, or the terminal UI.
pub fn run(run: &RunArgs) -> anyhow::Result<()> {
    let overrides = strata_host::Overrides {
        temp_dir: crate::exit::run_temp_dir(),
        ..run.overrides()
    };
    let setup = Setup::load(&overrides)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    if run.mode == Mode::Rpc {
        crate::exit::exit_on_signals(&runtime, false);
        let export: strata_rpc::HtmlExport = Box::new(|file, output| {
            crate::export::export_html(file, output, crate::export::Overwrite::Refuse)
                .map_err(|e| format!("{e:#}"))
        });
        return runtime
            .block_on(strata_rpc::serve_setup(
                tokio::io::stdin(),
                tokio::io::stdout(),
                setup,
                Some(export),
            ))
            .map_err(Into::into);
    }
    let prompt = prompt_text(run)?;
    crate::exit::exit_on_signals(&runtime, prompt.is_none());
    match prompt {
        Some(prompt) => runtime.block_on(run_prompt(&setup, run.mode, prompt)),
        None => crate::tui::run(setup, run.resume, &runtime),
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
    if run.print.as_deref().is_some_and(|p| p.trim().is_empty()) && piped.is_empty() {
        anyhow::bail!(
            "-p was given an empty prompt: write the prompt after -p, or pipe it on stdin"
        );
    }
    Ok(match (&run.print, piped.is_empty()) {
        (Some(prompt), true) => Some(prompt.clone()),
        (Some(prompt), false) => Some(format!("{prompt}\n\n{piped}")),
        (None, false) => Some(piped.to_owned()),
        (None, true) => None,
    })
}

/// `-p` and `--mode json`: one prompt through the session runtime, then shut it down.
async fn run_prompt(setup: &Setup, mode: Mode, prompt: String) -> anyhow::Result<()> {
    let mut built = setup.build_agent()?;
    let json = if mode == Mode::Json {
        let (stream, header) =
            strata_rpc::json_mode::JsonStream::start(&mut built.agent, setup.config.max_retries);
        // Pi's json mode opens with the session header.
        output::print_records(&[header])?;
        Some(stream)
    } else {
        None
    };
    // A server still starting when the first request stops waiting for it is said at once.
    let starting = setup.mcp_manager();
    let said_starting = tokio::spawn(async move {
        starting.wait_ready().await;
        for line in strata_host::mcp::still_starting_lines(&starting) {
            eprintln!("strata: {line}");
        }
    });
    let (handle, events, task) = strata_runtime::spawn(built.agent);
    handle.send(Op::Prompt(UserInput::text(prompt)))?;
    // Queued behind the prompt: the runtime ends once the run has.
    handle.send(Op::Shutdown)?;
    drop(handle);
    let ended = output::print_events(events, json).await?;
    let agent = task.await.context("the session runtime failed")?;
    said_starting.abort();
    drop(agent);
    let mcp = setup.mcp_manager();
    for line in strata_host::mcp::failure_lines(&mcp) {
        eprintln!("strata: {line}");
    }
    mcp.shutdown().await;
    drop(built.temp);
    let ended = ended.context("the run did not end")?;
    if let Some(error) = ended.error {
        anyhow::bail!("the run failed: {error}");
    }
    if mode == Mode::Text {
        output::print_final(&ended.final_text)?;
    }
    if matches!(ended.end, RunEnd::Error | RunEnd::Aborted) {
        anyhow::bail!("the run ended: {}", ended.end.as_str());
    }
    Ok(())
}
