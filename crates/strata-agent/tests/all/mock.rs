//! The agent against strata-mock's scripted model over real HTTP, through the Anthropic
//! adapter: the same path a user's run takes.

use std::sync::Arc;
use std::time::Duration;

use strata_agent::{Agent, AgentConfig, AgentEvent, RetryEvents};
use strata_anthropic::AnthropicProvider;
use strata_mock::{Fault, FaultKind, MockConfig, MockServer, Scenario};
use strata_provider::transport::{HttpClient, RetryPolicy, TransportConfig};
use strata_provider::{ApiKey, Catalog, StreamOptions};
use strata_session::{AgentMessage, Entry, Session, StopReason, WriteOptions};
use strata_tools::ToolSet;

async fn mock(scenario: &str) -> MockServer {
    let server = MockServer::start(MockConfig::new()).await.unwrap();
    server.load_scenario(Scenario::from_toml(scenario, "test").unwrap());
    server
}

fn agent(server: &MockServer, session: Session, cwd: &std::path::Path) -> Agent {
    agent_reporting_retries(server, session, cwd, RetryEvents::new())
}

fn agent_reporting_retries(
    server: &MockServer,
    session: Session,
    cwd: &std::path::Path,
    retries: RetryEvents,
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
        compaction: strata_compaction::CompactionSettings::default(),
        summary_model: None,
    };
    Agent::new(session, Arc::new(provider), ToolSet::default_set(), config)
        .with_retry_events(retries)
}

fn new_session(dir: &std::path::Path) -> Session {
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
            Entry::Message(m) => Some(m.message),
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
        .find(|e| matches!(e.kind(), strata_session::EntryKind::System))
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
