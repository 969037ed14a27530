//! Command-line arguments.

use std::path::PathBuf;

use clap::{Parser, Subcommand, ValueEnum};

/// strata: a coding agent that keeps the provider's prompt cache intact.
#[derive(Debug, Parser)]
#[command(name = "strata", version, about, long_about = None)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Show what a session would send: its context at the current (or a given) leaf.
    Context(ContextArgs),
    /// Print the session tree with the current leaf marked.
    Tree(TreeArgs),
    /// List sessions of a working directory (or of all directories).
    Sessions(SessionsArgs),
    /// Write a new session file holding the path from the root to one entry.
    Fork(ForkArgs),
    /// List the provider capability table.
    Providers(ProvidersArgs),
}

#[derive(Debug, clap::Args)]
pub struct ContextArgs {
    /// The session file (JSONL).
    pub file: PathBuf,
    /// Build the context at this entry instead of the file's leaf.
    #[arg(long)]
    pub leaf: Option<String>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = ContextFormat::Text)]
    pub format: ContextFormat,
    /// Provider whose capabilities shape the request (with `--format request`).
    #[arg(long)]
    pub provider: Option<String>,
    /// Model id (with `--format request`); defaults to the session's model.
    #[arg(long)]
    pub model: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ContextFormat {
    /// A readable view: each message with its entry id and size.
    Text,
    /// strata's flattened context as JSON.
    Json,
    /// Exactly Pi's `buildSessionContext` result `{messages, thinkingLevel, model}`.
    Pi,
    /// The provider-neutral request and its chapter report.
    Request,
}

#[derive(Debug, clap::Args)]
pub struct TreeArgs {
    /// The session file (JSONL).
    pub file: PathBuf,
    /// Characters of content shown per entry before eliding.
    #[arg(long, default_value_t = 72)]
    pub width: usize,
}

#[derive(Debug, clap::Args)]
pub struct SessionsArgs {
    /// The working directory whose sessions to list (default: the current one).
    #[arg(long, conflicts_with = "all")]
    pub cwd: Option<PathBuf>,
    /// List the sessions of every working directory.
    #[arg(long)]
    pub all: bool,
    /// Sessions root (default: ~/.strata/sessions, or $STRATA_SESSIONS_DIR).
    #[arg(long, env = "STRATA_SESSIONS_DIR")]
    pub root: Option<PathBuf>,
    /// Print JSON lines instead of a table.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, clap::Args)]
pub struct ForkArgs {
    /// The session file (JSONL).
    pub file: PathBuf,
    /// The entry whose root path the new session holds.
    #[arg(long)]
    pub leaf: String,
    /// Where to write the new session (default: beside the original, a new name).
    #[arg(short, long)]
    pub output: Option<PathBuf>,
}

#[derive(Debug, clap::Args)]
pub struct ProvidersArgs {
    /// Print the table as JSON.
    #[arg(long)]
    pub json: bool,
}
