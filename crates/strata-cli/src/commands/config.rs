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
        serde_json::to_writer_pretty(&mut out, &merged)?;
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
    Ok(())
}
