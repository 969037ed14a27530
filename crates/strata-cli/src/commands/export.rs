//! `strata export FILE [-o OUT]`: the session tree as self-contained HTML.

use crate::args::ExportArgs;
use crate::export::Overwrite;

/// Writes the HTML file and prints its path.
pub fn run(args: &ExportArgs) -> anyhow::Result<()> {
    let path = crate::export::export_html(
        &args.file,
        args.output.as_deref(),
        if args.force {
            Overwrite::Replace
        } else {
            Overwrite::Refuse
        },
    )?;
    println!("{}", path.display());
    Ok(())
}
