//! Google credentials: an API key, a bearer token, or an application-default credentials
//! file — `authorized_user` (a refresh token exchanged for access tokens) or
//! `service_account` (an RS256-signed JWT exchanged at the file's `token_uri`).
//!
//! Access tokens are cached until a minute before they expire. Nothing here reads the
//! environment: [`adc_path`] takes a lookup, so callers pass values.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use aws_lc_rs::{rand, rsa, signature};
use base64::Engine;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use serde::Deserialize;
use strata_provider::transport::scrub;
use strata_provider::{ApiKey, ProviderError};
use tokio::sync::Mutex;

/// Google's OAuth token endpoint (the default when a credentials file names none).
pub const TOKEN_URL: &str = "https://oauth2.googleapis.com/token";

/// The OAuth scope a service account asks for: Vertex AI sits under cloud-platform.
pub const CLOUD_PLATFORM_SCOPE: &str = "https://www.googleapis.com/auth/cloud-platform";

/// How long a service-account JWT asserts for; Google accepts at most an hour.
const ASSERTION_LIFETIME: Duration = Duration::from_secs(3600);

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
    /// The project billed for quota (`gcloud auth application-default set-quota-project`).
    #[serde(default)]
    pub quota_project_id: Option<String>,
}

impl std::fmt::Debug for AuthorizedUser {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AuthorizedUser")
            .field("client_id", &self.client_id)
            .finish_non_exhaustive()
    }
}

/// The key of a `service_account` ADC file (what the Cloud console's "create key" downloads).
#[derive(Clone, PartialEq, Eq, Deserialize)]
pub struct ServiceAccount {
    /// The account's email: the JWT's issuer.
    pub client_email: String,
    /// The RSA private key, PEM-encoded PKCS#8 (`-----BEGIN PRIVATE KEY-----`).
    pub private_key: String,
    /// Id of the key, sent as the JWT's `kid`.
    #[serde(default)]
    pub private_key_id: Option<String>,
    /// Token endpoint named by the file (Google's when absent): the JWT's audience.
    #[serde(default)]
    pub token_uri: Option<String>,
    /// The project the account belongs to.
    #[serde(default)]
    pub project_id: Option<String>,
}

impl std::fmt::Debug for ServiceAccount {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServiceAccount")
            .field("client_email", &self.client_email)
            .field("private_key_id", &self.private_key_id)
            .finish_non_exhaustive()
    }
}

/// A parsed application-default credentials file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AdcFile {
    /// `type: authorized_user` (what `gcloud auth application-default login` writes).
    AuthorizedUser(AuthorizedUser),
    /// `type: service_account` (a downloaded service-account key).
    ServiceAccount(ServiceAccount),
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
            Some("service_account") => serde_json::from_value(value)
                .map(AdcFile::ServiceAccount)
                .map_err(|e| auth_error(format!("{origin}: service_account credentials: {e}"))),
            Some(other) => Err(auth_error(format!(
                "{origin}: credentials of type `{other}` are not supported \
                 (authorized_user or service_account)"
            ))),
            None => Err(auth_error(format!("{origin}: field `type` is missing"))),
        }
    }

    /// The project the file names: a service account's `project_id`, a user's
    /// `quota_project_id` (the order Google's own libraries fall back on after the environment).
    pub fn project(&self) -> Option<&str> {
        let project = match self {
            AdcFile::AuthorizedUser(user) => user.quota_project_id.as_deref(),
            AdcFile::ServiceAccount(account) => account.project_id.as_deref(),
        };
        project.filter(|p| !p.trim().is_empty())
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
    /// A service-account key; each access token is bought with a freshly signed JWT and
    /// cached until shortly before it expires.
    ServiceAccount {
        /// The account (issuer, key id).
        account: ServiceAccount,
        /// The parsed private key.
        signer: ServiceAccountKey,
        /// Token endpoint, also the JWT's audience (overridable for tests).
        token_url: String,
        /// The current token and when it stops being used.
        cached: Mutex<Option<(ApiKey, Instant)>>,
    },
}

/// A service account's RSA private key, parsed once; `Debug` never shows it.
pub struct ServiceAccountKey(rsa::KeyPair);

impl std::fmt::Debug for ServiceAccountKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ServiceAccountKey(***)")
    }
}

impl ServiceAccountKey {
    /// Parses a PEM private key (PKCS#8, or PKCS#1 `RSA PRIVATE KEY`); `origin` names the
    /// file in errors, which never quote the key.
    pub fn from_pem(pem: &str, origin: &str) -> Result<Self, ProviderError> {
        let auth_error = |what: &str| ProviderError::Auth {
            status: 0,
            request_id: None,
            body: format!("{origin}: field `private_key`: {what}"),
        };
        let (label, der) = pem_body(pem).ok_or_else(|| auth_error("not a PEM private key"))?;
        let der = STANDARD
            .decode(der)
            .map_err(|_| auth_error("the PEM body is not valid base64"))?;
        let key = match label {
            "PRIVATE KEY" => rsa::KeyPair::from_pkcs8(&der),
            "RSA PRIVATE KEY" => rsa::KeyPair::from_der(&der),
            _ => return Err(auth_error("expected a `PRIVATE KEY` PEM block")),
        }
        .map_err(|e| auth_error(&format!("not a usable RSA key ({e})")))?;
        Ok(Self(key))
    }

