//! `strata export FILE [-o OUT]`: the session tree as self-contained HTML.

use std::path::{Path, PathBuf};

use strata_host::export::Overwrite;

use crate::args::ExportArgs;

/// Writes the HTML file and prints its path.
pub fn run(args: &ExportArgs) -> anyhow::Result<()> {
    let overwrite = if args.force {
        Overwrite::Replace
    } else {
        Overwrite::Refuse
    };
    let path = write(&args.file, args.output.as_deref(), overwrite)?;
    println!("{}", path.display());
    Ok(())
}

/// Writes the export (strata_export picks the file and refuses to overwrite a session) and
/// says on stderr each session line skipped while reading it.
pub fn write(
    session_file: &Path,
    output: Option<&Path>,
    overwrite: Overwrite,
) -> anyhow::Result<PathBuf> {
    let exported = strata_host::export::export_html(session_file, output, overwrite)?;
    crate::commands::open::report_skipped(&exported.diagnostics);
    Ok(exported.path)
}
