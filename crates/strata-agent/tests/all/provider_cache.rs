//! The providers' cache features through the whole path (agent, Anthropic adapter,
//! strata-mock): the provider's own miss reason stored with the usage and shown beside
//! strata's classification; keep-warm pings that generate nothing.

use std::sync::Arc;

use strata_agent::{Agent, AgentConfig, CacheSettings};
use strata_anthropic::AnthropicProvider;
use strata_provider::transport::{HttpClient, TransportConfig};
use strata_provider::{ApiKey, Catalog, StreamOptions};
use strata_session::{AgentMessage, Entry, Session};
use strata_tools::ToolSet;

use crate::mock::{mock, new_session};

const TWO_ANSWERS: &str =
    "[[turn]]\ntext = \"First answer.\"\n[[turn]]\ntext = \"Second answer.\"\n";

/// An agent on `server` whose system prompt ends with `appended`; the row folds system changes
/// into the system chapter (no reminders), so a changed section breaks the cache.
fn agent(
    server: &strata_mock::MockServer,
    provider: Arc<AnthropicProvider>,
    session: Session,
    cwd: &std::path::Path,
    appended: &str,
) -> Agent {
    let catalog = Catalog::builtin().unwrap();
    let row = catalog.provider("anthropic").unwrap();
    let model = catalog.model("anthropic", "claude-sonnet-4-5").unwrap();
    let mut capabilities = row.capabilities(&model.id);
    assert!(capabilities.cache_diagnostics);
    capabilities.system_reminders = false;
    let config = AgentConfig {
        cwd: cwd.to_path_buf(),
        capabilities,
        api: "anthropic-messages".into(),
        model,
        max_tokens: Some(4096),
        global_dir: None,
        custom_intro: None,
        append_system_prompt: Some(appended.repeat(200)),
        stream: StreamOptions {
            base_url: Some(server.base_url()),
            api_key: Some(ApiKey::new("test-key")),
            ..StreamOptions::default()
        },
        render_policy: strata_context::RenderPolicy::Strata,
        compaction: strata_compaction::CompactionSettings::default(),
        summary_model: None,
        cache: CacheSettings::default(),
        tool_settings: strata_tools::ToolSettings::default(),
    };
    Agent::new(session, provider, ToolSet::default_set(), config)
}

#[tokio::test]
async fn a_forced_break_is_stored_with_the_providers_reason_and_shown_beside_strata() {
    let dir = tempfile::tempdir().unwrap();
    let server = mock(TWO_ANSWERS).await;
    let provider = Arc::new(AnthropicProvider::for_row(
        Catalog::builtin().unwrap().provider("anthropic").unwrap(),
        HttpClient::new(&TransportConfig::default()).unwrap(),
    ));
    let mut first = agent(
        &server,
        provider.clone(),
        new_session(dir.path()),
        dir.path(),
        "Answer carefully. ",
    );
    first.prompt("one").await.unwrap();
    let path = first.session().path().to_path_buf();
    drop(first);

    // The same session, its appended system section rewritten: the system chapter changes.
    let session = Session::open_writable(&path, strata_session::WriteOptions::default())
        .unwrap()
        .session;
    let mut second = agent(&server, provider, session, dir.path(), "Answer tersely. ");
    assert_eq!(
        second.prompt("two").await.unwrap().final_text,
        "Second answer."
    );
    let records = server.requests();
    assert_eq!(records.len(), 2);
    let sent = records[1].body.as_ref().unwrap();
    assert_eq!(
        sent["diagnostics"]["previous_message_id"],
        serde_json::json!("msg_mock00000000000000000001")
    );

    // The answer's usage keeps the provider's reason.
    let tree = second.session().tree();
    let answers: Vec<_> = tree
        .iter()
        .filter_map(|entry| match entry.entry().unwrap() {
            Entry::Message(m) => match m.message.into_message() {
                AgentMessage::Assistant(a) => Some(a),
                _ => None,
            },
            _ => None,
        })
        .collect();
    assert_eq!(answers.len(), 2);
    assert_eq!(strata_accounting::stored_diagnosis(&answers[0].usage), None);
    let stored = strata_accounting::stored_diagnosis(&answers[1].usage).unwrap();
    assert_eq!(stored.reason, "system_changed");
    assert!(stored.missed_tokens.unwrap() > 600, "{stored:?}");

    // The cache report puts it beside strata's own classification, and they agree.
    let records = strata_accounting::records(tree);
    let report =
        strata_accounting::cache_report(Some(tree), &records, &Catalog::builtin().unwrap());
    assert_eq!(report.breaks.len(), 1, "{report:?}");
    assert_eq!(
        report.breaks[0]
            .provider
            .as_ref()
            .map(|d| d.reason.as_str()),
        Some("system_changed")
    );
    assert_eq!(report.disagreements, []);
}

