//! The memory plays as separate processes, configured in `[extensions]` and run by the host's
//! agent against strata-mock: what each writes at a compaction, and what it costs in model
//! requests.

use std::path::Path;

use strata_compaction::CompactionReason;
use strata_mock::{MockConfig, MockServer, Scenario};
use strata_session::{Entry, Session};

/// A user config with `extensions` (TOML) and a small kept tail, a project, a mock playing
/// `scenario`; the setup and its agent.
struct Run {
    _dir: tempfile::TempDir,
    project: std::path::PathBuf,
    server: MockServer,
    setup: strata_host::Setup,
    agent: strata_agent::Agent,
}

async fn run(extensions: &str, scenario: &str) -> Run {
    let dir = tempfile::tempdir().unwrap();
    let global = dir.path().join("user");
    let project = dir.path().join("project");
    std::fs::create_dir_all(&global).unwrap();
    std::fs::create_dir_all(&project).unwrap();
    std::fs::write(project.join("notes.txt"), "the notes").unwrap();
    let sessions = dir.path().join("sessions");
    std::fs::write(
        global.join("config.toml"),
        format!(
            "pi_models = false\nsessions_dir = {sessions:?}\nmax_retries = 0\n[hooks]\nclaude = false\ncodex = false\n[compaction]\nkeep_recent_tokens = 10\n{extensions}"
        ),
    )
    .unwrap();
    let server = MockServer::start(MockConfig::new()).await.unwrap();
    server.load_scenario(Scenario::from_toml(scenario, "memory").unwrap());
    let sources = strata_host::Sources {
        global_dir: Some(global),
        project_dir: project.clone(),
    };
    let overrides = strata_host::Overrides {
        model: Some("anthropic/claude-sonnet-4-5".into()),
        api_key: Some("test-key".into()),
        base_url: Some(server.base_url()),
        ..strata_host::Overrides::default()
    };
    let setup = strata_host::Setup::load_in(sources, project.clone(), &overrides).unwrap();
    let agent = setup.build_agent().unwrap().agent;
    Run {
        _dir: dir,
        project,
        server,
        setup,
        agent,
    }
}

fn extension(name: &str, program: &str) -> String {
    format!("[extensions.{name}]\ncommand = {program:?}\ntimeout = 30\n")
}

/// Reads, a failing command, a write, then prose.
const WORK: &str = r#"
[[turn]]
text = "Let me look."
[[turn.tool_call]]
tool = "read"
args = { path = "notes.txt" }
[[turn]]
[[turn.tool_call]]
tool = "bash"
args = { command = "echo broken >&2; exit 3" }
[[turn]]
[[turn.tool_call]]
tool = "write"
args = { path = "out.txt", content = "done" }
[[turn]]
text = "PROSE-MARKER: I read the notes, the command failed, so I wrote out.txt instead."
[[turn]]
text = "Second answer."
[[turn]]
text = "Third answer."
[[turn]]
text = "Fourth answer."
"#;

/// The last compaction entry on the path: (summary, fromHook).
fn last_compaction(session: &Session) -> Option<(String, Option<bool>)> {
    let leaf = session.leaf()?;
    session
        .tree()
        .path_from_root(leaf)
        .into_iter()
        .filter_map(|id| match session.tree().entry(id).ok()? {
            Entry::Compaction(c) => Some((c.summary, c.from_hook)),
            _ => None,
        })
        .last()
}

