//! Running hooks: one child process per hook, JSON on stdin, output capped, a timeout that
//! kills the whole process group.

use std::future::Future;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::process::Stdio;
use std::sync::Arc;

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use tokio::io::{AsyncRead, AsyncReadExt as _, AsyncWriteExt as _};
use tokio::process::Command;

use crate::config::{HookCommand, HookSet};
use crate::event::{HookEvent, HookInput};
use crate::outcome::{HookRun, Outcome, RunStatus};

/// Bytes of stdout (and of stderr) kept from one hook run; the rest is read and dropped, so a
/// flooding hook never blocks on a full pipe nor fills memory.
pub const MAX_OUTPUT_BYTES: usize = 1 << 20;

/// Something besides a command that answers hook events the way a command hook does (a
/// strata extension): its answer is a [`HookRun`] whose stdout is the JSON a command hook
/// would print, folded with the commands' runs.
pub trait HookResponder: Send + Sync + std::fmt::Debug {
    /// Whether it answers `event` (it gets every input of the event: matching is its own).
    fn answers(&self, event: HookEvent) -> bool;

    /// Its answer to `input`; a failure is a run with a failed status, never a panic. It must
    /// return within its own timeout.
    fn answer<'a>(
        &'a self,
        input: &'a HookInput,
    ) -> Pin<Box<dyn Future<Output = HookRun> + Send + 'a>>;
}

/// Runs the hooks of a [`HookSet`] (and any [`HookResponder`]s) for events.
#[derive(Debug, Clone)]
pub struct HookRunner {
    set: Arc<HookSet>,
    project_dir: PathBuf,
    responders: Vec<Arc<dyn HookResponder>>,
}

impl HookRunner {
    /// A runner for `set`; hooks run in `project_dir`, which they also find in
    /// `CLAUDE_PROJECT_DIR` and `STRATA_PROJECT_DIR`.
    pub fn new(set: HookSet, project_dir: impl Into<PathBuf>) -> Self {
        Self {
            set: Arc::new(set),
            project_dir: project_dir.into(),
            responders: Vec::new(),
        }
    }

    /// Also asks `responder` about the events it answers, after the commands.
    pub fn with_responder(mut self, responder: Arc<dyn HookResponder>) -> Self {
        self.responders.push(responder);
        self
    }

    /// The hooks.
    pub fn set(&self) -> &HookSet {
        &self.set
    }

    /// Whether `event` has any hook (nothing to build an input for otherwise).
    pub fn has(&self, event: HookEvent) -> bool {
        self.set.has(event) || self.responders.iter().any(|r| r.answers(event))
    }

    /// Runs every hook `input` matches, concurrently, and folds their answers. Returns at the
    /// latest when the longest timeout among them has passed.
    pub async fn run(&self, input: &HookInput) -> Outcome {
        let names: Vec<&str> = input.subjects.iter().map(String::as_str).collect();
        let hooks = self.set.matching(input.event, &names);
        let responders: Vec<&Arc<dyn HookResponder>> = self
            .responders
            .iter()
            .filter(|r| r.answers(input.event))
            .collect();
        if hooks.is_empty() && responders.is_empty() {
            return Outcome::default();
        }
        let stdin = input.to_json().to_string().into_bytes();
        let commands = futures::future::join_all(
            hooks
                .into_iter()
                .map(|hook| run_one(hook, &stdin, &self.project_dir)),
        );
        let answers = futures::future::join_all(responders.into_iter().map(|r| r.answer(input)));
        let (mut runs, answers) = tokio::join!(commands, answers);
        runs.extend(answers);
        Outcome::fold(input.event, runs)
    }
}

/// Runs one hook with `stdin`; never longer than its timeout.
pub(crate) async fn run_one(hook: &HookCommand, stdin: &[u8], project_dir: &Path) -> HookRun {
    let mut run = HookRun {
        command: hook.command.clone(),
        file: hook.file.as_ref().clone(),
        status: RunStatus::Signalled,
        stdout: String::new(),
        stderr: String::new(),
        truncated: false,
    };
    let mut command = Command::new("/bin/sh");
    command
        .arg("-c")
        .arg(&hook.command)
        .current_dir(project_dir)
        .env("CLAUDE_PROJECT_DIR", project_dir)
        .env("STRATA_PROJECT_DIR", project_dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        // Its own group, so that a timeout kills what it started too.
        .process_group(0)
        .kill_on_drop(true);
    let mut child = match command.spawn() {
        Ok(child) => child,
        Err(error) => {
            run.status = RunStatus::FailedToStart(error.to_string());
            return run;
        }
    };
    let group = child.id().and_then(|id| i32::try_from(id).ok());
    let input = child.stdin.take();
    let stdout = child.stdout.take();
    let stderr = child.stderr.take();
    let work = async {
        let write = async {
            if let Some(mut pipe) = input {
                // A hook that exits without reading closes the pipe: not an error.
                let _ = pipe.write_all(stdin).await;
                let _ = pipe.shutdown().await;
            }
        };
        let ((), out, err) = tokio::join!(write, read_capped(stdout), read_capped(stderr));
        let status = child.wait().await;
        (out, err, status)
    };
    match tokio::time::timeout(hook.timeout, work).await {
        Ok(((stdout, out_cut), (stderr, err_cut), status)) => {
            run.stdout = stdout;
            run.stderr = stderr;
            run.truncated = out_cut || err_cut;
            run.status = match status {
                Ok(status) => status
                    .code()
                    .map_or(RunStatus::Signalled, RunStatus::Exited),
                Err(error) => RunStatus::FailedToStart(error.to_string()),
            };
        }
        Err(_) => {
            if let Some(group) = group {
                let _ = killpg(Pid::from_raw(group), Signal::SIGKILL);
            }
            let _ = child.start_kill();
            let _ = child.wait().await;
            run.status = RunStatus::TimedOut;
            tracing::warn!(command = %hook.command, "hook timed out after {:?}", hook.timeout);
        }
    }
    run
}

/// Reads a pipe to its end, keeping the first [`MAX_OUTPUT_BYTES`]; returns the text (lossy
/// UTF-8) and whether some was dropped.
async fn read_capped(pipe: Option<impl AsyncRead + Unpin>) -> (String, bool) {
    let Some(mut pipe) = pipe else {
        return (String::new(), false);
    };
    let mut kept = Vec::new();
    let mut dropped = false;
    let mut buffer = vec![0_u8; 64 * 1024];
    loop {
        match pipe.read(&mut buffer).await {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                let room = MAX_OUTPUT_BYTES.saturating_sub(kept.len());
                let take = n.min(room);
                kept.extend_from_slice(buffer.get(..take).unwrap_or_default());
                dropped |= take < n;
            }
        }
    }
    (String::from_utf8_lossy(&kept).into_owned(), dropped)
}