/// Long enough that the first request passes the model's 1,024-token cache minimum.
fn long_prompt() -> String {
    "Read the parser and list every odd corner case you find in it. ".repeat(120)
}

#[tokio::test]
async fn a_pre_warm_ping_costs_no_output_tokens_and_says_its_price() {
    let dir = tempfile::tempdir().unwrap();
    let server = mock(TWO_ANSWERS).await;
    let provider = Arc::new(AnthropicProvider::for_row(
        Catalog::builtin().unwrap().provider("anthropic").unwrap(),
        HttpClient::new(&TransportConfig::default()).unwrap(),
    ));
    let mut agent = agent(
        &server,
        provider,
        new_session(dir.path()),
        dir.path(),
        "Answer carefully. ",
    );
    agent.prompt(long_prompt()).await.unwrap();
    let plan = agent
        .keep_warm_plan()
        .expect("a 5-minute cache is kept warm");
    assert_eq!(plan.output_tokens, 0, "the row warms with max_tokens: 0");
    server.advance_clock(plan.interval);
    let (usage, cost) = agent.keep_warm().await.unwrap().expect("a ping");
    let records = server.requests();
    let [first, ping] = records.as_slice() else {
        panic!("{} requests", records.len());
    };
    assert_eq!(ping.body.as_ref().unwrap()["max_tokens"], 0);
    assert_eq!(ping.output_tokens, 0);
    let prompt = first.cache.unwrap().input_tokens;
    assert_eq!(
        ping.cache.unwrap().cache_read,
        prompt,
        "the whole prefix read"
    );
    assert_eq!(usage.output, 0);
    assert_eq!(usage.cache_read, prompt);
    // The price the plan states is the price billed.
    let prices = &agent.config().model.prices;
    assert!((plan.ping_cost(prompt, prices) - cost.total()).abs() < 1e-12);
    assert!(cost.output == 0.0 && cost.total() > 0.0);
    // The script is untouched: the next prompt gets the second answer.
    assert_eq!(
        agent.prompt("two").await.unwrap().final_text,
        "Second answer."
    );
}

const THREE_ANSWERS: &str = "[[turn]]\ntext = \"First answer.\"\n[[turn]]\ntext = \"Second answer.\"\n[[turn]]\ntext = \"Third answer.\"\n";

/// Each message of the session's path as (role, text): what the conversation holds, without
/// ids and times.
fn transcript(session: &Session) -> Vec<(String, String)> {
    let tree = session.tree();
    tree.path_from_root(session.leaf().unwrap())
        .into_iter()
        .filter_map(|id| match tree.entry(id).unwrap() {
            Entry::Message(m) => match m.message.into_message() {
                AgentMessage::User(u) => Some(("user".to_owned(), u.content.text_joined(" "))),
                AgentMessage::Assistant(a) => Some((
                    "assistant".to_owned(),
                    strata_session::join_text(&a.content, " "),
                )),
                _ => None,
            },
            _ => None,
        })
        .collect()
}

/// Three prompts on `server`, the mock's clock moved past a thread's five minutes before the
/// third when `expire`; returns the session's transcript and its file's text.
async fn three_prompts(
    server: &strata_mock::MockServer,
    threads: bool,
    expire: bool,
) -> (Vec<(String, String)>, String) {
    let dir = tempfile::tempdir().unwrap();
    let catalog = Catalog::builtin().unwrap();
    let mut row = catalog.provider("anthropic").unwrap().clone();
    assert!(
        row.capabilities("claude-sonnet-4-5").message_threads,
        "on by default"
    );
    row.features.message_threads = threads;
    let provider = Arc::new(AnthropicProvider::for_row(
        &row,
        HttpClient::new(&TransportConfig::default()).unwrap(),
    ));
    let mut agent = agent(
        server,
        provider,
        new_session(dir.path()),
        dir.path(),
        "Answer carefully. ",
    );
    for (prompt, answer) in [("one", "First answer."), ("two", "Second answer.")] {
        assert_eq!(agent.prompt(prompt).await.unwrap().final_text, answer);
    }
    if expire {
        server.advance_clock(std::time::Duration::from_secs(
            strata_mock::thread::LIFETIME_MS / 1000 + 60,
        ));
    }
    assert_eq!(
        agent.prompt("three").await.unwrap().final_text,
        "Third answer."
    );
    let text = std::fs::read_to_string(agent.session().path()).unwrap();
    (transcript(agent.session()), text)
}

