//! Google credentials: an API key, a bearer token, or an application-default credentials
//! file of type `authorized_user` (refresh token exchanged for access tokens).
//!
//! Service-account ADC files need an RS256-signed JWT, which this crate does not implement:
//! [`AdcFile::parse`] names the alternative (`gcloud auth print-access-token` into a bearer
//! token, or `gcloud auth application-default login` for an `authorized_user` file).
//! Nothing here reads the environment: [`adc_path`] takes a lookup, so callers pass values.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde::Deserialize;
use strata_provider::transport::scrub;
use strata_provider::{ApiKey, ProviderError};
use tokio::sync::Mutex;

/// Google's OAuth token endpoint (the default for `authorized_user` refreshes).
pub const TOKEN_URL: &str = "https://oauth2.googleapis.com/token";

/// The refresh-token credentials of an `authorized_user` ADC file.
#[derive(Clone, PartialEq, Eq, Deserialize)]
pub struct AuthorizedUser {
    /// OAuth client id.
    pub client_id: String,
    /// OAuth client secret.
    pub client_secret: String,
    /// Long-lived refresh token.
    pub refresh_token: String,
    /// Token endpoint named by the file (Google's when absent), as Google's own libraries read it.
    #[serde(default)]
    pub token_uri: Option<String>,
}

impl std::fmt::Debug for AuthorizedUser {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AuthorizedUser")
            .field("client_id", &self.client_id)
            .finish_non_exhaustive()
    }
}

/// A parsed application-default credentials file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AdcFile {
    /// `type: authorized_user` (what `gcloud auth application-default login` writes).
    AuthorizedUser(AuthorizedUser),
}

impl AdcFile {
    /// Parses ADC JSON; `origin` names the file in errors.
    pub fn parse(text: &str, origin: &str) -> Result<Self, ProviderError> {
        let auth_error = |body: String| ProviderError::Auth {
            status: 0,
            request_id: None,
            body,
        };
        let value: serde_json::Value = serde_json::from_str(text)
            .map_err(|e| auth_error(format!("{origin}: not valid JSON: {e}")))?;
        match value.get("type").and_then(serde_json::Value::as_str) {
            Some("authorized_user") => serde_json::from_value(value)
                .map(AdcFile::AuthorizedUser)
                .map_err(|e| auth_error(format!("{origin}: authorized_user credentials: {e}"))),
            Some("service_account") => Err(auth_error(format!(
                "{origin}: service-account keys need a signed JWT, which strata does not implement; \
                 set a bearer token (`gcloud auth print-access-token`) or use \
                 `gcloud auth application-default login`"
            ))),
            Some(other) => Err(auth_error(format!(
                "{origin}: credentials of type `{other}` are not supported (authorized_user only)"
            ))),
            None => Err(auth_error(format!("{origin}: field `type` is missing"))),
        }
    }
}

/// Where the ADC file is: `GOOGLE_APPLICATION_CREDENTIALS`, else gcloud's default location.
pub fn adc_path(env: impl Fn(&str) -> Option<String>, home: Option<&Path>) -> Option<PathBuf> {
    env("GOOGLE_APPLICATION_CREDENTIALS")
        .filter(|p| !p.is_empty())
        .map(PathBuf::from)
        .or_else(|| {
            env("CLOUDSDK_CONFIG")
                .map(PathBuf::from)
                .or_else(|| home.map(|h| h.join(".config").join("gcloud")))
                .map(|dir| dir.join("application_default_credentials.json"))
        })
}

/// How requests authenticate.
#[derive(Debug)]
pub enum GoogleCredentials {
    /// The API key from `StreamOptions::api_key`, sent as the row's header.
    ApiKey,
    /// A fixed OAuth access token (`Authorization: Bearer`).
    Bearer(ApiKey),
    /// Refresh-token credentials; access tokens are fetched and cached until shortly
    /// before they expire.
    AuthorizedUser {
        /// The credentials.
        user: AuthorizedUser,
        /// Token endpoint (overridable for tests).
        token_url: String,
        /// The current token and when it stops being used.
        cached: Mutex<Option<(ApiKey, Instant)>>,
    },
}

impl GoogleCredentials {
    /// Refresh-token credentials against the file's `token_uri`, else Google's token endpoint.
    pub fn authorized_user(user: AuthorizedUser) -> Self {
        let token_url = user
            .token_uri
            .clone()
            .filter(|u| !u.is_empty())
            .unwrap_or_else(|| TOKEN_URL.to_owned());
        Self::AuthorizedUser {
            user,
            token_url,
            cached: Mutex::new(None),
        }
    }

