//! Pi 1.6 (`@earendil-works/pi-coding-agent`) driven through its RPC mode (`pi --mode rpc`,
//! Pi's docs/rpc.md), on the install's node 22: a custom provider in `models.json` points at strata-mock over
//! `anthropic-messages`, `settings.json` holds the workload's compaction settings, the
//! extension `xtask/peers/pi-clock.ts` moves the mock's clock before each request and
//! `xtask/peers/pi-bench-tools.ts` gives Pi the bench's MCP-like tools.

use std::process::Command;
use std::time::Instant;

use anyhow::{Context, Result, bail};
use serde_json::{Value, json};

use super::process::JsonLines;
use super::{Launch, Outcome, PeerSession};
use crate::bench::tools::BENCH_TOOL_NAMES;

/// The provider id Pi knows strata-mock by.
pub const PROVIDER: &str = "strata-mock";

/// Pi's `models.json` for a launch: one provider, one model with the workload's window.
pub fn models_json(launch: &Launch<'_>) -> Value {
    json!({
        "providers": {
            PROVIDER: {
                "baseUrl": launch.api_base_url,
                "api": launch.api,
                "apiKey": "bench-key",
                "models": [{
                    "id": launch.model,
                    "contextWindow": launch.window,
                    "maxTokens": launch.max_tokens,
                    "reasoning": false,
                }],
            }
        }
    })
}

/// Pi's `settings.json` for a launch: the workload's compaction settings.
pub fn settings_json(launch: &Launch<'_>) -> Value {
    json!({
        "compaction": {
            "enabled": true,
            "reserveTokens": launch.reserve_tokens,
            "keepRecentTokens": launch.keep_recent_tokens,
        },
        "retry": { "enabled": true, "maxRetries": 2, "baseDelayMs": 10 },
    })
}

/// A running `pi --mode rpc`.
pub struct PiSession {
    process: JsonLines,
}

/// Starts Pi in RPC mode on `launch`, with the clock and the bench's tools.
pub fn start(launch: &Launch<'_>) -> Result<PiSession> {
    start_with(launch, &[launch.install.script("pi-bench-tools.ts")])
}

/// Starts Pi in RPC mode on `launch` with the clock extension and `extensions` (the bench's
/// tools extension makes exactly Pi's built-ins and the bench's tools active, which would turn
/// off another extension's tool such as pi-subagents' `subagent`, so a run that needs one
/// leaves the bench's tools out).
pub fn start_with(launch: &Launch<'_>, extensions: &[std::path::PathBuf]) -> Result<PiSession> {
    let agent_dir = launch.home.join("pi-agent");
    std::fs::create_dir_all(&agent_dir)
        .with_context(|| format!("creating {}", agent_dir.display()))?;
    let write = |name: &str, value: &Value| -> Result<()> {
        let path = agent_dir.join(name);
        std::fs::write(&path, serde_json::to_vec_pretty(value)?)
            .with_context(|| format!("writing {}", path.display()))
    };
    write("models.json", &models_json(launch))?;
    write("settings.json", &settings_json(launch))?;
    let mut command = Command::new(launch.install.bin("pi"));
    command
        .args([
            "--mode",
            "rpc",
            "--provider",
            PROVIDER,
            "--model",
            launch.model,
        ])
        .arg("--session-dir")
        .arg(launch.home.join("pi-sessions"))
        .arg("--extension")
        .arg(launch.install.script("pi-clock.ts"));
    for extension in extensions {
        command.arg("--extension").arg(extension);
    }
    command
        .current_dir(launch.cwd)
        .env("PATH", launch.install.path_env())
        .env("HOME", launch.home)
        .env("PI_CODING_AGENT_DIR", &agent_dir)
        .env("PI_OFFLINE", "1")
        .env("PI_SKIP_VERSION_CHECK", "1")
        .env("PI_TELEMETRY", "0")
        .env("STRATA_BENCH_TOOL_NAMES", BENCH_TOOL_NAMES.join(","))
        .env("STRATA_BENCH_START_TOOLS", launch.start_tools.join(","))
        .env("STRATA_BENCH_CLOCK_URL", launch.clock_url())
        .env(
            "STRATA_BENCH_CLOCK_SECONDS",
            launch.seconds_between_requests.to_string(),
        );
    if launch.one_hour_cache {
        command.env("PI_CACHE_RETENTION", "long");
    }
    let process = JsonLines::spawn("pi", command, &launch.home.join("pi.stderr"))?;
    Ok(PiSession { process })
}

