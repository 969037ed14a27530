//! Service-account ADC files: an RS256 JWT signed with the file's key, exchanged at the
//! file's `token_uri` (a local endpoint here) for an access token that is then cached.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use aws_lc_rs::encoding::AsDer;
use aws_lc_rs::rsa::{KeyPair, KeySize};
use aws_lc_rs::signature::{self, KeyPair as _, UnparsedPublicKey};
use base64::Engine;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use serde_json::{Value, json};
use strata_google::{AdcFile, GoogleCredentials, GoogleProvider};
use strata_provider::transport::{HttpClient, TransportConfig};
use strata_provider::{Catalog, ProviderError, StreamOptions};
use tokio::io::AsyncWriteExt;
use tokio::sync::Mutex;

/// A throwaway RSA key made for the test: the key pair, and its PKCS#8 PEM.
fn test_key() -> (KeyPair, String) {
    let key = KeyPair::generate(KeySize::Rsa2048).unwrap();
    let der = key.as_der().unwrap();
    let body = STANDARD.encode(der.as_ref());
    let lines: Vec<&str> = body
        .as_bytes()
        .chunks(64)
        .map(|c| std::str::from_utf8(c).unwrap())
        .collect();
    let pem = format!(
        "-----BEGIN PRIVATE KEY-----\n{}\n-----END PRIVATE KEY-----\n",
        lines.join("\n")
    );
    (key, pem)
}

fn service_account_json(pem: &str, token_uri: &str) -> String {
    json!({
        "type": "service_account",
        "project_id": "proj-7",
        "private_key_id": "key-id-1234",
        "private_key": pem,
        "client_email": "strata-ci@proj-7.iam.gserviceaccount.com",
        "client_id": "1234567890",
        "auth_uri": "https://accounts.google.com/o/oauth2/auth",
        "token_uri": token_uri,
    })
    .to_string()
}

/// A token endpoint on 127.0.0.1:0 that reads whole requests, keeps their form bodies and
/// answers each with `reply(n)` (n counts from 1): a status line and a JSON body.
struct TokenEndpoint {
    url: String,
    forms: Arc<Mutex<Vec<String>>>,
    count: Arc<AtomicUsize>,
}

async fn token_endpoint(reply: fn(usize, &str) -> (&'static str, String)) -> TokenEndpoint {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/token", listener.local_addr().unwrap());
    let forms = Arc::new(Mutex::new(Vec::new()));
    let count = Arc::new(AtomicUsize::new(0));
    let (f, c) = (forms.clone(), count.clone());
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            let form = strata_provider::testing::read_request_body(&mut socket).await;
            let Some(form) = form else { continue };
            f.lock().await.push(form.clone());
            let n = c.fetch_add(1, Ordering::SeqCst) + 1;
            let (status, body) = reply(n, &form);
            let response = format!(
                "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = socket.write_all(response.as_bytes()).await;
        }
    });
    TokenEndpoint { url, forms, count }
}

fn hour_long_token(n: usize, _: &str) -> (&'static str, String) {
    (
        "200 OK",
        format!(
            r#"{{"access_token":"ya29.sa-token-{n}","expires_in":3599,"token_type":"Bearer"}}"#
        ),
    )
}

/// The `assertion` of an RFC 7523 form, checking its grant type.
fn assertion_of(form: &str) -> String {
    let mut fields: HashMap<&str, &str> = form
        .split('&')
        .filter_map(|pair| pair.split_once('='))
        .collect();
    assert_eq!(
        fields.remove("grant_type"),
        Some("urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer"),
        "{form}"
    );
    let assertion = fields.remove("assertion").unwrap();
    assert!(
        fields.is_empty(),
        "only the grant type and assertion: {form}"
    );
    assertion.to_owned()
}

fn decode_part(part: &str) -> Value {
    serde_json::from_slice(&URL_SAFE_NO_PAD.decode(part).unwrap()).unwrap()
}

fn write_adc(name: &str, text: &str) -> std::path::PathBuf {
    let path = std::env::temp_dir().join(format!(
        "strata-google-sa-{}-{name}.json",
        std::process::id()
    ));
    std::fs::write(&path, text).unwrap();
    path
}

