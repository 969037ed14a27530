//! Command-line arguments.

use std::path::PathBuf;

use clap::{Parser, Subcommand, ValueEnum};

/// strata: a coding agent that keeps the provider's prompt cache intact.
///
/// Without a subcommand, strata runs the agent: `-p "..."` prints the final answer,
/// `--mode json` prints every event as a JSON line.
#[derive(Debug, Parser)]
#[command(name = "strata", version, about, long_about = None, args_conflicts_with_subcommands = true)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,
    #[command(flatten)]
    pub run: RunArgs,
}

/// Flags of an agent run (also read by `strata config`).
#[derive(Debug, Clone, Default, clap::Args)]
pub struct RunArgs {
    /// Run one prompt non-interactively and print the final answer (stdin, when piped, is
    /// added to the prompt).
    #[arg(short = 'p', long = "print", value_name = "PROMPT")]
    pub print: Option<String>,
    /// Output mode: text (the final answer), json (every event as a JSON line) or rpc (Pi's
    /// RPC protocol on stdin/stdout).
    #[arg(long, value_enum, default_value_t = Mode::Text)]
    pub mode: Mode,
    /// Model as provider/id, optionally with :thinking (e.g. anthropic/claude-sonnet-4-5:high).
    #[arg(long)]
    pub model: Option<String>,
    /// Provider, when --model gives only an id.
    #[arg(long)]
    pub provider: Option<String>,
    /// API key for the provider (otherwise its environment variables are read). A value here
    /// is in the command line `ps` shows until strata hands it to itself over a pipe, a
    /// moment after start: --api-key-file keeps it out of the command line.
    #[arg(long, env = "STRATA_API_KEY", hide_env_values = true)]
    pub api_key: Option<String>,
    /// Read the provider's API key from the first line of this file (`-`: stdin); wins over
    /// --api-key and STRATA_API_KEY.
    #[arg(long, value_name = "PATH")]
    pub api_key_file: Option<PathBuf>,
    /// The key's pipe after strata handed a command-line `--api-key` to itself (`key.rs`).
    #[arg(long, hide = true, value_name = "FD")]
    pub api_key_fd: Option<i32>,
    /// Base URL overriding the provider's (a proxy, or strata-mock).
    #[arg(long)]
    pub base_url: Option<String>,
    /// Use this session file (created when missing).
    #[arg(long, conflicts_with_all = ["continue_session", "no_session"])]
    pub session: Option<PathBuf>,
    /// Continue the most recent session of this directory.
    #[arg(short = 'c', long = "continue")]
    pub continue_session: bool,
    /// Choose a session of this directory to resume (the terminal UI opens its picker).
    #[arg(short = 'r', long, conflicts_with_all = ["session", "no_session", "print"])]
    pub resume: bool,
    /// Do not keep a session file.
    #[arg(long)]
    pub no_session: bool,
    /// Tools to enable, comma separated (default: read,bash,edit,write).
    #[arg(long, value_delimiter = ',')]
    pub tools: Option<Vec<String>>,
    /// Replaces the built-in intro of the system prompt.
    #[arg(long)]
    pub system_prompt: Option<String>,
    /// Appended to the system prompt's rules.
    #[arg(long)]
    pub append_system_prompt: Option<String>,
    /// Apply this project's `.strata/` settings (provider rows, prompts, tools, sessions dir)
    /// for this run, as `strata trust` does for good.
    #[arg(long)]
    pub trust: bool,
    /// Thinking level (off, minimal, low, medium, high, xhigh); overrides a `--model` suffix.
    #[arg(long, value_parser = clap::builder::PossibleValuesParser::new(strata_host::model::THINKING_LEVELS))]
    pub thinking: Option<String>,
    /// Write a session file as HTML and exit: `--export SESSION [OUTPUT]`.
    #[arg(long, num_args = 1..=2, value_names = ["SESSION", "OUTPUT"])]
    pub export: Option<Vec<PathBuf>>,
    /// List the models usable now (a key is present), optionally matching SEARCH, and exit.
    #[arg(long, num_args = 0..=1, value_name = "SEARCH")]
    pub list_models: Option<Option<String>>,
    /// The prompt, as Pi takes it: `@path` words add a file (text, or an image attached),
    /// the first message joins them; each later message is sent in turn. With a terminal on
    /// both ends the UI opens with them; otherwise they run as with `-p`. Use `--` before a
    /// prompt that starts with `-`.
    #[arg(value_name = "MESSAGE")]
    pub messages: Vec<String>,
    /// Permission mode: plan (read-only), ask (calls the rules do not allow are put to you),
    /// edits (file edits in the project run, commands are asked) or auto (everything runs
    /// unless a rule denies it).
    #[arg(long, value_name = "MODE")]
    pub permission_mode: Option<strata_runtime::permissions::Mode>,
    /// Where nobody can be asked (-p, json mode), run the calls the rules would ask about;
    /// deny rules and plan mode still refuse.
    #[arg(long, visible_alias = "allow-all")]
    pub yes: bool,
}

