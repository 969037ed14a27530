//! The strata command-line coding agent.

mod args;
mod commands;
mod error_text;
mod exit;
mod export;
mod output_file;
mod run;
mod tui;

use std::io::Write;
use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let cli = args::Cli::parse();
    // Tool processes and the run's temp dir go however main is left (signals: exit.rs).
    let _cleanup = exit::CleanupOnDrop;
    match commands::run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        // `strata providers | head`: the reader left; that is not a failure to report.
        Err(err) if error_text::is_broken_pipe(&err) => ExitCode::SUCCESS,
        Err(err) => {
            let mut stderr = std::io::stderr().lock();
            // The whole context chain on one line: "opening X: line 3: …".
            let _ = writeln!(stderr, "strata: {}", error_text::chain_text(&err));
            ExitCode::FAILURE
        }
    }
}
