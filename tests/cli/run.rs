//! Agent runs of the binary against strata-mock's scripted model over real HTTP.

use std::process::Command;

use strata_mock::MockServer;

use crate::support::{demo_mock, project};

fn mock() -> MockServer {
    demo_mock()
}

fn strata_in(dir: &std::path::Path, args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_strata"))
        .current_dir(dir)
        .args(args)
        .env("HOME", dir)
        .env_remove("XDG_CONFIG_HOME")
        .env_remove("STRATA_MODEL")
        .output()
        .expect("strata runs")
}

/// `strata -p PROMPT --model MODEL --base-url URL --api-key k EXTRA…` in `dir`.
pub(crate) fn print_run(
    dir: &std::path::Path,
    prompt: &str,
    model: &str,
    url: &str,
    extra: &[&str],
) -> std::process::Output {
    let mut args = vec![
        "-p",
        prompt,
        "--model",
        model,
        "--base-url",
        url,
        "--api-key",
        "k",
    ];
    args.extend_from_slice(extra);
    strata_in(dir, &args)
}

#[test]
fn unrelated_strata_variables_are_ignored_and_shown_while_bad_values_still_fail() {
    let dir = project();
    let run = |vars: &[(&str, &str)]| {
        let mut command = Command::new(env!("CARGO_BIN_EXE_strata"));
        command
            .current_dir(dir.path())
            .args(["config"])
            .env("HOME", dir.path())
            .env_remove("XDG_CONFIG_HOME");
        for (name, value) in vars {
            command.env(name, value);
        }
        command.output().expect("strata runs")
    };
    let out = run(&[("STRATA_UNRELATED_TOOL", "1"), ("STRATA_MAX_RETRIES", "7")]);
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("max_retries") && text.contains("= 7"),
        "{text}"
    );
    assert!(
        text.contains("# ignored: STRATA_UNRELATED_TOOL is not a configuration key"),
        "{text}"
    );
    let bad = run(&[("STRATA_MAX_RETRIES", "many")]);
    assert!(!bad.status.success());
    let err = String::from_utf8(bad.stderr).unwrap();
    assert!(err.contains("max_retries"), "{err}");
}

#[test]
fn print_mode_runs_the_task_and_prints_the_final_answer() {
    let server = mock();
    let dir = project();
    let url = server.base_url();
    let output = print_run(
        dir.path(),
        "fix the greeting",
        "anthropic/claude-sonnet-4-5",
        &url,
        &[],
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert_eq!(
        String::from_utf8_lossy(&output.stdout),
        "Fixed the typo in `src/greeting.rs` (Helo → Hello); the tests pass.\n"
    );
    let source = std::fs::read_to_string(dir.path().join("src/greeting.rs")).unwrap();
    assert!(source.contains("\"Hello\""), "{source}");
    assert_eq!(server.requests().len(), 4);
    // The session was stored under HOME's default root, in the directory for this cwd.
    let root = dir.path().join(".strata/sessions");
    let dirs: Vec<_> = std::fs::read_dir(&root).unwrap().collect();
    assert_eq!(dirs.len(), 1);
    // The key never reaches the session.
    let dir_path = dirs[0].as_ref().unwrap().path();
    for file in std::fs::read_dir(dir_path).unwrap() {
        let text = std::fs::read_to_string(file.unwrap().path()).unwrap_or_default();
        assert!(!text.contains("\"k\""));
    }
}

#[test]
fn a_missing_model_or_unknown_provider_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let output = strata_in(dir.path(), &["-p", "hi", "--no-session"]);
    assert!(!output.status.success());
    assert!(String::from_utf8_lossy(&output.stderr).contains("--model"));
    let output = strata_in(
        dir.path(),
        &["-p", "hi", "--no-session", "--model", "nope/x"],
    );
    assert!(String::from_utf8_lossy(&output.stderr).contains("unknown provider `nope`"));
}

