//! Every capability-table row (or per-model override) that speaks Responses routes here and
//! builds a valid request: URL, auth header, field names.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::Value;
use strata_openai_responses::{ResponsesConfig, ResponsesProvider, SystemPlacement};
use strata_provider::transport::auth_header;
use strata_provider::{
    ApiKey, AuthScheme, Message, ParamLocation, Protocol, Request, StreamOptions, SystemBlock,
    ThinkingLevel,
};

use crate::support::{catalog, client};

/// An access token of a ChatGPT login: a JWT whose auth claim names account `acc-42`.
const CHATGPT_TOKEN: &str =
    "e30.eyJodHRwczovL2FwaS5vcGVuYWkuY29tL2F1dGgiOnsiY2hhdGdwdF9hY2NvdW50X2lkIjoiYWNjLTQyIn19.sig";

/// The key every row is tried with: the ChatGPT backend (openai-codex) reads an account from
/// it, the others send it as it is.
const KEY: &str = CHATGPT_TOKEN;

#[test]
fn every_responses_row_builds_a_valid_request() {
    let catalog = catalog();
    let mut covered = Vec::new();
    for row in catalog.providers() {
        if !row.protocols().contains(&Protocol::OpenaiResponses) {
            continue;
        }
        let model = catalog
            .models_of(&row.id)
            .find(|m| row.endpoint(&m.id).protocol == Protocol::OpenaiResponses)
            .unwrap_or_else(|| panic!("row `{}` has no Responses model", row.id))
            .clone();
        let endpoint = row.endpoint(&model.id);
        let caps = row.capabilities(&model.id);
        let vars: BTreeMap<String, String> = [
            "AZURE_OPENAI_RESOURCE_NAME",
            "CLOUDFLARE_ACCOUNT_ID",
            "CLOUDFLARE_GATEWAY_ID",
        ]
        .into_iter()
        .map(|v| (v.to_owned(), format!("test-{}", v.to_ascii_lowercase())))
        .collect();
        let provider = ResponsesProvider::new(row.clone(), client(0)).with_url_vars(vars);
        let mut request = Request::new(model.id.clone());
        request.system.push(SystemBlock::text("sys"));
        request.messages.push(Message::user_text("hi"));
        request.thinking = ThinkingLevel::High;
        let options = StreamOptions {
            api_key: Some(ApiKey::new(KEY)),
            cache_key: Some("sess".into()),
            ..StreamOptions::default()
        };
        let http = provider.prepare(&model, &request, &options).unwrap();

        assert!(http.url.ends_with("/responses"), "{}: {}", row.id, http.url);
        assert!(!http.url.contains('{'), "{}: {}", row.id, http.url);
        assert!(
            http.url
                .starts_with(endpoint.base_url.split('{').next().unwrap()),
            "{}: {}",
            row.id,
            http.url
        );
        // The header is the one the row's scheme names (Bearer, api-key, x-api-key).
        let (name, value) = auth_header(endpoint.auth, &ApiKey::new(KEY)).unwrap_or_else(|| {
            panic!(
                "{}: auth scheme {:?} sends no header",
                row.id, endpoint.auth
            )
        });
        assert_eq!(http.header_value(name), Some(value.as_str()), "{}", row.id);
        if endpoint.auth == AuthScheme::Bearer {
            assert_eq!(
                http.header_value("authorization"),
                Some(format!("Bearer {KEY}").as_str())
            );
        }
        let body: Value = serde_json::from_slice(&http.body).unwrap();
        assert_eq!(body["model"], Value::String(model.id.clone()), "{}", row.id);
        assert_eq!(body["stream"], Value::Bool(true));
        let first_user = match provider.config(&model).system_placement {
            SystemPlacement::Message => {
                assert_eq!(
                    body["input"][0]["role"].as_str(),
                    Some(caps.system_role.as_str()),
                    "{}",
                    row.id
                );
                1
            }
            SystemPlacement::Instructions => {
                assert_eq!(body["instructions"], "sys", "{}", row.id);
                0
            }
        };
        assert_eq!(body["input"][first_user]["role"], "user", "{}", row.id);
        assert_eq!(
            body["input"][first_user]["content"][0]["type"],
            "input_text"
        );
        if let Some(param) = &caps.cache_key {
            match param.location {
                ParamLocation::Body => assert_eq!(body[&param.name], "sess", "{}", row.id),
                ParamLocation::Header => assert_eq!(http.header_value(&param.name), Some("sess")),
            }
        }
        assert_eq!(
            body.get("store").is_some(),
            caps.wire.supports_store,
            "{}",
            row.id
        );
        if model.reasoning && caps.reasoning == strata_provider::ReasoningStyle::OpenaiEffort {
            assert_eq!(body["reasoning"]["effort"], "high", "{}", row.id);
        } else {
            assert!(body.get("reasoning").is_none(), "{}", row.id);
        }
        if model.max_output > 0 {
            assert_eq!(body["max_output_tokens"], model.max_output, "{}", row.id);
        }
        covered.push(row.id.clone());
    }
    for expected in [
        "openai",
        "azure-openai-responses",
        "openai-codex",
        "github-copilot",
        "opencode",
        "cloudflare-ai-gateway",
    ] {
        assert!(
            covered.iter().any(|c| c == expected),
            "{expected} not covered: {covered:?}"
        );
    }
}

