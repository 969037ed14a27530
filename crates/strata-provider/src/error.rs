//! Provider errors that say what the caller must do, and the API-key newtype.

use std::time::Duration;

/// An API key; `Debug` and `Display` print `***` so it never reaches logs or errors.
#[derive(Clone, PartialEq, Eq)]
pub struct ApiKey(String);

impl ApiKey {
    /// Wraps a secret.
    pub fn new(secret: impl Into<String>) -> Self {
        Self(secret.into())
    }

    /// The secret, for building the auth header only.
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// `text` with every whole occurrence of the key replaced by `***`: one not run together
    /// with other key characters (letters, digits, `-`, `_`), so that a short key masks
    /// itself and not every word it happens to be part of.
    pub fn redact(&self, text: &str) -> String {
        let key = self.0.as_str();
        if key.is_empty() {
            return text.to_owned();
        }
        let mut out = String::with_capacity(text.len());
        let mut copied = 0;
        let mut from = 0;
        while let Some(found) = text[from..].find(key) {
            let start = from + found;
            let end = start + key.len();
            let before = text[..start].chars().next_back();
            let after = text[end..].chars().next();
            if before.is_none_or(|c| !is_key_char(c)) && after.is_none_or(|c| !is_key_char(c)) {
                out.push_str(&text[copied..start]);
                out.push_str("***");
                copied = end;
                from = end;
            } else {
                // Step one character on: occurrences may overlap a rejected one.
                from = start + text[start..].chars().next().map_or(1, char::len_utf8);
            }
        }
        out.push_str(&text[copied..]);
        out
    }
}

/// Characters that make up API keys and tokens; a match next to one is part of a longer word.
fn is_key_char(c: char) -> bool {
    c.is_alphanumeric() || c == '-' || c == '_'
}

impl std::fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ApiKey(***)")
    }
}

impl std::fmt::Display for ApiKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("***")
    }
}

/// Why a provider call failed; each variant names what the caller must do.
///
/// HTTP-derived variants keep the status, the provider's request id and the raw body
/// (adapters redact the API key from bodies with [`ApiKey::redact`]).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ProviderError {
    /// The prompt does not fit the model's context: compact, then retry.
    #[error("context window exceeded ({}): {body}", origin(*status))]
    ContextOverflow {
        /// HTTP status (0 when reported inside a stream).
        status: u16,
        /// Provider request id.
        request_id: Option<String>,
        /// Raw error body.
        body: String,
    },
    /// Too many requests: wait `retry_after` (or back off), then retry.
    #[error("rate limited ({}){}{}", origin(*status), retry_hint(*retry_after), in_stream_body(*status, body))]
    RateLimited {
        /// Delay the provider asked for.
        retry_after: Option<Duration>,
        /// HTTP status.
        status: u16,
        /// Provider request id.
        request_id: Option<String>,
        /// Raw error body.
        body: String,
    },
    /// The provider is overloaded: back off, then retry.
    #[error("provider overloaded ({}){}{}", origin(*status), retry_hint(*retry_after), in_stream_body(*status, body))]
    Overloaded {
        /// Delay the provider asked for.
        retry_after: Option<Duration>,
        /// HTTP status (0 when reported inside a stream).
        status: u16,
        /// Provider request id.
        request_id: Option<String>,
        /// Raw error body.
        body: String,
    },
    /// The key is missing, wrong or lacks permission: fix credentials; retrying will not help.
    #[error("{}{body}", auth_origin(*status))]
    Auth {
        /// HTTP status (0 when no key was found before sending).
        status: u16,
        /// Provider request id.
        request_id: Option<String>,
        /// Raw error body or a description.
        body: String,
    },
    /// The stream ended before the provider's terminal event: re-issue the whole turn.
    #[error("stream truncated: {reason}")]
    Truncated {
        /// What was seen last.
        reason: String,
    },
    /// The provider rejected the request: fix the request; retrying will not help.
    #[error("invalid request ({}): {body}", origin(*status))]
    InvalidRequest {
        /// HTTP status.
        status: u16,
        /// Provider request id.
        request_id: Option<String>,
        /// Raw error body.
        body: String,
    },
    /// The connection failed before or while streaming: retry.
    #[error("transport error: {message}")]
    Transport {
        /// Description of the failure.
        message: String,
    },
    /// The provider failed internally: retry with backoff.
    #[error("server error (status {status}): {body}")]
    Server {
        /// HTTP status.
        status: u16,
        /// Provider request id.
        request_id: Option<String>,
        /// Raw error body.
        body: String,
    },
    /// A frame could not be understood: report it; the stream cannot continue.
    #[error("could not decode provider stream: {message}")]
    Decode {
        /// What was wrong, with the offending frame.
        message: String,
    },
    /// The caller cancelled the request.
    #[error("request cancelled")]
    Cancelled,
}