#[tokio::test]
async fn a_thread_that_expires_mid_session_is_replayed_in_full_and_the_session_goes_on() {
    let server = mock(THREE_ANSWERS).await;
    let (threaded, file) = three_prompts(&server, true, true).await;
    let records = server.requests();
    let statuses: Vec<u16> = records.iter().map(|r| r.status).collect();
    // one (create), two (continue), three (continue refused: expired), three again in full.
    assert_eq!(statuses, [200, 200, 404, 200], "{records:#?}");
    let body = |i: usize| records[i].body.clone().unwrap();
    assert_eq!(body(0)["thread"], serde_json::json!({"type": "create"}));
    assert_eq!(
        records[1].continued.as_deref(),
        Some("msg_mock00000000000000000001")
    );
    // The continue sends neither system nor tools, only what follows the first answer; the
    // mock records the conversation it stands for.
    let sent = records[1].thread_body.clone().unwrap();
    assert!(sent.get("system").is_none() && sent.get("tools").is_none());
    assert_eq!(sent["messages"].as_array().unwrap().len(), 1, "{sent}");
    assert_eq!(
        body(1)["messages"].as_array().unwrap().len(),
        3,
        "{}",
        body(1)
    );
    assert!(
        records[1].body_bytes * 4 < records[0].body_bytes,
        "{records:#?}"
    );
    assert!(
        records[2]
            .error
            .as_deref()
            .unwrap()
            .contains("thread_not_found")
    );
    // The replay is the whole conversation again, opening a new thread.
    assert_eq!(body(3)["thread"], serde_json::json!({"type": "create"}));
    assert!(body(3).get("system").is_some());
    assert_eq!(body(3)["messages"].as_array().unwrap().len(), 5);
    assert_eq!(records[3].continued, None);

    // The session holds the same conversation a run without threads writes, and no trace of
    // the thread.
    let plain_server = mock(THREE_ANSWERS).await;
    let (plain, _) = three_prompts(&plain_server, false, true).await;
    assert!(
        plain_server
            .requests()
            .iter()
            .all(|r| r.status == 200 && r.body.as_ref().unwrap().get("thread").is_none())
    );
    assert_eq!(threaded, plain);
    assert_eq!(threaded.len(), 6);
    assert!(!file.contains("\"thread\"") && !file.contains("thread_not_found"));
}

/// Prompt tokens of a chapter, read, written or not cached.
fn chapter_tokens(split: &strata_mock::Split) -> u64 {
    split.read + split.written + split.uncached
}

