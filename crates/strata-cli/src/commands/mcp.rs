//! `strata mcp list|add|remove`: the configured MCP servers, checked by connecting.

use std::io::Write as _;
use std::time::Duration;

use anyhow::Context as _;
use clap::Subcommand;
use strata_mcp::{McpManager, ServerSpec, ServerState};

use crate::args::RunArgs;
use crate::config::{Layers, Sources};
use crate::mcp;

/// `strata mcp`.
#[derive(Debug, clap::Args)]
pub struct McpArgs {
    #[command(subcommand)]
    pub command: McpCommand,
}

/// What `strata mcp` does.
#[derive(Debug, Subcommand)]
pub enum McpCommand {
    /// Connect to every enabled server and print its state, source, tools and errors (exit
    /// status 1 when an entry is invalid or an enabled server does not connect).
    List {
        /// Print the servers as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Add a server to strata's user config (`--project`: the project's `.strata/config.toml`).
    /// A stdio server's command follows `--`; an HTTP server takes `--url`.
    Add(AddArgs),
    /// Remove a server from strata's user config (`--project`: the project's).
    Remove {
        /// The server's name.
        name: String,
        /// The project's `.strata/config.toml` instead of the user's config.
        #[arg(short = 'l', long)]
        project: bool,
    },
}

/// `strata mcp add`.
#[derive(Debug, clap::Args)]
pub struct AddArgs {
    /// The server's name (letters, digits, `_`, `-`); its tools are `mcp__<name>__<tool>`.
    pub name: String,
    /// A streamable HTTP endpoint instead of a command.
    #[arg(long)]
    pub url: Option<String>,
    /// An HTTP header, `Name=value` (values may name `${VARIABLES}`).
    #[arg(long = "header", value_name = "NAME=VALUE")]
    pub headers: Vec<String>,
    /// An environment variable of a stdio server, `NAME=value`.
    #[arg(long = "env", value_name = "NAME=VALUE")]
    pub env: Vec<String>,
    /// Per-request timeout in seconds.
    #[arg(long)]
    pub timeout: Option<f64>,
    /// Keep the entry without connecting to it.
    #[arg(long)]
    pub disabled: bool,
    /// The project's `.strata/config.toml` instead of the user's config.
    #[arg(short = 'l', long)]
    pub project: bool,
    /// The command and its arguments (after `--`).
    #[arg(last = true)]
    pub command: Vec<String>,
}

pub fn run(args: &McpArgs, run: &RunArgs) -> anyhow::Result<()> {
    let sources = Sources::from_environment();
    match &args.command {
        McpCommand::List { json } => {
            let trusted = Layers::read(&sources, run)?.trust.trusted;
            list(&sources, trusted, *json)
        }
        McpCommand::Add(add_args) => add(&sources, add_args),
        McpCommand::Remove { name, project } => {
            let path = target_path(&sources, *project)?;
            if mcp::remove_server(&path, name)? {
                println!("removed MCP server \"{name}\" from {}", path.display());
                Ok(())
            } else {
                anyhow::bail!("{} defines no MCP server \"{name}\"", path.display())
            }
        }
    }
}

fn target_path(sources: &Sources, project: bool) -> anyhow::Result<std::path::PathBuf> {
    if project {
        Ok(mcp::project_config_path(sources))
    } else {
        mcp::user_config_path(sources).context("no user config directory (HOME is not set)")
    }
}

fn pairs(
    values: &[String],
    what: &str,
) -> anyhow::Result<std::collections::BTreeMap<String, String>> {
    values
        .iter()
        .map(|pair| {
            pair.split_once('=')
                .map(|(k, v)| (k.to_owned(), v.to_owned()))
                .with_context(|| format!("--{what} {pair}: expected NAME=VALUE"))
        })
        .collect()
}

fn add(sources: &Sources, args: &AddArgs) -> anyhow::Result<()> {
    let mut spec = ServerSpec {
        headers: pairs(&args.headers, "header")?,
        env: pairs(&args.env, "env")?,
        timeout: args.timeout,
        enabled: args.disabled.then_some(false),
        ..ServerSpec::default()
    };
    match (&args.url, args.command.split_first()) {
        (Some(url), None) => spec.url = Some(url.clone()),
        (None, Some((command, rest))) => {
            spec.command = Some(command.clone());
            spec.args = rest.to_vec();
        }
        (Some(_), Some(_)) => anyhow::bail!("give either --url or a command after --, not both"),
        (None, None) => anyhow::bail!("give a command after -- (stdio) or --url (streamable HTTP)"),
    }
    let path = target_path(sources, args.project)?;
    // Check the entry as it will be read.
    strata_mcp::config::resolve(
        &args.name,
        &spec,
        strata_mcp::Source {
            kind: strata_mcp::SourceKind::StrataUser,
            path: Some(path.clone()),
        },
        &sources.project_dir,
    )
    .map_err(|error| anyhow::anyhow!("{}", error.message))?;
    mcp::add_server(&path, &args.name, &spec)?;
    println!("added MCP server \"{}\" to {}", args.name, path.display());
    Ok(())
}

fn list(sources: &Sources, trusted: bool, json: bool) -> anyhow::Result<()> {
    let discovered = mcp::discover(sources, trusted);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    let manager = McpManager::new(discovered.servers.clone(), Duration::from_secs(60));
    let status = runtime.block_on(async {
        manager.wait_ready().await;
        let status = manager.status();
        manager.shutdown().await;
        status
    });
    let mut out = std::io::stdout().lock();
    let not_connected = status
        .iter()
        .filter(|s| !matches!(s.state, ServerState::Connected | ServerState::Disabled))
        .count();
    if json {
        let value = serde_json::json!({
            "servers": status,
            "errors": discovered.errors.iter().map(|e| e.to_string()).collect::<Vec<_>>(),
            "untrustedSkipped": discovered.untrusted_skipped,
        });
        serde_json::to_writer_pretty(&mut out, &value)?;
        writeln!(out)?;
    } else {
        if status.is_empty() {
            writeln!(out, "no MCP servers configured")?;
        }
        for server in &status {
            writeln!(
                out,
                "{}  {}  {} tools  {}  ({})",
                server.name,
                server.state.label(),
                server.tools.len(),
                server.exposure,
                server.source
            )?;
            writeln!(out, "  {}", server.target)?;
            writeln!(out, "  {}", server.exposure_note)?;
            match &server.state {
                ServerState::Failed { error } | ServerState::AuthRequired { error } => {
                    for line in error.lines() {
                        writeln!(out, "  ! {line}")?;
                    }
                }
                _ => {}
            }
            for tool in &server.tools {
                writeln!(out, "  - {tool}")?;
            }
        }
        for error in &discovered.errors {
            writeln!(out, "invalid: {error}")?;
        }
        for path in &discovered.untrusted_skipped {
            writeln!(
                out,
                "not read (project not trusted): {} — `strata trust` trusts this project",
                path.display()
            )?;
        }
    }
    if !discovered.errors.is_empty() || not_connected > 0 {
        anyhow::bail!(
            "{} invalid entries, {not_connected} servers not connected",
            discovered.errors.len()
        );
    }
    Ok(())
}
