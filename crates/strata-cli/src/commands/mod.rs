//! One module per subcommand; each takes its parsed arguments and writes to stdout.

mod context;
mod fork;
mod open;
mod providers;
mod sessions;
mod tree;

use crate::args::{Cli, Command};

/// Runs the parsed command line.
pub fn run(cli: Cli) -> anyhow::Result<()> {
    match cli.command {
        Command::Context(args) => context::run(&args),
        Command::Tree(args) => tree::run(&args),
        Command::Sessions(args) => sessions::run(&args),
        Command::Fork(args) => fork::run(&args),
        Command::Providers(args) => providers::run(&args),
    }
}
