//! What a run writes to stdout.

use std::io::Write as _;

use strata_agent::AgentEvent;
use tokio::sync::mpsc::UnboundedReceiver;

use crate::args::Mode;

/// Prints events as they come: every event as a JSON line in json mode; nothing in text mode
/// (the final answer is printed at the end).
pub async fn print_events(
    mut events: UnboundedReceiver<AgentEvent>,
    mode: Mode,
) -> anyhow::Result<()> {
    while let Some(event) = events.recv().await {
        if mode == Mode::Json {
            let line = serde_json::to_string(&event)?;
            let mut out = std::io::stdout().lock();
            writeln!(out, "{line}")?;
            out.flush()?;
        }
    }
    Ok(())
}

/// The final answer, with a trailing newline.
pub fn print_final(text: &str) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())?;
    if !text.ends_with('\n') {
        writeln!(out)?;
    }
    Ok(())
}
