//! The interactive sign-in: ask the server (its 401 names the protected resource metadata),
//! discover the authorization server, register strata when it offers dynamic registration,
//! send the user to the authorization URL (code + PKCE S256 + `resource`), hear the redirect
//! on a loopback port of 127.0.0.1, and trade the code for tokens in the token file.

use std::collections::BTreeMap;
use std::time::Duration;

use rmcp::transport::auth::{
    AuthError, AuthorizationManager, AuthorizationRequest, AuthorizationSession,
};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::{TcpListener, TcpStream};

use super::store::TokenFile;
use crate::config::{ServerConfig, Transport};

/// The path of the loopback redirect.
const CALLBACK_PATH: &str = "/callback";

/// How long the probe waits for the server's answer.
const PROBE_TIMEOUT: Duration = Duration::from_secs(30);

/// The most of a callback request strata reads (a redirect is one short GET).
const MAX_REQUEST_BYTES: usize = 16 * 1024;

/// What a sign-in needs.
#[derive(Debug, Clone)]
pub struct SignInRequest {
    /// The server's streamable HTTP endpoint.
    pub server_url: String,
    /// Headers of the server's entry, sent with the probe.
    pub headers: BTreeMap<String, String>,
    /// Where the tokens go.
    pub tokens: TokenFile,
    /// The name strata registers under.
    pub client_name: String,
    /// How long to wait for the user to finish in the browser.
    pub wait: Duration,
    /// A client registered out of band (instead of dynamic registration).
    pub client_id: Option<String>,
    /// The loopback port registered with that client (default: ephemeral).
    pub callback_port: Option<u16>,
    /// Scopes to ask for (default: the server's).
    pub scopes: Vec<String>,
}

impl SignInRequest {
    /// The sign-in of `server`, waiting `wait` for the browser; why not, when it has none
    /// (a stdio server, or no user directory to keep tokens in).
    pub fn for_server(server: &ServerConfig, wait: Duration) -> Result<Self, String> {
        let Transport::Http { url, headers } = &server.transport else {
            return Err(format!(
                "MCP server \"{}\" runs as a local command; only streamable HTTP servers sign in",
                server.name
            ));
        };
        let tokens = server.token_file().ok_or_else(|| {
            format!(
                "no user directory to keep the tokens of MCP server \"{}\" in (HOME is not set)",
                server.name
            )
        })?;
        let oauth = server.spec.oauth.clone().unwrap_or_default();
        Ok(Self {
            server_url: url.clone(),
            headers: headers.clone(),
            tokens,
            client_name: "strata".to_owned(),
            wait,
            client_id: oauth.client_id,
            callback_port: oauth.callback_port,
            scopes: oauth.scopes,
        })
    }
}

/// A finished sign-in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignedIn {
    /// The scopes asked for.
    pub scopes: Vec<String>,
}

/// Why a sign-in did not finish.
#[derive(Debug, thiserror::Error)]
pub enum SignInError {
    /// The server answered without asking for authorization: nothing to sign in to.
    #[error(
        "the server answered without asking for authorization (HTTP {status}); it needs no sign-in"
    )]
    NotRequired {
        /// The status it answered.
        status: u16,
    },
    /// The server could not be reached.
    #[error("cannot reach the server: {0}")]
    Unreachable(String),
    /// Metadata discovery or client registration failed.
    #[error("the server's authorization setup is unusable: {0}")]
    Discovery(String),
    /// The loopback listener could not be opened or read.
    #[error("the loopback redirect on 127.0.0.1 failed: {0}")]
    Loopback(String),
    /// No redirect came back in time.
    #[error("no sign-in finished within {} s; nothing was stored", .0.as_secs())]
    TimedOut(Duration),
    /// The authorization server refused (the user said no, or the request was bad).
    #[error("the authorization server refused: {error}{}", .description.as_deref().map(|d| format!(" ({d})")).unwrap_or_default())]
    Refused {
        /// The OAuth `error` code.
        error: String,
        /// Its `error_description`.
        description: Option<String>,
    },
    /// The code could not be traded for tokens (or the `state` did not match).
    #[error("the token exchange failed: {0}")]
    Exchange(String),
}