/// Where an error came from: its HTTP status, or the stream (status 0) — an error event
/// inside a 200 response, whose own type the body names.
/// "authentication failed (status N): " for a provider's refusal; nothing before a missing
/// key's own message, since no request was sent.
fn auth_origin(status: u16) -> String {
    if status == 0 {
        String::new()
    } else {
        format!("authentication failed (status {status}): ")
    }
}

fn origin(status: u16) -> String {
    if status == 0 {
        "reported inside the stream".to_owned()
    } else {
        format!("status {status}")
    }
}

/// For an error reported inside the stream, the event itself (it names the provider's
/// error type, e.g. `overloaded_error`); nothing for an HTTP error.
fn in_stream_body(status: u16, body: &str) -> String {
    if status != 0 || body.is_empty() {
        return String::new();
    }
    let mut end = body.len().min(300);
    while !body.is_char_boundary(end) {
        end -= 1;
    }
    format!(": {}", &body[..end])
}

fn retry_hint(retry_after: Option<Duration>) -> String {
    match retry_after {
        Some(d) => format!(", retry after {:.1}s", d.as_secs_f64()),
        None => String::new(),
    }
}

impl ProviderError {
    /// Classifies an HTTP error response; `retry_after` comes from the `retry-after` header.
    pub fn from_http(
        status: u16,
        request_id: Option<String>,
        body: String,
        retry_after: Option<Duration>,
    ) -> Self {
        // One list of overflow wordings for every path: the transport's (Pi's set and more).
        if crate::transport::is_context_overflow(status, &body) {
            return Self::ContextOverflow {
                status,
                request_id,
                body,
            };
        }
        let lower = body.to_ascii_lowercase();
        match status {
            401 | 403 => Self::Auth {
                status,
                request_id,
                body,
            },
            429 => Self::RateLimited {
                retry_after,
                status,
                request_id,
                body,
            },
            503 | 529 => Self::Overloaded {
                retry_after,
                status,
                request_id,
                body,
            },
            500..=599 if lower.contains("overloaded") => Self::Overloaded {
                retry_after,
                status,
                request_id,
                body,
            },
            500..=599 => Self::Server {
                status,
                request_id,
                body,
            },
            _ => Self::InvalidRequest {
                status,
                request_id,
                body,
            },
        }
    }

    /// Whether retrying the same request may succeed.
    pub fn is_retryable(&self) -> bool {
        match self {
            Self::RateLimited { .. }
            | Self::Overloaded { .. }
            | Self::Server { .. }
            | Self::Transport { .. }
            | Self::Truncated { .. } => true,
            Self::ContextOverflow { .. }
            | Self::Auth { .. }
            | Self::InvalidRequest { .. }
            | Self::Decode { .. }
            | Self::Cancelled => false,
        }
    }

