//! The user's own shell command ([`crate::Op::Bash`]): run with strata-tools' bash beside the
//! agent (also during a run), one at a time, its output streamed as events; what it did comes
//! back to the runtime, which appends it to the session when no run goes on.

use strata_session::BashExecutionMessage;
use strata_tools::{BashTool, CancellationToken, ToolContext, ToolSettings};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use crate::event::RuntimeEvent;

/// The command running now and the ended ones not yet recorded.
pub(crate) struct UserShell {
    /// The tools' settings and working directory, taken when the runtime starts: a command
    /// may start during a run, while the agent is busy.
    settings: ToolSettings,
    cwd: std::path::PathBuf,
    running: Option<(CancellationToken, JoinHandle<()>)>,
    ended_tx: mpsc::UnboundedSender<BashExecutionMessage>,
    /// Commands that ended, in order, to append to the session.
    pub(crate) ended: mpsc::UnboundedReceiver<BashExecutionMessage>,
}

impl UserShell {
    pub(crate) fn new(settings: ToolSettings, cwd: std::path::PathBuf) -> Self {
        let (ended_tx, ended) = mpsc::unbounded_channel();
        Self {
            settings,
            cwd,
            running: None,
            ended_tx,
            ended,
        }
    }

    /// Starts `command` once the one running (cancelled now) has ended, so events of two
    /// commands never interleave.
    pub(crate) fn start(
        &mut self,
        command: String,
        exclude: bool,
        out: mpsc::UnboundedSender<RuntimeEvent>,
    ) {
        let previous = self.running.take().map(|(cancel, task)| {
            cancel.cancel();
            task
        });
        let ctx = self.settings.context(self.cwd.clone());
        let cancel = ctx.cancel.clone();
        let ended = self.ended_tx.clone();
        let task = tokio::spawn(async move {
            if let Some(previous) = previous {
                let _ = previous.await;
            }
            let mut message = run(&command, &ctx, &out).await;
            message.exclude_from_context = exclude.then_some(true);
            // Handed to the runtime before the event, so an operation sent after the event
            // finds it recorded.
            let _ = ended.send(message.clone());
            let _ = out.send(RuntimeEvent::BashEnded {
                record: Box::new(message.into()),
            });
        });
        self.running = Some((cancel, task));
    }

    /// Cancels the command running now, if any.
    pub(crate) fn abort(&self) {
        if let Some((cancel, _)) = &self.running {
            cancel.cancel();
        }
    }
}

impl Drop for UserShell {
    fn drop(&mut self) {
        // The session is over: a command still running is killed with it.
        self.abort();
    }
}

/// Runs `command`; one that cannot start is recorded with exit code 127 and the reason as its
/// output, as a shell would say it. A command stopped at the tools' timeout counts as
/// cancelled.
async fn run(
    command: &str,
    ctx: &ToolContext,
    out: &mpsc::UnboundedSender<RuntimeEvent>,
) -> BashExecutionMessage {
    let mut stream = |delta: &str| {
        let _ = out.send(RuntimeEvent::BashOutput {
            delta: delta.to_owned(),
        });
    };
    let ran = BashTool::default()
        .run_command_streaming(command, ctx, Some(&mut stream))
        .await;
    let (output, exit_code, cancelled, truncated, full_output_path) = match ran {
        Ok(run) => (
            run.output,
            run.exit_code.map(i64::from),
            run.cancelled || run.timed_out,
            run.truncated,
            run.full_output_path.map(|p| p.display().to_string()),
        ),
        Err(error) => (
            format!("failed to run the command: {error}"),
            Some(127),
            false,
            false,
            None,
        ),
    };
    BashExecutionMessage {
        command: command.to_owned(),
        output,
        exit_code: Some(exit_code),
        cancelled,
        truncated,
        full_output_path,
        timestamp: strata_session::now_unix_millis(),
        exclude_from_context: None,
        extra: Default::default(),
    }
}
