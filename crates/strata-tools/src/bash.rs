//! `bash`: runs a command in its own process group, streams its output, and kills the whole
//! group on timeout or cancel.

use std::os::fd::OwnedFd;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use async_trait::async_trait;
use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::io::AsyncReadExt;
use tokio::time::Instant;

use crate::access::Access;
use crate::args::{lenient, parse_args, schema_for};
use crate::output::{OutputSink, Snapshot};
use crate::tool::{Tool, ToolCall, ToolContent, ToolContext, ToolOutput, UpdateSender};
use crate::truncate::{TruncatedBy, format_size};

const DESCRIPTION: &str = "Execute a bash command in the current working directory. Returns stdout and stderr, interleaved as written. Output is truncated to the last 2000 lines or 50KB, whichever comes first; if truncated, the full output is saved to a temp file whose path is given. Optionally provide a timeout in seconds.";

/// Least time between two streamed updates.
const UPDATE_INTERVAL: Duration = Duration::from_millis(100);
/// How long to keep reading after the shell exits, for output still in the pipe; background
/// processes that keep the pipe open must not hold the result back longer.
const DRAIN_AFTER_EXIT: Duration = Duration::from_millis(500);

/// Arguments of `bash`.
#[derive(Debug, Deserialize, JsonSchema)]
struct BashArgs {
    /// Bash command to execute
    command: String,
    /// Timeout in seconds (optional, no default timeout)
    #[serde(default, deserialize_with = "lenient::opt_f64")]
    timeout: Option<f64>,
}

/// The `bash` tool.
#[derive(Debug, Clone)]
pub struct BashTool {
    shell: PathBuf,
    command_prefix: Option<String>,
}

impl Default for BashTool {
    fn default() -> Self {
        Self {
            shell: find_shell(),
            command_prefix: None,
        }
    }
}

impl BashTool {
    /// A bash tool that runs commands with `shell -c`.
    pub fn with_shell(shell: impl Into<PathBuf>) -> Self {
        Self {
            shell: shell.into(),
            command_prefix: None,
        }
    }

    /// The same tool, running `prefix` (e.g. `shopt -s expand_aliases`) on its own line before
    /// every command, like Pi's `shellCommandPrefix` setting.
    pub fn command_prefix(mut self, prefix: impl Into<String>) -> Self {
        self.command_prefix = Some(prefix.into());
        self
    }

    /// The shell it runs.
    pub fn shell(&self) -> &Path {
        &self.shell
    }
}

/// `bash` from `PATH`, else `/bin/sh`.
fn find_shell() -> PathBuf {
    if let Some(paths) = std::env::var_os("PATH") {
        for dir in std::env::split_paths(&paths) {
            let candidate = dir.join("bash");
            if candidate.is_file() {
                return candidate;
            }
        }
    }
    PathBuf::from("/bin/sh")
}

#[async_trait]
impl Tool for BashTool {
    fn name(&self) -> &str {
        "bash"
    }

    fn description(&self) -> &str {
        DESCRIPTION
    }

    fn parameters(&self) -> Value {
        schema_for::<BashArgs>()
    }

    fn prompt_snippet(&self) -> Option<&str> {
        Some("Run shell commands (ls, rg, find, git, builds, tests, ...)")
    }

    fn access(&self, arguments: &Value, _ctx: &ToolContext) -> Access {
        match parse_args::<BashArgs>("bash", arguments) {
            Ok(_) => Access::Shell,
            Err(_) => Access::None,
        }
    }

    async fn execute(
        &self,
        call: ToolCall,
        ctx: &ToolContext,
        updates: Option<UpdateSender>,
    ) -> ToolOutput {
        let args: BashArgs = match parse_args("bash", &call.arguments) {
            Ok(args) => args,
            Err(error) => return error,
        };
        if ctx.cancel.is_cancelled() {
            return ToolOutput::error("Command aborted");
        }
        if !ctx.cwd.is_dir() {
            return ToolOutput::error(format!(
                "Working directory does not exist: {}\nCannot execute bash commands.",
                ctx.cwd.display()
            ));
        }
        let command = match &self.command_prefix {
            Some(prefix) => format!("{prefix}\n{}", args.command),
            None => args.command.clone(),
        };
        match run(&self.shell, &command, args.timeout, ctx, updates).await {
            Ok(output) => output,
            Err(e) => ToolOutput::error(format!("Failed to run command: {e}")),
        }
    }
}

/// Kills the process group when dropped while armed: an abandoned call leaves no processes.
struct GroupKiller {
    pgid: Option<Pid>,
}

