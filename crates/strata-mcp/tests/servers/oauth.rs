//! OAuth sign-in against a server strata did not write: the official Python SDK's
//! `mcp.server.auth` (authorization server + protected MCP server in one process), driven
//! by a scripted browser that follows the authorization URL the way a user's browser does.

use std::path::Path;
use std::time::Duration;

use serde_json::{Value, json};
use strata_mcp::auth::{
    ClientOrigin, ClientSecret, LogoutReport, Revocation, SignInError, SignInRequest, StoredClient,
    TokenFile, TokenState, log_out, sign_in,
};
use strata_mcp::{McpManager, ServerConfig, ServerState, Transport};
use strata_tools::{ToolContext, ToolSource as _};

use crate::deps::{canned_http_endpoint, free_port, python, server};

/// The fixture server, killed when dropped.
struct AuthServer {
    _child: tokio::process::Child,
    url: String,
}

async fn auth_server(python: &Path) -> AuthServer {
    auth_server_with(python, &["3600"]).await
}

/// The fixture with its optional arguments (access token lifetime, pre-registered client's
/// callback port).
async fn auth_server_with(python: &Path, args: &[&str]) -> AuthServer {
    let port = free_port();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/auth_server.py");
    let child = tokio::process::Command::new(python)
        .arg(script)
        .arg(port.to_string())
        .args(args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    for _ in 0..150 {
        if tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .is_ok()
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    AuthServer {
        _child: child,
        url: format!("http://127.0.0.1:{port}/mcp"),
    }
}

fn config(url: &str, token_dir: &Path) -> ServerConfig {
    let mut config = server(
        "docs",
        Transport::Http {
            url: url.to_owned(),
            headers: Default::default(),
        },
    );
    config.token_dir = Some(token_dir.to_owned());
    config
}

async fn started(config: &ServerConfig) -> McpManager {
    let manager = McpManager::new(vec![config.clone()], Duration::from_secs(60));
    manager.start();
    manager.wait_ready().await;
    manager
}

/// Signs in, playing the user's browser: GET the authorization URL and follow its redirects
/// (the fixture approves at once) to strata's loopback callback. The page the browser ends on.
async fn sign_in_with_browser(config: &ServerConfig) -> Result<String, SignInError> {
    let Transport::Http { url, .. } = &config.transport else {
        unreachable!()
    };
    let (url_tx, url_rx) = tokio::sync::oneshot::channel::<String>();
    let request = SignInRequest::for_server(config, Duration::from_secs(30)).unwrap();
    let signing_in = tokio::spawn(sign_in(request, move |authorization_url| {
        let _ = url_tx.send(authorization_url.to_owned());
    }));
    let Ok(authorization_url) = url_rx.await else {
        // The sign-in ended before it had a URL: its error says why.
        return Err(signing_in.await.unwrap().err().unwrap());
    };
    let parsed = reqwest::Url::parse(&authorization_url).unwrap();
    let query: std::collections::HashMap<String, String> =
        parsed.query_pairs().into_owned().collect();
    assert_eq!(query["response_type"], "code");
    assert_eq!(query["code_challenge_method"], "S256");
    assert_eq!(
        query["resource"], *url,
        "RFC 8707 resource names the MCP server"
    );
    assert!(
        query["redirect_uri"].starts_with("http://127.0.0.1:"),
        "{authorization_url}"
    );
    let page = reqwest::get(&authorization_url)
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    signing_in.await.unwrap()?;
    Ok(page)
}

async fn call(manager: &McpManager, tool: &str) -> strata_tools::ToolOutput {
    manager
        .call(
            &format!("mcp__docs__{tool}"),
            json!({}),
            &ToolContext::new("/"),
        )
        .await
}

/// The fixture's out-of-band client (`strata-preregistered`) on `callback_port`, asking for
/// `scope`.
fn preregistered(callback_port: u16, scope: &str) -> strata_mcp::config::OAuthSpec {
    strata_mcp::config::OAuthSpec {
        client_id: Some("strata-preregistered".into()),
        callback_port: Some(callback_port),
        scopes: vec![scope.into()],
        ..Default::default()
    }
}

/// How many refresh-token grants the fixture's log holds.
/// A new manager (another process, as far as the tokens know) connects, refreshing the
/// expired access token exactly once.
async fn connects_after_one_refresh(config: &ServerConfig) -> McpManager {
    let manager = started(config).await;
    assert_eq!(
        manager.status()[0].state,
        ServerState::Connected,
        "{:?}",
        manager.status()
    );
    let log = auth_log(&call(&manager, "auth_log").await);
    assert_eq!(refresh_grants(&log), 1, "{log}");
    manager
}

fn refresh_grants(log: &Value) -> usize {
    log["grants"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|g| *g == "refresh_token")
        .count()
}

fn auth_log(output: &strata_tools::ToolOutput) -> Value {
    serde_json::from_str(&output.text_content()).unwrap()
}

#[tokio::test]
async fn sign_in_then_tools_then_refresh_then_reauth_when_revoked() {
    let Some(python) = python() else {
        return;
    };
    let fixture = auth_server(&python).await;
    let home = tempfile::tempdir().unwrap();
    let token_dir = home.path().join("strata/mcp-tokens");
    let config = config(&fixture.url, &token_dir);

    // Before sign-in: reported as needing it, without blocking the session.
    let manager = started(&config).await;
    let status = &manager.status()[0];
    assert!(
        matches!(&status.state, ServerState::AuthRequired { error }
            if error.contains("requires authorization") && error.contains("strata mcp login docs")),
        "{status:?}"
    );
    assert_eq!(status.state.label(), "needs sign-in");
    assert!(manager.tools().is_empty());

    // Sign-in: discovery from the 401, registration, code + PKCE, tokens in a 0600 file.
    let page = sign_in_with_browser(&config).await.unwrap();
    assert!(page.contains("signed in"), "{page}");
    let tokens = config.token_file().unwrap();
    assert_eq!(tokens.state(), TokenState::Present);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = std::fs::metadata(tokens.path())
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
    }
    assert!(tokens.path().starts_with(&token_dir));

    // The tools arrive with the reconnect, as additions.
    manager.take_changes();
    manager.reconnect("docs").await.unwrap();
    let added: Vec<String> = manager
        .take_changes()
        .into_iter()
        .flat_map(|change| change.diff.added)
        .collect();
    assert_eq!(added.len(), 4, "{added:?}");
    assert_eq!(manager.status()[0].state, ServerState::Connected);
    let mut names: Vec<String> = manager
        .tools()
        .iter()
        .map(|t| t.name().to_owned())
        .collect();
    names.sort();
    assert_eq!(
        names,
        [
            "mcp__docs__auth_log",
            "mcp__docs__expire_access",
            "mcp__docs__revoke_all",
            "mcp__docs__whoami"
        ]
    );
    let whoami = call(&manager, "whoami").await;
    assert!(!whoami.is_error, "{whoami:?}");
    assert!(whoami.text_content().ends_with("scopes mcp"), "{whoami:?}");
    let log = auth_log(&call(&manager, "auth_log").await);
    assert_eq!(log["registered"], 1, "one dynamic registration: {log}");
    assert_eq!(
        log["token_endpoint_auth_method"], "none",
        "a public client: {log}"
    );
    assert_eq!(log["authorize_resource"], json!([fixture.url]), "{log}");
    assert_eq!(log["grants"], json!(["authorization_code"]), "{log}");

    // The access token stops working: one silent refresh, and the call still succeeds.
    let before = std::fs::read_to_string(tokens.path()).unwrap();
    assert!(!call(&manager, "expire_access").await.is_error);
    let again = call(&manager, "whoami").await;
    assert!(!again.is_error, "refreshed and retried: {again:?}");
    let log = auth_log(&call(&manager, "auth_log").await);
    assert_eq!(
        log["grants"],
        json!(["authorization_code", "refresh_token"]),
        "{log}"
    );
    let after = std::fs::read_to_string(tokens.path()).unwrap();
    assert_ne!(before, after, "the refreshed tokens are stored");

    // A new session signs in from the file alone.
    let second = started(&config).await;
    assert_eq!(
        second.status()[0].state,
        ServerState::Connected,
        "{:?}",
        second.status()
    );
    second.shutdown().await;

    // Everything revoked: the refresh is refused, and the server needs sign-in again.
    assert!(!call(&manager, "revoke_all").await.is_error);
    let refused = call(&manager, "whoami").await;
    assert!(refused.is_error, "{refused:?}");
    assert!(
        refused.text_content().contains("requires authorization"),
        "{refused:?}"
    );
    let _ = manager.reconnect("docs").await;
    assert_eq!(manager.status()[0].state.label(), "needs sign-in");

    // Signing in again brings it back; logging out removes the file.
    sign_in_with_browser(&config).await.unwrap();
    manager.reconnect("docs").await.unwrap();
    assert!(!call(&manager, "whoami").await.is_error);
    assert!(tokens.remove().unwrap());
    assert_eq!(tokens.state(), TokenState::Missing);
    manager.shutdown().await;
}

#[tokio::test]
async fn an_access_token_past_its_lifetime_is_refreshed_silently() {
    let Some(python) = python() else {
        return;
    };
    // Two-second access tokens: whatever token the session holds is dead after the sleep.
    let fixture = auth_server_with(&python, &["2"]).await;
    let home = tempfile::tempdir().unwrap();
    let config = config(&fixture.url, home.path());
    sign_in_with_browser(&config).await.unwrap();
    let manager = started(&config).await;
    assert_eq!(manager.status()[0].state, ServerState::Connected);
    let log = auth_log(&call(&manager, "auth_log").await);
    let refreshes_before = refresh_grants(&log);
    tokio::time::sleep(Duration::from_millis(2500)).await;
    let whoami = call(&manager, "whoami").await;
    assert!(!whoami.is_error, "{whoami:?}");
    let log = auth_log(&call(&manager, "auth_log").await);
    let refreshes_after = refresh_grants(&log);
    assert!(refreshes_after > refreshes_before, "{log}");
    manager.shutdown().await;
}

#[tokio::test]
async fn a_client_registered_out_of_band_signs_in_on_its_fixed_callback_port() {
    let Some(python) = python() else {
        return;
    };
    let callback_port = free_port();
    let fixture = auth_server_with(&python, &["3600", &callback_port.to_string()]).await;
    let home = tempfile::tempdir().unwrap();
    let mut config = config(&fixture.url, home.path());
    // Without the entry's client, registration is refused: the fixture offers none.
    let refused = sign_in(
        SignInRequest::for_server(&config, Duration::from_secs(5)).unwrap(),
        |_| panic!("no URL without a client"),
    )
    .await;
    assert!(
        matches!(&refused, Err(SignInError::Discovery(message)) if message.contains("registration")),
        "{refused:?}"
    );
    config.spec.oauth = Some(preregistered(callback_port, "mcp"));
    sign_in_with_browser(&config).await.unwrap();
    let manager = started(&config).await;
    assert_eq!(
        manager.status()[0].state,
        ServerState::Connected,
        "{:?}",
        manager.status()
    );
    let whoami = call(&manager, "whoami").await;
    assert!(
        whoami
            .text_content()
            .starts_with("client strata-preregistered "),
        "{whoami:?}"
    );
    let log = auth_log(&call(&manager, "auth_log").await);
    assert_eq!(log["registered"], 0, "{log}");
    // Refresh works for it too: the client id comes back from the token file.
    assert!(!call(&manager, "expire_access").await.is_error);
    assert!(!call(&manager, "whoami").await.is_error);
    manager.shutdown().await;
}

#[tokio::test]
async fn a_refusal_by_the_authorization_server_is_said_to_the_browser_and_the_caller() {
    let Some(python) = python() else {
        return;
    };
    let callback_port = free_port();
    let fixture = auth_server_with(&python, &["3600", &callback_port.to_string()]).await;
    let home = tempfile::tempdir().unwrap();
    let mut config = config(&fixture.url, home.path());
    // A scope the client was not registered for: /authorize redirects back with an error.
    config.spec.oauth = Some(preregistered(callback_port, "admin"));
    let Transport::Http { url, .. } = &config.transport else {
        unreachable!()
    };
    let (url_tx, url_rx) = tokio::sync::oneshot::channel::<String>();
    let signing_in = tokio::spawn(sign_in(
        SignInRequest::for_server(&config, Duration::from_secs(30)).unwrap(),
        move |authorization_url| {
            let _ = url_tx.send(authorization_url.to_owned());
        },
    ));
    let authorization_url = url_rx.await.unwrap();
    assert!(authorization_url.starts_with(url.trim_end_matches("/mcp")));
    let page = reqwest::get(&authorization_url)
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let result = signing_in.await.unwrap();
    assert!(
        matches!(&result, Err(SignInError::Refused { error, .. }) if error == "invalid_scope"),
        "{result:?}"
    );
    assert!(
        page.contains("sign-in failed: the authorization server refused: invalid_scope"),
        "{page}"
    );
    assert_eq!(config.token_file().unwrap().state(), TokenState::Missing);
}

#[tokio::test]
async fn a_torn_token_file_is_reported_with_the_sign_in_hint() {
    let Some(python) = python() else {
        return;
    };
    let fixture = auth_server(&python).await;
    let home = tempfile::tempdir().unwrap();
    let config = config(&fixture.url, home.path());
    let tokens: TokenFile = config.token_file().unwrap();
    std::fs::write(tokens.path(), "{\"server_url\": ").unwrap();
    let manager = started(&config).await;
    let status = &manager.status()[0];
    assert!(
        matches!(&status.state, ServerState::AuthRequired { error }
            if error.contains("is not a valid token file") && error.contains("strata mcp login docs")),
        "{status:?}"
    );
    manager.shutdown().await;
}

#[tokio::test]
async fn sign_in_to_a_server_that_asks_for_none_says_so() {
    // A local endpoint that answers 200 to anything.
    let port =
        canned_http_endpoint(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
            .await;
    let home = tempfile::tempdir().unwrap();
    let config = config(&format!("http://127.0.0.1:{port}/mcp"), home.path());
    let result = sign_in(
        SignInRequest::for_server(&config, Duration::from_secs(5)).unwrap(),
        |_| panic!("no authorization URL for a server that needs no sign-in"),
    )
    .await;
    assert!(
        matches!(result, Err(SignInError::NotRequired { status: 200 })),
        "{result:?}"
    );
    assert_eq!(config.token_file().unwrap().state(), TokenState::Missing);
}

/// The access and refresh token in a token file.
fn stored_tokens(tokens: &TokenFile) -> (String, String) {
    let document: Value =
        serde_json::from_str(&std::fs::read_to_string(tokens.path()).unwrap()).unwrap();
    let response = &document["credentials"]["token_response"];
    (
        response["access_token"].as_str().unwrap().to_owned(),
        response["refresh_token"].as_str().unwrap().to_owned(),
    )
}

/// The fixture's origin (`http://127.0.0.1:PORT`).
fn origin(fixture: &AuthServer) -> &str {
    fixture.url.trim_end_matches("/mcp")
}

/// The status of an MCP `initialize` sent with `access` as the bearer token, straight to the
/// fixture.
async fn bearer_status(fixture: &AuthServer, access: &str) -> u16 {
    reqwest::Client::new()
        .post(&fixture.url)
        .bearer_auth(access)
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json")
        .body(
            json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                "protocolVersion": "2025-06-18", "capabilities": {},
                "clientInfo": {"name": "test", "version": "0"}}})
            .to_string(),
        )
        .send()
        .await
        .unwrap()
        .status()
        .as_u16()
}