    /// Delay the provider asked for, if any.
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            Self::RateLimited { retry_after, .. } | Self::Overloaded { retry_after, .. } => {
                *retry_after
            }
            _ => None,
        }
    }

    /// HTTP status, when the error came from a response.
    pub fn status(&self) -> Option<u16> {
        match self {
            Self::ContextOverflow { status, .. }
            | Self::RateLimited { status, .. }
            | Self::Overloaded { status, .. }
            | Self::Auth { status, .. }
            | Self::InvalidRequest { status, .. }
            | Self::Server { status, .. } => Some(*status),
            Self::Truncated { .. }
            | Self::Transport { .. }
            | Self::Decode { .. }
            | Self::Cancelled => None,
        }
    }

    /// Provider request id, when known.
    pub fn request_id(&self) -> Option<&str> {
        match self {
            Self::ContextOverflow { request_id, .. }
            | Self::RateLimited { request_id, .. }
            | Self::Overloaded { request_id, .. }
            | Self::Auth { request_id, .. }
            | Self::InvalidRequest { request_id, .. }
            | Self::Server { request_id, .. } => request_id.as_deref(),
            _ => None,
        }
    }

    /// Raw response body, when the error came from a response.
    pub fn body(&self) -> Option<&str> {
        match self {
            Self::ContextOverflow { body, .. }
            | Self::RateLimited { body, .. }
            | Self::Overloaded { body, .. }
            | Self::Auth { body, .. }
            | Self::InvalidRequest { body, .. }
            | Self::Server { body, .. } => Some(body),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn api_key_never_prints() {
        let key = ApiKey::new("sk-secret-123");
        assert_eq!(format!("{key:?}"), "ApiKey(***)");
        assert_eq!(key.to_string(), "***");
        assert_eq!(key.redact("bad key sk-secret-123"), "bad key ***");
        assert_eq!(key.expose(), "sk-secret-123");
    }

    #[test]
    fn redact_masks_whole_keys_only() {
        let short = ApiKey::new("k");
        assert_eq!(
            short.redact("unknown key k: check the key"),
            "unknown key ***: check the key"
        );
        let key = ApiKey::new("sk-ant-123");
        assert_eq!(
            key.redact(r#"{"key":"sk-ant-123"} x-api-key: sk-ant-123, sk-ant-1234 xsk-ant-123"#),
            r#"{"key":"***"} x-api-key: ***, sk-ant-1234 xsk-ant-123"#
        );
        assert_eq!(key.redact("?key=sk-ant-123&alt=sse"), "?key=***&alt=sse");
        // An occurrence right after a rejected overlapping one is still found.
        let aa = ApiKey::new("aa");
        assert_eq!(aa.redact("aaa aa"), "aaa ***");
    }

    #[test]
    fn http_statuses_classify() {
        let e = |s, b: &str| ProviderError::from_http(s, Some("req_1".into()), b.into(), None);
        assert!(matches!(e(401, "no"), ProviderError::Auth { .. }));
        assert!(matches!(e(429, ""), ProviderError::RateLimited { .. }));
        assert!(matches!(
            e(
                400,
                r#"{"error":{"message":"prompt is too long: 210000 tokens"}}"#
            ),
            ProviderError::ContextOverflow { .. }
        ));
        assert!(matches!(
            e(400, "bad field"),
            ProviderError::InvalidRequest { .. }
        ));
        assert!(matches!(e(529, ""), ProviderError::Overloaded { .. }));
        assert!(matches!(e(500, "boom"), ProviderError::Server { .. }));
        assert_eq!(e(500, "boom").request_id(), Some("req_1"));
        assert_eq!(e(500, "boom").status(), Some(500));
    }

    #[test]
    fn retryable_split() {
        let rl = ProviderError::from_http(429, None, String::new(), Some(Duration::from_secs(3)));
        assert!(rl.is_retryable());
        assert_eq!(rl.retry_after(), Some(Duration::from_secs(3)));
        assert!(rl.to_string().contains("retry after 3.0s"));
        assert!(!ProviderError::from_http(403, None, String::new(), None).is_retryable());
        assert!(
            ProviderError::Truncated {
                reason: "eof".into()
            }
            .is_retryable()
        );
        assert!(!ProviderError::Cancelled.is_retryable());
    }
}