    /// Signs `message` with RSASSA-PKCS1-v1_5 over SHA-256 (JWT `RS256`).
    pub fn sign_rs256(&self, message: &[u8]) -> Result<Vec<u8>, ProviderError> {
        let mut signature = vec![0; self.0.public_modulus_len()];
        self.0
            .sign(
                &signature::RSA_PKCS1_SHA256,
                &rand::SystemRandom::new(),
                message,
                &mut signature,
            )
            .map_err(|_| ProviderError::Auth {
                status: 0,
                request_id: None,
                body: "signing the service-account JWT failed".into(),
            })?;
        Ok(signature)
    }
}

/// The label and base64 body of the first PEM block in `text`.
fn pem_body(text: &str) -> Option<(&str, String)> {
    let begin = text.find("-----BEGIN ")?;
    let rest = &text[begin + "-----BEGIN ".len()..];
    let label_end = rest.find("-----")?;
    let label = &rest[..label_end];
    let body_and_end = &rest[label_end + 5..];
    let end = body_and_end.find(&format!("-----END {label}-----"))?;
    let body = body_and_end[..end]
        .chars()
        .filter(|c| !c.is_ascii_whitespace())
        .collect();
    Some((label, body))
}

/// The signed JWT a service account trades for an access token (RFC 7523), issued at `now`
/// (seconds since the Unix epoch).
pub fn service_account_assertion(
    account: &ServiceAccount,
    key: &ServiceAccountKey,
    audience: &str,
    now: u64,
) -> Result<String, ProviderError> {
    let mut header = serde_json::json!({"alg": "RS256", "typ": "JWT"});
    if let Some(kid) = account.private_key_id.as_deref().filter(|k| !k.is_empty()) {
        header["kid"] = kid.into();
    }
    let claims = serde_json::json!({
        "iss": account.client_email,
        "scope": CLOUD_PLATFORM_SCOPE,
        "aud": audience,
        "iat": now,
        "exp": now + ASSERTION_LIFETIME.as_secs(),
    });
    let signing_input = format!(
        "{}.{}",
        URL_SAFE_NO_PAD.encode(header.to_string()),
        URL_SAFE_NO_PAD.encode(claims.to_string())
    );
    let signature = key.sign_rs256(signing_input.as_bytes())?;
    Ok(format!(
        "{signing_input}.{}",
        URL_SAFE_NO_PAD.encode(signature)
    ))
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

    /// Service-account credentials against the file's `token_uri`, else Google's token
    /// endpoint; fails (naming `origin`) if the private key cannot be parsed.
    pub fn service_account(account: ServiceAccount, origin: &str) -> Result<Self, ProviderError> {
        let signer = ServiceAccountKey::from_pem(&account.private_key, origin)?;
        let token_url = account
            .token_uri
            .clone()
            .filter(|u| !u.is_empty())
            .unwrap_or_else(|| TOKEN_URL.to_owned());
        Ok(Self::ServiceAccount {
            account,
            signer,
            token_url,
            cached: Mutex::new(None),
        })
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
            AdcFile::ServiceAccount(account) => Self::service_account(account, &origin),
        }
    }

    /// The project these credentials name, if any (see [`AdcFile::project`]).
    pub fn project(&self) -> Option<&str> {
        let project = match self {
            Self::ApiKey | Self::Bearer(_) => None,
            Self::AuthorizedUser { user, .. } => user.quota_project_id.as_deref(),
            Self::ServiceAccount { account, .. } => account.project_id.as_deref(),
        };
        project.filter(|p| !p.trim().is_empty())
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
                if let Some(token) = fresh(&slot) {
                    return Ok(Some(token));
                }
                let token = remember(&mut slot, refresh(client, token_url, user).await?);
                Ok(Some(token))
            }
            Self::ServiceAccount {
                account,
                signer,
                token_url,
                cached,
            } => {
                let mut slot = cached.lock().await;
                if let Some(token) = fresh(&slot) {
                    return Ok(Some(token));
                }
                let now = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .unwrap_or_default()
                    .as_secs();
                let assertion = service_account_assertion(account, signer, token_url, now)?;
                let exchanged = exchange_assertion(client, token_url, &assertion).await?;
                Ok(Some(remember(&mut slot, exchanged)))
            }
        }
    }
}

/// The cached token, if it is still to be used.
fn fresh(slot: &Option<(ApiKey, Instant)>) -> Option<ApiKey> {
    slot.as_ref()
        .filter(|(_, until)| Instant::now() < *until)
        .map(|(token, _)| token.clone())
}

/// Caches a new token until a minute before Google stops accepting it.
fn remember(slot: &mut Option<(ApiKey, Instant)>, (token, lifetime): (ApiKey, Duration)) -> ApiKey {
    let until = Instant::now() + lifetime.saturating_sub(Duration::from_secs(60));
    *slot = Some((token.clone(), until));
    token
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
    let form = form_body(&[
        ("grant_type", "refresh_token"),
        ("client_id", &user.client_id),
        ("client_secret", &user.client_secret),
        ("refresh_token", &user.refresh_token),
    ]);
    request_token(client, url, form, &secrets, "token refresh").await
}