impl RunArgs {
    /// The flags the host reads (`strata_host::Overrides`); the run's temp dir is added by
    /// the commands that run tools.
    pub fn overrides(&self) -> strata_host::Overrides {
        use std::io::IsTerminal as _;
        // Prompt words with stdout redirected run as `-p` does: nobody is there to ask.
        let interactive = self.mode == Mode::Text
            && self.print.is_none()
            && std::io::stdin().is_terminal()
            && (self.messages.is_empty() || std::io::stdout().is_terminal());
        strata_host::Overrides {
            model: self.model.clone(),
            provider: self.provider.clone(),
            api_key: self.api_key.clone(),
            base_url: self.base_url.clone(),
            session: self.session.clone(),
            continue_session: self.continue_session,
            no_session: self.no_session,
            tools: self.tools.clone(),
            system_prompt: self.system_prompt.clone(),
            append_system_prompt: self.append_system_prompt.clone(),
            trust: self.trust,
            thinking: self.thinking.clone(),
            interactive,
            temp_dir: None,
            permission_mode: self.permission_mode,
            asks: crate::permissions::asks(self, interactive),
            sandbox_helper: crate::permissions::helper(),
        }
    }
}

/// How a run reports.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, ValueEnum)]
pub enum Mode {
    /// The final answer as text.
    #[default]
    Text,
    /// Every event as one JSON line.
    Json,
    /// Pi's RPC protocol: JSON commands on stdin, responses and events on stdout.
    Rpc,
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
    /// List the models usable now: built-in, your config, Pi's models.json, local servers.
    Models(ModelsArgs),
    /// Trust a project directory's `.strata/` settings (or show / revoke the decision).
    Trust(TrustArgs),
    /// Show the merged configuration and where each value came from.
    Config(ConfigArgs),
    /// Cache hit rate, tokens and cost of sessions (strata, Pi) and Claude Code project logs.
    Stats(StatsArgs),
    /// Print shell completions.
    Completions(CompletionsArgs),
    /// Run a real coding task against the built-in mock provider (no key, no network) and
    /// show what every request cost, beside a renderer that rewrites its prefix.
    Demo(DemoArgs),
    /// Write a session tree as one self-contained HTML file.
    Export(ExportArgs),
    /// MCP tool servers: list (connecting to each), add, remove, login, logout.
    Mcp(crate::commands::mcp::McpArgs),
}

#[derive(Debug, clap::Args)]
pub struct DemoArgs {
    /// Run the demo in the terminal UI.
    #[arg(long)]
    pub interactive: bool,
    /// Keep the demo's working copy and session here instead of a temporary directory.
    #[arg(long)]
    pub keep: Option<PathBuf>,
    /// Print the per-request table and totals as JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, clap::Args)]
pub struct ExportArgs {
    /// The session file (JSONL).
    pub file: PathBuf,
    /// The HTML file to write (default: the session's name with `.html`).
    #[arg(short, long)]
    pub output: Option<PathBuf>,
    /// Replace the output file if it exists (a session file is never replaced).
    #[arg(long)]
    pub force: bool,
}

#[derive(Debug, clap::Args)]
pub struct StatsArgs {
    /// Session files or directories (walked for `*.jsonl`).
    #[arg(required = true)]
    pub paths: Vec<PathBuf>,
    /// One line per request too.
    #[arg(long)]
    pub requests: bool,
    /// JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, clap::Args)]
pub struct ConfigArgs {
    /// Print JSON instead of annotated TOML-like lines.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, clap::Args)]
pub struct CompletionsArgs {
    /// The shell.
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
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
    /// With `--format request`: also render the context at this entry and report where the
    /// two requests diverge.
    #[arg(long)]
    pub against: Option<String>,
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
pub struct ModelsArgs {
    /// Only this provider's models.
    pub provider: Option<String>,
    /// Do not ask local servers for their model lists.
    #[arg(long)]
    pub offline: bool,
    /// Ask the server at this URL instead of the row's (with PROVIDER).
    #[arg(long, requires = "provider")]
    pub base_url: Option<String>,
    /// Print JSON lines instead of a table.
    #[arg(long)]
    pub json: bool,
    /// Only models whose provider and id match this (case-insensitive words, in order).
    #[arg(long)]
    pub search: Option<String>,
    /// Only the models usable now (their provider has a key).
    #[arg(long)]
    pub usable: bool,
}

#[derive(Debug, clap::Args)]
pub struct TrustArgs {
    /// The project directory (default: the current one).
    pub dir: Option<PathBuf>,
    /// Withdraw trust instead.
    #[arg(long, conflicts_with = "status")]
    pub revoke: bool,
    /// Only show the decision and what an untrusted project's config would lose, as JSON.
    #[arg(long)]
    pub status: bool,
}

#[derive(Debug, clap::Args)]
pub struct ProvidersArgs {
    /// Print the table as JSON.
    #[arg(long)]
    pub json: bool,
}
