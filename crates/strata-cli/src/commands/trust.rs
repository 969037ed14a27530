//! `strata trust [DIR] [--revoke | --status]`: the project-trust decision, saved or shown.

use std::io::Write as _;

use anyhow::Context as _;

use crate::args::{RunArgs, TrustArgs};
use strata_host::config::{Layers, Sources};

pub fn run(args: &TrustArgs, run: &RunArgs) -> anyhow::Result<()> {
    let mut sources = Sources::from_environment();
    if let Some(dir) = &args.dir {
        sources.project_dir = dir.clone();
    }
    let mut out = std::io::stdout().lock();
    if args.status {
        let layers = Layers::read(&sources, &run.overrides())?;
        let value = serde_json::json!({
            "trust": layers.trust,
            "ignored": layers.ignored,
        });
        serde_json::to_writer_pretty(&mut out, &value)?;
        writeln!(out)?;
        return Ok(());
    }
    let global = sources
        .global_dir
        .as_deref()
        .context("no user config directory: set HOME or XDG_CONFIG_HOME")?;
    let file = strata_host::trust::save(global, &sources.project_dir, !args.revoke)?;
    let dir = std::fs::canonicalize(&sources.project_dir).unwrap_or(sources.project_dir);
    if args.revoke {
        writeln!(
            out,
            "no longer trusting {} ({})",
            dir.display(),
            file.display()
        )?;
    } else {
        writeln!(
            out,
            "trusting {}: its .strata/ provider rows, prompts, tools and sessions dir now apply ({})",
            dir.display(),
            file.display()
        )?;
    }
    Ok(())
}
