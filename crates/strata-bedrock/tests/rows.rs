//! Every row that speaks Bedrock Converse builds a signed, valid request.

use std::time::{Duration, UNIX_EPOCH};

use serde_json::Value;
use strata_bedrock::BedrockProvider;
use strata_bedrock::credentials::{AwsCredentials, BedrockAuth, ResolvedAws};
use strata_provider::transport::{HttpClient, TransportConfig};
use strata_provider::{ApiKey, Catalog, Message, Protocol, Request, StreamOptions, SystemBlock};

#[test]
fn every_bedrock_row_builds_a_signed_request() {
    let catalog = Catalog::builtin().unwrap();
    let mut covered = 0;
    for row in catalog.providers() {
        if !row.protocols().contains(&Protocol::BedrockConverse) {
            continue;
        }
        let model = catalog
            .models_of(&row.id)
            .find(|m| {
                m.id.contains("claude-sonnet-4-5")
                    && row.endpoint(&m.id).protocol == Protocol::BedrockConverse
            })
            .or_else(|| catalog.models_of(&row.id).next())
            .unwrap()
            .clone();
        let aws = ResolvedAws {
            auth: BedrockAuth::SigV4(AwsCredentials {
                access_key_id: "AKIDEXAMPLE".into(),
                secret_access_key: ApiKey::new("secret"),
                session_token: Some(ApiKey::new("session")),
            }),
            region: Some("eu-central-1".into()),
        };
        let client = HttpClient::new(&TransportConfig::default()).unwrap();
        let provider = BedrockProvider::new(row.clone(), client, aws);
        let mut request = Request::new(model.id.clone());
        request.system.push(SystemBlock::text("sys"));
        request.messages.push(Message::user_text("hi"));
        let time = UNIX_EPOCH + Duration::from_secs(1_767_225_600); // 2026-01-01
        let http = provider
            .prepare(&model, &request, &StreamOptions::default(), time)
            .unwrap();
        let encoded = model.id.replace(':', "%3A");
        assert_eq!(
            http.url,
            format!(
                "https://bedrock-runtime.eu-central-1.amazonaws.com/model/{encoded}/converse-stream"
            )
        );
        let auth = http.header_value("authorization").unwrap();
        assert!(
            auth.starts_with("AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20260101/eu-central-1/bedrock/aws4_request, SignedHeaders=content-type;host;x-amz-content-sha256;x-amz-date;x-amz-security-token, Signature="),
            "{auth}"
        );
        assert_eq!(http.header_value("x-amz-date"), Some("20260101T000000Z"));
        assert_eq!(http.header_value("x-amz-security-token"), Some("session"));
        let body: Value = serde_json::from_slice(&http.body).unwrap();
        assert_eq!(body["messages"][0]["role"], "user");
        assert_eq!(body["system"][0]["text"], "sys");
        assert!(body["inferenceConfig"]["maxTokens"].as_u64().unwrap() > 0);
        covered += 1;
    }
    assert!(covered >= 1);
}

#[test]
fn an_api_key_is_sent_as_bearer_instead_of_signing() {
    let catalog = Catalog::builtin().unwrap();
    let row = catalog.provider("amazon-bedrock").unwrap().clone();
    let model = catalog.models_of("amazon-bedrock").next().unwrap().clone();
    let provider = BedrockProvider::with_api_keys_only(
        row,
        HttpClient::new(&TransportConfig::default()).unwrap(),
        None,
    );
    let options = StreamOptions {
        api_key: Some(ApiKey::new("bedrock-api-key")),
        ..StreamOptions::default()
    };
    let http = provider
        .prepare(
            &model,
            &Request::new(model.id.clone()),
            &options,
            UNIX_EPOCH,
        )
        .unwrap();
    assert_eq!(
        http.header_value("authorization"),
        Some("Bearer bedrock-api-key")
    );
    assert!(
        http.url
            .starts_with("https://bedrock-runtime.us-east-1.amazonaws.com/model/")
    );
    let err = provider
        .prepare(
            &model,
            &Request::new(model.id.clone()),
            &StreamOptions::default(),
            UNIX_EPOCH,
        )
        .unwrap_err();
    assert!(
        err.to_string().contains("AWS_BEARER_TOKEN_BEDROCK"),
        "{err}"
    );
}
