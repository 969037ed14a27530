//! The rules layer at the command line: the hidden `__sandbox` mode (the strata binary is its
//! own sandbox helper, so a user who installed only `strata` gets the sandbox), and who
//! answers permission questions in each way of running.

use std::ffi::OsString;
use std::process::ExitCode;

use strata_host::{AskPolicy, SandboxHelper};

use crate::args::{Mode, RunArgs};

/// The first argument that turns strata into the sandbox helper.
const SANDBOX_ARG: &str = "__sandbox";

/// Runs the sandbox helper when strata was started as one (`strata __sandbox [--write DIR]…
/// -- PROGRAM ARGS…`): restricts itself with Landlock and execs the program. Returns only
/// when it could not (exit 126, as a shell does for a command it cannot run).
pub fn sandbox_entry() -> Option<ExitCode> {
    let mut args = std::env::args_os().skip(1);
    if args.next().as_deref() != Some(std::ffi::OsStr::new(SANDBOX_ARG)) {
        return None;
    }
    let rest: Vec<OsString> = args.collect();
    let message = strata_runtime::permissions::sandbox::helper_main(&rest);
    eprintln!("{message}");
    Some(ExitCode::from(126))
}

/// This binary in its sandbox-helper mode, for the bash tool's wrapper.
pub fn helper() -> Option<SandboxHelper> {
    let program = std::env::current_exe().ok()?;
    Some(SandboxHelper {
        program,
        leading_args: vec![SANDBOX_ARG.to_owned()],
    })
}

/// What a call the rules ask about meets: an rpc client is asked (Pi's
/// `extension_ui_request`), the terminal UI asks the user; a run with nobody to ask (`-p`,
/// json mode, piped stdin) refuses it with how to allow it, or runs it with `--yes`.
pub fn asks(run: &RunArgs, interactive: bool) -> AskPolicy {
    if run.yes {
        return AskPolicy::Yes;
    }
    if run.mode == Mode::Rpc || (interactive && strata_tui::ANSWERS_PERMISSIONS) {
        return AskPolicy::FrontEnd;
    }
    let how = if interactive {
        "the terminal UI cannot put questions to the user yet"
    } else {
        "nobody is there to answer in a non-interactive run"
    };
    AskPolicy::Refuse(format!(
        "{how}; the user can rerun with --yes, add a rule to permissions.allow, or choose \
         --permission-mode auto"
    ))
}
