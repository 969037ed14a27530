//! MCP servers for a run: which files are read (project files only in a trusted project,
//! [`crate::trust`]), the session's manager, and editing `[mcp.servers]` in strata's config
//! files.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// How `exposure = "auto"` decides between direct tools and the search tool, in words.
pub use strata_mcp::exposure::RULE as EXPOSURE_RULE;

use anyhow::Context as _;
use figment::Figment;
use figment::providers::{Format, Toml};
use strata_mcp::{Discovered, Discovery, ServerConfig, ServerSpec, Transport};
use strata_tools::ToolEnvironment;

use crate::config::{Config, Sources};
use crate::config_edit::{read_document, write_document};

mod control;

pub use control::{LoggedOut, McpControl, McpControlError};
/// The session's MCP servers, for views that name them without depending on strata-mcp.
pub use strata_mcp::McpManager;

/// strata's user-level config file.
pub fn user_config_path(sources: &Sources) -> Option<PathBuf> {
    sources
        .global_dir
        .as_ref()
        .map(|dir| dir.join("config.toml"))
}

/// strata's project-level config file.
pub fn project_config_path(sources: &Sources) -> PathBuf {
    sources.project_dir.join(".strata/config.toml")
}

/// The `[mcp.servers]` of one strata config file (empty when it has none).
fn servers_in(path: &Path) -> anyhow::Result<Vec<(String, ServerSpec)>> {
    let figment = Figment::from(Toml::file(path));
    if figment.find_value("mcp.servers").is_err() {
        return Ok(Vec::new());
    }
    let servers: BTreeMap<String, ServerSpec> = figment
        .extract_inner("mcp.servers")
        .with_context(|| format!("{}: [mcp.servers]", path.display()))?;
    Ok(servers.into_iter().collect())
}

/// Every server of every layer, with the errors found; project files only when `trusted`
/// (the project-trust decision, `crate::trust`).
pub fn discover(sources: &Sources, trusted: bool) -> Discovered {
    let user_path = user_config_path(sources);
    let project_path = project_config_path(sources);
    let mut early_errors = Vec::new();
    let mut read = |path: &Path| match servers_in(path) {
        Ok(list) => list,
        Err(error) => {
            early_errors.push(strata_mcp::config::ConfigError {
                origin: path.display().to_string(),
                message: format!("{error:#}"),
            });
            Vec::new()
        }
    };
    let strata_user = user_path.as_deref().map(&mut read).unwrap_or_default();
    let strata_project = if trusted {
        read(&project_path)
    } else {
        Vec::new()
    };
    let discovery = Discovery {
        home: std::env::var_os("HOME").map(PathBuf::from),
        project_dir: sources.project_dir.clone(),
        project_trusted: trusted,
        strata_user,
        strata_project,
        strata_user_path: user_path,
        strata_project_path: Some(project_path),
        // Tokens are the user's, never the project's (a project file must not read them).
        token_dir: sources
            .global_dir
            .as_ref()
            .map(|dir| dir.join(strata_mcp::auth::TOKEN_DIR_NAME)),
    };
    let mut discovered = discovery.discover();
    discovered.errors.splice(0..0, early_errors);
    discovered
}

/// The session's manager for the configured servers (not started: the first prompt starts
/// it), with configuration errors reported on stderr once.
pub fn manager(
    sources: &Sources,
    config: &Config,
    trusted: bool,
    credentials: &ToolEnvironment,
    sandbox: Option<&strata_tools::Sandbox>,
) -> McpManager {
    let mut discovered = discover(sources, trusted);
    for note in sandbox_servers(
        &mut discovered.servers,
        &config.permissions.sandbox,
        sandbox,
    ) {
        eprintln!("strata: MCP configuration: {note}");
    }
    for error in &discovered.errors {
        eprintln!("strata: MCP configuration: {error}");
    }
    for note in guard_credentials(&mut discovered.servers, credentials) {
        eprintln!("strata: MCP configuration: {note}");
    }
    let wait = if config.mcp.startup_wait.is_finite() && config.mcp.startup_wait >= 0.0 {
        Duration::from_secs_f64(config.mcp.startup_wait)
    } else {
        strata_mcp::DEFAULT_STARTUP_WAIT
    };
    McpManager::new(discovered.servers, wait)
}