    /// Reads the ADC file at `path` (see [`adc_path`]); a missing or unreadable file is an
    /// `Auth` error naming the path and how to create it.
    pub fn from_adc_file(path: &Path) -> Result<Self, ProviderError> {
        let origin = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| ProviderError::Auth {
            status: 0,
            request_id: None,
            body: format!(
                "cannot read application-default credentials {origin}: {e}; run \
                 `gcloud auth application-default login` or set GOOGLE_APPLICATION_CREDENTIALS"
            ),
        })?;
        match AdcFile::parse(&text, &origin)? {
            AdcFile::AuthorizedUser(user) => Ok(Self::authorized_user(user)),
        }
    }

    /// The bearer token to send, refreshing it when needed (`None` for API-key auth).
    pub async fn bearer(&self, client: &reqwest::Client) -> Result<Option<ApiKey>, ProviderError> {
        match self {
            Self::ApiKey => Ok(None),
            Self::Bearer(token) => Ok(Some(token.clone())),
            Self::AuthorizedUser {
                user,
                token_url,
                cached,
            } => {
                let mut slot = cached.lock().await;
                if let Some((token, until)) = slot.as_ref()
                    && Instant::now() < *until
                {
                    return Ok(Some(token.clone()));
                }
                let (token, lifetime) = refresh(client, token_url, user).await?;
                // Stop using a token a minute before Google does.
                let until = Instant::now() + lifetime.saturating_sub(Duration::from_secs(60));
                *slot = Some((token.clone(), until));
                Ok(Some(token))
            }
        }
    }
}

async fn refresh(
    client: &reqwest::Client,
    url: &str,
    user: &AuthorizedUser,
) -> Result<(ApiKey, Duration), ProviderError> {
    let secrets = [
        ApiKey::new(user.client_secret.clone()),
        ApiKey::new(user.refresh_token.clone()),
    ];
    let form = format!(
        "grant_type=refresh_token&client_id={}&client_secret={}&refresh_token={}",
        form_encode(&user.client_id),
        form_encode(&user.client_secret),
        form_encode(&user.refresh_token)
    );
    let response = client
        .post(url)
        .header("content-type", "application/x-www-form-urlencoded")
        .body(form)
        .send()
        .await
        .map_err(|e| ProviderError::Transport {
            message: scrub(&format!("token refresh failed: {e}"), &secrets),
        })?;
    let status = response.status().as_u16();
    let text = response
        .text()
        .await
        .map_err(|e| ProviderError::Transport {
            message: scrub(&format!("token refresh body: {e}"), &secrets),
        })?;
    if !(200..300).contains(&status) {
        return Err(ProviderError::Auth {
            status,
            request_id: None,
            body: scrub(&format!("token refresh rejected: {text}"), &secrets),
        });
    }
    #[derive(Deserialize)]
    struct TokenResponse {
        access_token: String,
        #[serde(default = "default_lifetime")]
        expires_in: u64,
    }
    fn default_lifetime() -> u64 {
        3600
    }
    let parsed: TokenResponse = serde_json::from_str(&text).map_err(|e| ProviderError::Auth {
        status,
        request_id: None,
        body: format!("token endpoint answered without access_token: {e}"),
    })?;
    Ok((
        ApiKey::new(parsed.access_token),
        Duration::from_secs(parsed.expires_in),
    ))
}

fn form_encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for b in text.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                out.push(char::from(b));
            }
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_authorized_user_and_refuses_service_accounts() {
        let adc = AdcFile::parse(
            r#"{"type":"authorized_user","client_id":"cid","client_secret":"cs","refresh_token":"rt"}"#,
            "adc.json",
        )
        .unwrap();
        let AdcFile::AuthorizedUser(user) = adc;
        assert_eq!(user.refresh_token, "rt");
        assert!(!format!("{user:?}").contains("rt"));
        let err = AdcFile::parse(r#"{"type":"service_account"}"#, "sa.json").unwrap_err();
        assert!(err.to_string().contains("print-access-token"), "{err}");
        assert!(AdcFile::parse("{", "x").is_err());
    }

    #[test]
    fn adc_path_prefers_the_variable() {
        let env =
            |k: &str| (k == "GOOGLE_APPLICATION_CREDENTIALS").then(|| "/x/adc.json".to_owned());
        assert_eq!(adc_path(env, None), Some(PathBuf::from("/x/adc.json")));
        assert_eq!(
            adc_path(|_| None, Some(Path::new("/home/u"))),
            Some(PathBuf::from(
                "/home/u/.config/gcloud/application_default_credentials.json"
            ))
        );
    }

    #[test]
    fn form_values_are_encoded() {
        assert_eq!(form_encode("a b/c+d"), "a%20b%2Fc%2Bd");
    }
}