impl GroupKiller {
    fn kill(&mut self) {
        if let Some(pgid) = self.pgid.take() {
            // ESRCH (the group is already gone) is the outcome we want anyway.
            let _ = killpg(pgid, Signal::SIGKILL);
            crate::processes::forget_group_if_gone(pgid.as_raw());
        }
    }

    /// The shell exited: its group stays registered while background jobs live in it, so
    /// that they die when strata exits.
    fn disarm(&mut self) {
        if let Some(pgid) = self.pgid.take() {
            crate::processes::forget_group_if_gone(pgid.as_raw());
        }
    }
}

impl Drop for GroupKiller {
    fn drop(&mut self) {
        self.kill();
    }
}

/// How the command ended.
enum Ending {
    Exited(ExitStatus),
    TimedOut(f64),
    Aborted,
}

/// A command the user ran themselves (`!cmd` in the terminal UI, rpc's `bash`): its output
/// kept as the tool keeps a call's (the tail, the whole in a file when cut) and how it ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandRun {
    /// stdout and stderr interleaved, the tail when cut, without the tool's notes.
    pub output: String,
    /// The exit code (`None`: killed by a signal, timed out or cancelled).
    pub exit_code: Option<i32>,
    /// Cancelled through the context's token.
    pub cancelled: bool,
    /// Stopped at the timeout.
    pub timed_out: bool,
    /// The output was cut.
    pub truncated: bool,
    /// Where the whole output was saved when it was cut.
    pub full_output_path: Option<PathBuf>,
}

impl BashTool {
    /// Runs `command` as the tool runs a call (same shell, prefix, environment policy,
    /// sandbox, limits and process-group handling), for a command the user typed.
    pub async fn run_command(
        &self,
        command: &str,
        ctx: &ToolContext,
    ) -> std::io::Result<CommandRun> {
        self.run_command_streaming(command, ctx, None).await
    }

    /// [`Self::run_command`], handing the output to `deltas` as it arrives (whole UTF-8
    /// characters only; the pieces joined are the whole output, before any cut).
    pub async fn run_command_streaming(
        &self,
        command: &str,
        ctx: &ToolContext,
        deltas: Option<&mut (dyn FnMut(&str) + Send)>,
    ) -> std::io::Result<CommandRun> {
        let script = match &self.command_prefix {
            Some(prefix) => format!("{prefix}\n{command}"),
            None => command.to_owned(),
        };
        let mut deltas = deltas.map(Utf8Deltas::new);
        let (sink, ending) =
            collect(&self.shell, &script, None, ctx, None, deltas.as_mut()).await?;
        let snapshot = sink.snapshot();
        let (exit_code, cancelled, timed_out) = match ending {
            Ending::Exited(status) => (status.code(), false, false),
            Ending::TimedOut(_) => (None, false, true),
            Ending::Aborted => (None, true, false),
        };
        Ok(CommandRun {
            output: snapshot
                .truncation
                .content
                .trim_end_matches('\n')
                .to_owned(),
            exit_code,
            cancelled,
            timed_out,
            truncated: snapshot.truncation.truncated,
            full_output_path: snapshot.full_output_path,
        })
    }
}

async fn run(
    shell: &Path,
    script: &str,
    requested_timeout: Option<f64>,
    ctx: &ToolContext,
    updates: Option<UpdateSender>,
) -> std::io::Result<ToolOutput> {
    let (sink, ending) = collect(shell, script, requested_timeout, ctx, updates, None).await?;
    let mut output = finish(&sink, ending);
    if let Some(sandbox) = &ctx.sandbox
        && output.is_error
        && looks_refused(&output.text_content())
    {
        output.content.push(ToolContent::text(format!(
            "\n\n{SANDBOX_NOTE} ({}). A \"Permission denied\" or \
             \"Operation not permitted\" above may be the sandbox refusing it; if the \
             command needs more, ask the user to allow it.]",
            sandbox.limits
        )));
    }
    Ok(output)
}