/// Starts the stdio servers `permissions.sandbox.mcp_servers` names inside bash's sandbox
/// (their command becomes the sandbox helper's, theirs after `--`). Returns a note per named
/// server left unsandboxed (no sandbox here).
pub fn sandbox_servers(
    servers: &mut [ServerConfig],
    wanted: &strata_permissions::sandbox::SandboxConfig,
    sandbox: Option<&strata_tools::Sandbox>,
) -> Vec<String> {
    let mut notes = Vec::new();
    for server in servers.iter_mut() {
        if !wanted.sandboxes_mcp(&server.name) {
            continue;
        }
        match (sandbox, &mut server.transport) {
            (Some(sandbox), Transport::Stdio { command, args, .. }) => {
                let mut wrapped: Vec<String> = sandbox
                    .args
                    .iter()
                    .map(|a| a.to_string_lossy().into_owned())
                    .collect();
                wrapped.push(std::mem::take(command));
                wrapped.append(args);
                *command = sandbox.program.display().to_string();
                *args = wrapped;
            }
            (None, Transport::Stdio { .. }) => notes.push(format!(
                "the MCP server {} runs unsandboxed: no OS sandbox here",
                server.name
            )),
            _ => {}
        }
    }
    notes
}

/// Keeps credentials from MCP servers unless the user's own configuration hands one over:
/// every server's process gets each credential variable of strata's environment (those
/// `credentials` drops) emptied, except one a user-level entry names in its own `env`; and an
/// entry from a project file gets no `${VARIABLE}` filled in its headers or environment (the
/// text is sent as written). Returns a note per entry whose variables were left unfilled.
pub fn guard_credentials(
    servers: &mut [ServerConfig],
    credentials: &ToolEnvironment,
) -> Vec<String> {
    let inherited: Vec<String> = std::env::vars_os()
        .filter_map(|(name, _)| name.into_string().ok())
        .filter(|name| credentials.drops(name))
        .collect();
    let mut notes = Vec::new();
    for server in servers.iter_mut() {
        let from_project = server.source.kind.is_project();
        let mut unfilled = Vec::new();
        match &mut server.transport {
            Transport::Stdio { env, .. } => {
                if from_project {
                    for (name, written) in &server.spec.env {
                        if written.contains("${") {
                            env.insert(name.clone(), written.clone());
                            unfilled.push(format!("env {name}"));
                        }
                    }
                }
                for name in &inherited {
                    let handed = !from_project && server.spec.env.contains_key(name);
                    if !handed {
                        env.insert(name.clone(), String::new());
                    }
                }
            }
            Transport::Http { headers, .. } => {
                if from_project {
                    for (name, written) in &server.spec.headers {
                        if written.contains("${") {
                            headers.insert(name.clone(), written.clone());
                            unfilled.push(format!("header {name}"));
                        }
                    }
                }
            }
        }
        if !unfilled.is_empty() {
            notes.push(format!(
                "MCP server \"{}\" ({}): variables in {} are not filled: only your own configuration fills them",
                server.name,
                server.source,
                unfilled.join(", ")
            ));
        }
    }
    notes
}

/// One line per server that did not connect (failed, or wants authorization), to report.
pub fn failure_lines(manager: &McpManager) -> Vec<String> {
    manager
        .status()
        .into_iter()
        .filter_map(|server| match server.state {
            strata_mcp::ServerState::Failed { error }
            | strata_mcp::ServerState::AuthRequired { error } => Some(format!(
                "MCP server \"{}\" is not connected ({}): {}",
                server.name,
                server.source,
                error.lines().next().unwrap_or_default()
            )),
            _ => None,
        })
        .collect()
}

