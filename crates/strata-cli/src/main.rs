//! The strata command-line coding agent.

mod args;
mod commands;
mod error_text;
mod exit;
mod key;
mod permissions;
mod run;

use std::io::Write;
use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    // Before anything else: as the sandbox helper, strata only restricts itself and execs.
    if let Some(code) = permissions::sandbox_entry() {
        return code;
    }
    // Before threads or tools: tools must not read this process's environment or memory,
    // and a command-line key leaves the command line.
    key::protect_process();
    if let Some(warning) = key::hand_over_command_line_key() {
        eprintln!("strata: {warning}");
    }
    let mut cli = args::Cli::parse();
    if let Err(err) = key::read_key_sources(&mut cli.run) {
        eprintln!("strata: {}", error_text::chain_text(&err));
        return ExitCode::FAILURE;
    }
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
