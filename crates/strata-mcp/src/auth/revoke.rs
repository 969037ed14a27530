//! Logout: revoke the stored tokens at the authorization server (RFC 7009), refresh token
//! first (servers revoke the access tokens issued with it too), then the access token,
//! within [`REVOCATION_TIMEOUT`]; then delete the token file whatever the outcome: a
//! logout never leaves tokens on disk because a server was down. The SDK's OAuth client
//! has no revocation, so strata sends the two form posts itself.

use std::path::PathBuf;
use std::time::Duration;

use rmcp::transport::auth::{AuthorizationManager, AuthorizationMetadata};

use super::client::{self, ClientAuthMethod};
use super::{Confidential, TOKEN_AUTH_METHODS};
use crate::config::ServerConfig;

/// How long a logout may spend on discovery and revocation before deleting locally anyway.
pub const REVOCATION_TIMEOUT: Duration = Duration::from_secs(10);

/// What became of the tokens at the authorization server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Revocation {
    /// Both tokens (those stored) were revoked at `endpoint`.
    Revoked {
        /// The revocation endpoint.
        endpoint: String,
    },
    /// The authorization server's metadata names no revocation endpoint.
    NotOffered,
    /// Discovery or revocation failed; the text says how.
    Failed(String),
    /// There were no usable tokens to revoke (no file, or one that could not be read).
    NothingStored,
}

/// What a logout did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogoutReport {
    /// The revocation's outcome.
    pub revocation: Revocation,
    /// The token file.
    pub token_file: PathBuf,
    /// Whether a token file was deleted.
    pub removed_tokens: bool,
    /// `Some(deleted)` when the client's secret file was to be forgotten too.
    pub forgot_client: Option<(PathBuf, bool)>,
}

impl LogoutReport {
    /// The revocation in a sentence: "tokens revoked at …", "server offers no revocation;
    /// tokens deleted locally", "revocation failed: …; tokens deleted locally".
    pub fn revocation_sentence(&self) -> String {
        match &self.revocation {
            Revocation::Revoked { endpoint } => format!("tokens revoked at {endpoint}"),
            Revocation::NotOffered => {
                "server offers no revocation; tokens deleted locally".to_owned()
            }
            Revocation::Failed(error) => {
                format!("revocation failed: {error}; tokens deleted locally")
            }
            Revocation::NothingStored if self.removed_tokens => {
                "no usable tokens to revoke; the token file was deleted".to_owned()
            }
            Revocation::NothingStored => "no stored sign-in".to_owned(),
        }
    }

    /// Everything the logout did, in one line.
    pub fn describe(&self) -> String {
        let mut text = self.revocation_sentence();
        if self.removed_tokens {
            text.push_str(&format!(" (removed {})", self.token_file.display()));
        }
        text.push_str(&self.client_sentence());
        text
    }

    /// What became of the client's stored secret, as a clause to append (`""` when it was
    /// not to be forgotten).
    pub fn client_sentence(&self) -> String {
        match &self.forgot_client {
            Some((path, true)) => format!("; client secret forgotten (removed {})", path.display()),
            Some((_, false)) => "; no stored client secret to forget".to_owned(),
            None => String::new(),
        }
    }
}