fn discovery(error: AuthError) -> SignInError {
    SignInError::Discovery(error.to_string())
}

/// Signs in: `on_url` gets the authorization URL to show (and open) as soon as it is known;
/// the call returns once the redirect arrived and the tokens are stored, or fails saying why.
pub async fn sign_in(
    request: SignInRequest,
    on_url: impl FnOnce(&str) + Send,
) -> Result<SignedIn, SignInError> {
    let pending = start_sign_in(request).await?;
    on_url(pending.authorization_url());
    pending.finish().await
}

/// A sign-in waiting for the user: the URL to open, and the loopback port listening for the
/// redirect.
pub struct PendingSignIn {
    session: AuthorizationSession,
    listener: TcpListener,
    port: u16,
    scopes: Vec<String>,
    wait: Duration,
}

impl std::fmt::Debug for PendingSignIn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PendingSignIn")
            .field("port", &self.port)
            .field("scopes", &self.scopes)
            .finish_non_exhaustive()
    }
}

/// Everything up to the browser: the probe, discovery, registration, the loopback port and
/// the authorization URL. Nothing is stored yet.
pub async fn start_sign_in(request: SignInRequest) -> Result<PendingSignIn, SignInError> {
    let challenge = probe(&request.server_url, &request.headers).await?;
    let listener = TcpListener::bind(("127.0.0.1", request.callback_port.unwrap_or(0)))
        .await
        .map_err(|error| SignInError::Loopback(error.to_string()))?;
    let port = listener
        .local_addr()
        .map_err(|error| SignInError::Loopback(error.to_string()))?
        .port();
    let redirect_uri = format!("http://127.0.0.1:{port}{CALLBACK_PATH}");

    let mut manager = AuthorizationManager::new(request.server_url.as_str())
        .await
        .map_err(discovery)?;
    manager.set_credential_store(request.tokens.clone());
    let resolution = manager
        .resolve_metadata_from_challenge(challenge.as_deref())
        .await
        .map_err(discovery)?;
    manager.set_metadata(resolution.metadata);
    let mut authorization = AuthorizationRequest::new(redirect_uri.as_str())
        .with_client_name(request.client_name.as_str());
    if let Some(client_id) = &request.client_id {
        authorization = authorization.with_preregistered_client(client_id.as_str());
    }
    if !request.scopes.is_empty() {
        authorization = authorization.with_scopes(request.scopes.iter().cloned());
    }
    let session = AuthorizationSession::new(manager, authorization)
        .await
        .map_err(|(_, error)| discovery(error))?;
    let scopes = session.auth_manager.get_current_scopes().await;
    Ok(PendingSignIn {
        session,
        listener,
        port,
        scopes,
        wait: request.wait,
    })
}

impl PendingSignIn {
    /// The URL the user opens.
    pub fn authorization_url(&self) -> &str {
        self.session.get_authorization_url()
    }

    /// How long [`PendingSignIn::finish`] waits.
    pub fn wait(&self) -> Duration {
        self.wait
    }

    /// Waits for the redirect (other requests on the port get a 404 and are ignored), trades
    /// the code for tokens and stores them.
    pub async fn finish(self) -> Result<SignedIn, SignInError> {
        let Self {
            session,
            listener,
            port,
            scopes,
            wait,
        } = self;
        let finished = tokio::time::timeout(wait, async {
            loop {
                let (stream, _) = listener
                    .accept()
                    .await
                    .map_err(|error| SignInError::Loopback(error.to_string()))?;
                if let Some(result) = answer_callback(stream, port, &session).await {
                    return result;
                }
            }
        })
        .await
        .map_err(|_| SignInError::TimedOut(wait))?;
        finished.map(|()| SignedIn { scopes })
    }
}