/// Runs the script to its end (or timeout, or cancel) and returns its output and ending.
async fn collect(
    shell: &Path,
    script: &str,
    requested_timeout: Option<f64>,
    ctx: &ToolContext,
    updates: Option<UpdateSender>,
    mut deltas: Option<&mut Utf8Deltas<'_>>,
) -> std::io::Result<(OutputSink, Ending)> {
    // One pipe for stdout and stderr keeps their lines in the order they were written.
    let (reader, writer) = std::io::pipe()?;
    let writer_err = writer.try_clone()?;
    // In a sandbox the wrapper restricts itself, then execs the shell.
    let mut command = match &ctx.sandbox {
        Some(sandbox) => {
            let mut command = tokio::process::Command::new(&sandbox.program);
            command.args(&sandbox.args).arg(shell);
            command
        }
        None => tokio::process::Command::new(shell),
    };
    command
        .arg("-c")
        .arg(script)
        .current_dir(&ctx.cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::from(writer))
        .stderr(Stdio::from(writer_err))
        .process_group(0)
        .kill_on_drop(true);
    ctx.environment.apply(&mut command);
    let mut child = command.spawn()?;
    // Our copies of the write end must close, or the reader never sees end-of-file.
    drop(command);
    let mut killer = GroupKiller {
        pgid: child
            .id()
            .and_then(|id| i32::try_from(id).ok())
            .map(Pid::from_raw),
    };
    if let Some(pgid) = killer.pgid {
        crate::processes::register_group(pgid.as_raw());
    }
    let mut pipe = tokio::net::unix::pipe::Receiver::from_owned_fd(OwnedFd::from(reader))?;

    let limits = &ctx.limits;
    let mut sink = OutputSink::new(
        limits.max_lines,
        limits.max_bytes,
        limits.max_output_file_bytes,
        &ctx.temp_dir,
    );
    let timeout = match requested_timeout {
        Some(seconds) if seconds > 0.0 => Some(seconds.min(1e9)),
        Some(_) => None,
        None => ctx.limits.bash_default_timeout.map(|d| d.as_secs_f64()),
    };
    let deadline = timeout.map(|t| Instant::now() + Duration::from_secs_f64(t));
    let timeout_sleep = async move {
        match deadline {
            Some(at) => tokio::time::sleep_until(at).await,
            None => std::future::pending().await,
        }
    };
    tokio::pin!(timeout_sleep);

    let mut buf = vec![0u8; 64 * 1024];
    let mut eof = false;
    let mut last_update: Option<Instant> = None;
    let mut status: Option<ExitStatus> = None;
    let ending = loop {
        if let Some(status) = status {
            break Ending::Exited(status);
        }
        tokio::select! {
            biased;
            () = ctx.cancel.cancelled() => {
                killer.kill();
                break Ending::Aborted;
            }
            () = &mut timeout_sleep => {
                killer.kill();
                break Ending::TimedOut(timeout.unwrap_or_default());
            }
            read = pipe.read(&mut buf), if !eof => match read {
                Ok(0) | Err(_) => eof = true,
                Ok(n) => {
                    sink.push(&buf[..n]);
                    if let Some(deltas) = deltas.as_deref_mut() {
                        deltas.push(&buf[..n]);
                    }
                    send_update(&updates, &sink, &mut last_update);
                }
            },
            waited = child.wait() => status = Some(waited?),
        }
    };
    if matches!(ending, Ending::Exited(_)) {
        // Background jobs may outlive the shell, until strata exits.
        killer.disarm();
    } else {
        // Reap the killed shell so that it does not linger as a zombie.
        let _ = child.wait().await;
    }
    if !eof {
        drain(&mut pipe, &mut buf, &mut sink, deltas).await;
    }
    sink.finish();
    Ok((sink, ending))
}

/// How the note on a failed sandboxed command begins: the rules layer finds such results by it
/// (to offer running the command once outside the sandbox).
pub const SANDBOX_NOTE: &str = "[This command ran in strata's OS sandbox";

/// Words in a failed command's output that suggest the sandbox refused something.
fn looks_refused(output: &str) -> bool {
    [
        "Permission denied",
        "Operation not permitted",
        "Read-only file system",
        "Network is unreachable",
    ]
    .iter()
    .any(|needle| output.contains(needle))
}

/// Reads what is left in the pipe, for a bounded time.
async fn drain(
    pipe: &mut tokio::net::unix::pipe::Receiver,
    buf: &mut [u8],
    sink: &mut OutputSink,
    mut deltas: Option<&mut Utf8Deltas<'_>>,
) {
    let until = Instant::now() + DRAIN_AFTER_EXIT;
    while let Ok(Ok(n)) = tokio::time::timeout_at(until, pipe.read(buf)).await {
        if n == 0 {
            break;
        }
        sink.push(&buf[..n]);
        if let Some(deltas) = deltas.as_deref_mut() {
            deltas.push(&buf[..n]);
        }
    }
}

