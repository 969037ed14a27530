//! `strata sessions`: the sessions of a working directory, or of all.

use crate::args::SessionsArgs;

pub fn run(_args: &SessionsArgs) -> anyhow::Result<()> {
    anyhow::bail!("session listing is not wired yet")
}
