//! `!cmd` and `!!cmd`: a shell command the user runs from the editor, through strata-tools'
//! bash (the same shell, limits and credential-free environment as the model's calls), kept
//! in the session as Pi's `bashExecution` message (`excludeFromContext` for `!!`).

use std::sync::{Arc, Mutex};

use strata_host::Setup;
use strata_session::BashExecutionMessage;
use strata_tools::{BashTool, CancellationToken, ToolContext};

use super::app::{Item, ToolItem, ToolState};

/// Stops the command running now: Esc and Ctrl+C abort it as they abort a run.
#[derive(Debug, Clone, Default)]
pub struct ShellCancel(Arc<Mutex<Option<CancellationToken>>>);

impl ShellCancel {
    /// Kills the running command's process group, if one runs.
    pub fn cancel(&self) {
        if let Ok(slot) = self.0.lock()
            && let Some(token) = slot.as_ref()
        {
            token.cancel();
        }
    }

    fn start(&self) -> CancellationToken {
        let token = CancellationToken::new();
        if let Ok(mut slot) = self.0.lock() {
            *slot = Some(token.clone());
        }
        token
    }
}

/// Runs `command` in the session's directory; a command that cannot start is recorded with
/// exit code 127 and the reason as its output, as a shell would say it.
pub async fn run(
    setup: &Setup,
    command: &str,
    exclude: bool,
    cancel: &ShellCancel,
) -> BashExecutionMessage {
    let settings = setup.tool_settings();
    let mut ctx = ToolContext::new(&setup.cwd);
    ctx.cancel = cancel.start();
    ctx.limits = settings.limits;
    ctx.environment = settings.environment;
    if let Some(dir) = settings.temp_dir {
        ctx.temp_dir = dir;
    }
    let (output, exit_code, cancelled, truncated, full_output_path) =
        match BashTool::default().run_command(command, &ctx).await {
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
        exclude_from_context: exclude.then_some(true),
        extra: Default::default(),
    }
}

/// The transcript's view of a command: `!` (or `!!`, not in the context) with its output.
pub fn item(message: &BashExecutionMessage) -> Item {
    bash_item(
        &message.command,
        &message.output,
        message.exit_code.flatten(),
        message.cancelled,
        message.exclude_from_context == Some(true),
    )
}

/// A shell command's transcript item from its parts (as the runtime's read model gives them).
pub fn bash_item(
    command: &str,
    output: &str,
    exit_code: Option<i64>,
    cancelled: bool,
    excluded: bool,
) -> Item {
    let failed = cancelled || exit_code.is_some_and(|code| code != 0);
    let mut output = output.to_owned();
    if let Some(code) = exit_code
        && code != 0
    {
        output.push_str(&format!("\n(exit {code})"));
    }
    let name = if excluded {
        "!! (not sent to the model)"
    } else {
        "!"
    };
    Item::Tool(ToolItem {
        id: String::new(),
        name: name.into(),
        arguments: command.to_owned(),
        output,
        state: if failed {
            ToolState::Failed
        } else {
            ToolState::Done
        },
        diff: None,
    })
}
