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
    let text = serde_json::to_string_pretty(&entries).unwrap() + "\n";
    let path = format!(
        "{}/../../conformance/fixtures/responses-beta-bodies.json",
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
