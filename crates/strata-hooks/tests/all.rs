//! Hooks read from Claude Code's and Codex's files and run as real processes.

#![expect(clippy::unwrap_used, reason = "tests")]

use std::path::Path;
use std::time::Duration;

use pretty_assertions::assert_eq;
use serde_json::json;
use strata_hooks::{
    HookEvent, HookFiles, HookInput, HookRunner, HookSet, HooksSettings, PreToolDecision,
    RunStatus, Scope, ToolNames,
};

fn set_from(dir: &Path, text: &str) -> HookSet {
    HookSet::parse(
        text,
        &dir.join("settings.json"),
        Scope::User,
        Duration::from_secs(60),
    )
    .unwrap()
}

fn pre_tool(tool: &str, args: serde_json::Value) -> HookInput {
    HookInput::new(HookEvent::PreToolUse, "s1", "/tmp/s.jsonl", "/tmp")
        .with("tool_name", ToolNames::hook_name(tool))
        .with("tool_input", ToolNames::hook_input(tool, &args))
        .with("tool_use_id", "call_1")
        .with_subject(tool)
        .with_subject(ToolNames::hook_name(tool))
}

#[tokio::test]
async fn exit_two_denies_with_stderr_and_matchers_use_claude_names() {
    let dir = tempfile::tempdir().unwrap();
    let set = set_from(
        dir.path(),
        r#"{"hooks":{"PreToolUse":[{"matcher":"Bash","hooks":[{"type":"command",
        "command":"grep -q 'rm -rf' && { echo 'no rm -rf here' >&2; exit 2; }; exit 0"}]}]}}"#,
    );
    let runner = HookRunner::new(set, dir.path());
    let outcome = runner
        .run(&pre_tool("bash", json!({"command": "rm -rf /"})))
        .await;
    assert_eq!(outcome.decision, PreToolDecision::Deny);
    assert!(outcome.blocked);
    assert_eq!(outcome.reason.as_deref(), Some("no rm -rf here"));
    let harmless = runner
        .run(&pre_tool("bash", json!({"command": "ls"})))
        .await;
    assert_eq!(harmless.decision, PreToolDecision::None);
    assert!(!harmless.blocked);
    // `Bash` does not match `read`: the hook does not even run.
    let other = runner.run(&pre_tool("read", json!({"path": "a"}))).await;
    assert!(other.runs.is_empty());
}

#[tokio::test]
async fn json_answers_rewrite_input_add_context_and_allow() {
    let dir = tempfile::tempdir().unwrap();
    let answer = json!({"hookSpecificOutput": {"hookEventName": "PreToolUse",
        "permissionDecision": "allow", "updatedInput": {"file_path": "b.txt"},
        "additionalContext": "read b instead"}});
    let set = set_from(
        dir.path(),
        &json!({"hooks": {"PreToolUse": [{"matcher": "Read|Write", "hooks": [
            {"type": "command", "command": format!("cat > input.json; echo '{answer}'")}]}]}})
        .to_string(),
    );
    let runner = HookRunner::new(set, dir.path());
    let outcome = runner
        .run(&pre_tool("read", json!({"path": "a.txt"})))
        .await;
    assert_eq!(outcome.decision, PreToolDecision::Allow);
    let updated = outcome.updated_input.clone().unwrap();
    assert_eq!(
        ToolNames::apply_update("read", &json!({"path": "a.txt", "limit": 3}), &updated),
        Some(json!({"path": "b.txt", "limit": 3}))
    );
    assert_eq!(
        outcome.additional_context,
        vec!["read b instead".to_owned()]
    );
    // The hook read Claude Code's fields on stdin.
    let input: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("input.json")).unwrap())
            .unwrap();
    assert_eq!(input["hook_event_name"], "PreToolUse");
    assert_eq!(input["tool_name"], "Read");
    assert_eq!(
        input["tool_input"],
        json!({"path": "a.txt", "file_path": "a.txt"})
    );
    assert_eq!(input["session_id"], "s1");
}

#[tokio::test]
async fn a_hung_hook_is_killed_at_its_timeout_and_does_not_block() {
    let dir = tempfile::tempdir().unwrap();
    // The hook starts a grandchild holding stdout: only killing the group ends the read.
    let set = set_from(
        dir.path(),
        r#"{"hooks":{"Stop":[{"hooks":[{"type":"command","command":"sleep 600 & sleep 600","timeout":0.5}]}]}}"#,
    );
    let runner = HookRunner::new(set, dir.path());
    let input = HookInput::new(HookEvent::Stop, "s", "t", "c").with("stop_hook_active", false);
    let outcome = runner.run(&input).await;
    assert_eq!(outcome.runs[0].status, RunStatus::TimedOut);
    assert!(!outcome.blocked);
    assert!(
        outcome.user_messages[0].contains("timed out"),
        "{outcome:?}"
    );
}