impl PeerSession for PiSession {
    fn prompt(&mut self, text: &str, deadline: Instant) -> Result<Outcome> {
        self.process
            .send(&json!({"type": "prompt", "message": text}))?;
        let mut outcome = Outcome::default();
        let mut pending_retry = false;
        'run: loop {
            loop {
                let event = self.process.next(deadline)?;
                match event.get("type").and_then(Value::as_str) {
                    Some("agent_end") => break,
                    Some("agent_start") => pending_retry = false,
                    _ => pending_retry |= take_event(&event, &mut outcome)?,
                }
            }
            // Pi compacts after a run ends (threshold), or compacts and starts the run again
            // after an overflow: the task is over when Pi is idle with nothing pending.
            loop {
                self.process
                    .send(&json!({"type": "get_state", "id": "settle"}))?;
                let state = loop {
                    let event = self.process.next(deadline)?;
                    match event.get("type").and_then(Value::as_str) {
                        _ if event.get("id").and_then(Value::as_str) == Some("settle") => {
                            break event;
                        }
                        Some("agent_start") => {
                            pending_retry = false;
                            continue 'run;
                        }
                        _ => pending_retry |= take_event(&event, &mut outcome)?,
                    }
                };
                let busy = |key: &str| state["data"].get(key) == Some(&Value::Bool(true));
                if !busy("isCompacting") && !busy("isStreaming") && !pending_retry {
                    return Ok(outcome);
                }
                std::thread::sleep(std::time::Duration::from_millis(50));
            }
        }
    }

    fn set_bench_tools(&mut self, names: &[String], deadline: Instant) -> Result<bool> {
        // An extension command runs at once, without a model request.
        let command = format!("/bench-tools {}", names.join(","));
        self.process
            .send(&json!({"type": "prompt", "message": command, "id": "tools"}))?;
        loop {
            let event = self.process.next(deadline)?;
            if event.get("id").and_then(Value::as_str) == Some("tools") {
                if event.get("success") != Some(&Value::Bool(true)) {
                    bail!("pi refused {command}: {event}");
                }
                return Ok(true);
            }
        }
    }

    fn finish(self: Box<Self>) -> Result<()> {
        self.process.finish(std::time::Duration::from_secs(5))
    }
}

/// Folds one RPC event into the task's outcome; true when Pi will start the run again (a
/// compaction after an overflow, an automatic retry).
fn take_event(event: &Value, outcome: &mut Outcome) -> Result<bool> {
    match event
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or_default()
    {
        "response" if event.get("success") == Some(&Value::Bool(false)) => {
            bail!("pi refused a command: {event}")
        }
        "message_end" => {
            let message = &event["message"];
            if message.get("role").and_then(Value::as_str) == Some("assistant") {
                outcome.final_text = assistant_text(message);
                let usage = &message["usage"];
                let count = |key: &str| usage.get(key).and_then(Value::as_u64).unwrap_or(0);
                outcome.reported.uncached += count("input");
                outcome.reported.cache_read += count("cacheRead");
                outcome.reported.cache_write += count("cacheWrite");
                outcome.stop_reason = message
                    .get("stopReason")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned();
                // An overflow error Pi recovers from (compact, retry) is cleared by the next
                // successful message.
                outcome.provider_error = message
                    .get("errorMessage")
                    .and_then(Value::as_str)
                    .map(str::to_owned);
            }
        }
        "tool_execution_end" => {
            outcome.tool_calls += 1;
            if event.get("isError") == Some(&Value::Bool(true)) {
                outcome.errors.push(format!(
                    "tool {} failed: {}",
                    event["toolName"], event["result"]
                ));
            }
        }
        "compaction_end" if compacted(event) => {
            outcome.compactions += 1;
            return Ok(event.get("willRetry") == Some(&Value::Bool(true)));
        }
        "auto_retry_start" => {
            outcome.retries += 1;
            return Ok(true);
        }
        _ => {}
    }
    Ok(false)
}

/// Whether a `compaction_end` event reports a compaction made (not aborted or failed).
fn compacted(event: &Value) -> bool {
    event.get("result").is_some_and(|r| !r.is_null())
}

/// The text blocks of a Pi assistant message, joined.
fn assistant_text(message: &Value) -> String {
    message
        .get("content")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|block| block.get("type").and_then(Value::as_str) == Some("text"))
        .filter_map(|block| block.get("text").and_then(Value::as_str))
        .collect::<Vec<_>>()
        .join("")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_overflow_pi_recovers_from_leaves_no_error() {
        let mut outcome = Outcome::default();
        let failed = json!({"type": "message_end", "message": {"role": "assistant", "content": [],
            "stopReason": "error", "errorMessage": "prompt is too long: 30502 tokens > 30000 maximum"}});
        take_event(&failed, &mut outcome).unwrap();
        assert!(outcome.provider_error.is_some());
        let compacted = json!({"type": "compaction_end", "reason": "overflow",
            "result": {"summary": "s"}, "aborted": false, "willRetry": true});
        assert!(take_event(&compacted, &mut outcome).unwrap(), "Pi retries");
        let done = json!({"type": "message_end", "message": {"role": "assistant",
            "content": [{"type": "text", "text": "Task 9 is done."}], "stopReason": "stop"}});
        take_event(&done, &mut outcome).unwrap();
        assert_eq!(outcome.provider_error, None);
        assert_eq!(outcome.compactions, 1);
        assert_eq!(outcome.final_text, "Task 9 is done.");
        assert_eq!(outcome.stop_reason, "stop");
    }

    #[test]
    fn assistant_text_joins_text_blocks_and_skips_tool_calls() {
        let message = json!({"role": "assistant", "content": [
            {"type": "thinking", "thinking": "hm"},
            {"type": "text", "text": "Task 1 "},
            {"type": "toolCall", "id": "x", "name": "read", "arguments": {}},
            {"type": "text", "text": "is done."}
        ]});
        assert_eq!(assistant_text(&message), "Task 1 is done.");
    }
}
