//! A harness process spoken to in JSON lines: one line written to its stdin per command, its
//! stdout read line by line (split on `\n` only, as Pi's RPC framing requires) on a thread, so
//! that every wait has a deadline.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use serde_json::Value;

/// A running harness.
pub struct JsonLines {
    name: String,
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<Vec<u8>>,
    stderr: std::path::PathBuf,
}

impl JsonLines {
    /// Starts `command` with piped stdin/stdout; stderr goes to `stderr_file`.
    pub fn spawn(name: &str, mut command: Command, stderr_file: &std::path::Path) -> Result<Self> {
        let stderr = std::fs::File::create(stderr_file)
            .with_context(|| format!("creating {}", stderr_file.display()))?;
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(stderr)
            .spawn()
            .with_context(|| format!("starting {name}"))?;
        let stdout = child.stdout.take().context("no stdout pipe")?;
        let stdin = child.stdin.take();
        let (sender, lines) = channel();
        std::thread::spawn(move || {
            let mut reader = BufReader::new(stdout);
            loop {
                let mut line = Vec::new();
                match reader.read_until(b'\n', &mut line) {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {
                        if sender.send(line).is_err() {
                            break;
                        }
                    }
                }
            }
        });
        Ok(Self {
            name: name.to_owned(),
            child,
            stdin,
            lines,
            stderr: stderr_file.to_path_buf(),
        })
    }

    /// Writes one JSON line.
    pub fn send(&mut self, value: &Value) -> Result<()> {
        let stdin = self.stdin.as_mut().context("stdin already closed")?;
        let mut line = serde_json::to_vec(value)?;
        line.push(b'\n');
        stdin
            .write_all(&line)
            .and_then(|()| stdin.flush())
            .with_context(|| format!("writing to {}", self.name))
    }

    /// The next JSON line before `deadline`; lines that are not JSON are skipped.
    pub fn next(&mut self, deadline: Instant) -> Result<Value> {
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => {
                    let text = String::from_utf8_lossy(&line);
                    let text = text.trim_end_matches(['\n', '\r']);
                    if let Ok(value) = serde_json::from_str::<Value>(text) {
                        return Ok(value);
                    }
                }
                Err(RecvTimeoutError::Timeout) => {
                    bail!("{} said nothing in time{}", self.name, self.stderr_tail())
                }
                Err(RecvTimeoutError::Disconnected) => {
                    let status = self.child.wait().ok();
                    bail!(
                        "{} exited ({}){}",
                        self.name,
                        status.map_or_else(|| "unknown status".to_owned(), |s| s.to_string()),
                        self.stderr_tail()
                    )
                }
            }
        }
    }

    /// Closes stdin and waits up to `grace` for the process to exit, then kills it.
    pub fn finish(mut self, grace: Duration) -> Result<()> {
        drop(self.stdin.take());
        let deadline = Instant::now() + grace;
        while Instant::now() < deadline {
            if self.child.try_wait()?.is_some() {
                return Ok(());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        self.child.kill().ok();
        self.child.wait().ok();
        Ok(())
    }

    fn stderr_tail(&self) -> String {
        let text = std::fs::read_to_string(&self.stderr).unwrap_or_default();
        let tail: Vec<&str> = text.lines().rev().take(8).collect();
        if tail.is_empty() {
            String::new()
        } else {
            let lines: Vec<&str> = tail.into_iter().rev().collect();
            format!("; stderr: {}", lines.join(" | "))
        }
    }
}

impl Drop for JsonLines {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            self.child.kill().ok();
            self.child.wait().ok();
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn lines_round_trip_through_a_child_and_waits_have_deadlines() {
        let dir = tempfile::tempdir().unwrap();
        let mut command = Command::new("sh");
        // Echo each line back, with a non-JSON line and a U+2028 inside a string.
        command
            .arg("-c")
            .arg("echo 'not json'; while read -r l; do echo \"$l\"; done");
        let mut child = JsonLines::spawn("echo", command, &dir.path().join("err")).unwrap();
        let value = json!({"type": "prompt", "message": "a\u{2028}b"});
        child.send(&value).unwrap();
        let got = child.next(Instant::now() + Duration::from_secs(5)).unwrap();
        assert_eq!(got, value);
        let err = child
            .next(Instant::now() + Duration::from_millis(50))
            .unwrap_err();
        assert!(err.to_string().contains("said nothing in time"), "{err}");
        child.finish(Duration::from_secs(5)).unwrap();
    }

    #[test]
    fn an_exited_child_is_reported_with_its_stderr() {
        let dir = tempfile::tempdir().unwrap();
        let mut command = Command::new("sh");
        command.arg("-c").arg("echo boom >&2; exit 3");
        let mut child = JsonLines::spawn("failing", command, &dir.path().join("err")).unwrap();
        let err = child
            .next(Instant::now() + Duration::from_secs(5))
            .unwrap_err()
            .to_string();
        assert!(err.contains("failing exited"), "{err}");
        assert!(err.contains("boom"), "{err}");
    }
}
