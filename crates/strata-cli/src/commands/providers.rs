//! `strata providers [--json]`: the capability table, one row per provider.

use std::io::Write as _;

use serde::Serialize;

use crate::args::{ProvidersArgs, RunArgs};

/// One provider as listed: the row's defaults and, per feature, how many of its models have it
/// once per-model overrides are applied.
#[derive(Debug, Serialize)]
struct Listed {
    id: String,
    name: String,
    protocol: String,
    base_url: String,
    auth_env: Vec<String>,
    cache: &'static str,
    models: usize,
    mid_conversation_system: usize,
    tool_addition: usize,
    tool_removal: usize,
    /// Takes any model id its server serves (`llama-cpp`, `ollama`, …), or `null`.
    server: Option<&'static str>,
    /// Where the row came from: `built-in`, then each file that changed it.
    source: Vec<String>,
    /// Features its models' providers refused, still in force (with the date and the error).
    learned: Vec<strata_host::rows::Lesson>,
}

pub fn run(args: &ProvidersArgs, run: &RunArgs) -> anyhow::Result<()> {
    let setup = strata_host::Setup::load(&run.overrides())?;
    let catalog = &setup.catalog;
    let lessons = strata_host::factory::learned_in_force(catalog);
    let listed: Vec<Listed> = catalog
        .providers()
        .map(|row| {
            let models: Vec<_> = catalog.models_of(&row.id).collect();
            let count = |feature: fn(&strata_host::rows::Capabilities) -> bool| {
                models
                    .iter()
                    .filter(|m| feature(&catalog.capabilities(&row.id, &m.id)))
                    .count()
            };
            Listed {
                id: row.id.clone(),
                name: row.name.clone(),
                protocol: row.protocol.as_str().to_owned(),
                base_url: row.base_url.clone(),
                auth_env: row.auth_env.clone(),
                cache: row.cache.style.short_name(),
                models: models.len(),
                mid_conversation_system: count(|c| c.mid_conversation_system),
                tool_addition: count(|c| c.tool_addition),
                tool_removal: count(|c| c.tool_removal),
                server: row.server.map(|s| s.kind.as_str()),
                source: catalog.row_origins(&row.id).to_vec(),
                learned: lessons
                    .iter()
                    .filter(|l| l.provider == row.id)
                    .cloned()
                    .collect(),
            }
        })
        .collect();
    let mut out = std::io::stdout().lock();
    if args.json {
        serde_json::to_writer_pretty(&mut out, &listed)?;
        writeln!(out)?;
        return Ok(());
    }
    writeln!(
        out,
        "{:<26} {:<18} {:<10} {:>6} {:>9} {:>9} {:>9}  {:<28} source",
        "provider", "protocol", "cache", "models", "mid-sys", "tool-add", "tool-rm", "key"
    )?;
    for row in &listed {
        // The key's variable (the one set, when one is; its value is never shown).
        let set = row
            .auth_env
            .iter()
            .find(|v| std::env::var_os(v).is_some_and(|x| !x.is_empty()));
        let key = match (set, row.auth_env.first()) {
            (Some(var), _) => format!("{var} (set)"),
            (None, Some(var)) => var.clone(),
            (None, None) => "-".to_owned(),
        };
        writeln!(
            out,
            "{:<26} {:<18} {:<10} {:>6} {:>9} {:>9} {:>9}  {:<28} {}",
            row.id,
            row.protocol,
            row.cache,
            if row.server.is_some() {
                format!("{}+any", row.models)
            } else {
                row.models.to_string()
            },
            row.mid_conversation_system,
            row.tool_addition,
            row.tool_removal,
            key,
            row.source.join(" + ")
        )?;
    }
    writeln!(
        out,
        "{} providers; feature columns count the models that have the feature; +any: the server's own models too (`strata models PROVIDER`)",
        listed.len()
    )?;
    for lesson in &lessons {
        writeln!(out, "{}", lesson.note())?;
    }
    Ok(())
}
