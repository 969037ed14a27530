//! `strata export FILE`: the session tree as self-contained HTML.

use crate::args::ExportArgs;

/// Writes the HTML file.
pub fn run(args: &ExportArgs) -> anyhow::Result<()> {
    let _ = args;
    anyhow::bail!("strata export is not built yet")
}
