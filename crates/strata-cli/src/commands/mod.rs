//! One module per subcommand; each takes its parsed arguments and writes to stdout.

mod config;
pub(crate) mod context;
#[cfg(feature = "demo")]
mod demo;
pub(crate) mod export;
mod fork;
pub mod mcp;
mod models;
pub(crate) mod open;
mod providers;
mod sessions;
mod stats;
mod tree;
mod trust;

use clap::CommandFactory as _;

use crate::args::{Cli, Command};

pub use models::list_models;

/// Runs the parsed command line.
pub fn run(cli: Cli) -> anyhow::Result<()> {
    match cli.command {
        Some(Command::Context(args)) => context::run(&args, &cli.run),
        Some(Command::Tree(args)) => tree::run(&args),
        Some(Command::Sessions(args)) => sessions::run(&args),
        Some(Command::Fork(args)) => fork::run(&args),
        Some(Command::Providers(args)) => providers::run(&args, &cli.run),
        Some(Command::Models(args)) => models::run(&args, &cli.run),
        Some(Command::Trust(args)) => trust::run(&args, &cli.run),
        Some(Command::Config(args)) => config::run(&args, &cli.run),
        Some(Command::Stats(args)) => stats::run(&args),
        Some(Command::Mcp(args)) => mcp::run(&args, &cli.run),
        Some(Command::Completions(args)) => {
            clap_complete::generate(
                args.shell,
                &mut Cli::command(),
                "strata",
                &mut std::io::stdout(),
            );
            Ok(())
        }
        #[cfg(feature = "demo")]
        Some(Command::Demo(args)) => demo::run(&args),
        #[cfg(not(feature = "demo"))]
        Some(Command::Demo(_)) => anyhow::bail!(
            "this strata was built without the demo: rebuild with the default cargo feature `demo`"
        ),
        Some(Command::Export(args)) => export::run(&args),
        None => crate::run::run(&cli.run),
    }
}
