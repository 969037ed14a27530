//! A Claude Code `settings.json`, taken unchanged, against strata-mock: PreToolUse blocks and
//! rewrites, PostToolUse and UserPromptSubmit add context, Stop sends the model back once;
//! an untrusted project's hooks never run; hooks' text only ever extends the request.

use serde_json::Value;
use strata_hooks::{HookFiles, HookRunner, HookSet, HooksSettings};
use strata_session::{AgentMessage, Entry};

use crate::mock::{agent, mock, new_session};

/// As a user would have it in `.claude/settings.json`.
const SETTINGS: &str = r#"{
  "permissions": { "allow": ["Bash(ls:*)"] },
  "hooks": {
    "UserPromptSubmit": [
      { "hooks": [ { "type": "command", "command": "\"$CLAUDE_PROJECT_DIR\"/.claude/hooks/rules.sh" } ] }
    ],
    "PreToolUse": [
      { "matcher": "Bash", "hooks": [ { "type": "command", "command": "\"$CLAUDE_PROJECT_DIR\"/.claude/hooks/guard.sh", "timeout": 10 } ] },
      { "matcher": "Read", "hooks": [ { "type": "command", "command": "\"$CLAUDE_PROJECT_DIR\"/.claude/hooks/redirect.sh" } ] }
    ],
    "PostToolUse": [
      { "matcher": "Edit|Write|Read", "hooks": [ { "type": "command", "command": "\"$CLAUDE_PROJECT_DIR\"/.claude/hooks/after.sh" } ] }
    ],
    "Stop": [
      { "hooks": [ { "type": "command", "command": "\"$CLAUDE_PROJECT_DIR\"/.claude/hooks/stop.sh" } ] }
    ]
  }
}"#;

const RULES: &str = r#"#!/bin/sh
touch "$CLAUDE_PROJECT_DIR/ran-prompt"
echo "Project rule: never touch files outside the repository."
"#;

const GUARD: &str = r#"#!/bin/sh
cmd=$(jq -r '.tool_input.command')
case "$cmd" in
  *"rm -rf"*) echo "Blocked: rm -rf is not allowed here" >&2; exit 2 ;;
esac
exit 0
"#;

const REDIRECT: &str = r#"#!/bin/sh
file=$(jq -r '.tool_input.file_path')
if [ "$file" = "secret.txt" ]; then
  jq -n '{hookSpecificOutput: {hookEventName: "PreToolUse", permissionDecision: "allow",
          permissionDecisionReason: "secrets are redirected", updatedInput: {file_path: "public.txt"}}}'
fi
"#;

const AFTER: &str = r#"#!/bin/sh
name=$(jq -r '.tool_name')
jq -n --arg n "$name" '{hookSpecificOutput: {hookEventName: "PostToolUse", additionalContext: ("checked after " + $n)}}'
"#;

const STOP: &str = r#"#!/bin/sh
touch "$CLAUDE_PROJECT_DIR/ran-stop"
if [ "$(jq -r '.stop_hook_active')" = "true" ]; then exit 0; fi
echo '{"decision": "block", "reason": "Run the tests before stopping."}'
"#;

const SCENARIO: &str = r#"
[[turn]]
text = "Cleaning."
[[turn.tool_call]]
tool = "bash"
args = { command = "rm -rf keep" }
[[turn]]
[[turn.tool_call]]
tool = "read"
args = { path = "secret.txt" }
[[turn]]
text = "Done."
[[turn]]
text = "Tests pass."
"#;

/// A project with the settings and scripts; returns its dir.
fn project() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let hooks = dir.path().join(".claude/hooks");
    std::fs::create_dir_all(&hooks).unwrap();
    std::fs::write(dir.path().join(".claude/settings.json"), SETTINGS).unwrap();
    for (name, text) in [
        ("rules.sh", RULES),
        ("guard.sh", GUARD),
        ("redirect.sh", REDIRECT),
        ("after.sh", AFTER),
        ("stop.sh", STOP),
    ] {
        let path = hooks.join(name);
        std::fs::write(&path, text).unwrap();
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    std::fs::create_dir(dir.path().join("keep")).unwrap();
    std::fs::write(dir.path().join("secret.txt"), "the secret").unwrap();
    std::fs::write(dir.path().join("public.txt"), "the public text").unwrap();
    dir
}

fn runner(dir: &std::path::Path, trusted: bool) -> HookRunner {
    let settings = HooksSettings::default();
    // No home: only the project's files.
    let files = HookFiles::standard(&settings, None, None, dir);
    HookRunner::new(HookSet::load(&files, &settings, trusted), dir)
}

