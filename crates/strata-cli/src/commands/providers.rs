//! `strata providers`: the capability table.

use crate::args::ProvidersArgs;

pub fn run(_args: &ProvidersArgs) -> anyhow::Result<()> {
    anyhow::bail!("provider listing is not wired yet")
}
