//! The bodies and beta headers of the adapter's newest shapes, kept in
//! `conformance/fixtures/anthropic-beta-bodies.json` for the vendor SDK to judge
//! (`conformance/test_request_bodies.py`). The test fails when the adapter's output and the
//! file differ; `STRATA_BLESS=1` rewrites the file.

use futures::StreamExt;
use serde_json::{Value, json};
use strata_anthropic::AnthropicProvider;
use strata_mock::{MockConfig, MockServer};
use strata_provider::transport::{HttpClient, TransportConfig};
use strata_provider::{
    ApiKey, Catalog, ContentBlock, Message, Provider, Request, Role, StreamOptions, SystemBlock,
    ThinkingLevel, ToolDefinition,
};

fn request(model: &str) -> Request {
    let mut r = Request::new(model);
    r.tools = vec![ToolDefinition {
        name: "read".into(),
        description: "Read a file".into(),
        parameters: json!({"type": "object", "properties": {"path": {"type": "string"}}}),
        defer_loading: false,
    }];
    r.system = vec![SystemBlock::text("You are strata, a careful coding agent.")];
    r.messages = vec![Message::user_text("Look at a.txt")];
    r.thinking = ThinkingLevel::High;
    r.max_tokens = Some(1024);
    r
}

fn entry(name: &str, http: &strata_provider::transport::HttpRequest) -> Value {
    let body: Value = serde_json::from_slice(&http.body).unwrap();
    let betas: Vec<&str> = http
        .header_value("anthropic-beta")
        .map(|v| v.split(',').collect())
        .unwrap_or_default();
    json!({"name": name, "anthropic_beta": betas, "body": body})
}

#[tokio::test]
async fn the_beta_bodies_the_sdk_judges_are_what_the_adapter_builds() {
    let server = MockServer::start(MockConfig::new()).await.unwrap();
    let catalog = Catalog::builtin().unwrap();
    let threaded = catalog.provider("anthropic").unwrap();
    // The shapes below without a thread; the thread's own shapes come last.
    let mut row = threaded.clone();
    row.features.message_threads = false;
    let model = catalog.model("anthropic", "claude-opus-4-8").unwrap();
    let client = HttpClient::new(&TransportConfig::default()).unwrap();
    let adapter = AnthropicProvider::for_row(&row, client.clone());
    let options = StreamOptions {
        base_url: Some(server.base_url()),
        api_key: Some(ApiKey::new("sk-ant-test")),
        session_id: Some("fixture".into()),
        ..StreamOptions::default()
    };
    let first = request(&model.id);
    let mut entries = vec![entry(
        "first request: diagnostics opt-in",
        &adapter.http_request(&model, &first, &options).unwrap(),
    )];
    let _: Vec<_> = adapter
        .stream(&model, &first, &options)
        .await
        .unwrap()
        .collect()
        .await;

    // The next turn at a lower effort, with a tool withdrawn: diagnosis against the first
    // response, the effort said in a system message, the tool change in another.
    let mut second = first.clone();
    second
        .messages
        .push(Message::assistant_text("a.txt holds one line."));
    second.messages.push(Message::user_text("Now briefly."));
    second.messages.push(Message {
        role: Role::System,
        content: vec![ContentBlock::ToolRemoval {
            names: vec!["read".into()],
        }],
    });
    second.thinking = ThinkingLevel::Low;
    entries.push(entry(
        "effort change, tool removal, diagnosis",
        &adapter.http_request(&model, &second, &options).unwrap(),
    ));
    let mut warm = second.clone();
    warm.max_tokens = Some(0);
    entries.push(entry(
        "pre-warm",
        &adapter.http_request(&model, &warm, &options).unwrap(),
    ));

    // A tool added mid-session that the tools chapter does not declare: defined inline.
    let mut inline = second.clone();
    inline.messages.pop();
    inline.messages.push(Message {
        role: Role::System,
        content: vec![ContentBlock::ToolAddition {
            tools: vec![ToolDefinition {
                name: "grep".into(),
                description: "Search files".into(),
                parameters: json!({"type": "object", "properties": {"pattern": {"type": "string"}}}),
                defer_loading: false,
            }],
        }],
    });
    entries.push(entry(
        "tool added mid-session, defined inline",
        &adapter.http_request(&model, &inline, &options).unwrap(),
    ));

    // A one-turn reminder: shown until the next user message, kept in the prefix after it.
    let mut reminder = first.clone();
    reminder.messages.push(Message {
        role: Role::System,
        content: vec![ContentBlock::text(
            "Reminder: the tests are failing right now.",
        )],
    });
    reminder.transient = vec![1];
    entries.push(entry(
        "one-turn reminder: clear_at next_user_message",
        &adapter.http_request(&model, &reminder, &options).unwrap(),
    ));

    // A message thread: the first request opens it, the next sends only what follows the
    // answer, without system and tools.
    let threads = AnthropicProvider::for_row(threaded, client);
    let options = StreamOptions {
        session_id: Some("fixture-thread".into()),
        ..options
    };
    entries.push(entry(
        "message thread: create",
        &threads.http_request(&model, &first, &options).unwrap(),
    ));
    let answered: Vec<_> = threads
        .stream(&model, &first, &options)
        .await
        .unwrap()
        .collect()
        .await;
    let Some(strata_provider::Event::Done { message, .. }) = answered.last() else {
        panic!("no answer: {answered:?}");
    };
    let mut next = first.clone();
    next.messages.push(message.clone());
    next.messages.push(Message::user_text("Now briefly."));
    entries.push(entry(
        "message thread: continue",
        &threads.http_request(&model, &next, &options).unwrap(),
    ));

    let text = serde_json::to_string_pretty(&entries).unwrap() + "\n";
    let path = format!(
        "{}/../../conformance/fixtures/anthropic-beta-bodies.json",
        env!("CARGO_MANIFEST_DIR")
    );
    if std::env::var_os("STRATA_BLESS").is_some() {
        std::fs::write(&path, &text).unwrap();
    }
    let kept = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        kept == text,
        "{path} is not what the adapter builds now; rerun with STRATA_BLESS=1"
    );
}
