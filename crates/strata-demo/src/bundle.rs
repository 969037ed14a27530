//! What the demo ships inside the binary: a tiny repository with a real bug and the scripted
//! model that fixes it.

use std::path::Path;

use strata_mock::Scenario;

use crate::error::{DemoError, Doing as _};

/// The scripted model (strata-mock `sequence` playback).
const SCENARIO: &str = include_str!("../demo/scenario.toml");

/// The repository the task runs in: a POSIX shell library whose `max` is wrong, and its tests.
const REPO: [(&str, &str); 3] = [
    ("AGENTS.md", include_str!("../demo/repo/AGENTS.md")),
    ("lib.sh", include_str!("../demo/repo/lib.sh")),
    ("test.sh", include_str!("../demo/repo/test.sh")),
];

/// The bundled scenario, parsed.
pub fn scenario() -> Result<Scenario, DemoError> {
    Scenario::from_toml(SCENARIO, "demo/scenario.toml")
        .doing(|| "reading the bundled demo/scenario.toml".to_owned())
}

/// Writes a fresh copy of the repository into `dir` (created if missing).
pub fn write_repo(dir: &Path) -> Result<(), DemoError> {
    std::fs::create_dir_all(dir).doing(|| format!("creating {}", dir.display()))?;
    for (name, text) in REPO {
        let path = dir.join(name);
        std::fs::write(&path, text).doing(|| format!("writing {}", path.display()))?;
    }
    Ok(())
}

/// The names of the repository's files, for the opening line.
pub fn repo_files() -> Vec<&'static str> {
    REPO.iter().map(|(name, _)| *name).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bundled_tests_fail_before_the_scripted_fix_and_pass_after() {
        let dir = tempfile::tempdir().unwrap();
        write_repo(dir.path()).unwrap();
        let run = || {
            std::process::Command::new("sh")
                .arg("test.sh")
                .current_dir(dir.path())
                .output()
                .unwrap()
        };
        let before = run();
        assert!(!before.status.success());
        assert!(String::from_utf8_lossy(&before.stdout).contains("FAILED: 2 of 4"));
        let lib = dir.path().join("lib.sh");
        let text = std::fs::read_to_string(&lib).unwrap();
        std::fs::write(
            &lib,
            text.replace(
                r#"if [ "$1" -lt "$2" ]; then"#,
                r#"if [ "$1" -gt "$2" ]; then"#,
            ),
        )
        .unwrap();
        let after = run();
        assert!(after.status.success());
        assert!(String::from_utf8_lossy(&after.stdout).contains("PASS: 4 of 4"));
    }

    #[test]
    fn the_scenario_names_six_prompts_and_five_summaries() {
        let scenario = scenario().unwrap();
        assert_eq!(scenario.user_prompts().len(), 6);
        assert_eq!(scenario.summaries.len(), 5);
        assert_eq!(scenario.playback, strata_mock::Playback::Sequence);
    }
}
