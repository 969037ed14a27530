//! The interactive terminal UI (ratatui).

use crate::run::Setup;

/// Runs the terminal UI until the user quits.
pub fn run(setup: Setup, runtime: &tokio::runtime::Runtime) -> anyhow::Result<()> {
    let _ = (setup, runtime);
    anyhow::bail!(
        "the interactive terminal UI is not built yet: pass a prompt with -p \"…\" (or pipe one on stdin), or try `strata demo`"
    )
}
