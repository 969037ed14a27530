//! The process groups this process's tools started, so that they can all be killed when
//! strata exits, whatever the path (normal exit, error, signal, SIGKILL).
//!
//! SIGKILL runs no handler, so a watchdog stands in for it: a tiny `/bin/sh` started with the
//! first group, in its own group, reading the groups to guard from a pipe only this process
//! holds. When this process dies the kernel closes the pipe, the watchdog reads end-of-file
//! and kills every group it was told of. (`PR_SET_PDEATHSIG` would need `pre_exec`, which is
//! unsafe, and fires when the spawning *thread* exits, which tokio's blocking threads do.)

use std::collections::BTreeSet;
use std::io::Write as _;
use std::os::unix::process::CommandExt as _;
use std::process::{ChildStdin, Command, Stdio};
use std::sync::{Mutex, PoisonError};

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;

/// Groups started and not yet known to be gone.
static LIVE_GROUPS: Mutex<BTreeSet<i32>> = Mutex::new(BTreeSet::new());

/// The watchdog's stdin: `+PGID` guards a group, `-PGID` forgets it; end-of-file (this
/// process gone) kills every guarded group. `None` before the first group or when the
/// watchdog could not start (the signal handlers still cover every other exit).
static WATCHDOG: Mutex<Option<ChildStdin>> = Mutex::new(None);

/// The watchdog's script: keeps the guarded groups in `$groups`, kills them on end-of-file.
/// Plain POSIX sh (dash's `kill` takes no `--`; `-9 -PGID` names a group).
const WATCHDOG_SCRIPT: &str = r#"groups=" "
while IFS= read -r line; do
  case "$line" in
    +*) groups="$groups${line#+} " ;;
    -*) groups=$(printf '%s' "$groups" | sed "s/ ${line#-} / /") ;;
  esac
done
for group in $groups; do kill -9 "-$group" 2>/dev/null; done
"#;

/// Tells the watchdog (started on first use) about `line`; a failure only loses the SIGKILL
/// cover, never the tool call.
fn tell_watchdog(line: &str) {
    let mut watchdog = WATCHDOG.lock().unwrap_or_else(PoisonError::into_inner);
    if watchdog.is_none() {
        *watchdog = start_watchdog();
    }
    if let Some(stdin) = watchdog.as_mut()
        && writeln!(stdin, "{line}")
            .and_then(|()| stdin.flush())
            .is_err()
    {
        // The watchdog is gone (killed with the terminal's group, say): start another next time.
        *watchdog = None;
    }
}

fn start_watchdog() -> Option<ChildStdin> {
    let mut child = Command::new("/bin/sh")
        .arg("-c")
        .arg(WATCHDOG_SCRIPT)
        .arg("strata-watchdog")
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        // Its own group: Ctrl-C at the terminal and our own killpg calls leave it running.
        .process_group(0)
        .spawn()
        .ok()?;
    let stdin = child.stdin.take();
    // Reaped by nobody while we live; when we die it is re-parented and reaped by init.
    drop(child);
    stdin
}

/// Records a process group a tool started, and has the watchdog guard it.
pub fn register_group(pgid: i32) {
    LIVE_GROUPS
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .insert(pgid);
    tell_watchdog(&format!("+{pgid}"));
}

/// Forgets a group that was killed, or whose processes have all exited (so that its id,
/// once reused, is never signalled).
pub fn forget_group_if_gone(pgid: i32) {
    // Signal 0 only checks: ESRCH means no process is left in the group.
    if killpg(Pid::from_raw(pgid), None).is_err() {
        let removed = LIVE_GROUPS
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&pgid);
        if removed {
            tell_watchdog(&format!("-{pgid}"));
        }
    }
}

/// Process groups started by tools that may still have processes (background jobs included).
pub fn live_groups() -> Vec<i32> {
    let groups = LIVE_GROUPS
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .clone();
    groups
        .into_iter()
        .filter(|pgid| killpg(Pid::from_raw(*pgid), None).is_ok())
        .collect()
}

/// Kills every process group tools started (SIGKILL); returns how many were signalled.
/// Call it on every way out of the program, signal handlers included.
pub fn kill_all_tool_processes() -> usize {
    let groups = std::mem::take(&mut *LIVE_GROUPS.lock().unwrap_or_else(PoisonError::into_inner));
    groups
        .into_iter()
        .filter(|pgid| killpg(Pid::from_raw(*pgid), Signal::SIGKILL).is_ok())
        .count()
}