/// The status of a refresh-token grant sent straight to the fixture's /token.
async fn refresh_status(fixture: &AuthServer, refresh: &str, client: &[(&str, &str)]) -> u16 {
    let mut form = vec![("grant_type", "refresh_token"), ("refresh_token", refresh)];
    form.extend_from_slice(client);
    let body = form
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join("&");
    reqwest::Client::new()
        .post(format!("{}/token", origin(fixture)))
        .header("content-type", "application/x-www-form-urlencoded")
        .body(body)
        .send()
        .await
        .unwrap()
        .status()
        .as_u16()
}

fn confidential(callback_port: u16) -> strata_mcp::config::OAuthSpec {
    strata_mcp::config::OAuthSpec {
        client_id: Some("strata-confidential".into()),
        callback_port: Some(callback_port),
        scopes: vec!["mcp".into()],
        ..Default::default()
    }
}

fn store_secret(config: &ServerConfig, secret: &str) {
    config
        .client_file()
        .unwrap()
        .save(&StoredClient {
            client_id: "strata-confidential".into(),
            client_secret: ClientSecret::new(secret).unwrap(),
            origin: ClientOrigin::Configured,
        })
        .unwrap();
}

#[tokio::test]
async fn a_confidential_client_signs_in_with_its_secret_refreshes_later_and_revokes() {
    let Some(python) = python() else {
        return;
    };
    let callback_port = free_port();
    let port = callback_port.to_string();
    let fixture = auth_server_with(&python, &["3600", &port, "--secret", "right-secret"]).await;
    let home = tempfile::tempdir().unwrap();
    let mut config = config(&fixture.url, home.path());
    config.spec.oauth = Some(confidential(callback_port));

    // A variable named for the secret that is not set, and nothing stored: said up front.
    let mut from_env = config.clone();
    if let Some(oauth) = from_env.spec.oauth.as_mut() {
        oauth.client_secret_env = Some("STRATA_TEST_NO_SUCH_SECRET_VARIABLE".into());
    }
    let missing = SignInRequest::for_server(&from_env, Duration::from_secs(5)).unwrap_err();
    assert!(
        missing.contains("MCP server \"docs\"")
            && missing.contains("STRATA_TEST_NO_SUCH_SECRET_VARIABLE")
            && missing.contains("strata mcp login docs --client-secret"),
        "{missing}"
    );

    // No secret at all: the token request is refused, and the error names the server.
    let refused = sign_in_with_browser(&config).await.unwrap_err();
    assert!(
        matches!(
            &refused,
            SignInError::ClientRejected {
                had_secret: false,
                ..
            }
        ),
        "{refused:?}"
    );
    let text = refused.to_string();
    assert!(
        text.contains("client \"strata-confidential\" of MCP server \"docs\"")
            && text.contains("needs a client secret"),
        "{text}"
    );
    // The wrong secret: refused too.
    store_secret(&config, "wrong-secret");
    let refused = sign_in_with_browser(&config).await.unwrap_err();
    assert!(
        matches!(
            &refused,
            SignInError::ClientRejected {
                had_secret: true,
                ..
            }
        ),
        "{refused:?}"
    );
    assert!(
        refused.to_string().contains("check its secret"),
        "{refused}"
    );
    let tokens = config.token_file().unwrap();
    assert_eq!(tokens.state(), TokenState::Missing);

    // The right one: signed in; the secret stays out of the token file.
    store_secret(&config, "right-secret");
    sign_in_with_browser(&config).await.unwrap();
    assert!(
        !std::fs::read_to_string(tokens.path())
            .unwrap()
            .contains("right-secret")
    );
    let manager = started(&config).await;
    assert_eq!(manager.status()[0].state, ServerState::Connected);
    let whoami = call(&manager, "whoami").await;
    assert!(
        whoami
            .text_content()
            .starts_with("client strata-confidential "),
        "{whoami:?}"
    );
    // The access token dies; a new process refreshes with the stored secret.
    assert!(!call(&manager, "expire_access").await.is_error);
    manager.shutdown().await;
    let later = connects_after_one_refresh(&config).await;
    assert!(!call(&later, "expire_access").await.is_error);
    later.shutdown().await;

    // A wrong secret now: the refresh is refused, and the state names the server.
    store_secret(&config, "wrong-secret");
    let refused = started(&config).await;
    let status = refused.status()[0].clone();
    assert!(
        matches!(&status.state, ServerState::Failed { error }
            if error.starts_with("the authorization server rejected the OAuth client of MCP server \"docs\" (invalid_client: Invalid client_secret)")
            && error.ends_with("check its secret: `strata mcp login docs --client-secret`")),
        "{status:?}"
    );
    refused.shutdown().await;
    // The right one again: the refresh goes through.
    store_secret(&config, "right-secret");
    let again = started(&config).await;
    assert_eq!(again.status()[0].state, ServerState::Connected);
    again.shutdown().await;

    // Logout revokes both tokens with the client's secret; the secret stays unless asked.
    let (access, refresh) = stored_tokens(&tokens);
    assert_eq!(bearer_status(&fixture, &access).await, 200);
    let report = log_out(&config, false).await.unwrap();
    let endpoint = format!("{}/revoke", origin(&fixture));
    assert_eq!(
        report.revocation,
        Revocation::Revoked {
            endpoint: endpoint.clone()
        },
        "{report:?}"
    );
    assert_eq!(
        report.revocation_sentence(),
        format!("tokens revoked at {endpoint}")
    );
    assert_eq!(tokens.state(), TokenState::Missing);
    assert_eq!(bearer_status(&fixture, &access).await, 401);
    let client = [
        ("client_id", "strata-confidential"),
        ("client_secret", "right-secret"),
    ];
    assert_eq!(refresh_status(&fixture, &refresh, &client).await, 400);
    assert!(config.client_file().unwrap().path().exists());
    let report = log_out(&config, true).await.unwrap();
    assert_eq!(report.revocation, Revocation::NothingStored);
    assert!(
        matches!(report.forgot_client, Some((_, true))),
        "{report:?}"
    );
    assert!(!config.client_file().unwrap().path().exists());
}

