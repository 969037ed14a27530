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
    writeln!(out, "# active policy:")?;
    for line in strata_agent::policy::explain_compaction(&merged.compaction) {
        writeln!(out, "#   {line}")?;
    }
    writeln!(
        out,
        "#   system changes: per provider row (see /context for the current model)"
    )?;
    for name in config::ignored_environment() {
        writeln!(out, "# ignored: {name} is not a configuration key")?;
    }
    Ok(())
}