#[tokio::test]
async fn floods_garbage_and_failures_are_contained() {
    let dir = tempfile::tempdir().unwrap();
    let set = set_from(
        dir.path(),
        r#"{"hooks":{"PostToolUse":[{"hooks":[
            {"type":"command","command":"head -c 5000000 /dev/zero"},
            {"type":"command","command":"printf '{not json'; exit 0"},
            {"type":"command","command":"echo oops >&2; exit 1"},
            {"type":"command","command":"/nonexistent/hook"}
        ]}]}}"#,
    );
    let runner = HookRunner::new(set, dir.path());
    let input = HookInput::new(HookEvent::PostToolUse, "s", "t", "c").with_subject("bash");
    let outcome = runner.run(&input).await;
    assert_eq!(outcome.runs.len(), 4);
    assert!(outcome.runs[0].truncated);
    assert_eq!(outcome.runs[0].stdout.len(), strata_hooks::MAX_OUTPUT_BYTES);
    assert!(!outcome.blocked);
    assert!(outcome.additional_context.is_empty());
    assert!(
        outcome
            .user_messages
            .iter()
            .any(|m| m.contains("exit code 1: oops"))
    );
    assert!(
        outcome
            .user_messages
            .iter()
            .any(|m| m.contains("exit code 127"))
    );
}

#[tokio::test]
async fn prompt_and_stop_answers() {
    let dir = tempfile::tempdir().unwrap();
    let set = set_from(
        dir.path(),
        r#"{"hooks":{
          "UserPromptSubmit":[{"hooks":[{"type":"command","command":"echo 'Today is Saturday.'"}]}],
          "Stop":[{"hooks":[{"type":"command","command":"echo '{\"decision\":\"block\",\"reason\":\"run the tests first\"}'"}]}]
        }}"#,
    );
    let runner = HookRunner::new(set, dir.path());
    let prompt = runner
        .run(&HookInput::new(HookEvent::UserPromptSubmit, "s", "t", "c").with("prompt", "hi"))
        .await;
    assert_eq!(
        prompt.additional_context,
        vec!["Today is Saturday.".to_owned()]
    );
    assert!(!prompt.blocked);
    let stop = runner
        .run(&HookInput::new(HookEvent::Stop, "s", "t", "c"))
        .await;
    assert!(stop.blocked);
    assert_eq!(stop.reason.as_deref(), Some("run the tests first"));
}

#[test]
fn unusable_parts_are_named_with_file_and_field_and_the_rest_loads() {
    let dir = tempfile::tempdir().unwrap();
    let set = set_from(
        dir.path(),
        r#"{"hooks":{
          "PreToolUse":[{"matcher":"(","hooks":[{"type":"command","command":"true"}]},
                        {"matcher":"Bash","hooks":[{"type":"prompt","prompt":"judge"},
                                                   {"type":"command","command":"true"}]}],
          "Notification":[{"hooks":[{"type":"command","command":"true"}]}],
          "Bogus":[]
        }}"#,
    );
    let problems = set.problems().join("\n");
    assert!(
        problems.contains("settings.json: hooks.PreToolUse[0].matcher: bad regular expression"),
        "{problems}"
    );
    assert!(
        problems.contains("hooks.PreToolUse[1].hooks[0]: type `prompt`"),
        "{problems}"
    );
    assert!(
        problems.contains("hooks.Notification: strata does not run this event yet"),
        "{problems}"
    );
    assert!(
        problems.contains("hooks.Bogus: unknown event"),
        "{problems}"
    );
    assert_eq!(set.matching(HookEvent::PreToolUse, &["Bash"]).len(), 1);
    let error = HookSet::parse(
        "{\n  \"hooks\": [,\n}",
        Path::new("x/hooks.json"),
        Scope::User,
        Duration::from_secs(1),
    )
    .unwrap_err()
    .to_string();
    assert!(error.starts_with("x/hooks.json:2:"), "{error}");
}

#[test]
fn project_hooks_load_only_when_trusted() {
    let home = tempfile::tempdir().unwrap();
    let project = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(home.path().join(".claude")).unwrap();
    std::fs::write(
        home.path().join(".claude/settings.json"),
        r#"{"hooks":{"Stop":[{"hooks":[{"type":"command","command":"user-hook"}]}]}}"#,
    )
    .unwrap();
    std::fs::create_dir_all(project.path().join(".codex")).unwrap();
    std::fs::write(
        project.path().join(".codex/hooks.json"),
        r#"{"hooks":{"Stop":[{"hooks":[{"type":"command","command":"project-hook","timeout":5}]}]}}"#,
    )
    .unwrap();
    let settings = HooksSettings::default();
    let files = HookFiles::standard(&settings, Some(home.path()), None, project.path());
    let commands = |set: &HookSet| -> Vec<String> {
        set.matching(HookEvent::Stop, &[])
            .iter()
            .map(|h| h.command.clone())
            .collect()
    };
    let untrusted = HookSet::load(&files, &settings, false);
    assert_eq!(commands(&untrusted), vec!["user-hook"]);
    assert!(
        untrusted
            .problems()
            .iter()
            .any(|p| p.contains("not trusted"))
    );
    let trusted = HookSet::load(&files, &settings, true);
    assert_eq!(commands(&trusted), vec!["user-hook", "project-hook"]);
    let off = HooksSettings {
        enabled: false,
        ..HooksSettings::default()
    };
    assert!(HookSet::load(&files, &off, true).is_empty());
    let no_codex = HooksSettings {
        codex: false,
        ..HooksSettings::default()
    };
    let files = HookFiles::standard(&no_codex, Some(home.path()), None, project.path());
    assert_eq!(
        commands(&HookSet::load(&files, &no_codex, true)),
        vec!["user-hook"]
    );
}