#[tokio::test]
async fn a_service_account_file_signs_an_rs256_jwt_and_caches_the_token() {
    let endpoint = token_endpoint(hour_long_token).await;
    let (key, pem) = test_key();
    let path = write_adc("signs", &service_account_json(&pem, &endpoint.url));
    let credentials = GoogleCredentials::from_adc_file(&path).unwrap();
    std::fs::remove_file(&path).unwrap();
    assert!(
        !format!("{credentials:?}").contains(&pem[40..80]),
        "Debug hides the key"
    );

    let client = reqwest::Client::new();
    let before = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let first = credentials.bearer(&client).await.unwrap().unwrap();
    let second = credentials.bearer(&client).await.unwrap().unwrap();
    assert_eq!(first.expose(), "ya29.sa-token-1");
    assert_eq!(second.expose(), "ya29.sa-token-1", "cached until expiry");
    assert_eq!(endpoint.count.load(Ordering::SeqCst), 1);

    let assertion = assertion_of(&endpoint.forms.lock().await[0]);
    let parts: Vec<&str> = assertion.split('.').collect();
    let [header, claims, signature] = parts.as_slice() else {
        panic!("a JWT has three parts: {assertion}")
    };
    assert_eq!(
        decode_part(header),
        json!({"alg": "RS256", "typ": "JWT", "kid": "key-id-1234"})
    );
    let claims_json = decode_part(claims);
    assert_eq!(
        claims_json["iss"],
        "strata-ci@proj-7.iam.gserviceaccount.com"
    );
    assert_eq!(
        claims_json["scope"],
        "https://www.googleapis.com/auth/cloud-platform"
    );
    assert_eq!(
        claims_json["aud"],
        endpoint.url.as_str(),
        "audience is the token_uri"
    );
    let iat = claims_json["iat"].as_u64().unwrap();
    let exp = claims_json["exp"].as_u64().unwrap();
    assert!(
        iat >= before && iat <= before + 60,
        "iat {iat} vs now {before}"
    );
    assert_eq!(exp - iat, 3600);

    // The signature verifies with the key's public half, and only over these exact bytes.
    let public = UnparsedPublicKey::new(
        &signature::RSA_PKCS1_2048_8192_SHA256,
        key.public_key().as_ref().to_vec(),
    );
    let signature = URL_SAFE_NO_PAD.decode(signature).unwrap();
    let signed = format!("{header}.{claims}");
    public.verify(signed.as_bytes(), &signature).unwrap();
    let forged = URL_SAFE_NO_PAD.encode(
        json!({"iss": "attacker@example.com", "aud": endpoint.url, "iat": iat, "exp": exp})
            .to_string(),
    );
    assert!(
        public
            .verify(format!("{header}.{forged}").as_bytes(), &signature)
            .is_err()
    );
}

