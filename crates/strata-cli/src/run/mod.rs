//! An agent run from the command line: `-p` print mode, `--mode json`, `--mode rpc`, and the
//! interactive terminal UI when none of those applies.

mod output;
mod prompts;

use std::io::{IsTerminal as _, Read as _};

use anyhow::Context as _;

use strata_runtime::{Op, RunEnd, UserInput};

use crate::args::{Mode, RunArgs};

pub use strata_host::Setup;

/// Runs the agent the way the flags say: rpc, a single prompt, or the terminal UI.
pub fn run(run: &RunArgs) -> anyhow::Result<()> {
    if let Some(paths) = &run.export {
        return export(paths);
    }
    if let Some(search) = &run.list_models {
        return crate::commands::list_models(search.clone(), run);
    }
    let overrides = strata_host::Overrides {
        temp_dir: crate::exit::run_temp_dir(),
        ..run.overrides()
    };
    let words = prompts::Words::split(&run.messages);
    if run.mode == Mode::Rpc && !run.messages.is_empty() {
        anyhow::bail!(
            "--mode rpc takes its prompts as `prompt` commands on stdin, not as arguments"
        );
    }
    let setup = Setup::load(&overrides)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    if run.mode == Mode::Rpc {
        crate::exit::exit_on_signals(&runtime, false);
        let export: strata_rpc::HtmlExport = Box::new(|file, output| {
            crate::commands::export::write(file, output, strata_host::export::Overwrite::Refuse)
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
    let piped = piped_stdin(run)?;
    let prompts = prompts::build(&setup.cwd, piped.as_deref(), run.print.as_deref(), &words)?;
    // Pi's rule: messages open the UI only with a terminal on both ends; `-p` never does.
    let terminals = std::io::stdin().is_terminal() && std::io::stdout().is_terminal();
    let interactive = run.print.is_none() && run.mode == Mode::Text && terminals;
    crate::exit::exit_on_signals(&runtime, prompts.is_empty() || interactive);
    if prompts.is_empty() || interactive {
        if prompts.iter().any(|p| !p.images.is_empty()) {
            anyhow::bail!(
                "images given with @path go with -p; in the terminal UI, paste the path in the editor"
            );
        }
        let options = strata_tui::TuiOptions {
            resume: run.resume,
            initial_prompts: prompts.into_iter().map(|p| p.text).collect(),
            ..strata_tui::TuiOptions::default()
        };
        return strata_tui::run(setup, &runtime, options);
    }
    runtime.block_on(run_prompt(&setup, run.mode, prompts))
}

/// `--export SESSION [OUTPUT]`, as `strata export` does it.
fn export(paths: &[std::path::PathBuf]) -> anyhow::Result<()> {
    let (file, output) = match paths {
        [file] => (file, None),
        [file, output] => (file, Some(output.as_path())),
        _ => anyhow::bail!("--export takes a session file and optionally the HTML file to write"),
    };
    let path =
        crate::commands::export::write(file, output, strata_host::export::Overwrite::Refuse)?;
    println!("{}", path.display());
    Ok(())
}

/// Piped stdin's text (`None` from a terminal); `-p ""` with nothing piped is an error.
fn piped_stdin(run: &RunArgs) -> anyhow::Result<Option<String>> {
    let stdin = std::io::stdin();
    let mut piped = String::new();
    if !stdin.is_terminal() {
        stdin
            .lock()
            .read_to_string(&mut piped)
            .context("reading stdin")?;
    }
    if run.print.as_deref().is_some_and(|p| p.trim().is_empty()) && piped.trim().is_empty() {
        anyhow::bail!(
            "-p was given an empty prompt: write the prompt after -p, or pipe it on stdin"
        );
    }
    Ok(Some(piped).filter(|p| !p.trim().is_empty()))
}

/// `-p` and `--mode json`: the prompts through the session runtime, then shut it down.
async fn run_prompt(setup: &Setup, mode: Mode, prompts: Vec<UserInput>) -> anyhow::Result<()> {
    let mut built = setup.build_agent()?;
    if let Some(why) = &built.why {
        eprintln!("strata: {why}");
    }
    let json = if mode == Mode::Json {
        let (stream, header) =
            strata_rpc::json_mode::JsonStream::start(&mut built.agent, setup.config.max_retries);
        // Pi's json mode opens with the session header.
        output::print_records(&[header])?;
        Some(stream)
    } else {
        None
    };
    // Nobody to ask: an extension's question gets its unanswered default at once, said on
    // stderr (a guard's confirmation is a refusal).
    let asked = setup.extension_ui().take().map(|mut calls| {
        tokio::spawn(async move {
            while let Some(call) = calls.recv().await {
                if let Some(line) = strata_host::extensions::unanswered_line(&call) {
                    eprintln!("strata: {line}");
                }
                let unanswered = call.request.unanswered();
                call.answer(unanswered);
            }
        })
    });
    if let Some(text) = extension_command(setup, mode, &prompts).await? {
        if let Some(asked) = asked {
            asked.abort();
        }
        return output::print_final(&text);
    }
    // A server still starting when the first request stops waiting for it is said at once.
    let starting = setup.mcp_manager();
    let said_starting = tokio::spawn(async move {
        starting.wait_ready().await;
        for line in strata_host::mcp::still_starting_lines(&starting) {
            eprintln!("strata: {line}");
        }
    });
    // Print mode names no other model; the runtime still routes through the user's setup.
    let router = std::sync::Arc::new(strata_host::SetupRouter::new(setup.clone(), None));
    let (handle, events, task) = strata_runtime::spawn(built.agent, router);
    // Later prompts wait for the one before, as Pi sends them (a prompt while a run goes on
    // is its follow-up).
    for prompt in prompts {
        handle.send(Op::Prompt(prompt))?;
    }
    // Queued behind the prompts: background children's answers run, then the runtime ends.
    handle.send(Op::AwaitBackground)?;
    handle.send(Op::Shutdown)?;
    drop(handle);
    let ended = output::print_events(events, json).await?;
    let agent = task.await.context("the session runtime failed")?;
    said_starting.abort();
    if let Some(asked) = asked {
        asked.abort();
    }
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

/// `-p "/name args"` naming a running extension's command: its text, to print instead of a
/// run (Pi's print mode runs the command and shows nothing; strata prints what it answers).
/// `None` for anything else, `--mode json` included (there it is a prompt like any other).
async fn extension_command(
    setup: &Setup,
    mode: Mode,
    prompts: &[UserInput],
) -> anyhow::Result<Option<String>> {
    let [prompt] = prompts else {
        return Ok(None);
    };
    if mode != Mode::Text || !prompt.images.is_empty() || !prompt.text.starts_with('/') {
        return Ok(None);
    }
    let loaded = setup.loaded();
    if !loaded.has_extensions() {
        return Ok(None);
    }
    let Some(result) = loaded.run_command(&prompt.text).await else {
        return Ok(None);
    };
    // No run follows to end them.
    if let Some(set) = setup.extension_set() {
        set.shutdown().await;
    }
    result
        .map(|output| Some(output.text))
        .map_err(anyhow::Error::msg)
}
