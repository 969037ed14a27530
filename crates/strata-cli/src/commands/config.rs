//! `strata config`: the merged configuration, where each value came from, what an untrusted
//! project's file was denied, and where each provider row came from.

use std::io::Write as _;

use crate::args::{ConfigArgs, RunArgs};
use strata_host::config::{self, Layers, Sources};
use strata_host::rows::Rows;

pub fn run(args: &ConfigArgs, run: &RunArgs) -> anyhow::Result<()> {
    let sources = Sources::from_environment();
    let overrides = run.overrides();
    let layers = Layers::read(&sources, &overrides)?;
    let merged = layers.config()?;
    let figment = layers.figment();
    let rows = Rows::load(&layers, &merged)?;
    // The mode, every permission rule with the file it came from, and the bash sandbox.
    let permissions =
        strata_host::rules::describe(&layers, &merged, &sources, &sources.project_dir, &overrides)?;
    let mut out = std::io::stdout().lock();
    if args.json {
        let mut value = serde_json::to_value(&merged)?;
        // Keys, header values and MCP credentials never leave the process in output.
        config::mask_secrets(&mut value);
        let discovered = strata_host::mcp::discover(&sources, layers.trust.trusted);
        value["mcpServers"] = discovered
            .servers
            .iter()
            .map(|server| {
                serde_json::json!({
                    "name": server.name,
                    "target": config::shown_target(server),
                    "enabled": server.enabled,
                    "source": server.source.to_string(),
                    "sourceKind": server.source.kind,
                })
            })
            .collect();
        let changed: serde_json::Map<String, serde_json::Value> = rows
            .catalog
            .providers()
            .filter(|row| rows.catalog.row_origins(&row.id) != ["built-in"])
            .map(|row| {
                (
                    row.id.clone(),
                    serde_json::json!(rows.catalog.row_origins(&row.id)),
                )
            })
            .collect();
        value["_permissions"] = serde_json::json!(permissions);
        value["_trust"] = serde_json::json!({"decision": layers.trust, "ignored": layers.ignored});
        value["_provider_rows"] = serde_json::Value::Object(changed);
        value["_pi_models"] = serde_json::json!({
            "file": rows.pi_file,
            "ignored": rows.pi_ignored,
        });
        serde_json::to_writer_pretty(&mut out, &value)?;
        writeln!(out)?;
        return Ok(());
    }
    // Where configuration is read from and sessions are kept, found or not.
    let state = |path: &std::path::Path| {
        if path.is_file() { "read" } else { "not found" }
    };
    if let Some(global) = &sources.global_dir {
        let file = global.join("config.toml");
        writeln!(
            out,
            "# user config:    {} ({})",
            file.display(),
            state(&file)
        )?;
    }
    let project_file = sources.project_dir.join(".strata/config.toml");
    writeln!(
        out,
        "# project config: {} ({})",
        project_file.display(),
        state(&project_file)
    )?;
    let (setup, _) = strata_host::Setup::read_quietly(
        sources.clone(),
        sources.project_dir.clone(),
        &run.overrides(),
    )?;
    if let Ok(store) = setup.store() {
        writeln!(out, "# sessions:       {}", store.root().display())?;
    }
    if merged.model.is_none() {
        match setup.default_choice() {
            Some(defaulted) => writeln!(
                out,
                "model = {}/{}  # not set: {}",
                defaulted.choice.provider, defaulted.choice.id, defaulted.why
            )?,
            None => writeln!(
                out,
                "# model: not set, and no provider has a key (`strata models` lists the models; set one with model = \"provider/id\")"
            )?,
        }
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
    let discovered = strata_host::mcp::discover(&sources, layers.trust.trusted);
    for server in &discovered.servers {
        let enabled = if server.enabled { "" } else { " (disabled)" };
        writeln!(
            out,
            "mcp server {} = {}{enabled}  # {}",
            server.name,
            config::shown_target(server),
            server.source
        )?;
    }
    if !discovered.servers.is_empty() {
        let exposures: Vec<String> = discovered
            .servers
            .iter()
            .map(|server| format!("{} {:?}", server.name, server.exposure).to_lowercase())
            .collect();
        writeln!(out, "# mcp exposure: {}", exposures.join(", "))?;
        writeln!(out, "#   auto: {}", strata_host::mcp::EXPOSURE_RULE)?;
    }
    for error in &discovered.errors {
        writeln!(out, "# invalid MCP entry: {error}")?;
    }
    for line in &permissions {
        writeln!(out, "# {line}")?;
    }
    for path in &discovered.untrusted_skipped {
        writeln!(out, "# not read (project not trusted): {}", path.display())?;
    }
    writeln!(out, "# active policy:")?;
    for line in strata_host::config::explain_compaction(&merged.compaction) {
        writeln!(out, "#   {line}")?;
    }
    writeln!(
        out,
        "#   system changes: per provider row (see /context for the current model)"
    )?;
    for name in config::ignored_environment() {
        writeln!(out, "# ignored: {name} is not a configuration key")?;
    }
    let trust = &layers.trust;
    writeln!(
        out,
        "# project {}: {}",
        trust.project_dir.display(),
        if trust.trusted {
            "trusted"
        } else {
            "not trusted (`strata trust` to apply its .strata/ provider rows, prompts, tools and sessions dir)"
        }
    )?;
    if let Some(notice) = layers.ignored_notice() {
        writeln!(out, "# {notice}")?;
    }
    for row in rows.catalog.providers() {
        let origins = rows.catalog.row_origins(&row.id);
        if origins != ["built-in"] {
            writeln!(out, "# provider {}: {}", row.id, origins.join(" + "))?;
        }
    }
    if let Some(file) = &rows.pi_file {
        writeln!(out, "# Pi models: {}", file.display())?;
        for ignored in &rows.pi_ignored {
            writeln!(out, "#   not carried over: {ignored}")?;
        }
    }
    for warning in &rows.warnings {
        writeln!(out, "# warning: {warning}")?;
    }
    Ok(())
}