#[tokio::test]
async fn logout_revokes_the_refresh_and_access_token_of_a_public_client() {
    let Some(python) = python() else {
        return;
    };
    let fixture = auth_server(&python).await;
    let home = tempfile::tempdir().unwrap();
    let config = config(&fixture.url, home.path());
    sign_in_with_browser(&config).await.unwrap();
    let tokens = config.token_file().unwrap();
    let (access, refresh) = stored_tokens(&tokens);
    let client_id: Value =
        serde_json::from_str(&std::fs::read_to_string(tokens.path()).unwrap()).unwrap();
    let client_id = client_id["credentials"]["client_id"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(bearer_status(&fixture, &access).await, 200);

    let report: LogoutReport = log_out(&config, false).await.unwrap();
    assert!(
        matches!(&report.revocation, Revocation::Revoked { endpoint } if endpoint.ends_with("/revoke")),
        "{report:?}"
    );
    assert!(report.removed_tokens);
    assert_eq!(tokens.state(), TokenState::Missing);
    // The fixture refuses both old tokens.
    assert_eq!(bearer_status(&fixture, &access).await, 401);
    assert_eq!(
        refresh_status(&fixture, &refresh, &[("client_id", &client_id)]).await,
        400
    );
    // And its log says it revoked them, refresh token first.
    sign_in_with_browser(&config).await.unwrap();
    let manager = started(&config).await;
    let log = auth_log(&call(&manager, "auth_log").await);
    assert_eq!(log["revoked"], json!(["refresh", "access"]), "{log}");
    manager.shutdown().await;
}

#[tokio::test]
async fn logout_from_a_server_without_revocation_deletes_the_tokens_locally() {
    let Some(python) = python() else {
        return;
    };
    let fixture = auth_server_with(&python, &["3600", "--no-revocation"]).await;
    let home = tempfile::tempdir().unwrap();
    let config = config(&fixture.url, home.path());
    sign_in_with_browser(&config).await.unwrap();
    let report = log_out(&config, false).await.unwrap();
    assert_eq!(report.revocation, Revocation::NotOffered);
    assert_eq!(
        report.revocation_sentence(),
        "server offers no revocation; tokens deleted locally"
    );
    assert_eq!(config.token_file().unwrap().state(), TokenState::Missing);
}

#[tokio::test]
async fn a_secret_from_dynamic_registration_is_kept_for_refresh_and_a_dead_server_still_logs_out() {
    let Some(python) = python() else {
        return;
    };
    let fixture = auth_server_with(&python, &["3600", "--registration-secret"]).await;
    let home = tempfile::tempdir().unwrap();
    let config = config(&fixture.url, home.path());
    sign_in_with_browser(&config).await.unwrap();
    let kept = config.client_file().unwrap().load().unwrap().unwrap();
    assert_eq!(kept.origin, ClientOrigin::Registered);
    let manager = started(&config).await;
    let log = auth_log(&call(&manager, "auth_log").await);
    assert_eq!(
        log["token_endpoint_auth_method"], "client_secret_post",
        "{log}"
    );
    assert!(!call(&manager, "expire_access").await.is_error);
    manager.shutdown().await;
    // Another process refreshes, authenticating with the registered secret.
    connects_after_one_refresh(&config).await.shutdown().await;

    // The authorization server is gone: the logout says so and deletes the tokens anyway.
    drop(fixture);
    tokio::time::sleep(Duration::from_millis(300)).await;
    let report = log_out(&config, false).await.unwrap();
    assert!(
        matches!(&report.revocation, Revocation::Failed(_)),
        "{report:?}"
    );
    let sentence = report.revocation_sentence();
    assert!(
        sentence.starts_with("revocation failed: ")
            && sentence.ends_with("; tokens deleted locally"),
        "{sentence}"
    );
    assert_eq!(config.token_file().unwrap().state(), TokenState::Missing);
}
