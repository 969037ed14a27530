//! The strata command-line coding agent.

mod args;
mod commands;
mod config;
mod export;
mod mcp;
mod rows;
mod run;
mod trust;
mod tui;

use std::io::Write;
use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let cli = args::Cli::parse();
    match commands::run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            let mut stderr = std::io::stderr().lock();
            // `{:#}` prints the whole context chain on one line: "opening X: line 3: …".
            let _ = writeln!(stderr, "strata: {err:#}");
            ExitCode::FAILURE
        }
    }
}
