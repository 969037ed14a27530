//! Moving in the tree offers to restore the files (issue 39): `/tree` in a real terminal
//! (tmux) against strata-mock, back before an edit and forward again; and `strata fork`
//! carrying the checkpoints its path needs.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use strata_mock::{MockConfig, MockServer, Scenario};

use crate::support::{mock_with, tmux_available};
use crate::tui::{Tmux, project, strata_command_on, type_line};

/// One edit of the greeting, then an answer.
const EDIT: &str = r#"
name = "tui-rewind"

[[turn]]
text = "Fixing it."
[[turn.tool_call]]
tool = "edit"
args = { path = "src/greeting.rs", edits = [{ oldText = "Helo", newText = "Hello" }] }

[[turn]]
text = "Fixed the greeting."
"#;

const LIMIT: Duration = Duration::from_secs(30);

fn greeting(dir: &Path) -> String {
    std::fs::read_to_string(dir.join("src/greeting.rs")).unwrap()
}

/// `/tree`, the entry whose text contains `filter`, Switch (no summary).
fn switch_to(tmux: &Tmux, filter: &str) {
    type_line(tmux, "/tree");
    tmux.wait_for_all("the tree", LIMIT, &["Session tree"]);
    tmux.ok(&["send-keys", "-t", "strata", "-l", filter]);
    tmux.ok(&["send-keys", "-t", "strata", "Enter"]);
    tmux.wait_for_all("how to leave", LIMIT, &["Leave this branch"]);
    tmux.ok(&["send-keys", "-t", "strata", "Enter"]);
}

#[test]
fn moving_back_with_tree_offers_to_restore_the_files_and_forward_again() {
    if !tmux_available() {
        return;
    }
    let server = MockServer::start_in_thread(MockConfig::new()).expect("mock starts");
    server.load_scenario(Scenario::from_toml(EDIT, "tui.toml").expect("scenario parses"));
    let dir = project();
    let tmux = Tmux::new();
    let command = strata_command_on(
        dir.path(),
        &server.base_url(),
        "anthropic/claude-sonnet-4-5",
    );
    tmux.start(dir.path(), &command);
    tmux.wait_for_all("the editor", LIMIT, &["prompt (/ for commands)"]);
    type_line(&tmux, "fix the greeting");
    tmux.wait_for_all("the answer", LIMIT, &["Fixed the greeting."]);
    assert!(greeting(dir.path()).contains("\"Hello\""));

    // Back before the prompt: the file differs, so the restore is offered.
    switch_to(&tmux, "fix the greeting");
    let screen = tmux.wait_for("dbg", LIMIT, |s| s.contains("Keep the files"));
    std::fs::write("/tmp/r39b-screen.txt", &screen).unwrap();
    tmux.wait_for_all(
        "the offer",
        LIMIT,
        &[
            "Restore the files too?",
            "Restore files to this point",
            "1 file, as /rewind does",
            "Keep the files as they are",
        ],
    );
    assert!(
        greeting(dir.path()).contains("\"Hello\""),
        "nothing is restored before the user says so"
    );
    tmux.ok(&["send-keys", "-t", "strata", "Enter"]);
    // The picker drew over them; the list of files differing and what was restored.
    tmux.wait_for_all(
        "the restore",
        LIMIT,
        &[
            "the files differ from this entry",
            "greeting.rs: changed since",
            "files restored to this entry",
            "greeting.rs",
        ],
    );
    assert!(
        greeting(dir.path()).contains("\"Helo\""),
        "back before the edit"
    );

    // Forward again to the answer after the edit: offered again, restored again.
    tmux.ok(&["send-keys", "-t", "strata", "C-u"]);
    switch_to(&tmux, "Fixed the greeting");
    tmux.wait_for_all(
        "the second offer",
        LIMIT,
        &["Restore files to this point", "Keep the files as they are"],
    );
    tmux.ok(&["send-keys", "-t", "strata", "Enter"]);
    // The transcript is the branch up to the answer again (the first restore was shown on
    // the empty one before the prompt).
    tmux.wait_for_all(
        "the second restore",
        LIMIT,
        &["Fixed the greeting.", "files restored to this entry"],
    );
    assert!(
        greeting(dir.path()).contains("\"Hello\""),
        "the edit is back"
    );
}

#[test]
fn strata_fork_carries_the_checkpoints_of_its_path() {
    let server = mock_with(Scenario::from_toml(EDIT, "fork.toml").unwrap());
    let dir = project();
    let session = dir.path().join("s.jsonl");
    let output = Command::new(env!("CARGO_BIN_EXE_strata"))
        .current_dir(dir.path())
        .args([
            "-p",
            "fix the greeting",
            "--model",
            "anthropic/claude-sonnet-4-5",
            "--base-url",
            &server.base_url(),
            "--session",
            session.to_str().unwrap(),
        ])
        .env("HOME", dir.path())
        .env("ANTHROPIC_API_KEY", "sk-ant-test")
        .env_remove("XDG_CONFIG_HOME")
        .env_remove("STRATA_MODEL")
        .env_remove("STRATA_API_KEY")
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    assert!(greeting(dir.path()).contains("\"Hello\""));
    let leaf = std::fs::read_to_string(&session)
        .unwrap()
        .lines()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .filter_map(|entry| entry["id"].as_str().map(str::to_owned))
        .next_back()
        .unwrap();
    let fork = dir.path().join("fork.jsonl");
    let forked = Command::new(env!("CARGO_BIN_EXE_strata"))
        .args(["fork", session.to_str().unwrap(), "--leaf", &leaf, "-o"])
        .arg(&fork)
        .output()
        .unwrap();
    assert!(forked.status.success(), "{forked:?}");
    let index = std::fs::read_to_string(dir.path().join("fork.jsonl.files/index.jsonl")).unwrap();
    assert!(index.contains("greeting.rs"), "{index}");
    // Each blob the records name is there, with the content before and after the edit.
    let blobs: Vec<String> = std::fs::read_dir(dir.path().join("fork.jsonl.files/blobs"))
        .unwrap()
        .map(|entry| std::fs::read_to_string(entry.unwrap().path()).unwrap())
        .collect();
    assert_eq!(blobs.len(), 2, "{blobs:?}");
    assert!(blobs.iter().any(|b| b.contains("\"Helo\"")));
    assert!(blobs.iter().any(|b| b.contains("\"Hello\"")));
}
