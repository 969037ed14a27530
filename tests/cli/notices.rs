//! What hooks and extensions have for the user reaches it: `-p` says each once on stderr as
//! `strata: <source>: <text>`, rpc sends an extension's problem as Pi's `extension_error`.

use serde_json::{Value, json};

use crate::rpc::Rpc;
use crate::support::{project, python_extension};

/// A bash call (the extension's `PreToolUse` hook runs on it), then an answer, twice over.
const SCENARIO: &str = r#"
[[turn]]
[[turn.tool_call]]
tool = "bash"
args = { command = "echo hi" }
[[turn]]
text = "Done."
[[turn]]
[[turn.tool_call]]
tool = "bash"
args = { command = "echo again" }
[[turn]]
text = "Done again."
"#;

fn print_run(dir: &std::path::Path, url: &str, prompt: &str) -> std::process::Output {
    crate::run::print_run(
        dir,
        prompt,
        "anthropic/claude-sonnet-4-5",
        url,
        &["--no-session"],
    )
}

/// The user's `hooks.json` with these `UserPromptSubmit` commands.
fn prompt_hooks(dir: &std::path::Path, commands: &[&str]) {
    let hooks: Vec<Value> = commands.iter().map(|c| json!({"command": c})).collect();
    let global = dir.join(".config/strata");
    std::fs::create_dir_all(&global).unwrap();
    std::fs::write(
        global.join("hooks.json"),
        json!({"hooks": {"UserPromptSubmit": [{"hooks": hooks}]}}).to_string(),
    )
    .unwrap();
}

fn lines_starting<'a>(stderr: &'a str, prefix: &str) -> Vec<&'a str> {
    stderr.lines().filter(|l| l.starts_with(prefix)).collect()
}

#[test]
fn in_print_mode_hook_notices_and_a_crashed_extension_are_said_once_on_stderr() {
    let server = crate::support::mock_with(
        strata_mock::Scenario::from_toml(SCENARIO, "notices-print").unwrap(),
    );
    let dir = project();
    python_extension(dir.path(), "crash", "crasher");
    prompt_hooks(
        dir.path(),
        &[
            r#"echo '{"systemMessage": "mind the style guide"}'"#,
            "echo broken >&2; exit 3",
        ],
    );
    let output = print_run(dir.path(), &server.base_url(), "go");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert_eq!(
        lines_starting(
            &stderr,
            "strata: hook UserPromptSubmit: mind the style guide"
        ),
        ["strata: hook UserPromptSubmit: mind the style guide"],
        "{stderr}"
    );
    let failed = lines_starting(&stderr, "strata: hook UserPromptSubmit: ");
    assert!(
        failed
            .iter()
            .any(|l| l.contains("exit code 3") && l.contains("broken")),
        "{stderr}"
    );
    assert_eq!(failed.len(), 2, "{stderr}");
    // The extension died at its first hook call: said once, by name.
    assert_eq!(
        lines_starting(&stderr, "strata: extension crasher: "),
        ["strata: extension crasher: extension `crasher` exited"],
        "{stderr}"
    );
}

#[test]
fn in_print_mode_a_refused_slot_claim_is_said_once_on_stderr() {
    let server = crate::support::mock_with(
        strata_mock::Scenario::from_toml("[[turn]]\ntext = \"hi\"\n", "notices-slots").unwrap(),
    );
    let dir = project();
    let ext = crate::support::workspace().join("crates/strata-extensions/tests/ext.py");
    let global = dir.path().join(".config/strata");
    std::fs::create_dir_all(&global).unwrap();
    let entry = |name: &str| {
        format!(
            "[extensions.{name}]\ncommand = \"python3\"\nargs = [{:?}, \"claim:ingress_filter\", {name:?}]\n",
            ext.display().to_string()
        )
    };
    std::fs::write(
        global.join("config.toml"),
        entry("first") + &entry("second"),
    )
    .unwrap();
    let output = print_run(dir.path(), &server.base_url(), "hello");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert_eq!(
        lines_starting(&stderr, "strata: memory slots: "),
        [
            "strata: memory slots: memory slot `ingress_filter` is owned by extension `first`; `second` was refused"
        ],
        "{stderr}"
    );
}