#[test]
fn the_codex_row_gets_the_codex_endpoint_from_its_base_url() {
    let catalog = catalog();
    let row = catalog.provider("openai-codex").unwrap().clone();
    let model = catalog.models_of("openai-codex").next().unwrap().clone();
    let provider = ResponsesProvider::new(row, client(0));
    assert_eq!(provider.config(&model), ResponsesConfig::codex());
    let mut request = Request::new(model.id.clone());
    request.system.push(SystemBlock::text("sys"));
    request.messages.push(Message::user_text("hi"));
    let options = StreamOptions {
        api_key: Some(ApiKey::new(CHATGPT_TOKEN)),
        session_id: Some("sess-9".into()),
        cache_key: Some("sess-9".into()),
        ..StreamOptions::default()
    };
    let http = provider.prepare(&model, &request, &options).unwrap();
    assert_eq!(http.url, "https://chatgpt.com/backend-api/codex/responses");
    assert_eq!(http.header_value("session_id"), Some("sess-9"));
    // The backend's own headers, the account read from the token (as Pi sends them).
    assert_eq!(http.header_value("chatgpt-account-id"), Some("acc-42"));
    assert_eq!(
        http.header_value("OpenAI-Beta"),
        Some("responses=experimental")
    );
    assert_eq!(http.header_value("originator"), Some("strata"));
    let body: Value = serde_json::from_slice(&http.body).unwrap();
    assert_eq!(body["instructions"], "sys");
    assert_eq!(body["prompt_cache_key"], "sess-9");
    // A key that is not a ChatGPT login's token is refused before anything is sent.
    let plain = StreamOptions {
        api_key: Some(ApiKey::new("sk-plain")),
        ..options.clone()
    };
    let err = provider.prepare(&model, &request, &plain).unwrap_err();
    assert!(err.to_string().contains("chatgpt_account_id"), "{err}");
    // Other Responses hosts get none of them.
    let openai = catalog.provider("openai").unwrap().clone();
    let gpt = catalog.models_of("openai").next().unwrap().clone();
    let http = ResponsesProvider::new(openai, client(0))
        .prepare(&gpt, &request, &plain)
        .unwrap();
    assert_eq!(http.header_value("chatgpt-account-id"), None);
    assert_eq!(http.header_value("originator"), None);
    // Every other Responses host keeps `/responses` and the system message.
    assert_eq!(
        ResponsesConfig::for_base_url("https://api.openai.com/v1"),
        ResponsesConfig::default()
    );
    assert_eq!(
        ResponsesConfig::for_base_url("https://chatgpt.com/backend-api/"),
        ResponsesConfig::codex()
    );
}

#[test]
fn keys_and_url_variables_come_from_the_rows_variables() {
    let catalog = catalog();
    let row = catalog.provider("azure-openai-responses").unwrap().clone();
    let model = catalog
        .models_of("azure-openai-responses")
        .next()
        .unwrap()
        .clone();
    let env = |name: &str| match name {
        "AZURE_OPENAI_RESOURCE_NAME" => Some("my-res".to_owned()),
        "AZURE_OPENAI_API_KEY" => Some("azure-secret".to_owned()),
        _ => None,
    };
    let provider = ResponsesProvider::new(row.clone(), client(0)).with_env(Arc::new(env));
    let mut request = Request::new(model.id.clone());
    request.messages.push(Message::user_text("hi"));
    let http = provider
        .prepare(&model, &request, &StreamOptions::default())
        .unwrap();
    assert_eq!(
        http.url,
        "https://my-res.openai.azure.com/openai/v1/responses"
    );
    assert_eq!(http.header_value("api-key"), Some("azure-secret"));
    assert_eq!(http.secrets, vec![ApiKey::new("azure-secret")]);

    let bare = ResponsesProvider::new(row, client(0)).with_env(Arc::new(|_: &str| None));
    let err = bare
        .prepare(&model, &request, &StreamOptions::default())
        .unwrap_err();
    assert!(
        err.to_string().contains("AZURE_OPENAI_RESOURCE_NAME"),
        "{err}"
    );
}

#[test]
fn codex_config_uses_instructions_and_the_session_header() {
    let catalog = catalog();
    let row = catalog.provider("openai-codex").unwrap().clone();
    let model = catalog.models_of("openai-codex").next().unwrap().clone();
    let provider = ResponsesProvider::new(row, client(0))
        .with_config(strata_openai_responses::ResponsesConfig::codex());
    let mut request = Request::new(model.id.clone());
    request.system.push(SystemBlock::text("sys"));
    request.messages.push(Message::user_text("hi"));
    let options = StreamOptions {
        api_key: Some(ApiKey::new(CHATGPT_TOKEN)),
        session_id: Some("sess-9".into()),
        ..StreamOptions::default()
    };
    let http = provider.prepare(&model, &request, &options).unwrap();
    assert_eq!(http.url, "https://chatgpt.com/backend-api/codex/responses");
    assert_eq!(http.header_value("session_id"), Some("sess-9"));
    let body: Value = serde_json::from_slice(&http.body).unwrap();
    assert_eq!(body["instructions"], "sys");
    assert_eq!(body["input"][0]["role"], "user");
}
