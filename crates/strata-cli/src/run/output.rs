//! What print and json modes write to stdout: a view over the session runtime's events.

use std::io::Write as _;

use strata_rpc::json_mode::JsonStream;
use strata_runtime::{RunEnd, RuntimeEvent};
use tokio::sync::mpsc::UnboundedReceiver;

/// How the run ended, as the runtime said.
pub struct Ended {
    /// Why.
    pub end: RunEnd,
    /// Text of the last answer.
    pub final_text: String,
    /// What failed, when the run failed.
    pub error: Option<String>,
}

/// Prints the agent's events as they come — in json mode (`json` is `Some`) as Pi's json-mode
/// records, one line each; nothing in text mode (the final answer is printed at the end) —
/// until the stream ends; returns the first run's end.
pub async fn print_events(
    mut events: UnboundedReceiver<RuntimeEvent>,
    mut json: Option<JsonStream>,
) -> anyhow::Result<Option<Ended>> {
    let mut ended = None;
    while let Some(event) = events.recv().await {
        match &event {
            RuntimeEvent::RunEnded {
                end,
                final_text,
                error,
                ..
            } if ended.is_none() => {
                ended = Some(Ended {
                    end: *end,
                    final_text: final_text.clone(),
                    error: error.clone(),
                });
            }
            RuntimeEvent::Failed { op, error } => eprintln!("strata: {op}: {error}"),
            _ => {}
        }
        if let Some(json) = &mut json {
            print_records(&json.records(event))?;
        }
    }
    Ok(ended)
}

/// JSON records, one line each, flushed so that a reader sees each event as it happens.
pub fn print_records(records: &[serde_json::Value]) -> anyhow::Result<()> {
    if records.is_empty() {
        return Ok(());
    }
    let mut out = std::io::stdout().lock();
    for record in records {
        serde_json::to_writer(&mut out, record)?;
        out.write_all(b"\n")?;
    }
    out.flush()?;
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
