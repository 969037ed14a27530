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
