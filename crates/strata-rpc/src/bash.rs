//! The `bash` command: a shell command the user runs, whose output joins the context as a
//! `bashExecution` message (Pi's `!cmd`).

use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use serde_json::{Map, Value, json};
use strata_session::BashExecutionMessage;
use strata_tools::CancellationToken;
use strata_tools::truncate::{DEFAULT_MAX_BYTES, DEFAULT_MAX_LINES, truncate_tail};

/// Receives output as it arrives (whole UTF-8 characters only), for `bash_execution_update`.
pub type OutputSink = Arc<dyn Fn(&str) + Send + Sync>;

/// How long to keep reading after the shell exits, for output still in the pipe; a
/// background process that keeps the pipe open must not hold the result back.
const DRAIN_AFTER_EXIT: Duration = Duration::from_millis(500);

/// Runs `command` in `cwd` with stdout and stderr interleaved; `cancel` kills its process
/// group. The output keeps its last 2000 lines or 50KB; the whole of it goes to a temp file
/// when cut (in `temp_dir`, else the system's). Each piece of output is handed to `sink` as it
/// arrives.
pub async fn run_streaming(
    command: &str,
    cwd: &Path,
    temp_dir: Option<&Path>,
    environment: &strata_tools::ToolEnvironment,
    cancel: CancellationToken,
    sink: Option<OutputSink>,
) -> BashExecutionMessage {
    let outcome = execute(command, cwd, environment, &cancel, sink).await;
    let (output, exit_code, cancelled) = match outcome {
        Ok(done) => done,
        Err(error) => (
            format!("failed to run the command: {error}").into_bytes(),
            Some(127),
            false,
        ),
    };
    let text = String::from_utf8_lossy(&output).into_owned();
    let cut = truncate_tail(&text, DEFAULT_MAX_LINES, DEFAULT_MAX_BYTES);
    let full_output_path = cut
        .truncated
        .then(|| save_full_output(&text, temp_dir))
        .flatten();
    BashExecutionMessage {
        command: command.to_owned(),
        output: cut.content.trim_end_matches('\n').to_owned(),
        exit_code: Some(exit_code),
        cancelled,
        truncated: cut.truncated,
        full_output_path: full_output_path.map(|p| p.display().to_string()),
        timestamp: strata_session::now_unix_millis(),
        exclude_from_context: None,
        extra: Map::new(),
    }
}

/// Pi's `BashResult`: the `bash` response data.
pub fn result_json(message: &BashExecutionMessage) -> Value {
    let mut data = Map::new();
    data.insert("output".into(), json!(message.output));
    data.insert("exitCode".into(), json!(message.exit_code.flatten()));
    data.insert("cancelled".into(), json!(message.cancelled));
    data.insert("truncated".into(), json!(message.truncated));
    if let Some(path) = &message.full_output_path {
        data.insert("fullOutputPath".into(), json!(path));
    }
    Value::Object(data)
}

async fn execute(
    command: &str,
    cwd: &Path,
    environment: &strata_tools::ToolEnvironment,
    cancel: &CancellationToken,
    stream: Option<OutputSink>,
) -> std::io::Result<(Vec<u8>, Option<i64>, bool)> {
    let (mut reader, writer) = std::io::pipe()?;
    let mut command_line = tokio::process::Command::new(shell());
    // The same policy as the bash tool's: no credentials unless the user allowed them.
    environment.apply(&mut command_line);
    let mut child = command_line
        .arg("-c")
        .arg(command)
        .current_dir(cwd)
        .stdin(Stdio::null())
        .stdout(writer.try_clone()?)
        .stderr(writer)
        .process_group(0)
        .kill_on_drop(true)
        .spawn()?;
    let pgid = child.id().and_then(|id| i32::try_from(id).ok());
    if let Some(pgid) = pgid {
        strata_tools::processes::register_group(pgid);
    }
    let output = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&output);
    let read = tokio::task::spawn_blocking(move || {
        let mut buf = [0u8; 8192];
        // Bytes of a character split across reads, held for the next one.
        let mut carry: Vec<u8> = Vec::new();
        while let Ok(n) = reader.read(&mut buf) {
            if n == 0 {
                break;
            }
            if let Ok(mut out) = sink.lock() {
                out.extend_from_slice(&buf[..n]);
            }
            if let Some(stream) = &stream {
                carry.extend_from_slice(&buf[..n]);
                let whole = match std::str::from_utf8(&carry) {
                    Ok(_) => carry.len(),
                    // An invalid byte (not a split character) is passed on replaced.
                    Err(error) if error.error_len().is_some() => carry.len(),
                    Err(error) => error.valid_up_to(),
                };
                let text = String::from_utf8_lossy(&carry[..whole]).into_owned();
                carry.drain(..whole);
                if !text.is_empty() {
                    stream(&text);
                }
            }
        }
    });
    let (code, cancelled) = tokio::select! {
        status = child.wait() => (status?.code().map(i64::from), false),
        () = cancel.cancelled() => {
            if let Some(pid) = child.id().and_then(|id| i32::try_from(id).ok()) {
                let _ = killpg(Pid::from_raw(pid), Signal::SIGKILL);
            }
            let _ = child.wait().await;
            (None, true)
        }
    };
    if let Some(pgid) = pgid {
        strata_tools::processes::forget_group_if_gone(pgid);
    }
    // The command's own pipe ends were dropped with the Command; wait for the reader briefly.
    let _ = tokio::time::timeout(DRAIN_AFTER_EXIT, read).await;
    let bytes = output.lock().map(|o| o.clone()).unwrap_or_default();
    Ok((bytes, code, cancelled))
}

