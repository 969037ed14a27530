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

use super::client::{self, ClientOrigin, ClientSecretFile, StoredClient};
use super::store::TokenFile;
use super::{Confidential, TOKEN_AUTH_METHODS};
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
    /// The server's name (in errors).
    pub server_name: String,
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
    /// The secret of `client_id` when that client is confidential.
    pub confidential: Option<Confidential>,
    /// Where a secret handed out by dynamic registration is kept (for later refreshes).
    pub client_file: Option<ClientSecretFile>,
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
        // Only a client of the entry signs in with a secret; a registered one gets a new
        // registration (and maybe a new secret) below.
        let confidential = match &oauth.client_id {
            Some(_) => Confidential::of(server)?,
            None => None,
        };
        Ok(Self {
            server_name: server.name.clone(),
            server_url: url.clone(),
            headers: headers.clone(),
            tokens,
            client_name: "strata".to_owned(),
            wait,
            client_id: oauth.client_id,
            callback_port: oauth.callback_port,
            scopes: oauth.scopes,
            confidential,
            client_file: server.client_file(),
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
    /// The authorization server did not accept the client's authentication: a wrong or
    /// missing secret.
    #[error(
        "the authorization server rejected client \"{client_id}\" of MCP server \"{server}\" ({detail}); {}",
        if *.had_secret { format!("check its secret: `strata mcp login {server} --client-secret`") } else { format!("it needs a client secret: `strata mcp login {server} --client-secret`") }
    )]
    ClientRejected {
        /// The server's name.
        server: String,
        /// The client.
        client_id: String,
        /// Whether a secret was sent.
        had_secret: bool,
        /// What the authorization server said.
        detail: String,
    },
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
    /// Who is signing in, for [`SignInError::ClientRejected`].
    server_name: String,
    client_id: Option<String>,
    had_secret: bool,
    /// What to do with the client file once the tokens are stored.
    client_file: Option<(ClientSecretFile, Option<StoredClient>)>,
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
    let mut metadata = resolution.metadata;
    let configured_method = request.confidential.as_ref().and_then(|c| c.method);
    let method = client::auth_method(&metadata, TOKEN_AUTH_METHODS, configured_method);
    // Without a secret the SDK sends the client id in the body whatever the method.
    client::pin_token_auth_method(&mut metadata, method);
    manager.set_metadata(metadata);
    let mut authorization = AuthorizationRequest::new(redirect_uri.as_str())
        .with_client_name(request.client_name.as_str());
    let mut client_file = None;
    let (client_id, had_secret) = match &request.client_id {
        Some(client_id) => {
            authorization = authorization.with_preregistered_client(client_id.as_str());
            if let Some(confidential) = &request.confidential {
                authorization =
                    authorization.with_client_secret(confidential.client.client_secret.expose());
            }
            (client_id.clone(), request.confidential.is_some())
        }
        None => {
            // strata registers itself rather than leaving it to the session, to keep a
            // secret the authorization server may hand out: refreshes in later processes
            // must authenticate with it.
            let scopes = if request.scopes.is_empty() {
                manager.select_scopes(None, &[])
            } else {
                request.scopes.clone()
            };
            let scope_refs: Vec<&str> = scopes.iter().map(String::as_str).collect();
            let registered = manager
                .register_client(&request.client_name, &redirect_uri, &scope_refs)
                .await
                .map_err(|error| {
                    SignInError::Discovery(format!("Dynamic registration failed: {error}"))
                })?;
            authorization = authorization.with_preregistered_client(registered.client_id.as_str());
            let stored = registered.client_secret.as_deref().and_then(|secret| {
                let client_secret = client::ClientSecret::new(secret)?;
                Some(StoredClient {
                    client_id: registered.client_id.clone(),
                    client_secret,
                    origin: ClientOrigin::Registered,
                })
            });
            if let Some(stored) = &stored {
                authorization = authorization.with_client_secret(stored.client_secret.expose());
            }
            let had_secret = stored.is_some();
            client_file = request.client_file.clone().map(|file| (file, stored));
            (registered.client_id, had_secret)
        }
    };
    if !request.scopes.is_empty() {
        authorization = authorization.with_scopes(request.scopes.iter().cloned());
    }
    let session = AuthorizationSession::new(manager, authorization)
        .await
        .map_err(|(_, error)| discovery(error))?;
    let scopes = session.auth_manager.get_current_scopes().await;
    Ok(PendingSignIn {
        session,
        server_name: request.server_name,
        client_id: Some(client_id),
        had_secret,
        client_file,
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
            server_name,
            client_id,
            had_secret,
            client_file,
            listener,
            port,
            scopes,
            wait,
        } = self;
        let who = Who {
            server_name,
            client_id,
            had_secret,
        };
        let finished = tokio::time::timeout(wait, async {
            loop {
                let (stream, _) = listener
                    .accept()
                    .await
                    .map_err(|error| SignInError::Loopback(error.to_string()))?;
                if let Some(result) = answer_callback(stream, port, &session, &who).await {
                    return result;
                }
            }
        })
        .await
        .map_err(|_| SignInError::TimedOut(wait))?;
        finished?;
        if let Some((file, registered)) = client_file {
            keep_registered_client(&file, registered.as_ref())?;
        }
        Ok(SignedIn { scopes })
    }
}

/// After a sign-in through dynamic registration: keeps the secret it handed out, or drops
/// one an earlier registration left (a client the entry configured stays).
fn keep_registered_client(
    file: &ClientSecretFile,
    registered: Option<&StoredClient>,
) -> Result<(), SignInError> {
    let stored = |error: std::io::Error| {
        SignInError::Exchange(format!(
            "the tokens are stored, but not the client secret the registration handed out ({}: {error}); refreshes will fail",
            file.path().display()
        ))
    };
    match registered {
        Some(client) => file.save(client).map_err(stored),
        None => {
            if let Ok(Some(old)) = file.load()
                && old.origin == ClientOrigin::Registered
            {
                file.remove().map_err(stored)?;
            }
            Ok(())
        }
    }
}

/// The client signing in, to name in a rejection.
struct Who {
    server_name: String,
    client_id: Option<String>,
    had_secret: bool,
}

impl Who {
    fn exchange_error(&self, error: AuthError) -> SignInError {
        let text = error.to_string();
        match &self.client_id {
            Some(client_id) if super::rejection_at(&text).is_some() => {
                SignInError::ClientRejected {
                    server: self.server_name.clone(),
                    client_id: client_id.clone(),
                    had_secret: self.had_secret,
                    detail: text,
                }
            }
            _ => SignInError::Exchange(text),
        }
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
    who: &Who,
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
        .map_err(|error| who.exchange_error(error));
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