/// A body without its cache markers (they move to the newest message by design).
fn without_cache_control(mut value: Value) -> Value {
    fn strip(value: &mut Value) {
        match value {
            Value::Object(map) => {
                map.remove("cache_control");
                map.values_mut().for_each(strip);
            }
            Value::Array(items) => items.iter_mut().for_each(strip),
            _ => {}
        }
    }
    strip(&mut value);
    value
}

#[tokio::test]
async fn a_claude_code_settings_file_blocks_rewrites_adds_context_and_continues() {
    let server = mock(SCENARIO).await;
    let dir = project();
    let mut agent = agent(&server, new_session(dir.path()), dir.path());
    agent.set_hooks(Some(runner(dir.path(), true)));
    let summary = agent.prompt("clean up the repo").await.unwrap();
    assert_eq!(summary.reason, "stop");
    assert_eq!(summary.final_text, "Tests pass.");
    // PreToolUse exit 2: the command never ran, the model read the hook's stderr.
    assert!(dir.path().join("keep").is_dir(), "rm -rf was blocked");
    let results: Vec<(String, bool)> = agent_messages(&agent)
        .iter()
        .filter_map(|m| match m {
            AgentMessage::ToolResult(r) => {
                Some((strata_session::join_text(&r.content, ""), r.is_error))
            }
            _ => None,
        })
        .collect();
    assert_eq!(
        results[0],
        ("Blocked: rm -rf is not allowed here".to_owned(), true)
    );
    // PreToolUse updatedInput: the read went to public.txt.
    assert!(results[1].0.contains("the public text"), "{results:?}");
    assert!(!results[1].1);
    let requests = server.requests();
    assert_eq!(
        requests.len(),
        4,
        "three scripted turns and one after the Stop hook"
    );
    let bodies: Vec<String> = requests
        .iter()
        .map(|r| r.body.clone().unwrap().to_string())
        .collect();
    // UserPromptSubmit: its stdout follows the prompt in the first request.
    let prompt = bodies[0].find("clean up the repo").unwrap();
    let rule = bodies[0].find("Project rule: never touch files").unwrap();
    assert!(prompt < rule, "{}", bodies[0]);
    assert!(bodies[1].contains("Blocked: rm -rf is not allowed here"));
    assert!(!bodies[2].contains("the secret"), "{}", bodies[2]);
    // PostToolUse: additional context after the result, only for the tool that ran.
    let public = bodies[2].find("the public text").unwrap();
    let checked = bodies[2].find("checked after Read").unwrap();
    assert!(public < checked);
    assert!(!bodies[2].contains("checked after Bash"));
    // Stop: the model was sent back with the reason, once (stop_hook_active the second time).
    assert!(bodies[3].contains("Run the tests before stopping."));
    // The hooks' text is stored as marked custom messages, Pi-readable.
    let marked = agent
        .session()
        .tree()
        .path_from_root(agent.session().leaf().unwrap())
        .into_iter()
        .filter(|id| {
            matches!(agent.session().tree().entry(id).unwrap(),
                Entry::CustomMessage(e) if e.custom_type == strata_agent::HOOK_CUSTOM_TYPE)
        })
        .count();
    assert_eq!(marked, 3, "prompt context, post-tool context, stop reason");
    assert!(agent.take_hook_notices().is_empty());
}

#[tokio::test]
async fn hook_text_lands_after_the_previous_request_bytes() {
    let server = mock(SCENARIO).await;
    let dir = project();
    let mut agent = agent(&server, new_session(dir.path()), dir.path());
    agent.set_hooks(Some(runner(dir.path(), true)));
    agent.prompt("clean up the repo").await.unwrap();
    let requests = server.requests();
    for pair in requests.windows(2) {
        let before = without_cache_control(pair[0].body.clone().unwrap());
        let after = without_cache_control(pair[1].body.clone().unwrap());
        assert_eq!(
            before["system"], after["system"],
            "system chapter unchanged"
        );
        assert_eq!(before["tools"], after["tools"], "tools chapter unchanged");
        let old = before["messages"].as_array().unwrap();
        let new = after["messages"].as_array().unwrap();
        assert!(new.len() > old.len());
        assert_eq!(
            old[..],
            new[..old.len()],
            "new content strictly after the prefix"
        );
        // The mock's own cache accounting agrees: nothing before the end changed.
        assert_eq!(pair[1].changed, None, "request {}", pair[1].seq);
    }
}

#[tokio::test]
async fn an_untrusted_projects_hooks_do_not_run() {
    let server = mock(SCENARIO).await;
    let dir = project();
    let runner = runner(dir.path(), false);
    assert!(runner.set().is_empty());
    assert!(
        runner
            .set()
            .problems()
            .iter()
            .any(|p| p.contains("not trusted")),
        "{:?}",
        runner.set().problems()
    );
    let mut agent = agent(&server, new_session(dir.path()), dir.path());
    agent.set_hooks(Some(runner));
    let summary = agent.prompt("clean up the repo").await.unwrap();
    assert_eq!(summary.final_text, "Done.");
    assert!(!dir.path().join("ran-prompt").exists());
    assert!(!dir.path().join("ran-stop").exists());
    // Without the guard the scripted rm -rf ran: the hooks were really off.
    assert!(!dir.path().join("keep").exists());
    let first = server.requests()[0].body.clone().unwrap().to_string();
    assert!(!first.contains("Project rule"));
}

