//! `strata fork FILE --leaf ID [-o NEW]`: a new session file holding one path.

use std::path::PathBuf;

use anyhow::Context as _;

use super::open::{open_session, resolve_leaf};
use crate::args::ForkArgs;

pub fn run(args: &ForkArgs) -> anyhow::Result<()> {
    let session = open_session(&args.file)?;
    let leaf = resolve_leaf(&session, &args.leaf)?;
    let output = match &args.output {
        Some(path) => path.clone(),
        None => default_fork_path(&args.file, &leaf),
    };
    if output.exists() {
        anyhow::bail!(
            "{} already exists; pass -o with a new path",
            output.display()
        );
    }
    let written = session
        .fork(Some(&leaf), &output)
        .with_context(|| format!("forking {} at {leaf}", args.file.display()))?;
    // The fork carries the file checkpoints its path needs, so /rewind works there too.
    let fork = strata_runtime::Session::open(&written)
        .with_context(|| format!("reading the fork {}", written.display()))?;
    strata_runtime::sessions::carry_checkpoints(&args.file, &fork.session);
    println!("{}", written.display());
    Ok(())
}

/// `name.jsonl` → `name-fork-<leaf>.jsonl` beside the original.
fn default_fork_path(original: &std::path::Path, leaf: &strata_runtime::EntryId) -> PathBuf {
    let stem = original
        .file_stem()
        .map_or_else(|| "session".into(), |s| s.to_string_lossy());
    original.with_file_name(format!("{stem}-fork-{leaf}.jsonl"))
}