/// Sends the server an `initialize` without credentials: its 401's `WWW-Authenticate` names
/// the protected resource metadata (`None` when it sent no challenge header).
async fn probe(
    server_url: &str,
    headers: &BTreeMap<String, String>,
) -> Result<Option<String>, SignInError> {
    let client = reqwest::Client::new();
    let mut builder = client
        .post(server_url)
        .timeout(PROBE_TIMEOUT)
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json")
        .body(
            serde_json::json!({
                "jsonrpc": "2.0",
                "id": 0,
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-06-18",
                    "capabilities": {},
                    "clientInfo": {"name": "strata", "version": env!("CARGO_PKG_VERSION")}
                }
            })
            .to_string(),
        );
    for (name, value) in headers {
        // A configured Authorization header would hide the server's challenge.
        if !name.eq_ignore_ascii_case("authorization") {
            builder = builder.header(name.as_str(), value.as_str());
        }
    }
    let response = builder
        .send()
        .await
        .map_err(|error| SignInError::Unreachable(error.to_string()))?;
    let status = response.status();
    if status != reqwest::StatusCode::UNAUTHORIZED {
        return Err(SignInError::NotRequired {
            status: status.as_u16(),
        });
    }
    Ok(response
        .headers()
        .get(reqwest::header::WWW_AUTHENTICATE)
        .and_then(|value| value.to_str().ok())
        .map(str::to_owned))
}

/// Reads one request on the loopback port. `None`: not the callback (a favicon, a probe),
/// keep listening; `Some`: the sign-in's outcome, already shown to the browser.
async fn answer_callback(
    mut stream: TcpStream,
    port: u16,
    session: &AuthorizationSession,
) -> Option<Result<(), SignInError>> {
    let target = read_request_target(&mut stream).await?;
    let url = reqwest::Url::parse(&format!("http://127.0.0.1:{port}{target}")).ok()?;
    if url.path() != CALLBACK_PATH {
        respond(&mut stream, "404 Not Found", "Not the sign-in callback.").await;
        return None;
    }
    let query = |key: &str| {
        url.query_pairs()
            .find(|(name, _)| name == key)
            .map(|(_, value)| value.into_owned())
    };
    if let Some(error) = query("error") {
        let refused = SignInError::Refused {
            error,
            description: query("error_description"),
        };
        respond(
            &mut stream,
            "200 OK",
            &format!("strata: sign-in failed: {refused}"),
        )
        .await;
        return Some(Err(refused));
    }
    let result = session
        .handle_callback_url(url.as_str())
        .await
        .map(|_| ())
        .map_err(|error| SignInError::Exchange(error.to_string()));
    let page = match &result {
        Ok(()) => "strata: signed in. You can close this tab.".to_owned(),
        Err(error) => format!("strata: sign-in failed: {error}"),
    };
    respond(&mut stream, "200 OK", &page).await;
    Some(result)
}

/// The target of an HTTP/1.1 `GET` (`/callback?code=…`), or `None` for anything else.
async fn read_request_target(stream: &mut TcpStream) -> Option<String> {
    let mut buffer = Vec::new();
    let mut chunk = [0u8; 2048];
    while !buffer.windows(4).any(|window| window == b"\r\n\r\n") {
        if buffer.len() > MAX_REQUEST_BYTES {
            return None;
        }
        let read = tokio::time::timeout(Duration::from_secs(10), stream.read(&mut chunk))
            .await
            .ok()?
            .ok()?;
        if read == 0 {
            break;
        }
        buffer.extend_from_slice(&chunk[..read]);
    }
    let head = String::from_utf8_lossy(&buffer);
    let mut words = head.lines().next()?.split_whitespace();
    match (words.next(), words.next()) {
        (Some("GET"), Some(target)) if target.starts_with('/') => Some(target.to_owned()),
        _ => None,
    }
}

async fn respond(stream: &mut TcpStream, status: &str, text: &str) {
    let body = format!(
        "<!doctype html><meta charset=\"utf-8\"><title>strata</title><p>{}</p>\n",
        text.replace('&', "&amp;").replace('<', "&lt;")
    );
    let response = format!(
        "HTTP/1.1 {status}\r\ncontent-type: text/html; charset=utf-8\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = stream.write_all(response.as_bytes()).await;
    let _ = stream.shutdown().await;
}