/// One line for each enabled server still starting (say it once the startup wait is over: the
/// prompt went on without its tools).
pub fn still_starting_lines(manager: &McpManager) -> Vec<String> {
    manager
        .status()
        .into_iter()
        .filter(|server| server.state == strata_mcp::ServerState::Connecting)
        .map(|server| {
            format!(
                "MCP server \"{}\" is still starting ({}): the prompt went on without its tools; they are added when it connects",
                server.name, server.source
            )
        })
        .collect()
}

/// Adds (or replaces) `[mcp.servers.NAME]` in `path`, keeping the rest of the file.
pub fn add_server(path: &Path, name: &str, spec: &ServerSpec) -> anyhow::Result<()> {
    let mut document = read_document(path)?;
    let value = serde_json::to_value(spec)?;
    let mut table = toml_edit::Table::new();
    if let serde_json::Value::Object(map) = value {
        for (key, value) in map {
            if let Some(item) = toml_item(&value) {
                table.insert(&key, item);
            }
        }
    }
    let mcp = document
        .entry("mcp")
        .or_insert_with(|| toml_edit::Item::Table(implicit_table()));
    let servers = mcp
        .as_table_mut()
        .context("`mcp` in the config is not a table")?
        .entry("servers")
        .or_insert_with(|| toml_edit::Item::Table(implicit_table()));
    servers
        .as_table_mut()
        .context("`mcp.servers` in the config is not a table")?
        .insert(name, toml_edit::Item::Table(table));
    write_document(path, &document)
}

/// Removes `[mcp.servers.NAME]` from `path`; `false` when the file does not define it.
pub fn remove_server(path: &Path, name: &str) -> anyhow::Result<bool> {
    if !path.exists() {
        return Ok(false);
    }
    let mut document = read_document(path)?;
    let removed = document
        .get_mut("mcp")
        .and_then(|mcp| mcp.get_mut("servers"))
        .and_then(|servers| servers.as_table_like_mut())
        .and_then(|servers| servers.remove(name))
        .is_some();
    if removed {
        write_document(path, &document)?;
    }
    Ok(removed)
}

fn implicit_table() -> toml_edit::Table {
    let mut table = toml_edit::Table::new();
    table.set_implicit(true);
    table
}

fn toml_item(value: &serde_json::Value) -> Option<toml_edit::Item> {
    toml_value(value).map(toml_edit::Item::Value)
}

