//! What print and json modes write to stdout: a view over the session runtime's events.

use std::io::Write as _;
use std::time::Duration;

use strata_rpc::json_mode::JsonStream;
use strata_runtime::{AgentEvent, RunEnd, RuntimeEvent};
use tokio::sync::mpsc::UnboundedReceiver;
use tokio::time::Instant;

/// How long a request may go unanswered before print mode says it is still waiting (and
/// again after each further period), so a silent provider is never silent on stderr.
pub const WAITING_NOTICE: Duration = Duration::from_secs(15);

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
/// until the stream ends; returns the last run's end (a background child's answer runs after
/// the prompt's), or the first that did not stop.
pub async fn print_events(
    mut events: UnboundedReceiver<RuntimeEvent>,
    mut json: Option<JsonStream>,
) -> anyhow::Result<Option<Ended>> {
    let mut ended = None;
    let mut waiting = Waiting::new(WAITING_NOTICE);
    loop {
        let event = tokio::select! {
            event = events.recv() => event,
            () = waiting.due() => {
                eprintln!("strata: {}", waiting.notice());
                continue;
            }
        };
        let Some(event) = event else { break };
        if let RuntimeEvent::Agent { event } = &event {
            waiting.saw(event);
            for line in stderr_lines(event) {
                eprintln!("strata: {line}");
            }
        }
        match &event {
            RuntimeEvent::RunEnded {
                end,
                final_text,
                error,
                ..
            } if ended.as_ref().is_none_or(|e: &Ended| e.end == RunEnd::Stop) => {
                ended = Some(Ended {
                    end: *end,
                    final_text: final_text.clone(),
                    error: error.clone(),
                });
            }
            RuntimeEvent::Failed { op, error } => eprintln!("strata: {op}: {error}"),
            RuntimeEvent::Notice { source, text } => eprintln!("strata: {source}: {text}"),
            _ => {}
        }
        if let Some(json) = &mut json {
            print_records(&json.records(event))?;
        }
    }
    Ok(ended)
}

/// What print mode says on stderr about an agent event: retries (the reason an answer is
/// late) and tools refused as too large (naming their server).
pub fn stderr_lines(event: &AgentEvent) -> Vec<String> {
    match event {
        AgentEvent::Retry {
            attempt,
            wait_ms,
            error,
        } => vec![format!(
            "request failed ({error}); retry {attempt} in {:.1} s",
            Duration::from_millis(*wait_ms).as_secs_f64()
        )],
        AgentEvent::SystemUpdate { tools_refused, .. } => tools_refused.clone(),
        _ => Vec::new(),
    }
}

/// Since when a sent request has had no answer, and the next time to say so.
#[derive(Debug)]
pub struct Waiting {
    period: Duration,
    since: Option<Instant>,
    next: Option<Instant>,
}

impl Waiting {
    /// Says so every `period` while a request is unanswered.
    pub fn new(period: Duration) -> Self {
        Self {
            period,
            since: None,
            next: None,
        }
    }

    /// Follows `event`: a request sent (or about to be sent again) starts the wait; any part
    /// of an answer, or the run's end, ends it.
    pub fn saw(&mut self, event: &AgentEvent) {
        match event {
            AgentEvent::RequestStart { .. } | AgentEvent::Retry { .. } => {
                let now = Instant::now();
                self.since.get_or_insert(now);
                self.next = Some(now + self.period);
            }
            AgentEvent::TextDelta { .. }
            | AgentEvent::ThinkingDelta { .. }
            | AgentEvent::ToolCallStart { .. }
            | AgentEvent::ToolCallDelta { .. }
            | AgentEvent::Usage { .. }
            | AgentEvent::MessageEnd { .. }
            | AgentEvent::AgentEnd { .. } => {
                self.since = None;
                self.next = None;
            }
            _ => {}
        }
    }

    /// Resolves when it is time to say the request is still unanswered (never when none is).
    pub async fn due(&self) {
        match self.next {
            Some(next) => tokio::time::sleep_until(next).await,
            None => std::future::pending().await,
        }
    }

    /// The line to print now; the next is due one period later.
    pub fn notice(&mut self) -> String {
        let now = Instant::now();
        self.next = Some(now + self.period);
        let waited = self.since.map_or(0, |since| (now - since).as_secs());
        format!("no answer from the model yet ({waited} s since the request was sent); waiting")
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    fn request_start() -> AgentEvent {
        AgentEvent::RequestStart {
            chapter_bytes: [0; 3],
            divergence: None,
        }
    }

    /// Whether `waiting` says anything within `within` (paused time: no real wait).
    async fn says_within(waiting: &Waiting, within: Duration) -> bool {
        tokio::time::timeout(within, waiting.due()).await.is_ok()
    }

    #[tokio::test]
    async fn an_unanswered_request_is_said_on_stderr_until_the_answer_starts() {
        let period = Duration::from_millis(20);
        // A bound for the test only: a notice that never comes fails instead of hanging.
        let soon = Duration::from_secs(30);
        let mut waiting = Waiting::new(period);
        assert!(!says_within(&waiting, period * 10).await);
        waiting.saw(&request_start());
        assert!(says_within(&waiting, soon).await);
        let first = waiting.notice();
        assert!(first.contains("no answer from the model yet ("), "{first}");
        assert!(
            first.contains("s since the request was sent); waiting"),
            "{first}"
        );
        // Said again a period later.
        assert!(says_within(&waiting, soon).await);
        waiting.notice();
        // A retry keeps the wait going.
        waiting.saw(&AgentEvent::Retry {
            attempt: 1,
            wait_ms: 2000,
            error: "no response headers within 10s".into(),
        });
        assert!(says_within(&waiting, soon).await);
        waiting.notice();
        // The answer started: nothing more is said.
        waiting.saw(&AgentEvent::TextDelta { text: "hi".into() });
        assert!(!says_within(&waiting, period * 10).await);
    }

    #[test]
    fn retries_and_refused_tools_are_said() {
        let retry = stderr_lines(&AgentEvent::Retry {
            attempt: 2,
            wait_ms: 4000,
            error: "the server closed the connection".into(),
        });
        assert_eq!(
            retry,
            ["request failed (the server closed the connection); retry 2 in 4.0 s"]
        );
        assert!(stderr_lines(&request_start()).is_empty());
    }
}
