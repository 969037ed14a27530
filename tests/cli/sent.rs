//! `strata context --format request` prints the body the adapter sends: for every wire
//! protocol, the body a `-p` run sent to strata-mock equals the printout at the run's first
//! user message (same session, same configuration).

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::support::{mock_with, project};

fn strata_in(dir: &Path, args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_strata"))
        .current_dir(dir)
        .args(args)
        .env("HOME", dir)
        .env_remove("XDG_CONFIG_HOME")
        .env_remove("STRATA_MODEL")
        .env("AWS_REGION", "us-west-2")
        .env("AWS_ACCESS_KEY_ID", "AKIDTEST")
        .env("AWS_SECRET_ACCESS_KEY", "aws-secret")
        .output()
        .expect("strata runs")
}

fn session_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            session_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "jsonl") {
            out.push(path);
        }
    }
}

/// The id of the session's first user message entry.
fn first_user_entry(session: &Path) -> String {
    let text = std::fs::read_to_string(session).unwrap();
    text.lines()
        .map(|line| serde_json::from_str::<Value>(line).unwrap())
        .find(|entry| entry["type"] == "message" && entry["message"]["role"] == "user")
        .and_then(|entry| entry["id"].as_str().map(str::to_owned))
        .expect("the session has a user message")
}

#[test]
fn the_printed_wire_body_is_the_body_sent_for_every_protocol() {
    // Each row with the setting that made the printout differ from what was sent.
    for (model, path, retention) in [
        ("anthropic/claude-opus-4-8", "", "long"),
        ("openai/gpt-5.5", "", "auto"),
        ("deepseek/deepseek-v4-flash", "", "auto"),
        ("google/gemini-2.5-flash", "/v1beta", "auto"),
        (
            "amazon-bedrock/anthropic.claude-sonnet-4-5-20250929-v1:0",
            "",
            "long",
        ),
    ] {
        let server = mock_with(
            strata_mock::Scenario::from_toml("[[turn]]\ntext = \"ok\"\n", "inline").unwrap(),
        );
        let dir = project();
        let config = dir.path().join(".config/strata");
        std::fs::create_dir_all(&config).unwrap();
        std::fs::write(
            config.join("config.toml"),
            format!("[cache]\nretention = \"{retention}\"\n"),
        )
        .unwrap();
        let url = format!("{}{path}", server.base_url());
        let run = strata_in(
            dir.path(),
            &[
                "-p",
                "hello there",
                "--model",
                model,
                "--base-url",
                &url,
                "--api-key",
                "k",
            ],
        );
        assert!(
            run.status.success(),
            "{model}: {}",
            String::from_utf8_lossy(&run.stderr)
        );
        let mut sessions = Vec::new();
        session_files(&dir.path().join(".strata"), &mut sessions);
        let [session] = sessions.as_slice() else {
            panic!("{model}: one session expected, found {sessions:?}")
        };
        let leaf = first_user_entry(session);
        let printed = strata_in(
            dir.path(),
            &[
                "context",
                session.to_str().unwrap(),
                "--format",
                "request",
                "--leaf",
                &leaf,
            ],
        );
        assert!(
            printed.status.success(),
            "{model}: {}",
            String::from_utf8_lossy(&printed.stderr)
        );
        let printed: Value = serde_json::from_slice(&printed.stdout).unwrap();
        let mut sent = server.requests()[0].body.clone().unwrap();
        let mut printed_body = printed["wire"]["body"].clone();
        if sent["type"] == "response.create" {
            // A first turn on a Responses socket (the WebSocket mode) is the same body as a
            // message: `type` added, `stream` left out (implicit on the socket).
            sent.as_object_mut().unwrap().remove("type");
            printed_body.as_object_mut().unwrap().remove("stream");
        }
        assert_eq!(printed_body, sent, "{model}");
    }
}
