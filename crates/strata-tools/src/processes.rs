//! The process groups this process's tools started, so that they can all be killed when
//! strata exits, whatever the path (normal exit, error, signal).

use std::collections::BTreeSet;
use std::sync::{Mutex, PoisonError};

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;

/// Groups started and not yet known to be gone.
static LIVE_GROUPS: Mutex<BTreeSet<i32>> = Mutex::new(BTreeSet::new());

/// Records a process group a tool started.
pub fn register_group(pgid: i32) {
    LIVE_GROUPS
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .insert(pgid);
}

/// Forgets a group that was killed, or whose processes have all exited (so that its id,
/// once reused, is never signalled).
pub fn forget_group_if_gone(pgid: i32) {
    // Signal 0 only checks: ESRCH means no process is left in the group.
    if killpg(Pid::from_raw(pgid), None).is_err() {
        LIVE_GROUPS
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&pgid);
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