#[test]
fn in_print_mode_a_blocked_prompt_says_why_on_stderr() {
    let server = crate::support::mock_with(
        strata_mock::Scenario::from_toml("[[turn]]\ntext = \"hi\"\n", "notices-blocked").unwrap(),
    );
    let dir = project();
    prompt_hooks(
        dir.path(),
        &["grep -q password && { echo 'no secrets in prompts' >&2; exit 2; }; exit 0"],
    );
    let output = print_run(dir.path(), &server.base_url(), "my password is hunter2");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(
        lines_starting(&stderr, "strata: hook "),
        ["strata: hook UserPromptSubmit: prompt blocked: no secrets in prompts"],
        "{stderr}"
    );
    assert!(server.requests().is_empty());
}

#[test]
fn over_rpc_an_extension_that_crashes_mid_session_is_one_extension_error_with_its_name() {
    let server = crate::support::mock_with(
        strata_mock::Scenario::from_toml(SCENARIO, "notices-rpc").unwrap(),
    );
    let dir = project();
    python_extension(dir.path(), "crash", "crasher");
    let mut rpc = Rpc::start(dir.path(), &server, &[]);
    let first = rpc.prompt_and_wait("go");
    let errors = |events: &[Value]| -> Vec<Value> {
        events
            .iter()
            .filter(|e| e["type"] == "extension_error")
            .cloned()
            .collect()
    };
    assert_eq!(
        errors(&first),
        [json!({
            "type": "extension_error",
            "extensionPath": "crasher",
            "event": "process",
            "error": "extension `crasher` exited",
        })],
        "{first:?}"
    );
    // The next run's hook finds it gone: no second report.
    let second = rpc.prompt_and_wait("again");
    assert!(errors(&second).is_empty(), "{second:?}");
    rpc.close();
}

#[test]
fn json_mode_writes_the_same_records_as_rpc() {
    let server = crate::support::mock_with(
        strata_mock::Scenario::from_toml(SCENARIO, "notices-json").unwrap(),
    );
    let dir = project();
    python_extension(dir.path(), "crash", "crasher");
    prompt_hooks(
        dir.path(),
        &[r#"echo '{"systemMessage": "mind the style guide"}'"#],
    );
    let output = crate::run::print_run(
        dir.path(),
        "go",
        "anthropic/claude-sonnet-4-5",
        &server.base_url(),
        &["--no-session", "--mode", "json"],
    );
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let records: Vec<Value> = String::from_utf8_lossy(&output.stdout)
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    let of = |kind: &str| -> Vec<&Value> { records.iter().filter(|r| r["type"] == kind).collect() };
    let prompt_notices: Vec<&Value> = of("strata_notice")
        .into_iter()
        .filter(|r| r["event"] == "UserPromptSubmit")
        .collect();
    assert_eq!(
        prompt_notices,
        [&json!({
            "type": "strata_notice",
            "source": "hook UserPromptSubmit",
            "event": "UserPromptSubmit",
            "text": "mind the style guide",
        })]
    );
    let errors = of("extension_error");
    assert_eq!(errors.len(), 1, "{records:?}");
    assert_eq!(errors[0]["extensionPath"], "crasher");
}

#[test]
fn the_tui_shows_a_hooks_system_message_and_a_crashed_extension_as_notices() {
    use crate::tui::{Tmux, strata_command_on, type_line};
    if !crate::support::tmux_available() {
        return;
    }
    let server = crate::support::mock_with(
        strata_mock::Scenario::from_toml(SCENARIO, "notices-tui").unwrap(),
    );
    let dir = project();
    python_extension(dir.path(), "crash", "crasher");
    prompt_hooks(
        dir.path(),
        &[r#"echo '{"systemMessage": "mind the style guide"}'"#],
    );
    let tmux = Tmux::new();
    tmux.start(
        dir.path(),
        &strata_command_on(
            dir.path(),
            &server.base_url(),
            "anthropic/claude-sonnet-4-5",
        ),
    );
    tmux.wait_for_all(
        "the editor",
        std::time::Duration::from_secs(20),
        &["prompt (/ for commands)"],
    );
    type_line(&tmux, "go");
    tmux.wait_for_all(
        "the notices",
        std::time::Duration::from_secs(30),
        &[
            "hook UserPromptSubmit: mind the style guide",
            "extension crasher: extension `crasher` exited",
            "Done.",
        ],
    );
}
