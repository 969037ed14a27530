//! `strata context FILE`: what the session would send, at its leaf or a given one.

use std::io::Write as _;

use anyhow::Context as _;

use strata_runtime::read_model::context;

use super::open::{open_session, resolve_leaf};
use crate::args::{ContextArgs, ContextFormat, RunArgs};

pub fn run(args: &ContextArgs, run: &RunArgs) -> anyhow::Result<()> {
    let session = open_session(&args.file)?;
    let leaf = match &args.leaf {
        Some(wanted) => Some(resolve_leaf(&session, wanted)?),
        None => session.leaf().cloned(),
    };
    // Pi's view is only printed: its messages may stay their lines' JSON, printed from it.
    let context = match args.format {
        ContextFormat::Pi => context::build_for_print(session.tree(), leaf.as_ref()),
        _ => context::build(session.tree(), leaf.as_ref()),
    }
    .with_context(|| format!("building the context of {}", args.file.display()))?;
    for diagnostic in &context.skipped {
        eprintln!("strata: warning: {diagnostic}");
    }
    // Buffered: stdout alone flushes at every newline, a write call per line of pretty JSON.
    let mut out = std::io::BufWriter::with_capacity(1 << 16, std::io::stdout().lock());
    match args.format {
        ContextFormat::Text => {
            out.write_all(context::to_text(&context).as_bytes())?;
            let leaf = leaf.as_ref().map(|id| id.as_str());
            for line in strata_runtime::read_model::delegation_lines(session.tree(), leaf) {
                writeln!(out, "{line}")?;
            }
        }
        ContextFormat::Json => {
            // What `to_json` holds, without building it first.
            serde_json::to_writer_pretty(&mut out, &context)?;
            writeln!(out)?;
        }
        ContextFormat::Pi => {
            context::write_pi_json(&context, &mut out)?;
            writeln!(out)?;
        }
        ContextFormat::Request => {
            let against = match &args.against {
                Some(other) => Some(context::build(
                    session.tree(),
                    Some(&resolve_leaf(&session, other)?),
                )?),
                None => None,
            };
            let (request, warning) = strata_host::wire::next_request(
                &run.overrides(),
                &session,
                &context,
                against.as_ref(),
                args.provider.clone(),
                args.model.clone(),
            )?;
            if let Some(warning) = warning {
                eprintln!("strata: warning: {warning}");
            }
            serde_json::to_writer_pretty(&mut out, &request)?;
            writeln!(out)?;
        }
    }
    out.flush()?;
    // The process ends here: freeing every parsed message one by one is work the exit does
    // for free (about 6% of a large context's CPU time).
    std::mem::forget(context);
    std::mem::forget(session);
    Ok(())
}