fn memory_records(session: &Session) -> Vec<serde_json::Value> {
    let leaf = session.leaf().unwrap();
    session
        .tree()
        .path_from_root(leaf)
        .into_iter()
        .filter_map(|id| match session.tree().entry(id).unwrap() {
            Entry::Custom(c) if c.custom_type == strata_agent::MEMORY_CUSTOM_TYPE => c.data,
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn lossless_compaction_keeps_the_actions_drops_the_prose_and_calls_no_model() {
    let mut r = run(
        &extension("lossless", env!("CARGO_BIN_EXE_strata-play-lossless")),
        WORK,
    )
    .await;
    r.agent
        .prompt("Summarise notes.txt into out.txt")
        .await
        .unwrap();
    r.agent.prompt("Thanks, anything else?").await.unwrap();
    assert!(r.project.join("out.txt").exists());
    let before = r.server.requests().len();
    let id = r
        .agent
        .compact(CompactionReason::Manual, None)
        .await
        .unwrap();
    assert!(id.is_some(), "compacted");
    assert_eq!(r.server.requests().len(), before, "no model call");
    let (summary, from_hook) = last_compaction(r.agent.session()).unwrap();
    assert_eq!(from_hook, Some(true));
    for kept in [
        "Summarise notes.txt into out.txt",
        "## Files read\n- notes.txt",
        "## Files changed\n- out.txt",
        "`echo broken >&2; exit 3` → exit 3",
        "## Errors\n- bash: ",
    ] {
        assert!(summary.contains(kept), "{kept:?} missing from:\n{summary}");
    }
    assert!(!summary.contains("PROSE-MARKER"), "{summary}");
    let records = memory_records(r.agent.session());
    assert_eq!(records.last().unwrap()["slot"], "compaction");
    assert_eq!(records.last().unwrap()["owner"], "lossless");
    // The next request starts from the digest.
    r.agent.prompt("Go on").await.unwrap();
    let body = r
        .server
        .requests()
        .last()
        .unwrap()
        .body
        .clone()
        .unwrap()
        .to_string();
    assert!(body.contains("Session digest"), "{body}");
    assert!(!body.contains("PROSE-MARKER"), "{body}");
    // A second compaction merges into the first digest instead of nesting it.
    r.agent
        .compact(CompactionReason::Manual, None)
        .await
        .unwrap();
    let (again, _) = last_compaction(r.agent.session()).unwrap();
    assert_eq!(
        again.matches(strata_plays::digest::HEADER).count(),
        1,
        "{again}"
    );
    assert!(
        again.contains("Summarise notes.txt into out.txt"),
        "{again}"
    );
    r.setup.extension_set().unwrap().shutdown().await;
}

/// [`WORK`] with a long answer: long enough that a digest (which leaves the model's prose
/// out) is smaller than the messages it replaces; a summary that is not smaller is never
/// taken.
fn wordy_work() -> String {
    WORK.replace(
        "so I wrote out.txt instead.",
        &format!(
            "so I wrote out.txt instead. {}",
            "More prose about the notes. ".repeat(60)
        ),
    )
}

/// Waits for the idle pre-computation (a background task of the agent) to land.
async fn ready(agent: &strata_agent::Agent) -> bool {
    for _ in 0..400 {
        if agent.precomputed_summary_ready() && !agent.precompute_pending() {
            return true;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    false
}

#[tokio::test]
async fn a_summary_precomputed_while_idle_makes_the_compaction_wait_for_no_model() {
    let mut with = run(
        &extension("precompute", env!("CARGO_BIN_EXE_strata-play-precompute")),
        &wordy_work(),
    )
    .await;
    with.agent
        .prompt("Summarise notes.txt into out.txt")
        .await
        .unwrap();
    with.agent.prompt("Thanks, anything else?").await.unwrap();
    assert!(ready(&with.agent).await, "prepared while idle");
    let before = with.server.requests().len();
    with.agent
        .compact(CompactionReason::Manual, None)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        with.server.requests().len(),
        before,
        "the compaction sent nothing"
    );
    let (summary, from_hook) = last_compaction(with.agent.session()).unwrap();
    assert_eq!(from_hook, Some(true));
    assert!(summary.contains("## Task outcomes"), "{summary}");
    assert!(
        summary.contains("Summarise notes.txt into out.txt"),
        "{summary}"
    );
    let records = memory_records(with.agent.session());
    assert_eq!(records.last().unwrap()["slot"], "precompute");
    with.setup.extension_set().unwrap().shutdown().await;

    // Without it, the built-in compaction asks the model at that moment.
    let mut without = run(
        "",
        &format!("{}\n[[turn]]\ntext = \"## Goal\\nsummary\"\n", wordy_work()),
    )
    .await;
    without
        .agent
        .prompt("Summarise notes.txt into out.txt")
        .await
        .unwrap();
    without
        .agent
        .prompt("Thanks, anything else?")
        .await
        .unwrap();
    assert!(!without.agent.precomputed_summary_ready());
    let before = without.server.requests().len();
    without
        .agent
        .compact(CompactionReason::Manual, None)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        without.server.requests().len(),
        before + 1,
        "one summary request"
    );
}

const NOTE_WORK: &str = r#"
[[turn]]
[[turn.tool_call]]
tool = "write"
args = { path = "src/parser.rs", content = "fn parse() {}" }
[[turn]]
[[turn.tool_call]]
tool = "bash"
args = { command = "exit 1" }
[[turn]]
text = "PROSE-MARKER: wrote the parser, the check failed."
[[turn]]
text = "Docs next."
[[turn]]
text = "After the compaction."
"#;

#[tokio::test]
async fn the_sticky_note_stays_at_the_end_and_is_the_summary_at_a_compaction() {
    let mut r = run(
        &extension("note", env!("CARGO_BIN_EXE_strata-play-sticky-note")),
        NOTE_WORK,
    )
    .await;
    std::fs::create_dir_all(r.project.join("src")).unwrap();
    r.agent.prompt("Fix the parser").await.unwrap();
    r.agent.prompt("Now the docs").await.unwrap();
    // The second prompt's request ends with the updated note, after the prompt; everything
    // before it is the previous request's messages, unchanged (cache markers aside).
    let body = r.server.requests()[3].body.clone().unwrap();
    let previous = r.server.requests()[2].body.clone().unwrap();
    let messages = |body: &serde_json::Value| -> Vec<serde_json::Value> {
        let text = body["messages"]
            .to_string()
            .replace(r#","cache_control":{"type":"ephemeral","ttl":"5m"}"#, "");
        serde_json::from_str(&text).unwrap()
    };
    let (now, before) = (messages(&body), messages(&previous));
    assert_eq!(now[..before.len()], before[..], "the prefix moved");
    assert_eq!(body["system"], previous["system"]);
    assert_eq!(body["tools"], previous["tools"]);
    let last = body["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .to_string();
    assert!(last.contains("# Sticky note"), "{last}");
    assert!(last.contains("Goal: Fix the parser"), "{last}");
    assert!(last.contains("Files changed: src/parser.rs"), "{last}");
    assert!(last.contains("`exit 1` failed"), "{last}");
    let before = r.server.requests().len();
    r.agent
        .compact(CompactionReason::Manual, None)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(r.server.requests().len(), before, "no re-summarising");
    let (summary, from_hook) = last_compaction(r.agent.session()).unwrap();
    assert_eq!(from_hook, Some(true));
    assert!(
        summary.starts_with("# Sticky note\nGoal: Fix the parser"),
        "{summary}"
    );
    assert!(!summary.contains("PROSE-MARKER"), "{summary}");
    // The note did not change since the compaction: not added at the end again (the copy
    // in the kept tail and the summary are all there is).
    r.agent.prompt("Now the docs").await.unwrap();
    let body = r.server.requests().last().unwrap().body.clone().unwrap();
    let last = body["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .to_string();
    assert!(!last.contains("Sticky note"), "{last}");
    assert_eq!(
        body.to_string().matches("# Sticky note").count(),
        2,
        "{body}"
    );
    r.setup.extension_set().unwrap().shutdown().await;
}

#[test]
fn a_digest_reads_its_own_text_back() {
    let messages: Vec<serde_json::Value> = serde_json::from_str(
        r#"[
        {"role":"user","content":"first\nrequest"},
        {"role":"assistant","content":[{"type":"text","text":"prose"},
          {"type":"toolCall","id":"1","name":"read","arguments":{"path":"a.rs"}}]},
        {"role":"toolResult","toolCallId":"1","toolName":"read","content":[{"type":"text","text":"x"}],"isError":false},
        {"role":"bashExecution","command":"make","exitCode":2}
    ]"#,
    )
    .unwrap();
    let mut digest = strata_plays::digest::Digest::default();
    digest.absorb(&messages, false);
    let text = digest.render();
    let back = strata_plays::digest::Digest::continuing(Some(&format!(
        "{text}\n\n<read-files>\na.rs\n</read-files>"
    )));
    assert_eq!(back, digest, "{text}");
    assert!(!text.contains("prose"));
    assert!(Path::new("a.rs").is_relative());
}
