//! `strata mcp list|add|remove|login|logout`: the configured MCP servers, checked by
//! connecting; OAuth sign-in and sign-out of HTTP servers that ask for it.

use std::io::Write as _;
use std::time::Duration;

use anyhow::Context as _;
use clap::Subcommand;
use strata_mcp::{McpManager, ServerSpec, ServerState};

use crate::args::RunArgs;
use strata_host::config::{Layers, Sources};
use strata_host::mcp;

/// How long discovery and registration may take before the authorization URL is shown.
const SIGN_IN_START_LIMIT: Duration = Duration::from_secs(60);

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
    /// Sign in to an HTTP server that asks for OAuth: prints the authorization URL (opened
    /// with `$BROWSER` when set), waits for the browser to come back to 127.0.0.1, and keeps
    /// the tokens (refreshed silently) in the user's strata directory, mode 0600.
    Login {
        /// The server's name.
        name: String,
        /// Seconds to wait for the browser.
        #[arg(long, default_value_t = 300)]
        wait: u64,
        /// The entry's client is confidential: read its secret (from stdin when that is not
        /// a terminal, else a prompt that does not echo) and keep it beside the token file,
        /// mode 0600, never in a config file.
        #[arg(long)]
        client_secret: bool,
    },
    /// Sign out of a server: revoke its tokens at the authorization server (when it offers
    /// revocation) and delete its token file whatever the outcome.
    Logout {
        /// The server's name.
        name: String,
        /// Forget the client's stored secret too (`--client-secret`, or the one dynamic
        /// registration handed out).
        #[arg(long)]
        forget_client: bool,
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
    /// OAuth: a client registered out of band with the server's authorization server (for
    /// one without dynamic registration).
    #[arg(long, requires = "url")]
    pub client_id: Option<String>,
    /// OAuth: the loopback port registered with that client's redirect.
    #[arg(long, requires = "client_id")]
    pub callback_port: Option<u16>,
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
            let (trusted, filter) = trust_and_filter(&sources, run)?;
            list(&sources, trusted, &filter, *json)
        }
        McpCommand::Add(add_args) => add(&sources, add_args),
        McpCommand::Login {
            name,
            wait,
            client_secret,
        } => {
            let trusted = Layers::read(&sources, &run.overrides())?.trust.trusted;
            login(
                &sources,
                trusted,
                name,
                Duration::from_secs(*wait),
                *client_secret,
            )
        }
        McpCommand::Logout {
            name,
            forget_client,
        } => {
            let trusted = Layers::read(&sources, &run.overrides())?.trust.trusted;
            logout(&sources, trusted, name, *forget_client)
        }
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

/// Whether the project is trusted, and what MCP server processes may inherit.
fn trust_and_filter(
    sources: &Sources,
    run: &RunArgs,
) -> anyhow::Result<(bool, strata_runtime::ToolEnvironment)> {
    let layers = Layers::read(sources, &run.overrides())?;
    let config = layers.config()?;
    let catalog =
        strata_runtime::Catalog::builtin_shared().context("loading the capability table")?;
    Ok((
        layers.trust.trusted,
        strata_host::setup::credential_filter(catalog, &config),
    ))
}

/// The entry named `name`, or an error that says where strata looked.
fn find_server(
    sources: &Sources,
    trusted: bool,
    name: &str,
) -> anyhow::Result<strata_mcp::ServerConfig> {
    let discovered = mcp::discover(sources, trusted);
    if let Some(mut server) = discovered.servers.into_iter().find(|s| s.name == name) {
        let filter = strata_runtime::ToolEnvironment::default();
        for note in mcp::guard_credentials(std::slice::from_mut(&mut server), &filter) {
            eprintln!("strata: MCP configuration: {note}");
        }
        return Ok(server);
    }
    let skipped = if discovered.untrusted_skipped.is_empty() {
        String::new()
    } else {
        " (project files were not read: the project is not trusted, `strata trust`)".to_owned()
    };
    anyhow::bail!("no MCP server \"{name}\" is configured{skipped}; `strata mcp list` shows them")
}

fn login(
    sources: &Sources,
    trusted: bool,
    name: &str,
    wait: Duration,
    client_secret: bool,
) -> anyhow::Result<()> {
    let server = find_server(sources, trusted, name)?;
    if client_secret {
        store_client_secret(&server)?;
    }
    let request = strata_mcp::auth::SignInRequest::for_server(&server, wait)
        .map_err(|error| anyhow::anyhow!(error))?;
    let token_path = request.tokens.path().to_owned();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    runtime.block_on(async {
        // Discovery and registration are a few requests; a server that hangs is said so.
        let pending = tokio::time::timeout(SIGN_IN_START_LIMIT, strata_mcp::auth::start_sign_in(request))
            .await
            .map_err(|_| {
                anyhow::anyhow!(
                    "signing in to MCP server \"{name}\": no authorization URL within {} s",
                    SIGN_IN_START_LIMIT.as_secs()
                )
            })?
            .with_context(|| format!("signing in to MCP server \"{name}\""))?;
        let url = pending.authorization_url();
        println!("Sign in to MCP server \"{name}\" ({}) in a browser:\n\n  {url}\n", server.target());
        println!("{}", strata_host::browser::open(url));
        println!(
            "Waiting up to {} s for the browser to come back to 127.0.0.1 (Ctrl+C stops)…",
            wait.as_secs()
        );
        pending
            .finish()
            .await
            .with_context(|| format!("signing in to MCP server \"{name}\""))?;
        println!(
            "signed in to \"{name}\"; tokens in {} (mode 0600, refreshed when they expire; `strata mcp logout {name}` forgets them)",
            token_path.display()
        );
        let manager = McpManager::new(vec![server], Duration::from_secs(60));
        manager.wait_ready().await;
        let status = manager.status();
        manager.shutdown().await;
        match status.first().map(|s| (&s.state, s.tools.len())) {
            Some((ServerState::Connected, tools)) => println!("connected: {tools} tools"),
            Some((ServerState::Failed { error } | ServerState::AuthRequired { error }, _)) => {
                anyhow::bail!("signed in, but the server still does not connect: {error}")
            }
            _ => {}
        }
        Ok(())
    })
}

