//! What print and json modes write to stdout: a view over the session runtime's events.

use std::io::Write as _;

use strata_runtime::{RunEnd, RuntimeEvent};
use tokio::sync::mpsc::UnboundedReceiver;

use crate::args::Mode;

/// How the run ended, as the runtime said.
pub struct Ended {
    /// Why.
    pub end: RunEnd,
    /// Text of the last answer.
    pub final_text: String,
    /// What failed, when the run failed.
    pub error: Option<String>,
}

/// Prints the agent's events as they come — every one as a JSON line in json mode, nothing in
/// text mode (the final answer is printed at the end) — until the stream ends; returns the
/// first run's end.
pub async fn print_events(
    mut events: UnboundedReceiver<RuntimeEvent>,
    mode: Mode,
) -> anyhow::Result<Option<Ended>> {
    let mut ended = None;
    while let Some(event) = events.recv().await {
        match event {
            RuntimeEvent::Agent { event } if mode == Mode::Json => {
                let line = serde_json::to_string(&event)?;
                let mut out = std::io::stdout().lock();
                writeln!(out, "{line}")?;
                out.flush()?;
            }
            RuntimeEvent::RunEnded {
                end,
                final_text,
                error,
                ..
            } if ended.is_none() => {
                ended = Some(Ended {
                    end,
                    final_text,
                    error,
                });
            }
            RuntimeEvent::Failed { op, error } => eprintln!("strata: {op}: {error}"),
            _ => {}
        }
    }
    Ok(ended)
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
