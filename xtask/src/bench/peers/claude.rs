//! Claude Code (`@anthropic-ai/claude-code`) driven as `claude -p --input-format stream-json
//! --output-format stream-json`: one user message per task on stdin, the task ends at its
//! `result` message. `ANTHROPIC_BASE_URL` points at strata-mock with a dummy key; `HOME` and
//! `CLAUDE_CONFIG_DIR` are the run's own, so no user setting leaks in; the window is the
//! workload's (`CLAUDE_CODE_AUTO_COMPACT_WINDOW`); hooks move the mock's clock before each
//! request (`UserPromptSubmit` before a task's first, `PostToolUse` before each next one).

use std::process::Command;
use std::time::Instant;

use anyhow::{Context, Result, bail};
use serde_json::{Value, json};

use super::process::JsonLines;
use super::{Launch, Outcome, PeerSession};

/// The `--settings` file: the clock hooks (their output goes nowhere, so nothing reaches the
/// model's context).
pub fn settings_json(launch: &Launch<'_>) -> Value {
    let tick = format!(
        "curl -s -o /dev/null -X POST -H 'content-type: application/json' --data '{{\"seconds\":{}}}' {}",
        launch.seconds_between_requests,
        launch.clock_url()
    );
    let hook = json!([{"hooks": [{"type": "command", "command": tick}]}]);
    let tool_hook = json!([{"matcher": "*", "hooks": [{"type": "command", "command": tick}]}]);
    if launch.seconds_between_requests == 0 {
        return json!({});
    }
    json!({"hooks": {"UserPromptSubmit": hook, "PostToolUse": tool_hook}})
}

/// A running `claude -p` in stream-json mode.
pub struct ClaudeSession {
    process: JsonLines,
}

/// Starts Claude Code on `launch`.
pub fn start(launch: &Launch<'_>) -> Result<ClaudeSession> {
    let config_dir = launch.home.join(".claude");
    std::fs::create_dir_all(&config_dir)
        .with_context(|| format!("creating {}", config_dir.display()))?;
    let settings = launch.home.join("claude-settings.json");
    std::fs::write(
        &settings,
        serde_json::to_vec_pretty(&settings_json(launch))?,
    )
    .with_context(|| format!("writing {}", settings.display()))?;
    let mut command = Command::new(launch.install.bin("claude"));
    command
        .args([
            "-p",
            "--input-format",
            "stream-json",
            "--output-format",
            "stream-json",
            "--verbose",
            "--model",
            launch.model,
            // Root may use it only with IS_SANDBOX=1; the work dir is a throwaway.
            "--dangerously-skip-permissions",
        ])
        .arg("--settings")
        .arg(&settings)
        .current_dir(launch.cwd)
        .env("PATH", launch.install.path_env())
        .env("HOME", launch.home)
        .env("CLAUDE_CONFIG_DIR", &config_dir)
        .env("ANTHROPIC_BASE_URL", &launch.base_url)
        .env("ANTHROPIC_API_KEY", "bench-key")
        .env("IS_SANDBOX", "1")
        .env("CLAUDE_CODE_AUTO_COMPACT_WINDOW", launch.window.to_string())
        .env(
            "CLAUDE_CODE_MAX_OUTPUT_TOKENS",
            launch.max_tokens.to_string(),
        )
        .env("DISABLE_AUTOUPDATER", "1")
        .env("DISABLE_TELEMETRY", "1")
        .env("DISABLE_ERROR_REPORTING", "1");
    if launch.one_hour_cache {
        command.env("ENABLE_PROMPT_CACHING_1H", "1");
    }
    let process = JsonLines::spawn("claude", command, &launch.home.join("claude.stderr"))?;
    Ok(ClaudeSession { process })
}

impl PeerSession for ClaudeSession {
    fn prompt(&mut self, text: &str, deadline: Instant) -> Result<Outcome> {
        self.process.send(&json!({
            "type": "user",
            "message": {"role": "user", "content": text},
        }))?;
        let mut outcome = Outcome::default();
        loop {
            let message = self.process.next(deadline)?;
            match message
                .get("type")
                .and_then(Value::as_str)
                .unwrap_or_default()
            {
                "assistant" => {
                    for block in blocks(&message) {
                        match block.get("type").and_then(Value::as_str) {
                            Some("text") => {
                                outcome.final_text = block
                                    .get("text")
                                    .and_then(Value::as_str)
                                    .unwrap_or_default()
                                    .to_owned();
                            }
                            Some("tool_use") => outcome.tool_calls += 1,
                            _ => {}
                        }
                    }
                }
                "user" => {
                    for block in blocks(&message) {
                        if block.get("type").and_then(Value::as_str) == Some("tool_result")
                            && block.get("is_error") == Some(&Value::Bool(true))
                        {
                            outcome
                                .errors
                                .push(format!("tool result error: {}", block["content"]));
                        }
                    }
                }
                "system" => match message.get("subtype").and_then(Value::as_str) {
                    Some("compact_boundary") => outcome.compactions += 1,
                    Some("api_retry") => outcome.retries += 1,
                    _ => {}
                },
                "result" => {
                    // The usage of every request of the task, summed by Claude Code.
                    let usage = &message["usage"];
                    let count = |key: &str| usage.get(key).and_then(Value::as_u64).unwrap_or(0);
                    outcome.reported.uncached += count("input_tokens");
                    outcome.reported.cache_read += count("cache_read_input_tokens");
                    outcome.reported.cache_write += count("cache_creation_input_tokens");
                    outcome.stop_reason = message
                        .get("stop_reason")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_owned();
                    if message.get("is_error") == Some(&Value::Bool(true)) {
                        let why = message
                            .get("result")
                            .cloned()
                            .unwrap_or_else(|| message["subtype"].clone());
                        outcome.errors.push(format!("claude ended in error: {why}"));
                    }
                    if outcome.stop_reason == "end_turn" {
                        outcome.stop_reason = "stop".to_owned();
                    }
                    return Ok(outcome);
                }
                _ => {}
            }
        }
    }

    fn set_bench_tools(&mut self, _names: &[String], _deadline: Instant) -> Result<bool> {
        // Its tool set is fixed for the session; the bench tools' calls are shell commands.
        Ok(false)
    }

    fn finish(self: Box<Self>) -> Result<()> {
        self.process.finish(std::time::Duration::from_secs(10))
    }
}

fn blocks(message: &Value) -> impl Iterator<Item = &Value> {
    message
        .pointer("/message/content")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
}

/// Fails unless `--version` prints a Claude Code version (a missing platform binary prints an
/// install hint instead).
pub fn check(bin: &std::path::Path) -> Result<String> {
    let out = Command::new(bin)
        .arg("--version")
        .output()
        .with_context(|| format!("running {} --version", bin.display()))?;
    let text = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    if !out.status.success() || !text.contains("Claude Code") {
        bail!(
            "{} --version did not answer: {}",
            bin.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_reads_the_message_content() {
        let message = json!({"type": "assistant", "message": {"content": [
            {"type": "text", "text": "a"}, {"type": "tool_use", "name": "Read"}
        ]}});
        let kinds: Vec<&str> = blocks(&message)
            .filter_map(|b| b["type"].as_str())
            .collect();
        assert_eq!(kinds, ["text", "tool_use"]);
    }
}
