//! Every capability row (and per-model override) that speaks Anthropic Messages builds a
//! valid request: base URL, auth header, field names.

use std::sync::Arc;

use serde_json::Value;
use strata_anthropic::AnthropicProvider;
use strata_provider::transport::{HttpClient, RetryPolicy, TransportConfig, expand_url};
use strata_provider::{
    AuthScheme, Catalog, Message, Model, Protocol, Request, StreamOptions, SystemBlock,
};

fn fake_env(name: &str) -> Option<String> {
    Some(format!("value-of-{name}"))
}

/// One model of `row` whose endpoint speaks Anthropic Messages (from the catalog, or a
/// hand-made one for overrides whose models the catalog lacks).
fn anthropic_models(catalog: &Catalog) -> Vec<(String, Model)> {
    let mut out = Vec::new();
    for row in catalog.providers() {
        if !row.protocols().contains(&Protocol::AnthropicMessages) {
            continue;
        }
        let found = catalog
            .models_of(&row.id)
            .find(|m| row.endpoint(&m.id).protocol == Protocol::AnthropicMessages)
            .cloned();
        let model = found.or_else(|| {
            // An override routes some models here: make one matching its first pattern.
            let pattern = row
                .overrides
                .iter()
                .find(|o| o.protocol == Some(Protocol::AnthropicMessages))
                .and_then(|o| o.models.first())?;
            let id = pattern.replace('*', "x");
            Some(Model {
                provider: row.id.clone(),
                id,
                name: "test".into(),
                context_window: 200_000,
                max_output: 8192,
                input: vec![],
                reasoning: false,
                prices: Default::default(),
            })
        });
        if let Some(model) = model {
            out.push((row.id.clone(), model));
        }
    }
    out
}

#[test]
fn every_anthropic_row_builds_a_valid_request() {
    let catalog = Catalog::builtin().unwrap();
    let models = anthropic_models(&catalog);
    assert!(models.len() >= 12, "only {} rows: {models:?}", models.len());
    let client = client();
    for (provider, model) in models {
        let row = catalog.provider(&provider).unwrap();
        let adapter = AnthropicProvider::for_row(row, client.clone()).with_env(Arc::new(fake_env));
        let mut request = Request::new(model.id.clone());
        request.system.push(SystemBlock::text("You are strata."));
        request.messages.push(Message::user_text("hi"));
        let http = adapter
            .build_http_request(&model, &request, &StreamOptions::default())
            .unwrap_or_else(|e| panic!("{provider}/{}: {e}", model.id));
        let endpoint = row.endpoint(&model.id);
        let base = expand_url(&endpoint.base_url, fake_env).unwrap();
        assert!(
            http.url.starts_with(base.trim_end_matches('/')) && http.url.ends_with("/v1/messages"),
            "{provider}: {}",
            http.url
        );
        let key = format!("value-of-{}", endpoint.auth_env[0]);
        match endpoint.auth {
            AuthScheme::XApiKey => assert_eq!(
                http.header_value("x-api-key"),
                Some(key.as_str()),
                "{provider}"
            ),
            AuthScheme::Bearer => assert_eq!(
                http.header_value("authorization"),
                Some(format!("Bearer {key}").as_str()),
                "{provider}"
            ),
            other => panic!("{provider}: unexpected auth {other:?}"),
        }
        assert_eq!(http.header_value("anthropic-version"), Some("2023-06-01"));
        assert_eq!(http.secrets.len(), 1);
        let body: Value = serde_json::from_slice(&http.body).unwrap();
        assert_eq!(body["model"], Value::String(model.id.clone()), "{provider}");
        assert!(body["max_tokens"].as_u64().unwrap() > 0, "{provider}");
        assert_eq!(body["stream"], Value::Bool(true));
        assert_eq!(body["system"][0]["text"], "You are strata.");
        assert_eq!(body["messages"][0]["role"], "user");
        for (name, value) in &endpoint.headers {
            assert_eq!(
                http.header_value(name),
                Some(value.as_str()),
                "{provider}: {name}"
            );
        }
    }
}

#[test]
fn a_missing_key_names_the_variables_and_a_wrong_protocol_is_refused() {
    let catalog = Catalog::builtin().unwrap();
    let row = catalog.provider("anthropic").unwrap();
    let model = catalog.models_of("anthropic").next().unwrap().clone();
    let adapter = AnthropicProvider::for_row(row, client()).with_env(Arc::new(|_: &str| None));
    let err = adapter
        .build_http_request(
            &model,
            &Request::new(model.id.clone()),
            &StreamOptions::default(),
        )
        .unwrap_err();
    assert!(err.to_string().contains("ANTHROPIC_API_KEY"), "{err}");

    let copilot = catalog.provider("github-copilot").unwrap();
    let adapter = AnthropicProvider::for_row(copilot, client()).with_env(Arc::new(fake_env));
    let mut gpt = model.clone();
    gpt.provider = "github-copilot".into();
    gpt.id = "gpt-4.1".into();
    let err = adapter
        .build_http_request(&gpt, &Request::new("gpt-4.1"), &StreamOptions::default())
        .unwrap_err();
    assert!(err.to_string().contains("openai-chat"), "{err}");
}

#[test]
fn tool_changes_send_the_rows_beta_header() {
    let catalog = Catalog::builtin().unwrap();
    let row = catalog.provider("anthropic").unwrap();
    let mut model = catalog.models_of("anthropic").next().unwrap().clone();
    model.id = "claude-opus-4-8".into();
    assert!(row.capabilities(&model.id).tool_addition);
    let adapter = AnthropicProvider::for_row(row, client()).with_env(Arc::new(fake_env));
    let mut request = Request::new(model.id.clone());
    request.messages.push(Message::user_text("hi"));
    request.messages.push(Message {
        role: strata_provider::Role::System,
        content: vec![strata_provider::ContentBlock::ToolRemoval {
            names: vec!["bash".into()],
        }],
    });
    let http = adapter
        .build_http_request(&model, &request, &StreamOptions::default())
        .unwrap();
    // The row also asks every request for the provider's cache diagnosis ([A-DG]).
    assert_eq!(
        http.header_value("anthropic-beta"),
        Some("mid-conversation-tool-changes-2026-07-01,cache-diagnosis-2026-04-07")
    );
    let plain = adapter
        .build_http_request(
            &model,
            &Request::new(model.id.clone()),
            &StreamOptions::default(),
        )
        .unwrap();
    assert_eq!(
        plain.header_value("anthropic-beta"),
        Some("cache-diagnosis-2026-04-07")
    );
    // A row without diagnostics sends neither the field nor the header.
    let minimax = catalog.provider("minimax").unwrap();
    let adapter = AnthropicProvider::for_row(minimax, client()).with_env(Arc::new(fake_env));
    let http = adapter
        .build_http_request(
            &model,
            &Request::new(model.id.clone()),
            &StreamOptions::default(),
        )
        .unwrap();
    assert_eq!(http.header_value("anthropic-beta"), None);
    let body: serde_json::Value = serde_json::from_slice(&http.body).unwrap();
    assert!(body.get("diagnostics").is_none());
}

fn client() -> HttpClient {
    HttpClient::new(&TransportConfig {
        retry: RetryPolicy::none(),
        ..TransportConfig::default()
    })
    .unwrap()
}
