//! What strata cleans up on every way out — a normal exit, an error, SIGINT / SIGTERM /
//! SIGHUP: the process groups its tools started, and this run's temporary directory (bash's
//! full-output files). A run killed with SIGKILL cannot clean up; the next run removes its
//! temporary directory instead (the directory's name carries the pid that owned it).

use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};

/// Prefix of a run's temporary directory: `strata-run-<pid>-<random>`.
const RUN_DIR_PREFIX: &str = "strata-run-";

/// This run's temporary directory, made on first use.
static RUN_TEMP: Mutex<Option<tempfile::TempDir>> = Mutex::new(None);

/// The run's temporary directory (created on first call, removed by [`cleanup`]); `None` when
/// it cannot be created, and tools then use the system temp dir.
pub fn run_temp_dir() -> Option<PathBuf> {
    let mut slot = RUN_TEMP.lock().unwrap_or_else(PoisonError::into_inner);
    if slot.is_none() {
        remove_stale_run_dirs(&std::env::temp_dir());
        *slot = tempfile::Builder::new()
            .prefix(&format!("{RUN_DIR_PREFIX}{}-", std::process::id()))
            .tempdir()
            .ok();
    }
    slot.as_ref().map(|dir| dir.path().to_path_buf())
}

/// Kills every tool process group still alive and removes the run's temporary directory.
pub fn cleanup() {
    strata_runtime::kill_all_tool_processes();
    let dir = RUN_TEMP
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .take();
    drop(dir);
}

/// Runs [`cleanup`] when dropped: main holds one, so that returning or unwinding cleans up.
pub struct CleanupOnDrop;

impl Drop for CleanupOnDrop {
    fn drop(&mut self) {
        cleanup();
    }
}

/// On SIGINT, SIGTERM or SIGHUP: cleans up, puts the terminal back if the TUI had it, and
/// exits with 128 + the signal's number, as a shell reports a death by signal.
pub fn exit_on_signals(runtime: &tokio::runtime::Runtime, restore_terminal: bool) {
    use tokio::signal::unix::{SignalKind, signal};
    let kinds = [
        (SignalKind::interrupt(), 2),
        (SignalKind::terminate(), 15),
        (SignalKind::hangup(), 1),
    ];
    for (kind, number) in kinds {
        let _guard = runtime.enter();
        let Ok(mut stream) = signal(kind) else {
            continue;
        };
        runtime.spawn(async move {
            if stream.recv().await.is_some() {
                cleanup();
                if restore_terminal {
                    ratatui::restore();
                }
                std::process::exit(128 + number);
            }
        });
    }
}

/// Removes `strata-run-<pid>-*` directories in `temp` whose process is gone (a run that was
/// killed outright).
fn remove_stale_run_dirs(temp: &Path) {
    let Ok(entries) = std::fs::read_dir(temp) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix(RUN_DIR_PREFIX))
            .and_then(|rest| rest.split('-').next())
            .and_then(|pid| pid.parse::<i32>().ok())
        else {
            continue;
        };
        let alive = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None).is_ok();
        if !alive {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dead_runs_directory_is_removed_and_a_live_ones_kept() {
        let temp = tempfile::tempdir().unwrap();
        // Pid 0 is never a process we can signal as a single pid; i32::MAX is above pid_max.
        let dead = temp
            .path()
            .join(format!("{RUN_DIR_PREFIX}{}-abc", i32::MAX));
        let live = temp
            .path()
            .join(format!("{RUN_DIR_PREFIX}{}-abc", std::process::id()));
        let other = temp.path().join("strata-bash-1.log");
        for dir in [&dead, &live] {
            std::fs::create_dir(dir).unwrap();
            std::fs::write(dir.join("strata-bash-x.log"), "x").unwrap();
        }
        std::fs::write(&other, "x").unwrap();
        remove_stale_run_dirs(temp.path());
        assert!(!dead.exists());
        assert!(live.exists() && other.exists());
    }
}
