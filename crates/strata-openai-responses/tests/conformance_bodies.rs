//! The bodies of the adapter's newest shapes, kept in
//! `conformance/fixtures/responses-beta-bodies.json` for openai-python to judge
//! (`conformance/test_request_bodies.py`). The test fails when the adapter's output and the
//! file differ; `STRATA_BLESS=1` rewrites the file.

use serde_json::{Value, json};
use strata_mock::{MockConfig, MockServer};
use strata_provider::{Message, Provider, StreamOptions, ThinkingLevel};

use crate::support::{collect, openai, options};

fn entry(name: &str, http: &strata_provider::transport::HttpRequest) -> Value {
    let body: Value = serde_json::from_slice(&http.body).unwrap();
    json!({"name": name, "body": body})
}

#[tokio::test]
async fn the_beta_bodies_the_sdk_judges_are_what_the_adapter_builds() {
    let server = MockServer::start(MockConfig::new()).await.unwrap();
    let (provider, mut model) = openai(0);
    model.id = "gpt-6".into();
    let options = StreamOptions {
        session_id: Some("fixture".into()),
        ..options(&server.base_url())
    };
    let mut first = strata_provider::Request::new("gpt-6");
    first.system.push(strata_provider::SystemBlock::text(
        "You are a careful coding agent.",
    ));
    first.messages.push(Message::user_text("Look at a.txt"));
    first.thinking = ThinkingLevel::High;
    collect(provider.stream(&model, &first, &options).await.unwrap()).await;
    let mut second = first.clone();
    second
        .messages
        .push(Message::assistant_text("a.txt holds one line."));
    second.messages.push(Message::user_text("Now briefly."));
    second.thinking = ThinkingLevel::Low;
    let mut entries = vec![entry(
        "effort change and diagnosis",
        &provider.http_request(&model, &second, &options).unwrap(),
    )];
    let mut warm = second.clone();
    warm.max_tokens = Some(0);
    entries.push(entry(
        "pre-warm",
        &provider.http_request(&model, &warm, &options).unwrap(),
    ));
    // A tool arriving mid-session (an MCP server's): an `additional_tools` item.
    let mut added = second.clone();
    added.messages.push(Message {
        role: strata_provider::Role::System,
        content: vec![strata_provider::ContentBlock::ToolAddition {
            tools: vec![grep()],
        }],
    });
    added.tools.push(strata_provider::ToolDefinition {
        defer_loading: true,
        ..grep()
    });
    entries.push(entry(
        "additional tools",
        &provider.http_request(&model, &added, &options).unwrap(),
    ));
    blessed("responses-beta-bodies.json", &entries);
}

fn grep() -> strata_provider::ToolDefinition {
    strata_provider::ToolDefinition {
        name: "grep".into(),
        description: "Search files".into(),
        parameters: json!({"type": "object", "properties": {"pattern": {"type": "string"}}}),
        defer_loading: false,
    }
}

/// Compares `entries` with the fixture `name` (rewritten under `STRATA_BLESS`).
fn blessed(name: &str, entries: &[Value]) {
    let text = serde_json::to_string_pretty(entries).unwrap() + "\n";
    let path = format!(
        "{}/../../conformance/fixtures/{name}",
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

/// The `response.create` messages of a tool loop on the socket, as the mock received them: the
/// first with the whole input, the next with the tool result after `previous_response_id`.
#[tokio::test]
async fn the_socket_messages_the_sdk_judges_are_what_the_adapter_sends() {
    let server = MockServer::start(MockConfig::new()).await.unwrap();
    server.load_scenario(
        strata_mock::Scenario::from_toml(
            "[[turn]]\ntext = \"Reading.\"\n[[turn.tool_call]]\ntool = \"grep\"\nargs = { pattern = \"x\" }\n[[turn]]\ntext = \"Found.\"\n",
            "inline",
        )
        .unwrap(),
    );
    let (provider, mut model) = openai(0);
    model.id = "gpt-6".into();
    let options = StreamOptions {
        session_id: Some("socket-fixture".into()),
        ..options(&server.base_url())
    };
    let mut request = strata_provider::Request::new("gpt-6");
    request.system.push(strata_provider::SystemBlock::text(
        "You are a careful coding agent.",
    ));
    request.tools.push(grep());
    request.messages.push(Message::user_text("Find x."));
    request.thinking = ThinkingLevel::High;
    let reply = provider.complete(&model, &request, &options).await.unwrap();
    let (call, _, _) = reply.message.tool_calls().next().unwrap();
    let call = call.to_owned();
    request.messages.push(reply.message);
    request.messages.push(Message {
        role: strata_provider::Role::User,
        content: vec![strata_provider::ContentBlock::ToolResult {
            tool_call_id: call,
            content: vec![strata_provider::ToolResultContent::Text {
                text: "a.txt: x".into(),
            }],
            is_error: false,
        }],
    });
    provider.complete(&model, &request, &options).await.unwrap();
    let records = server.requests();
    assert!(records.iter().all(|r| r.websocket && r.status == 200));
    let entries: Vec<Value> = ["whole input", "new items after the previous response"]
        .iter()
        .zip(&records)
        .map(|(name, record)| json!({"name": name, "message": record.body.clone().unwrap()}))
        .collect();
    assert_eq!(entries.len(), 2);
    blessed("responses-socket-messages.json", &entries);
}