/// Trades a signed service-account JWT for an access token (RFC 7523 `jwt-bearer` grant).
async fn exchange_assertion(
    client: &reqwest::Client,
    url: &str,
    assertion: &str,
) -> Result<(ApiKey, Duration), ProviderError> {
    let form = form_body(&[
        ("grant_type", "urn:ietf:params:oauth:grant-type:jwt-bearer"),
        ("assertion", assertion),
    ]);
    let secrets = [ApiKey::new(assertion)];
    request_token(
        client,
        url,
        form,
        &secrets,
        "service-account token exchange",
    )
    .await
}

/// Posts an OAuth token form and reads `{access_token, expires_in}`; `secrets` are scrubbed
/// from every error, and `what` names the step in them.
async fn request_token(
    client: &reqwest::Client,
    url: &str,
    form: String,
    secrets: &[ApiKey],
    what: &str,
) -> Result<(ApiKey, Duration), ProviderError> {
    let response = client
        .post(url)
        .header("content-type", "application/x-www-form-urlencoded")
        .body(form)
        .send()
        .await
        .map_err(|e| ProviderError::Transport {
            message: scrub(&format!("{what} failed: {e}"), secrets),
        })?;
    let status = response.status().as_u16();
    let text = response
        .text()
        .await
        .map_err(|e| ProviderError::Transport {
            message: scrub(&format!("{what} body: {e}"), secrets),
        })?;
    if !(200..300).contains(&status) {
        return Err(ProviderError::Auth {
            status,
            request_id: None,
            body: scrub(&format!("{what} rejected: {text}"), secrets),
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

/// An `application/x-www-form-urlencoded` body of these fields, in order.
fn form_body(fields: &[(&str, &str)]) -> String {
    form_urlencoded::Serializer::new(String::new())
        .extend_pairs(fields)
        .finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_authorized_user_and_service_account_files() {
        let adc = AdcFile::parse(
            r#"{"type":"authorized_user","client_id":"cid","client_secret":"cs","refresh_token":"rt"}"#,
            "adc.json",
        )
        .unwrap();
        let AdcFile::AuthorizedUser(user) = adc else {
            panic!("{adc:?}")
        };
        assert_eq!(user.refresh_token, "rt");
        assert!(!format!("{user:?}").contains("rt"));

        let adc = AdcFile::parse(
            r#"{"type":"service_account","project_id":"p","private_key_id":"k1","private_key":"-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n","client_email":"sa@p.iam.gserviceaccount.com","token_uri":"https://oauth2.googleapis.com/token"}"#,
            "sa.json",
        )
        .unwrap();
        let AdcFile::ServiceAccount(account) = adc else {
            panic!("{adc:?}")
        };
        assert_eq!(account.client_email, "sa@p.iam.gserviceaccount.com");
        assert_eq!(account.private_key_id.as_deref(), Some("k1"));
        assert!(!format!("{account:?}").contains("AAAA"));

        let err = AdcFile::parse(r#"{"type":"service_account"}"#, "sa.json").unwrap_err();
        assert!(err.to_string().contains("sa.json"), "{err}");
        let err = AdcFile::parse(r#"{"type":"external_account"}"#, "ext.json").unwrap_err();
        assert!(err.to_string().contains("external_account"), "{err}");
        assert!(AdcFile::parse("{", "x").is_err());
    }

    #[test]
    fn bad_private_keys_are_named_without_quoting_them() {
        for pem in [
            "not a key",
            "-----BEGIN PRIVATE KEY-----\n!!!!\n-----END PRIVATE KEY-----\n",
            "-----BEGIN PRIVATE KEY-----\nc2VjcmV0LWJ5dGVz\n-----END PRIVATE KEY-----\n",
            "-----BEGIN CERTIFICATE-----\nc2VjcmV0LWJ5dGVz\n-----END CERTIFICATE-----\n",
        ] {
            let err = ServiceAccountKey::from_pem(pem, "sa.json").unwrap_err();
            let text = err.to_string();
            assert!(
                text.contains("sa.json") && text.contains("private_key"),
                "{text}"
            );
            assert!(!text.contains("c2VjcmV0"), "{text}");
        }
    }

    #[test]
    fn pem_bodies_lose_their_line_breaks() {
        let (label, body) =
            pem_body("junk\n-----BEGIN PRIVATE KEY-----\r\nAB\nCD\n-----END PRIVATE KEY-----\n")
                .unwrap();
        assert_eq!((label, body.as_str()), ("PRIVATE KEY", "ABCD"));
        assert!(pem_body("-----BEGIN PRIVATE KEY-----\nAB\n").is_none());
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
        assert_eq!(
            form_body(&[("grant_type", "refresh_token"), ("token", "a b/c+d&e=f")]),
            "grant_type=refresh_token&token=a+b%2Fc%2Bd%26e%3Df"
        );
    }
}