/// The same task through each other wire protocol the capability table routes to: OpenAI
/// Responses (openai), Chat Completions with DeepSeek's usage fields, and Gemini.
#[test]
fn print_mode_works_through_every_protocol_adapter() {
    for (model, path) in [
        ("openai/gpt-4.1", ""),
        ("deepseek/deepseek-v4-flash", ""),
        ("google/gemini-2.5-flash", "/v1beta"),
    ] {
        let server = mock();
        let dir = project();
        let url = format!("{}{path}", server.base_url());
        let output = print_run(
            dir.path(),
            "fix the greeting",
            model,
            &url,
            &["--no-session"],
        );
        assert!(
            output.status.success(),
            "{model}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        let source = std::fs::read_to_string(dir.path().join("src/greeting.rs")).unwrap();
        assert!(source.contains("\"Hello\""), "{model}: {source}");
        assert_eq!(server.requests().len(), 4, "{model}");
    }
}

#[test]
fn unclear_inputs_get_messages_that_name_the_problem() {
    let server = mock();
    let dir = project();
    let url = server.base_url();
    let run = |model: &str, prompt: &str| {
        let out = print_run(dir.path(), prompt, model, &url, &["--no-session"]);
        assert!(!out.status.success());
        String::from_utf8(out.stderr).unwrap()
    };
    let empty = run("anthropic/claude-sonnet-4-5", "  ");
    assert_eq!(
        empty,
        "strata: -p was given an empty prompt: write the prompt after -p, or pipe it on stdin\n"
    );
    let level = run("anthropic/claude-sonnet-4-5:ultra", "hi");
    assert!(level.contains("unknown thinking level `ultra`"), "{level}");
    assert_eq!(server.requests().len(), 0, "nothing was sent");

    let session = dir.path().join("v.jsonl");
    std::fs::write(
        &session,
        "{\"type\":\"session\",\"version\":\"3\",\"id\":\"s\",\"timestamp\":\"t\",\"cwd\":\"/\"}\n",
    )
    .unwrap();
    let out = strata_in(dir.path(), &["tree", session.to_str().unwrap()]);
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(
        err.contains("the header's `version` is the string \"3\", not a whole number"),
        "{err}"
    );

    // A refused connection: the cause is said once, not "X: X".
    let refused = print_run(
        dir.path(),
        "hi",
        "anthropic/claude-sonnet-4-5",
        "http://127.0.0.1:9",
        &["--no-session"],
    );
    let err = String::from_utf8(refused.stderr).unwrap();
    let last = err.lines().last().unwrap_or_default();
    let parts: Vec<&str> = last.split(": ").collect();
    for window in parts.windows(2) {
        assert_ne!(window[0], window[1], "{last}");
    }
    assert_eq!(last.matches("Connection refused").count(), 1, "{last}");
}

/// An entry on the path with a field of the wrong type (JSON, but not a valid message) used to
/// stop the resume with the error printed three times; now it is left out like a torn line,
/// reported once with file, line and field, and the file's bytes stay as they were.
#[test]
fn resuming_past_a_wrongly_typed_entry_warns_once_and_keeps_the_file() {
    let scenario =
        strata_mock::Scenario::from_toml("name = \"ok\"\n[[turn]]\ntext = \"ok\"\n", "test")
            .unwrap();
    let server = crate::support::mock_with(scenario);
    let dir = project();
    let url = server.base_url();
    let session = dir.path().join("wrong-type.jsonl");
    let original = "{\"type\":\"session\",\"version\":3,\"id\":\"s1\",\"timestamp\":\"2026-01-01T00:00:00.000Z\",\"cwd\":\"/\"}\n\
         {\"type\":\"message\",\"id\":\"a0000001\",\"parentId\":null,\"timestamp\":\"2026-01-01T00:00:00.000Z\",\"message\":{\"role\":\"user\",\"content\":\"hi\",\"timestamp\":1}}\n\
         {\"type\":\"message\",\"id\":\"a0000002\",\"parentId\":\"a0000001\",\"timestamp\":\"2026-01-01T00:00:01.000Z\",\"message\":{\"role\":\"assistant\",\"content\":7,\"timestamp\":2}}\n";
    std::fs::write(&session, original).unwrap();
    let out = print_run(
        dir.path(),
        "again",
        "anthropic/claude-sonnet-4-5",
        &url,
        &["--session", session.to_str().unwrap()],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(stderr.matches("a0000002").count(), 1, "{stderr}");
    assert!(
        stderr.contains("wrong-type.jsonl:3:") && stderr.contains("`message.content`"),
        "{stderr}"
    );
    let after = std::fs::read_to_string(&session).unwrap();
    assert!(after.starts_with(original), "{after}");
    assert!(after.len() > original.len(), "the run appended its turn");
}

#[test]
fn resuming_a_damaged_session_warns_in_print_and_json_modes() {
    let scenario =
        strata_mock::Scenario::from_toml("name = \"ok\"\n[[turn]]\ntext = \"ok\"\n", "test")
            .unwrap();
    let server = crate::support::mock_with(scenario);
    let dir = project();
    let url = server.base_url();
    for mode in ["text", "json"] {
        let session = dir.path().join(format!("{mode}.jsonl"));
        std::fs::write(
            &session,
            "{\"type\":\"session\",\"version\":3,\"id\":\"s1\",\"timestamp\":\"2026-01-01T00:00:00.000Z\",\"cwd\":\"/\"}\n\
             {\"type\":\"message\",\"id\":\"a0000001\",\"parentId\":null,\"timestamp\":\"2026-01-01T00:00:00.000Z\",\"message\":{\"role\":\"user\",\"content\":\"hi\",\"timestamp\":1}}\n\
             this line is damaged\n",
        )
        .unwrap();
        let out = print_run(
            dir.path(),
            "again",
            "anthropic/claude-sonnet-4-5",
            &url,
            &["--mode", mode, "--session", session.to_str().unwrap()],
        );
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{stderr}");
        assert!(
            stderr.contains("strata: warning:") && stderr.contains(":3"),
            "{mode}: {stderr}"
        );
    }
}

#[test]
fn a_session_that_cannot_be_opened_is_named_once() {
    let dir = project();
    let missing = dir.path().join("missing.jsonl");
    let folder = dir.path().join("folder.jsonl");
    std::fs::create_dir(&folder).unwrap();
    let said = |args: &[&str]| {
        let out = strata_in(dir.path(), args);
        assert!(!out.status.success(), "{args:?}");
        String::from_utf8(out.stderr).unwrap()
    };
    let missing_text = missing.to_str().unwrap();
    let folder_text = folder.to_str().unwrap();
    for command in ["context", "tree"] {
        assert_eq!(
            said(&[command, missing_text]),
            format!(
                "strata: opening the session: {missing_text}: No such file or directory (os error 2)\n"
            )
        );
        assert_eq!(
            said(&[command, folder_text]),
            format!("strata: opening the session: {folder_text}: not a regular file\n")
        );
    }
    assert_eq!(
        said(&["--export", missing_text]),
        format!(
            "strata: reading the session: {missing_text}: No such file or directory (os error 2)\n"
        )
    );
}

#[test]
fn in_print_mode_an_extensions_command_prints_its_text_and_makes_no_model_request() {
    let server = crate::support::demo_mock();
    let dir = project();
    crate::support::asker_extension(dir.path());
    let output = print_run(
        dir.path(),
        "/echo hello there",
        "anthropic/claude-sonnet-4-5",
        &server.base_url(),
        &["--no-session"],
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert_eq!(
        String::from_utf8_lossy(&output.stdout),
        "echo: hello there\n"
    );
    assert!(server.requests().is_empty(), "{:?}", server.requests());
}

#[test]
fn in_print_mode_an_extensions_question_is_answered_no_and_said_on_stderr() {
    let scenario = strata_mock::Scenario::from_toml(
        r#"
[[turn]]
[[turn.tool_call]]
tool = "bash"
args = { command = "rm -rf gone-dir" }
[[turn]]
text = "Refused."
"#,
        "ext-print",
    )
    .unwrap();
    let server = crate::support::mock_with(scenario);
    let dir = project();
    std::fs::create_dir(dir.path().join("gone-dir")).unwrap();
    crate::support::asker_extension(dir.path());
    let output = print_run(
        dir.path(),
        "clean up",
        "anthropic/claude-sonnet-4-5",
        &server.base_url(),
        &["--no-session"],
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert!(
        stderr.contains(
            "strata: extension `asker` asks \"Destructive command\": rm -rf gone-dir — no one to ask in print mode: answered no"
        ),
        "{stderr}"
    );
    // The unanswered confirmation is a refusal: the directory stays, the model reads why.
    assert!(dir.path().join("gone-dir").exists());
    let second = server.requests()[1].body.as_ref().unwrap().to_string();
    assert!(
        second.contains("the user said no to: rm -rf gone-dir"),
        "{second}"
    );
}

#[test]
fn what_a_hook_adds_is_attributed_in_strata_stats_as_cache_writes() {
    let scenario =
        strata_mock::Scenario::from_toml("[[turn]]\ntext = \"Brief.\"\n", "hook-cost").unwrap();
    let server = crate::support::mock_with(scenario);
    let dir = project();
    let global = dir.path().join(".config/strata");
    std::fs::create_dir_all(&global).unwrap();
    let sessions = dir.path().join("sessions");
    std::fs::write(
        global.join("config.toml"),
        format!("sessions_dir = {:?}\n", sessions.display().to_string()),
    )
    .unwrap();
    // 48 characters of context: 12 tokens.
    std::fs::write(
        global.join("hooks.json"),
        r#"{"hooks": {"UserPromptSubmit": [{"hooks": [{"command": "echo Rule: answer in one short sentence, plain words."}]}]}}"#,
    )
    .unwrap();
    let output = print_run(
        dir.path(),
        "hi",
        "anthropic/claude-sonnet-4-5",
        &server.base_url(),
        &[],
    );
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let body = server.requests()[0].body.as_ref().unwrap().to_string();
    assert!(
        body.contains("Rule: answer in one short sentence, plain words."),
        "{body}"
    );
    let file = walk_jsonl(&sessions);
    let stats = strata_in(dir.path(), &["stats", file.to_str().unwrap()]);
    let text = String::from_utf8_lossy(&stats.stdout);
    // Sonnet 4.5 writes the 5-minute cache at $3.75 per million tokens.
    assert!(
        text.contains(
            "  hooks and extensions: 12 tokens written to the cache, $0.000045 (included in the cost)"
        ),
        "{text}"
    );
    assert!(
        text.contains(
            "    echo Rule: answer in one short sentence, plain words.  12 tokens  $0.000045"
        ),
        "{text}"
    );
    let json = strata_in(dir.path(), &["stats", "--json", file.to_str().unwrap()]);
    let logs: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    let attributed = &logs[0]["hooksAndExtensions"][0];
    assert_eq!(
        attributed["source"],
        "echo Rule: answer in one short sentence, plain words."
    );
    assert_eq!(attributed["tokens"], 12);
}

/// The one session file under `dir`.
fn walk_jsonl(dir: &std::path::Path) -> std::path::PathBuf {
    let mut stack = vec![dir.to_path_buf()];
    let mut found = None;
    while let Some(path) = stack.pop() {
        if path.is_dir() {
            stack.extend(std::fs::read_dir(&path).unwrap().map(|e| e.unwrap().path()));
        } else if path.extension().is_some_and(|e| e == "jsonl") {
            found = Some(path);
        }
    }
    found.expect("a session file")
}