/// Hands output on as text, holding back the bytes of a character split across reads.
struct Utf8Deltas<'a> {
    send: &'a mut (dyn FnMut(&str) + Send),
    carry: Vec<u8>,
}

impl<'a> Utf8Deltas<'a> {
    fn new(send: &'a mut (dyn FnMut(&str) + Send)) -> Self {
        Self {
            send,
            carry: Vec::new(),
        }
    }

    fn push(&mut self, bytes: &[u8]) {
        self.carry.extend_from_slice(bytes);
        let whole = match std::str::from_utf8(&self.carry) {
            Ok(_) => self.carry.len(),
            // An invalid byte (not a split character) is passed on replaced.
            Err(error) if error.error_len().is_some() => self.carry.len(),
            Err(error) => error.valid_up_to(),
        };
        let text = String::from_utf8_lossy(&self.carry[..whole]).into_owned();
        self.carry.drain(..whole);
        if !text.is_empty() {
            (self.send)(&text);
        }
    }
}

fn send_update(updates: &Option<UpdateSender>, sink: &OutputSink, last: &mut Option<Instant>) {
    let Some(sender) = updates else { return };
    if last.is_some_and(|at| at.elapsed() < UPDATE_INTERVAL) {
        return;
    }
    *last = Some(Instant::now());
    let snapshot = sink.snapshot();
    let update = ToolOutput {
        content: vec![ToolContent::text(snapshot.truncation.content.clone())],
        details: snapshot.details(),
        is_error: false,
    };
    // A receiver that went away just stops listening; the command goes on.
    let _ = sender.send(update);
}

fn finish(sink: &OutputSink, ending: Ending) -> ToolOutput {
    let snapshot = sink.snapshot();
    let mut text = format_output(sink, &snapshot);
    let mut details = snapshot.details();
    let (is_error, status) = match ending {
        Ending::Exited(status) => {
            if let Some(code) = status.code() {
                insert(&mut details, "exitCode", json!(code));
                (
                    code != 0,
                    (code != 0).then(|| format!("Command exited with code {code}")),
                )
            } else {
                let signal = status.signal().unwrap_or_default();
                insert(&mut details, "signal", json!(signal));
                (true, Some(format!("Command was killed by signal {signal}")))
            }
        }
        Ending::TimedOut(seconds) => {
            insert(&mut details, "timedOut", json!(true));
            (
                true,
                Some(format!("Command timed out after {seconds} seconds")),
            )
        }
        Ending::Aborted => {
            insert(&mut details, "aborted", json!(true));
            (true, Some("Command aborted".to_owned()))
        }
    };
    if let Some(kept) = sink.file_capped() {
        text.push_str(&format!(
            "\n\n[The full-output file holds the first {} only (its size limit)]",
            format_size(kept)
        ));
    }
    if let Some(error) = sink.file_error() {
        text.push_str(&format!("\n\n[Could not save the full output: {error}]"));
    }
    if let Some(status) = status {
        if text.is_empty() || text == "(no output)" {
            text = status;
        } else {
            text = format!("{text}\n\n{status}");
        }
    }
    ToolOutput {
        content: vec![ToolContent::text(text)],
        details,
        is_error,
    }
}

fn insert(details: &mut Value, key: &str, value: Value) {
    if let Value::Object(map) = details {
        map.insert(key.to_owned(), value);
    }
}

/// The tail with Pi's truncation note, or `(no output)`.
fn format_output(sink: &OutputSink, snapshot: &Snapshot) -> String {
    let cut = &snapshot.truncation;
    let mut text = if cut.content.is_empty() {
        "(no output)".to_owned()
    } else {
        cut.content.clone()
    };
    if !cut.truncated {
        return text;
    }
    let full = snapshot
        .full_output_path
        .as_ref()
        .map_or_else(|| "unavailable".to_owned(), |p| p.display().to_string());
    let end = cut.total_lines;
    let start = end + 1 - cut.output_lines.max(1);
    let note = if cut.last_line_partial {
        format!(
            "[Showing last {} of line {end} (line is {}). Full output: {full}]",
            format_size(cut.output_bytes as u64),
            format_size(sink.last_line_bytes())
        )
    } else if cut.truncated_by == Some(TruncatedBy::Lines) {
        format!("[Showing lines {start}-{end} of {end}. Full output: {full}]")
    } else {
        format!(
            "[Showing lines {start}-{end} of {end} ({} limit). Full output: {full}]",
            format_size(cut.max_bytes as u64)
        )
    };
    text.push_str("\n\n");
    text.push_str(&note);
    text
}
