//! Every `strata` command in README.md runs as written: the blocks are read from the file, the
//! placeholders filled (`PORT` with an in-process strata-mock's, `SESSION.jsonl` and `ID` with
//! the demo's kept session and one of its entries, `~` and `/tmp/…` with a scratch home), and
//! each must exit 0. Only the terminal UI's line is left to the tmux tests.

use std::path::Path;

use crate::first_run::fresh;
use crate::support::{demo_mock, text, workspace};

/// The `strata …` lines of README's `sh` blocks, comments dropped.
fn readme_commands() -> Vec<String> {
    let readme = std::fs::read_to_string(workspace().join("README.md")).unwrap();
    let mut commands = Vec::new();
    let mut in_sh = false;
    for line in readme.lines() {
        if line.starts_with("```") {
            in_sh = line == "```sh";
            continue;
        }
        if in_sh && line.starts_with("strata ") {
            let command = line.split(" # ").next().unwrap_or(line).trim_end();
            commands.push(command.to_owned());
        }
    }
    commands
}

/// Splits a command line into words, keeping "quoted words" together.
fn words(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    let mut quoted = false;
    for ch in line.chars() {
        match ch {
            '"' => quoted = !quoted,
            ' ' if !quoted => {
                if !current.is_empty() {
                    out.push(std::mem::take(&mut current));
                }
            }
            other => current.push(other),
        }
    }
    if !current.is_empty() {
        out.push(current);
    }
    out
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.path().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

#[test]
fn every_strata_command_in_the_readme_runs_as_written() {
    let commands = readme_commands();
    assert!(commands.len() >= 15, "{commands:?}");
    let home = tempfile::tempdir().unwrap();
    // The working directory: the bundled example copied, and the examples the README names.
    let cwd = home.path().join("work");
    copy_dir(&workspace().join("examples/greeting"), &cwd);
    copy_dir(&workspace().join("examples"), &cwd.join("examples"));
    let demo = home.path().join("demo");
    let session = demo.join("anthropic-strata/session.jsonl");
    let mut ran = 0;
    for line in &commands {
        if line.contains("--interactive") {
            continue; // the terminal UI: tests/cli/tui.rs drives it in tmux
        }
        if line.contains("SESSION.jsonl") && !session.is_file() {
            panic!("README names SESSION.jsonl before `strata demo --keep` made one: {line}");
        }
        let server = demo_mock();
        let id = if session.is_file() {
            let text = std::fs::read_to_string(&session).unwrap();
            let entry: serde_json::Value =
                serde_json::from_str(text.lines().nth(3).unwrap()).unwrap();
            entry["id"].as_str().unwrap().to_owned()
        } else {
            String::new()
        };
        let filled = line
            .replace("http://127.0.0.1:PORT", &server.base_url())
            .replace("SESSION.jsonl", &session.display().to_string())
            .replace("/tmp/demo", &demo.display().to_string())
            .replace("~/", &format!("{}/", home.path().display()));
        let mut args = words(&filled);
        assert_eq!(args.remove(0), "strata");
        if let Some(leaf) = args.iter().position(|a| a == "ID") {
            args[leaf].clone_from(&id);
        }
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = fresh(&cwd, &refs, &[("HOME", &home.path().display().to_string())]);
        assert!(
            out.status.success(),
            "README: `{line}` failed:\n{}",
            text(&out.stderr)
        );
        ran += 1;
    }
    assert!(ran >= 14, "{ran} commands ran");
}
