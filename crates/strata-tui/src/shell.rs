//! `!cmd` and `!!cmd`: a shell command the user runs from the editor. The runtime runs it
//! ([`strata_runtime::Op::Bash`]: strata-tools' bash, the same shell, limits and
//! credential-free environment as the model's calls) and keeps it in the session as Pi's
//! `bashExecution` message (`excludeFromContext` for `!!`); this module shows it.

use std::sync::{Arc, Mutex};

use strata_runtime::{Op, RuntimeHandle};
use strata_session::BashExecutionMessage;

use super::app::{Item, ToolItem, ToolState};

/// Stops the command running now: Esc and Ctrl+C abort it as they abort a run.
#[derive(Debug, Clone, Default)]
pub struct ShellCancel(Arc<Mutex<Option<RuntimeHandle>>>);

impl ShellCancel {
    /// Asks the runtime to kill the running command's process group, if one runs.
    pub fn cancel(&self) {
        if let Ok(slot) = self.0.lock()
            && let Some(handle) = slot.as_ref()
        {
            let _ = handle.send(Op::AbortBash);
        }
    }

    /// The runtime whose command [`Self::cancel`] stops.
    pub fn attach(&self, handle: RuntimeHandle) {
        if let Ok(mut slot) = self.0.lock() {
            *slot = Some(handle);
        }
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
