//! `strata config`: the merged configuration and where each value came from.

use std::io::Write as _;

use crate::args::{ConfigArgs, RunArgs};
use crate::config::{self, Sources};

pub fn run(args: &ConfigArgs, run: &RunArgs) -> anyhow::Result<()> {
    let sources = Sources::from_environment();
    let merged = config::load(&sources, run)?;
    let figment = config::figment(&sources, run);
    let mut out = std::io::stdout().lock();
    if args.json {
        let mut value = serde_json::to_value(&merged)?;
        // Keys never leave the process in output.
        if let Some(providers) = value.get_mut("providers").and_then(|p| p.as_object_mut()) {
            for settings in providers.values_mut() {
                if let Some(key) = settings.get_mut("api_key").filter(|k| !k.is_null()) {
                    *key = serde_json::Value::String("***".into());
                }
            }
        }
        let discovered = crate::mcp::discover(&sources);
        value["mcpServers"] = discovered
            .servers
            .iter()
            .map(|server| {
                serde_json::json!({
                    "name": server.name,
                    "target": server.target(),
                    "enabled": server.enabled,
                    "source": server.source.to_string(),
                    "sourceKind": server.source.kind,
                })
            })
            .collect();
        serde_json::to_writer_pretty(&mut out, &value)?;
        writeln!(out)?;
        return Ok(());
    }
    let explained = config::explain(&figment, &merged);
    let width = explained
        .iter()
        .map(|(key, _, _)| key.len())
        .max()
        .unwrap_or(0);
    for (key, value, source) in explained {
        writeln!(out, "{key:<width$} = {value}  # {source}")?;
    }
    // MCP servers come from strata's files and from Claude Code's and Pi's.
    let discovered = crate::mcp::discover(&sources);
    for server in &discovered.servers {
        let enabled = if server.enabled { "" } else { " (disabled)" };
        writeln!(
            out,
            "mcp server {} = {}{enabled}  # {}",
            server.name,
            server.target(),
            server.source
        )?;
    }
    for error in &discovered.errors {
        writeln!(out, "# invalid MCP entry: {error}")?;
    }
    for path in &discovered.untrusted_skipped {
        writeln!(out, "# not read (project not trusted): {}", path.display())?;
    }
    for name in config::ignored_environment() {
        writeln!(out, "# ignored: {name} is not a configuration key")?;
    }
    Ok(())
}
