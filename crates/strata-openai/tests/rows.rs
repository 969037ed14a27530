//! Every capability row routes to a protocol crate; every row (or override) that speaks Chat
//! Completions builds a valid request: base URL, auth header, field names.

use std::sync::Arc;

use serde_json::Value;
use strata_openai::OpenAiChatProvider;
use strata_provider::transport::{
    HttpClient, RetryPolicy, TransportConfig, auth_header, expand_url,
};
use strata_provider::{
    ApiKey, AuthScheme, Catalog, Message, Model, Protocol, Request, StreamOptions, SystemBlock,
    ThinkingLevel,
};

fn fake_env(name: &str) -> Option<String> {
    Some(format!("value-of-{name}"))
}

fn client() -> HttpClient {
    HttpClient::new(&TransportConfig {
        retry: RetryPolicy::none(),
        ..TransportConfig::default()
    })
    .unwrap()
}

#[test]
fn every_row_routes_to_a_protocol_crate() {
    let catalog = Catalog::builtin().unwrap();
    let crates = [
        "strata-anthropic",
        "strata-openai",
        "strata-openai-responses",
        "strata-google",
        "strata-bedrock",
    ];
    let mut rows = 0;
    for row in catalog.providers() {
        rows += 1;
        for protocol in row.protocols() {
            assert!(
                crates.contains(&protocol.crate_name()),
                "{}: {protocol}",
                row.id
            );
        }
        for model in catalog.models_of(&row.id) {
            let endpoint = row.endpoint(&model.id);
            assert!(
                row.protocols().contains(&endpoint.protocol),
                "{}/{}",
                row.id,
                model.id
            );
        }
    }
    assert!(rows >= 41, "{rows} rows");
}

fn chat_models(catalog: &Catalog) -> Vec<(String, Model)> {
    let mut out = Vec::new();
    for row in catalog.providers() {
        if !row.protocols().contains(&Protocol::OpenaiChat) {
            continue;
        }
        let found = catalog
            .models_of(&row.id)
            .find(|m| row.endpoint(&m.id).protocol == Protocol::OpenaiChat)
            .cloned();
        let model = found.or_else(|| {
            let id = if row.protocol == Protocol::OpenaiChat {
                "local-model".to_owned()
            } else {
                row.overrides
                    .iter()
                    .find(|o| o.protocol == Some(Protocol::OpenaiChat))
                    .and_then(|o| o.models.first())?
                    .replace('*', "x")
            };
            Some(Model {
                provider: row.id.clone(),
                id,
                name: "test".into(),
                context_window: 128_000,
                max_output: 8192,
                input: vec![],
                reasoning: true,
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
fn every_chat_row_builds_a_valid_request() {
    let catalog = Catalog::builtin().unwrap();
    let models = chat_models(&catalog);
    assert!(models.len() >= 25, "only {} rows", models.len());
    for (provider, model) in models {
        let row = catalog.provider(&provider).unwrap();
        let caps = row.capabilities(&model.id);
        let adapter = OpenAiChatProvider::for_row(row, client()).with_env(Arc::new(fake_env));
        let mut request = Request::new(model.id.clone());
        request.system.push(SystemBlock::text("You are strata."));
        request.messages.push(Message::user_text("hi"));
        request.thinking = ThinkingLevel::Medium;
        request.cache_key = Some("session-1".into());
        let http = adapter
            .build_http_request(&model, &request, &StreamOptions::default())
            .unwrap_or_else(|e| panic!("{provider}/{}: {e}", model.id));
        let endpoint = row.endpoint(&model.id);
        let base = expand_url(&endpoint.base_url, fake_env).unwrap();
        assert_eq!(
            http.url,
            format!("{}/chat/completions", base.trim_end_matches('/')),
            "{provider}"
        );
        match (endpoint.auth, endpoint.auth_env.first()) {
            (AuthScheme::None, _) | (_, None) => {
                assert_eq!(http.header_value("authorization"), None, "{provider}");
            }
            (scheme, Some(var)) => {
                let key = ApiKey::new(format!("value-of-{var}"));
                let (name, value) = auth_header(scheme, &key).unwrap();
                assert_eq!(http.header_value(name), Some(value.as_str()), "{provider}");
                assert_eq!(scheme == AuthScheme::Bearer, name == "authorization");
            }
        }
        let body: Value = serde_json::from_slice(&http.body).unwrap();
        assert_eq!(body["model"], Value::String(model.id.clone()));
        assert_eq!(body["stream"], Value::Bool(true));
        assert!(
            body[caps.wire.max_tokens_field.as_str()].as_u64().is_some(),
            "{provider}: {body}"
        );
        let other_field = if caps.wire.max_tokens_field == "max_tokens" {
            "max_completion_tokens"
        } else {
            "max_tokens"
        };
        assert_eq!(body.get(other_field), None, "{provider}");
        assert_eq!(
            body["messages"][0]["role"],
            caps.system_role.as_str(),
            "{provider}"
        );
        assert_eq!(
            body.get("stream_options").is_some(),
            caps.wire.supports_usage_in_streaming
        );
        match &caps.cache_key {
            Some(p) if p.location == strata_provider::ParamLocation::Body => {
                assert_eq!(body[p.name.as_str()], "session-1", "{provider}");
            }
            Some(p) => assert_eq!(http.header_value(&p.name), Some("session-1"), "{provider}"),
            None => assert_eq!(body.get("prompt_cache_key"), None, "{provider}"),
        }
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
fn row_flags_shape_the_body() {
    let catalog = Catalog::builtin().unwrap();
    let build = |provider: &str, model_id: &str| {
        let row = catalog.provider(provider).unwrap();
        let mut model = catalog
            .models_of(provider)
            .next()
            .cloned()
            .unwrap_or_else(|| catalog.models().next().unwrap().clone());
        model.provider = provider.into();
        model.id = model_id.into();
        model.reasoning = true;
        let mut request = Request::new(model_id);
        request.thinking = ThinkingLevel::High;
        request.cache_key = Some("s".into());
        request.messages.push(Message::user_text("hi"));
        let http = OpenAiChatProvider::for_row(row, client())
            .with_env(Arc::new(fake_env))
            .build_http_request(&model, &request, &StreamOptions::default())
            .unwrap();
        (serde_json::from_slice::<Value>(&http.body).unwrap(), http)
    };
    let (deepseek, _) = build("deepseek", "deepseek-chat");
    assert_eq!(deepseek["thinking"], serde_json::json!({"type": "enabled"}));
    assert!(deepseek.get("max_tokens").is_some());
    let (openrouter, _) = build("openrouter", "openai/gpt-5");
    assert_eq!(
        openrouter["reasoning"],
        serde_json::json!({"effort": "high"})
    );
    let (xai, http) = build("xai", "grok-4");
    assert_eq!(xai.get("reasoning_effort"), None, "grok-4 always reasons");
    assert_eq!(http.header_value("x-grok-conv-id"), Some("s"));
    let (mistral, _) = build("mistral", "mistral-large-latest");
    assert_eq!(mistral["prompt_cache_key"], "s");
}