#[tokio::test]
async fn an_expiring_service_account_token_is_exchanged_again() {
    // A token that lives 30 s is inside the one-minute safety margin: never reused.
    let endpoint = token_endpoint(|n, _| {
        (
            "200 OK",
            format!(r#"{{"access_token":"ya29.short-{n}","expires_in":30}}"#),
        )
    })
    .await;
    let (_, pem) = test_key();
    let AdcFile::ServiceAccount(account) =
        AdcFile::parse(&service_account_json(&pem, &endpoint.url), "sa.json").unwrap()
    else {
        panic!("a service account")
    };
    let credentials = GoogleCredentials::service_account(account, "sa.json").unwrap();
    let client = reqwest::Client::new();
    let first = credentials.bearer(&client).await.unwrap().unwrap();
    let second = credentials.bearer(&client).await.unwrap().unwrap();
    assert_eq!(
        (first.expose(), second.expose()),
        ("ya29.short-1", "ya29.short-2")
    );
    assert_eq!(endpoint.count.load(Ordering::SeqCst), 2);
    for form in endpoint.forms.lock().await.iter() {
        assert_eq!(assertion_of(form).split('.').count(), 3);
    }
}

#[tokio::test]
async fn a_rejected_assertion_is_an_auth_error_that_does_not_quote_the_jwt() {
    // The endpoint echoes the form back, as a careless proxy might.
    let endpoint = token_endpoint(|_, form| {
        (
            "400 Bad Request",
            json!({"error": "invalid_grant", "error_description": format!("Invalid JWT Signature. {form}")})
                .to_string(),
        )
    })
    .await;
    let (_, pem) = test_key();
    let path = write_adc("rejected", &service_account_json(&pem, &endpoint.url));
    let credentials = GoogleCredentials::from_adc_file(&path).unwrap();
    std::fs::remove_file(&path).unwrap();
    let err = credentials
        .bearer(&reqwest::Client::new())
        .await
        .unwrap_err();
    let ProviderError::Auth { status, body, .. } = &err else {
        panic!("{err:?}")
    };
    assert_eq!(*status, 400);
    assert!(body.contains("invalid_grant"), "{body}");
    let assertion = assertion_of(&endpoint.forms.lock().await[0]);
    assert!(!body.contains(&assertion), "{body}");
}

#[tokio::test]
async fn a_service_account_key_that_does_not_parse_names_the_file() {
    let path = write_adc(
        "broken",
        &service_account_json(
            "-----BEGIN PRIVATE KEY-----\nc2VjcmV0\n-----END PRIVATE KEY-----\n",
            "http://127.0.0.1:9/token",
        ),
    );
    let err = GoogleCredentials::from_adc_file(&path).unwrap_err();
    std::fs::remove_file(&path).unwrap();
    let text = err.to_string();
    assert!(text.contains(&path.display().to_string()), "{text}");
    assert!(text.contains("private_key"), "{text}");
    assert!(!text.contains("c2VjcmV0"), "{text}");
}

#[tokio::test]
async fn vertex_reads_a_service_account_file_from_google_application_credentials() {
    let endpoint = token_endpoint(hour_long_token).await;
    let (_, pem) = test_key();
    let path = write_adc("vertex", &service_account_json(&pem, &endpoint.url));
    let catalog = Catalog::builtin().unwrap();
    let row = catalog.provider("google-vertex").unwrap().clone();
    let model = catalog.models_of("google-vertex").next().unwrap().clone();
    let env: HashMap<String, String> = [
        ("GOOGLE_CLOUD_PROJECT", "proj-7".to_owned()),
        ("GOOGLE_CLOUD_LOCATION", "us-central1".to_owned()),
        ("GOOGLE_APPLICATION_CREDENTIALS", path.display().to_string()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v))
    .collect();
    let provider = GoogleProvider::new(row, HttpClient::new(&TransportConfig::default()).unwrap())
        .with_env(Arc::new(move |k: &str| env.get(k).cloned()));
    let options = StreamOptions::default();
    let first = provider.bearer(&model, &options).await.unwrap().unwrap();
    let second = provider.bearer(&model, &options).await.unwrap().unwrap();
    std::fs::remove_file(&path).unwrap();
    assert_eq!(first.expose(), "ya29.sa-token-1");
    assert_eq!(second.expose(), "ya29.sa-token-1");
    assert_eq!(endpoint.count.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn vertex_takes_the_project_from_the_credentials_file_when_the_environment_names_none() {
    let (_, pem) = test_key();
    let path = write_adc(
        "project",
        &service_account_json(&pem, "http://127.0.0.1:9/token"),
    );
    let catalog = Catalog::builtin().unwrap();
    let row = catalog.provider("google-vertex").unwrap().clone();
    let model = catalog.models_of("google-vertex").next().unwrap().clone();
    let provider_with = |project: Option<&str>| {
        let mut env: HashMap<String, String> = [
            ("GOOGLE_CLOUD_LOCATION", "us-central1".to_owned()),
            ("GOOGLE_APPLICATION_CREDENTIALS", path.display().to_string()),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v))
        .collect();
        if let Some(project) = project {
            env.insert("GOOGLE_CLOUD_PROJECT".into(), project.into());
        }
        GoogleProvider::new(
            row.clone(),
            HttpClient::new(&TransportConfig::default()).unwrap(),
        )
        .with_env(Arc::new(move |k: &str| env.get(k).cloned()))
    };
    let options = StreamOptions::default();
    let from_file = provider_with(None)
        .url(&model, "streamGenerateContent", &options)
        .unwrap();
    let from_env = provider_with(Some("env-proj"))
        .url(&model, "streamGenerateContent", &options)
        .unwrap();
    std::fs::remove_file(&path).unwrap();
    assert!(
        from_file.contains("/v1/projects/proj-7/locations/us-central1/"),
        "{from_file}"
    );
    assert!(
        from_env.contains("/v1/projects/env-proj/"),
        "the environment wins: {from_env}"
    );
}

#[test]
fn an_authorized_user_file_names_its_quota_project() {
    let file = AdcFile::parse(
        r#"{"type":"authorized_user","client_id":"c","client_secret":"s","refresh_token":"r","quota_project_id":"billing-9"}"#,
        "adc.json",
    )
    .unwrap();
    assert_eq!(file.project(), Some("billing-9"));
    let without = AdcFile::parse(
        r#"{"type":"authorized_user","client_id":"c","client_secret":"s","refresh_token":"r","quota_project_id":" "}"#,
        "adc.json",
    )
    .unwrap();
    assert_eq!(without.project(), None);
}
