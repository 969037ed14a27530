//! `strata demo`: a real coding task against strata-mock, in process, with the bill.

use crate::args::DemoArgs;

/// Runs the demo.
pub fn run(args: &DemoArgs) -> anyhow::Result<()> {
    let _ = args;
    anyhow::bail!("strata demo is not built yet")
}