fn toml_value(value: &serde_json::Value) -> Option<toml_edit::Value> {
    Some(match value {
        serde_json::Value::Null => return None,
        serde_json::Value::Bool(b) => (*b).into(),
        serde_json::Value::Number(n) => match n.as_i64() {
            Some(i) => i.into(),
            None => n.as_f64()?.into(),
        },
        serde_json::Value::String(s) => s.as_str().into(),
        serde_json::Value::Array(items) => {
            let array: toml_edit::Array = items.iter().filter_map(toml_value).collect();
            toml_edit::Value::Array(array)
        }
        serde_json::Value::Object(map) => {
            let mut table = toml_edit::InlineTable::new();
            for (key, value) in map {
                if let Some(value) = toml_value(value) {
                    table.insert(key, value);
                }
            }
            toml_edit::Value::InlineTable(table)
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_server_still_starting_after_the_startup_wait_is_named() {
        // A process that never answers the handshake stays `Connecting` for its connect
        // timeout (at least 30 s), far past a 50 ms startup wait.
        let server = strata_mcp::ServerConfig {
            name: "slowpoke".into(),
            transport: strata_mcp::Transport::Stdio {
                command: "sleep".into(),
                args: vec!["600".into()],
                env: Default::default(),
                cwd: None,
            },
            enabled: true,
            timeout: std::time::Duration::from_secs(30),
            allow_tools: Vec::new(),
            deny_tools: Vec::new(),
            exposure: strata_mcp::config::Exposure::Direct,
            description: None,
            source: strata_mcp::Source {
                kind: strata_mcp::SourceKind::Session,
                path: None,
            },
            spec: strata_mcp::ServerSpec::default(),
            token_dir: None,
        };
        let manager = McpManager::new(vec![server], std::time::Duration::from_millis(50));
        manager.wait_ready().await;
        let lines = still_starting_lines(&manager);
        manager.shutdown().await;
        assert_eq!(lines.len(), 1, "{lines:?}");
        assert!(
            lines[0].contains("MCP server \"slowpoke\" is still starting"),
            "{lines:?}"
        );
    }

    #[test]
    fn named_stdio_servers_start_inside_the_sandbox_helper() {
        let spec = |command: &str| ServerSpec {
            command: Some(command.to_owned()),
            args: vec!["--stdio".to_owned()],
            ..ServerSpec::default()
        };
        let source = strata_mcp::config::Source {
            kind: strata_mcp::config::SourceKind::StrataUser,
            path: Some(PathBuf::from("/home/u/.config/strata/config.toml")),
        };
        let mut servers: Vec<ServerConfig> = [("files", "files-server"), ("web", "web-server")]
            .iter()
            .map(|(name, command)| {
                strata_mcp::config::resolve(name, &spec(command), source.clone(), Path::new("/"))
                    .unwrap()
            })
            .collect();
        let wanted = strata_permissions::sandbox::SandboxConfig {
            mcp_servers: vec!["files".to_owned()],
            ..Default::default()
        };
        let sandbox = strata_tools::Sandbox {
            program: PathBuf::from("/usr/bin/strata"),
            args: vec![
                "__sandbox".into(),
                "--write".into(),
                "/p".into(),
                "--".into(),
            ],
            limits: String::new(),
        };
        assert!(sandbox_servers(&mut servers, &wanted, Some(&sandbox)).is_empty());
        let Transport::Stdio { command, args, .. } = &servers[0].transport else {
            panic!("stdio")
        };
        assert_eq!(command, "/usr/bin/strata");
        assert_eq!(
            args,
            &[
                "__sandbox",
                "--write",
                "/p",
                "--",
                "files-server",
                "--stdio"
            ]
        );
        let Transport::Stdio { command, .. } = &servers[1].transport else {
            panic!("stdio")
        };
        assert_eq!(command, "web-server", "not named: not sandboxed");
        // Without a sandbox, the named server is said to run unsandboxed.
        let every = strata_permissions::sandbox::SandboxConfig {
            mcp_servers: vec!["*".to_owned()],
            ..Default::default()
        };
        let notes = sandbox_servers(&mut servers[1..], &every, None);
        assert_eq!(notes.len(), 1, "{notes:?}");
        assert!(notes[0].contains("web runs unsandboxed"), "{notes:?}");
    }

    #[test]
    fn add_then_remove_keeps_the_rest_of_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.toml");
        std::fs::write(
            &path,
            "# my settings\nmodel = \"anthropic/claude-sonnet-4-5\"\n",
        )
        .unwrap();
        let spec = ServerSpec {
            command: Some("npx".into()),
            args: vec!["-y".into(), "server".into()],
            env: [("KEY".to_owned(), "${TOKEN}".to_owned())].into(),
            ..ServerSpec::default()
        };
        add_server(&path, "tools", &spec).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.starts_with("# my settings\n"), "{text}");
        assert!(text.contains("[mcp.servers.tools]"), "{text}");
        let read = servers_in(&path).unwrap();
        assert_eq!(read, [("tools".to_owned(), spec)]);
        assert!(remove_server(&path, "tools").unwrap());
        assert!(!remove_server(&path, "tools").unwrap());
        assert!(servers_in(&path).unwrap().is_empty());
        assert!(
            std::fs::read_to_string(&path)
                .unwrap()
                .contains("# my settings")
        );
    }
}
