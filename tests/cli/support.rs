//! Running the built binary and locating fixtures.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The workspace root (two levels above this crate's manifest).
pub fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// A file under `tests/fixtures/`.
pub fn fixture(relative: &str) -> PathBuf {
    workspace().join("tests/fixtures").join(relative)
}

/// Runs `strata` with `args` and returns its output (never panics on a non-zero exit).
pub fn strata(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_strata"))
        .args(args)
        .env_remove("STRATA_SESSIONS_DIR")
        .output()
        .expect("the strata binary runs")
}

/// Runs `strata` and returns stdout, failing the test with stderr when it exits non-zero.
pub fn strata_ok(args: &[&str]) -> String {
    let output = strata(args);
    assert!(
        output.status.success(),
        "strata {args:?} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).expect("stdout is UTF-8")
}
