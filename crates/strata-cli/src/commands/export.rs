//! `strata export FILE [-o OUT]`: the session tree as self-contained HTML.

use crate::args::ExportArgs;

/// Writes the HTML file and prints its path.
pub fn run(args: &ExportArgs) -> anyhow::Result<()> {
    let path = crate::export::export_html(&args.file, args.output.as_deref())?;
    println!("{}", path.display());
    Ok(())
}