/// Logs out of `server`: revokes its stored tokens (authenticating as its confidential
/// client when it has one), deletes the token file, and with `forget_client` the stored
/// client secret too. `Err` only when the server has no sign-in or a file cannot be deleted.
pub async fn log_out(server: &ServerConfig, forget_client: bool) -> Result<LogoutReport, String> {
    let crate::config::Transport::Http { url, .. } = &server.transport else {
        return Err(format!(
            "MCP server \"{}\" has no sign-in (only streamable HTTP servers sign in)",
            server.name
        ));
    };
    let Some(tokens) = server.token_file() else {
        return Err(format!(
            "MCP server \"{}\" has no sign-in (no user directory for tokens)",
            server.name
        ));
    };
    let revocation = match tokens.credentials().and_then(|stored| {
        let tokens = stored_tokens(&stored)?;
        Some((stored.client_id, tokens))
    }) {
        None => Revocation::NothingStored,
        Some((client_id, (access, refresh))) => {
            // The secret only when it is this client's; a missing one is said by the server.
            let confidential = Confidential::of(server)
                .ok()
                .flatten()
                .filter(|c| c.client.client_id == client_id);
            let revoking = revoke(url, &client_id, confidential.as_ref(), &access, refresh);
            match tokio::time::timeout(REVOCATION_TIMEOUT, revoking).await {
                Ok(revocation) => revocation,
                Err(_) => Revocation::Failed(format!(
                    "no answer within {} s",
                    REVOCATION_TIMEOUT.as_secs()
                )),
            }
        }
    };
    let removed_tokens = tokens
        .remove()
        .map_err(|error| format!("cannot remove {}: {error}", tokens.path().display()))?;
    let forgot_client = match (forget_client, server.client_file()) {
        (true, Some(file)) => {
            let removed = file
                .remove()
                .map_err(|error| format!("cannot remove {}: {error}", file.path().display()))?;
            Some((file.path().to_owned(), removed))
        }
        _ => None,
    };
    Ok(LogoutReport {
        revocation,
        token_file: tokens.path().to_owned(),
        removed_tokens,
        forgot_client,
    })
}

/// The access token and refresh token of stored credentials.
fn stored_tokens(
    stored: &rmcp::transport::auth::StoredCredentials,
) -> Option<(String, Option<String>)> {
    let response = serde_json::to_value(stored.token_response.as_ref()?).ok()?;
    let text = |field: &str| response.get(field)?.as_str().map(str::to_owned);
    Some((text("access_token")?, text("refresh_token")))
}

async fn revoke(
    server_url: &str,
    client_id: &str,
    confidential: Option<&Confidential>,
    access: &str,
    refresh: Option<String>,
) -> Revocation {
    let metadata = match discover(server_url).await {
        Ok(metadata) => metadata,
        Err(error) => return Revocation::Failed(error),
    };
    let Some(endpoint) = metadata
        .additional_fields
        .get("revocation_endpoint")
        .and_then(|value| value.as_str())
        .map(str::to_owned)
    else {
        return Revocation::NotOffered;
    };
    let auth = confidential.map(|confidential| {
        let field = if metadata
            .additional_fields
            .contains_key("revocation_endpoint_auth_methods_supported")
        {
            "revocation_endpoint_auth_methods_supported"
        } else {
            TOKEN_AUTH_METHODS
        };
        (
            confidential,
            client::auth_method(&metadata, field, confidential.method),
        )
    });
    let http = reqwest::Client::new();
    let mut failures = Vec::new();
    let mut tokens = Vec::new();
    if let Some(refresh) = &refresh {
        tokens.push((refresh.as_str(), "refresh_token"));
    }
    tokens.push((access, "access_token"));
    for (token, hint) in tokens {
        if let Err(error) = revoke_one(&http, &endpoint, client_id, auth, token, hint).await {
            failures.push(format!("{hint}: {error}"));
        }
    }
    if failures.is_empty() {
        Revocation::Revoked { endpoint }
    } else {
        Revocation::Failed(format!("{endpoint}: {}", failures.join("; ")))
    }
}

async fn discover(server_url: &str) -> Result<AuthorizationMetadata, String> {
    let manager = AuthorizationManager::new(server_url)
        .await
        .map_err(|error| format!("cannot reach the authorization server: {error}"))?;
    manager
        .resolve_metadata()
        .await
        .map(|resolution| resolution.metadata)
        .map_err(|error| format!("cannot read the authorization server's metadata: {error}"))
}