/// With the table's defaults on a row that has both (Opus 4.8: message threads and inline
/// tool definitions on), a compaction keeps the cache: its summary request reads the whole
/// previous prompt, the first request after it reads the tools and system chapters, and a
/// thread that expires later is replayed in full without losing the turn.
#[tokio::test]
async fn with_threads_and_inline_tools_a_compaction_keeps_the_prefix_and_an_expired_thread_replays()
{
    let catalog = Catalog::builtin().unwrap();
    let row = catalog.provider("anthropic").unwrap();
    let model = catalog.model("anthropic", "claude-opus-4-8").unwrap();
    let capabilities = row.capabilities(&model.id);
    assert!(
        capabilities.message_threads && capabilities.inline_tools,
        "on by default"
    );
    let profile = strata_mock::ModelProfile::from_capabilities(
        strata_mock::Protocol::Anthropic,
        &model.id,
        &capabilities,
    );
    let server = strata_mock::MockServer::start(strata_mock::MockConfig::new().with_model(
        strata_mock::ModelRule {
            protocol: Some(strata_mock::Protocol::Anthropic),
            pattern: model.id.clone(),
            profile,
        },
    ))
    .await
    .unwrap();
    server.load_scenario(
        // A long first answer, so that the summary is smaller than what it replaces.
        strata_mock::Scenario::from_toml(
            &format!(
                "playback = \"sequence\"\n\
                 [[turn]]\ntext = \"First answer.{}\"\n[[turn]]\ntext = \"Second answer.\"\n\
                 [[turn]]\ntext = \"Third answer.\"\n[[turn]]\ntext = \"Fourth answer.\"\n\
                 [[summary]]\ntext = \"## Goal\\nAnswer the prompts.\"\n",
                " More.".repeat(100)
            ),
            "test",
        )
        .unwrap(),
    );
    let dir = tempfile::tempdir().unwrap();
    let provider = Arc::new(AnthropicProvider::for_row(
        row,
        HttpClient::new(&TransportConfig::default()).unwrap(),
    ));
    let config = AgentConfig {
        cwd: dir.path().to_path_buf(),
        capabilities,
        api: "anthropic-messages".into(),
        model,
        max_tokens: Some(4096),
        global_dir: None,
        custom_intro: None,
        append_system_prompt: Some("Answer carefully. ".repeat(200)),
        stream: StreamOptions {
            base_url: Some(server.base_url()),
            api_key: Some(ApiKey::new("test-key")),
            ..StreamOptions::default()
        },
        render_policy: strata_context::RenderPolicy::Strata,
        // Small, so that the short conversation has something to summarise.
        compaction: strata_compaction::CompactionSettings {
            keep_recent_tokens: 5,
            ..strata_compaction::CompactionSettings::default()
        },
        summary_model: None,
        cache: CacheSettings::default(),
        tool_settings: strata_tools::ToolSettings::default(),
    };
    let mut agent = Agent::new(
        new_session(dir.path()),
        provider,
        ToolSet::default_set(),
        config,
    );
    assert!(
        agent
            .prompt("one")
            .await
            .unwrap()
            .final_text
            .starts_with("First answer.")
    );
    assert_eq!(
        agent.prompt("two").await.unwrap().final_text,
        "Second answer."
    );
    agent
        .compact(strata_compaction::CompactionReason::Manual, None)
        .await
        .unwrap()
        .expect("something to summarise");
    assert_eq!(
        agent.prompt("three").await.unwrap().final_text,
        "Third answer."
    );
    let records = server.requests();
    let summaries: Vec<usize> = (0..records.len())
        .filter(|&i| records[i].summary.is_some())
        .collect();
    assert!(!summaries.is_empty(), "{records:#?}");
    let (first_summary, last_summary) = (summaries[0], summaries[summaries.len() - 1]);
    // The summary request reads everything the last turn's request held (a continue would
    // have dropped its breakpoint and read only the tools and system chapters).
    let before = records[first_summary - 1].cache.unwrap();
    let summary = records[first_summary].cache.unwrap();
    assert_eq!(summary.cache_read, before.input_tokens, "{records:#?}");
    // The first request after the compaction opens a new thread with a full request whose
    // tools and system chapters are those cached before it: it reads them.
    let after = &records[last_summary + 1];
    assert_eq!(
        after.body.as_ref().unwrap()["thread"],
        serde_json::json!({"type": "create"})
    );
    let cache = after.cache.unwrap();
    let prefix = chapter_tokens(&cache.tools) + chapter_tokens(&cache.system);
    assert!(cache.cache_read > 0, "{records:#?}");
    assert_eq!(cache.cache_read, prefix, "{records:#?}");
    assert_eq!(
        (chapter_tokens(&cache.tools), chapter_tokens(&cache.system)),
        (
            chapter_tokens(&before.tools),
            chapter_tokens(&before.system)
        ),
        "the compaction left the tools and system chapters as they were"
    );

    // The thread expires: the continue is refused, the turn goes again in full and answers.
    let sent = records.len();
    server.advance_clock(std::time::Duration::from_secs(
        strata_mock::thread::LIFETIME_MS / 1000 + 60,
    ));
    assert_eq!(
        agent.prompt("four").await.unwrap().final_text,
        "Fourth answer."
    );
    let records = server.requests();
    let statuses: Vec<u16> = records[sent..].iter().map(|r| r.status).collect();
    assert_eq!(statuses, [404, 200], "{records:#?}");
    assert!(
        records[sent]
            .error
            .as_deref()
            .is_some_and(|e| e.contains("thread_not_found"))
    );
    assert_eq!(
        records[sent + 1].body.as_ref().unwrap()["thread"],
        serde_json::json!({"type": "create"})
    );
    let texts: Vec<String> = transcript(agent.session())
        .into_iter()
        .map(|(_, text)| text)
        .collect();
    assert!(
        texts.ends_with(&[
            "three".to_owned(),
            "Third answer.".to_owned(),
            "four".to_owned(),
            "Fourth answer.".to_owned()
        ]),
        "{texts:?}"
    );
}