#[tokio::test]
async fn a_blocked_prompt_is_not_sent_and_a_failing_hook_is_a_notice() {
    let server = mock("[[turn]]\ntext = \"hi\"\n").await;
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join(".claude")).unwrap();
    std::fs::write(
        dir.path().join(".claude/settings.json"),
        r#"{"hooks": {"UserPromptSubmit": [{"hooks": [
            {"type": "command", "command": "grep -q password && { echo 'no secrets in prompts' >&2; exit 2; }; exit 0"},
            {"type": "command", "command": "exit 3"}
        ]}]}}"#,
    )
    .unwrap();
    let mut agent = agent(&server, new_session(dir.path()), dir.path());
    agent.set_hooks(Some(runner(dir.path(), true)));
    let blocked = agent.prompt("my password is hunter2").await.unwrap();
    assert_eq!(blocked.reason, "blocked");
    assert_eq!(blocked.final_text, "no secrets in prompts");
    assert!(server.requests().is_empty());
    assert!(
        !agent_messages(&agent)
            .iter()
            .any(|m| matches!(m, AgentMessage::User(_))),
        "the prompt was not stored"
    );
    let notices = agent.take_hook_notices();
    assert!(
        notices.iter().any(|n| n.text.contains("exit code 3")),
        "{notices:?}"
    );
    let sent = agent.prompt("hello").await.unwrap();
    assert_eq!(sent.final_text, "hi");
}

fn agent_messages(agent: &strata_agent::Agent) -> Vec<AgentMessage> {
    let session = agent.session();
    let Some(leaf) = session.leaf() else {
        return Vec::new();
    };
    let tree = session.tree();
    tree.path_from_root(leaf)
        .into_iter()
        .filter_map(|id| match tree.entry(id).unwrap() {
            Entry::Message(m) => Some(m.message.into_message()),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn session_start_hooks_run_once_per_session_with_its_source_before_the_prompt() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join(".claude")).unwrap();
    std::fs::write(
        dir.path().join(".claude/settings.json"),
        r#"{"hooks": {"SessionStart": [
            {"hooks": [{"command": "echo \"SessionStart source: $(jq -r .source)\""}]},
            {"matcher": "resume", "hooks": [{"command": "echo '{\"hookSpecificOutput\": {\"hookEventName\": \"SessionStart\", \"additionalContext\": \"welcome back\"}}'"}]}
        ]}}"#,
    )
    .unwrap();
    let scenario: String = (0..4)
        .map(|i| format!("[[turn]]\ntext = \"answer {i}\"\n"))
        .collect();
    let server = mock(&scenario).await;
    let mut agent = agent(&server, new_session(dir.path()), dir.path());
    agent.set_hooks(Some(runner(dir.path(), true)));
    let body = |server: &strata_mock::MockServer, index: usize| {
        server.requests()[index].body.clone().unwrap().to_string()
    };
    agent.prompt("one").await.unwrap();
    let first = body(&server, 0);
    assert!(first.contains("SessionStart source: startup"), "{first}");
    assert!(
        !first.contains("welcome back"),
        "the resume matcher: {first}"
    );
    // Before the prompt, at the end.
    assert!(
        first.find("SessionStart source").unwrap() < first.find("\"one\"").unwrap(),
        "{first}"
    );
    agent.prompt("two").await.unwrap();
    assert_eq!(
        body(&server, 1).matches("SessionStart source:").count(),
        1,
        "once per session"
    );
    // `/new`: an empty session is `clear`.
    let first_file = agent.session().path().to_path_buf();
    let other = strata_session::Session::create(
        dir.path().join("s2.jsonl"),
        &dir.path().display().to_string(),
        strata_session::WriteOptions::default(),
    )
    .unwrap();
    drop(agent.switch_session(other));
    agent.prompt("three").await.unwrap();
    assert!(body(&server, 2).contains("SessionStart source: clear"));
    // Taking a session with entries up is `resume`, and the resume group runs too.
    let reopened = strata_session::Session::open_writable(
        &first_file,
        strata_session::WriteOptions::default(),
    )
    .unwrap()
    .session;
    drop(agent.switch_session(reopened));
    agent.prompt("four").await.unwrap();
    let fourth = body(&server, 3);
    assert!(fourth.contains("SessionStart source: resume"), "{fourth}");
    assert!(fourth.contains("welcome back"), "{fourth}");
}