/// One RFC 7009 request. The form always carries `client_id` (public clients identify
/// themselves that way, and the Python SDK's endpoint reads it with Basic too).
async fn revoke_one(
    http: &reqwest::Client,
    endpoint: &str,
    client_id: &str,
    auth: Option<(&Confidential, ClientAuthMethod)>,
    token: &str,
    hint: &str,
) -> Result<(), String> {
    let form = vec![
        ("token", token.to_owned()),
        ("token_type_hint", hint.to_owned()),
        ("client_id", client_id.to_owned()),
    ];
    match post_revocation(http, endpoint, client_id, auth, form.clone()).await? {
        None => Ok(()),
        // The Python SDK's endpoint (2.3) wants the field even from a public client; RFC 6749
        // §2.3.1 lets an empty secret stand for none, so a public client asks once more
        // with it when refused for lacking the field.
        Some(refusal) if auth.is_none() && refusal.contains("client_secret") => {
            let mut form = form;
            form.push(("client_secret", String::new()));
            match post_revocation(http, endpoint, client_id, auth, form).await? {
                None => Ok(()),
                Some(refusal) => Err(refusal),
            }
        }
        Some(refusal) => Err(refusal),
    }
}

/// Sends one revocation form; `Ok(None)` when accepted, `Ok(Some(why))` when refused with
/// HTTP 400 (an answer to act on), `Err` for any other failure.
async fn post_revocation(
    http: &reqwest::Client,
    endpoint: &str,
    client_id: &str,
    auth: Option<(&Confidential, ClientAuthMethod)>,
    mut form: Vec<(&str, String)>,
) -> Result<Option<String>, String> {
    let mut request = http.post(endpoint).timeout(REVOCATION_TIMEOUT);
    match auth {
        Some((confidential, ClientAuthMethod::Post)) => form.push((
            "client_secret",
            confidential.client.client_secret.expose().to_owned(),
        )),
        Some((confidential, ClientAuthMethod::Basic)) => {
            // RFC 6749 §2.3.1: both parts form-encoded before Basic's base64.
            request = request.basic_auth(
                form_encode(client_id),
                Some(form_encode(confidential.client.client_secret.expose())),
            );
        }
        None => {}
    }
    let body = form_urlencoded::Serializer::new(String::new())
        .extend_pairs(&form)
        .finish();
    let response = request
        .header("content-type", "application/x-www-form-urlencoded")
        .body(body)
        .send()
        .await
        .map_err(|error| error.to_string())?;
    let status = response.status();
    if status.is_success() {
        return Ok(None);
    }
    let body = response.text().await.unwrap_or_default();
    let body: String = body.chars().take(300).collect();
    let refusal = format!("HTTP {}: {body}", status.as_u16());
    if status == reqwest::StatusCode::BAD_REQUEST {
        Ok(Some(refusal))
    } else {
        Err(refusal)
    }
}

/// `application/x-www-form-urlencoded` of one value (for the parts of Basic credentials).
fn form_encode(value: &str) -> String {
    form_urlencoded::byte_serialize(value.as_bytes()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn basic_credentials_are_form_encoded_first() {
        assert_eq!(form_encode("a b:c/é"), "a+b%3Ac%2F%C3%A9");
        assert_eq!(form_encode("Az09-._*"), "Az09-._*");
    }

    #[test]
    fn the_report_says_what_happened_to_the_tokens() {
        let report = |revocation| LogoutReport {
            revocation,
            token_file: PathBuf::from("/t/docs.json"),
            removed_tokens: true,
            forgot_client: None,
        };
        assert_eq!(
            report(Revocation::Revoked {
                endpoint: "http://a/revoke".into()
            })
            .describe(),
            "tokens revoked at http://a/revoke (removed /t/docs.json)"
        );
        assert_eq!(
            report(Revocation::NotOffered).revocation_sentence(),
            "server offers no revocation; tokens deleted locally"
        );
        let mut failed = report(Revocation::Failed("HTTP 503: down".into()));
        failed.forgot_client = Some((PathBuf::from("/t/docs.client.json"), true));
        assert_eq!(
            failed.describe(),
            "revocation failed: HTTP 503: down; tokens deleted locally (removed /t/docs.json); client secret forgotten (removed /t/docs.client.json)"
        );
    }
}
