//! OAuth sign-in for streamable HTTP servers that ask for it (the MCP authorization spec),
//! on the SDK's OAuth client (`rmcp`'s `auth` feature): protected resource metadata from the
//! 401's `WWW-Authenticate` or `/.well-known/oauth-protected-resource`, authorization server
//! metadata, dynamic client registration, code + PKCE S256 with `resource`, refresh, and one
//! silent refresh-and-retry when the server rejects a token.
//!
//! strata's part: the token file per server ([`store`]), the loopback redirect and the
//! user-facing outcome ([`signin`]), and building the authorized HTTP client a connection
//! uses ([`authorized_client`]).

pub mod client;
pub mod revoke;
pub mod signin;
pub mod store;

use rmcp::transport::auth::{AuthClient, AuthorizationManager, OAuthClientConfig};

pub use client::{
    ClientAuthMethod, ClientOrigin, ClientSecret, ClientSecretFile, StoredClient, client_secret_of,
};
pub use revoke::{LogoutReport, Revocation, log_out};
pub use signin::{PendingSignIn, SignInError, SignInRequest, SignedIn, sign_in, start_sign_in};
pub use store::{TokenFile, TokenState};

/// The metadata field naming the token endpoint's client authentication methods.
const TOKEN_AUTH_METHODS: &str = "token_endpoint_auth_methods_supported";

/// When `error` (a connection's or a call's) is the authorization server refusing the
/// client's authentication on a refresh (a wrong, missing or revoked client secret), the
/// sentence that says so and names the server.
pub(crate) fn client_rejection(server: &str, error: &str) -> Option<String> {
    let start = rejection_at(error)?;
    let detail = &error[start..];
    let detail = detail.split(", when send").next().unwrap_or(detail).trim();
    Some(format!(
        "the authorization server rejected the OAuth client of MCP server \"{server}\" ({detail}); check its secret: `strata mcp login {server} --client-secret`"
    ))
}

/// Where `error` names one of the OAuth error codes that refuse the client itself
/// (RFC 6749 §5.2), if it does.
pub(crate) fn rejection_at(error: &str) -> Option<usize> {
    ["invalid_client", "unauthorized_client"]
        .iter()
        .find_map(|code| error.find(code))
}

/// A confidential client as a server's connection, sign-in and logout use it: its id and
/// secret, and the authentication method its entry names (if any).
#[derive(Debug, Clone)]
pub struct Confidential {
    /// The client and its secret.
    pub client: StoredClient,
    /// `oauth.token_endpoint_auth_method` of the entry.
    pub method: Option<ClientAuthMethod>,
}

impl Confidential {
    /// `server`'s confidential client, `Ok(None)` for a public one ([`client_secret_of`]).
    pub fn of(server: &crate::ServerConfig) -> Result<Option<Self>, String> {
        let method = server
            .spec
            .oauth
            .as_ref()
            .and_then(|oauth| oauth.token_endpoint_auth_method.as_deref())
            .and_then(ClientAuthMethod::from_name);
        Ok(client_secret_of(server)?.map(|client| Self { client, method }))
    }
}

/// The folder under the user's strata directory that holds the token files.
pub const TOKEN_DIR_NAME: &str = "mcp-tokens";

/// A sign-in started for one of a manager's servers: the URL for the user, and the wait for
/// the browser running in the background (it reconnects the server once signed in, so its
/// tools arrive as additions).
#[derive(Debug)]
pub struct BegunSignIn {
    /// The authorization URL to show (and open).
    pub url: String,
    /// How long the background task waits for the browser.
    pub wait: std::time::Duration,
    /// Ends when the sign-in and the reconnect after it are done, or the sign-in failed.
    pub done: tokio::task::JoinHandle<Result<(), SignInError>>,
}

/// Starts the sign-in of `server` (one of `manager`'s): discovery and registration now, the
/// wait for the browser (at most `wait`) and the reconnect in a background task.
pub async fn begin_sign_in(
    manager: &crate::McpManager,
    server: &str,
    wait: std::time::Duration,
) -> Result<BegunSignIn, String> {
    let config = manager
        .server_config(server)
        .ok_or_else(|| format!("no MCP server \"{server}\""))?;
    let request = SignInRequest::for_server(&config, wait)?;
    let pending = start_sign_in(request)
        .await
        .map_err(|error| format!("sign-in to {server} failed: {error}"))?;
    let url = pending.authorization_url().to_owned();
    let manager = manager.clone();
    let name = server.to_owned();
    let done = tokio::spawn(async move {
        pending.finish().await?;
        let _ = manager.reconnect(&name).await;
        Ok(())
    });
    Ok(BegunSignIn { url, wait, done })
}

/// An HTTP client that sends `tokens`' access token (refreshed when it is about to expire,
/// and once more when the server rejects it, authenticating as `confidential` when the
/// client has a secret), or `Ok(None)` when there are no usable tokens (the connection goes
/// out without, and a 401 says sign-in is needed).
pub async fn authorized_client(
    server_url: &str,
    tokens: &TokenFile,
    confidential: Option<&Confidential>,
) -> Result<Option<AuthClient<reqwest::Client>>, String> {
    if tokens.state() != TokenState::Present {
        return Ok(None);
    }
    let mut manager = AuthorizationManager::new(server_url)
        .await
        .map_err(|error| error.to_string())?;
    manager.set_credential_store(tokens.clone());
    if let Some(confidential) = confidential {
        // Discovered here rather than by `initialize_from_store`, to pin the method.
        let mut metadata = manager
            .resolve_metadata()
            .await
            .map_err(|error| format!("cannot use the stored sign-in: {error}"))?
            .metadata;
        let method = client::auth_method(&metadata, TOKEN_AUTH_METHODS, confidential.method);
        client::pin_token_auth_method(&mut metadata, method);
        manager.set_metadata(metadata);
    }
    // Discovers the authorization server again (its token endpoint) and takes the
    // registered client id from the file; `false`: the tokens belong to another issuer.
    match manager.initialize_from_store().await {
        Ok(true) => {
            if let Some(confidential) = confidential {
                let (client_id, _) = manager
                    .get_credentials()
                    .await
                    .map_err(|error| format!("cannot use the stored sign-in: {error}"))?;
                // The secret belongs to one client; tokens of another go without it.
                if client_id == confidential.client.client_id {
                    manager
                        .configure_client(
                            OAuthClientConfig::new(client_id, server_url)
                                .with_client_secret(confidential.client.client_secret.expose()),
                        )
                        .map_err(|error| format!("cannot use the stored sign-in: {error}"))?;
                }
            }
            Ok(Some(AuthClient::new(reqwest::Client::new(), manager)))
        }
        Ok(false) => Ok(None),
        Err(error) => Err(format!("cannot use the stored sign-in: {error}")),
    }
}