fn shell() -> &'static str {
    if Path::new("/bin/bash").exists() {
        "/bin/bash"
    } else {
        "sh"
    }
}

fn save_full_output(text: &str, temp_dir: Option<&Path>) -> Option<PathBuf> {
    let dir = temp_dir.map_or_else(std::env::temp_dir, Path::to_path_buf);
    let file = tempfile::Builder::new()
        .prefix("strata-bash-")
        .suffix(".log")
        .tempfile_in(dir)
        .ok()?;
    std::fs::write(file.path(), text).ok()?;
    file.keep().ok().map(|(_, path)| path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn output_and_exit_code_are_recorded() {
        let dir = tempfile::tempdir().unwrap();
        let message = run_streaming(
            "echo out; echo err >&2; exit 3",
            dir.path(),
            None,
            &strata_tools::ToolEnvironment::default(),
            CancellationToken::new(),
            None,
        )
        .await;
        assert_eq!(message.output, "out\nerr");
        assert_eq!(message.exit_code, Some(Some(3)));
        assert!(!message.cancelled && !message.truncated);
        assert_eq!(result_json(&message)["exitCode"], 3);
    }

    /// The tools' environment policy applies: a variable it drops is not seen by the
    /// command (HOME stands for a credential: tests cannot set variables).
    #[tokio::test]
    async fn the_command_gets_the_tools_environment_policy() {
        let dir = tempfile::tempdir().unwrap();
        assert!(
            std::env::var_os("HOME").is_some(),
            "the test needs HOME set"
        );
        let message = run_streaming(
            "echo \"[$HOME]\"",
            dir.path(),
            None,
            &strata_tools::ToolEnvironment::default().drop_names(["HOME"]),
            CancellationToken::new(),
            None,
        )
        .await;
        assert_eq!(message.output, "[]");
    }

    #[tokio::test]
    async fn cancel_kills_the_command() {
        let dir = tempfile::tempdir().unwrap();
        let cancel = CancellationToken::new();
        let trigger = cancel.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(200)).await;
            trigger.cancel();
        });
        let started = std::time::Instant::now();
        let message = run_streaming(
            "echo begun; sleep 30",
            dir.path(),
            None,
            &strata_tools::ToolEnvironment::default(),
            cancel,
            None,
        )
        .await;
        assert!(started.elapsed() < Duration::from_secs(10));
        assert!(message.cancelled);
        assert_eq!(message.exit_code, Some(None));
        assert_eq!(result_json(&message)["exitCode"], Value::Null);
        assert_eq!(message.output, "begun");
    }

    #[tokio::test]
    async fn long_output_keeps_the_tail_and_saves_the_whole() {
        let dir = tempfile::tempdir().unwrap();
        let saved = tempfile::tempdir().unwrap();
        let message = run_streaming(
            "seq 1 3000",
            dir.path(),
            Some(saved.path()),
            &strata_tools::ToolEnvironment::default(),
            CancellationToken::new(),
            None,
        )
        .await;
        assert!(message.truncated);
        assert!(message.output.ends_with("3000"));
        assert!(!message.output.starts_with("1\n"));
        let path = message.full_output_path.clone().unwrap();
        assert!(Path::new(&path).starts_with(saved.path()), "{path}");
        let whole = std::fs::read_to_string(&path).unwrap();
        assert!(whole.starts_with("1\n2\n"));
        std::fs::remove_file(path).unwrap();
    }
}
