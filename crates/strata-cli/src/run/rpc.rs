//! `--mode rpc`: Pi's RPC protocol (JSON lines on stdin and stdout).

use super::Setup;

/// Serves RPC commands from stdin until it closes.
pub async fn serve(setup: Setup) -> anyhow::Result<()> {
    let _ = setup;
    anyhow::bail!("--mode rpc is not built yet")
}