fn logout(sources: &Sources, trusted: bool, name: &str, forget_client: bool) -> anyhow::Result<()> {
    let server = find_server(sources, trusted, name)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    let report = runtime
        .block_on(strata_mcp::auth::log_out(&server, forget_client))
        .map_err(|error| anyhow::anyhow!(error))?;
    if report.removed_tokens {
        println!("signed out of \"{name}\": {}", report.describe());
    } else {
        println!(
            "no stored sign-in for \"{name}\" ({} does not exist){}",
            report.token_file.display(),
            report.client_sentence()
        );
    }
    Ok(())
}

/// `strata mcp login NAME --client-secret`: the secret of the entry's client, read and
/// stored beside the token file before the sign-in uses it.
fn store_client_secret(server: &strata_mcp::ServerConfig) -> anyhow::Result<()> {
    let name = &server.name;
    let Some(client_id) = server
        .spec
        .oauth
        .as_ref()
        .and_then(|oauth| oauth.client_id.clone())
    else {
        anyhow::bail!(
            "--client-secret is for a client registered out of band: MCP server \"{name}\" has no oauth.client_id (`strata mcp add {name} --url URL --client-id ID`)"
        );
    };
    let file = server.client_file().with_context(|| {
        format!("MCP server \"{name}\" has no sign-in (only streamable HTTP servers sign in)")
    })?;
    let text = read_secret(&format!(
        "Client secret of \"{client_id}\" for MCP server \"{name}\" (not shown): "
    ))?;
    let client_secret = strata_mcp::auth::ClientSecret::new(&text)
        .with_context(|| format!("no client secret given for MCP server \"{name}\""))?;
    file.save(&strata_mcp::auth::StoredClient {
        client_id,
        client_secret,
        origin: strata_mcp::auth::ClientOrigin::Configured,
    })
    .with_context(|| format!("storing the client secret in {}", file.path().display()))?;
    println!(
        "client secret stored in {} (mode 0600; `strata mcp logout {name} --forget-client` forgets it)",
        file.path().display()
    );
    Ok(())
}

/// One line from stdin: piped as is, or typed at a prompt that does not echo it.
fn read_secret(prompt: &str) -> anyhow::Result<String> {
    use std::io::{BufRead as _, IsTerminal as _};
    if !std::io::stdin().is_terminal() {
        let mut line = String::new();
        std::io::stdin()
            .lock()
            .read_line(&mut line)
            .context("reading the client secret from stdin")?;
        return Ok(line);
    }
    use ratatui::crossterm::event::{self, Event, KeyCode, KeyEventKind, KeyModifiers};
    use ratatui::crossterm::terminal;
    eprint!("{prompt}");
    std::io::stderr().flush()?;
    terminal::enable_raw_mode().context("turning off the terminal's echo")?;
    let typed = (|| -> anyhow::Result<String> {
        let mut secret = String::new();
        loop {
            let Event::Key(key) = event::read()? else {
                continue;
            };
            if key.kind != KeyEventKind::Press {
                continue;
            }
            match key.code {
                KeyCode::Enter => return Ok(secret),
                KeyCode::Backspace => {
                    secret.pop();
                }
                KeyCode::Char('c') if key.modifiers.contains(KeyModifiers::CONTROL) => {
                    anyhow::bail!("interrupted; no client secret stored")
                }
                KeyCode::Esc => anyhow::bail!("cancelled; no client secret stored"),
                KeyCode::Char(c) => secret.push(c),
                _ => {}
            }
        }
    })();
    let _ = terminal::disable_raw_mode();
    eprintln!();
    typed
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
        oauth: args
            .client_id
            .as_ref()
            .map(|client_id| strata_mcp::config::OAuthSpec {
                client_id: Some(client_id.clone()),
                callback_port: args.callback_port,
                ..Default::default()
            }),
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

fn list(
    sources: &Sources,
    trusted: bool,
    filter: &strata_runtime::ToolEnvironment,
    json: bool,
) -> anyhow::Result<()> {
    let mut discovered = mcp::discover(sources, trusted);
    for note in mcp::guard_credentials(&mut discovered.servers, filter) {
        eprintln!("strata: MCP configuration: {note}");
    }
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
            let tokens = discovered
                .servers
                .iter()
                .find(|s| s.name == server.name)
                .and_then(strata_mcp::ServerConfig::token_file);
            if let Some(tokens) = tokens {
                match tokens.state() {
                    strata_mcp::auth::TokenState::Present => {
                        writeln!(out, "  signed in (tokens in {})", tokens.path().display())?;
                    }
                    strata_mcp::auth::TokenState::Unusable(problem) => {
                        writeln!(out, "  ! {problem}")?;
                    }
                    strata_mcp::auth::TokenState::Missing => {}
                }
            }
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
