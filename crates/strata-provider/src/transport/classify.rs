//! Turning an HTTP error response (or an in-stream error event) into a [`ProviderError`].
//!
//! Context overflow is recognised by status *and* wording: every provider says it differently,
//! and a 400 that is an overflow must reach the caller as [`ProviderError::ContextOverflow`] so
//! it compacts instead of giving up. The phrases are Pi's (`utils/overflow.ts`) plus the
//! providers' own error codes from the research notes.

use std::sync::LazyLock;
#[cfg(feature = "transport")]
use std::time::{Duration, SystemTime};

use regex::RegexSet;
#[cfg(feature = "transport")]
use reqwest::header::HeaderMap;

use crate::error::{ApiKey, ProviderError};

/// Longest error body kept in an error, in bytes; the rest is cut (bodies can be HTML pages).
pub const MAX_ERROR_BODY: usize = 16 * 1024;

/// Overflow wordings, one per provider (source in the trailing comment).
const OVERFLOW_PATTERNS: &[&str] = &[
    r"(?i)prompt is too long",                                  // Anthropic
    r"(?i)request_too_large",                                   // Anthropic 413 (bytes)
    r"(?i)input is too long for requested model",               // Bedrock
    r"(?i)exceeds the context window",                          // OpenAI Chat + Responses
    r"(?i)input token count.*exceeds the maximum",              // Gemini
    r"(?i)maximum prompt length is \d+",                        // xAI
    r"(?i)reduce the length of the messages",                   // Groq
    r"(?i)maximum context length is \d+ tokens",                // OpenRouter, vLLM, DeepSeek
    r"(?i)exceeds the limit of \d+",                            // GitHub Copilot
    r"(?i)exceeds the available context size",                  // llama.cpp server
    r"(?i)greater than the context length",                     // LM Studio
    r"(?i)context window exceeds limit",                        // MiniMax
    r"(?i)exceeded model token limit",                          // Kimi For Coding
    r"(?i)too large for model with \d+ maximum context length", // Mistral
    r"(?i)model_context_window_exceeded",                       // Anthropic stop reason, z.ai
    r"(?i)prompt too long; exceeded (?:max )?context length",   // Ollama
    r"(?i)context[_ ]length[_ ]exceeded",                       // OpenAI error code; generic
    r"(?i)too many tokens",                                     // generic
    r"(?i)token limit exceeded",                                // generic
    r"(?i)input length .*exceeds? .*context",                   // Qwen / DashScope
    r"(?i)^4(?:00|13)\s*(?:status code)?\s*\(no body\)",        // Cerebras, as SDKs word it
];

/// Wordings that look like overflow but are rate limits ("too many tokens per minute").
const NOT_OVERFLOW_PATTERNS: &[&str] = &[
    r"(?i)rate.?limit",
    r"(?i)too many requests",
    r"(?i)per minute|per day|tokens per min|\b(?:TPM|RPM)\b",
    r"(?i)^(Throttling error|Service unavailable):",
];

static OVERFLOW: LazyLock<Option<RegexSet>> =
    LazyLock::new(|| RegexSet::new(OVERFLOW_PATTERNS).ok());
static NOT_OVERFLOW: LazyLock<Option<RegexSet>> =
    LazyLock::new(|| RegexSet::new(NOT_OVERFLOW_PATTERNS).ok());

/// Whether an error response means "the prompt does not fit the context window".
///
/// `status` 0 means the text came from inside a stream. A 400 or 413 with an empty body
/// counts (Cerebras answers an overflow that way, and Pi reads it so); a 429 never does.
pub fn is_context_overflow(status: u16, body: &str) -> bool {
    if status == 429 || (500..=599).contains(&status) {
        return false;
    }
    if matches!(status, 400 | 413) && body.trim().is_empty() {
        return true;
    }
    let matches = |set: &LazyLock<Option<RegexSet>>| set.as_ref().is_some_and(|s| s.is_match(body));
    matches(&OVERFLOW) && !matches(&NOT_OVERFLOW)
}

/// The delay a response asks for: `retry-after-ms`, or `retry-after` in seconds or as an HTTP date.
#[cfg(feature = "transport")]
pub fn retry_after(headers: &HeaderMap, now: SystemTime) -> Option<Duration> {
    let text = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::trim)
    };
    if let Some(ms) = text("retry-after-ms")
        .and_then(|v| v.parse::<f64>().ok())
        .filter(|ms| ms.is_finite() && *ms >= 0.0)
    {
        return Some(Duration::from_secs_f64(ms / 1000.0));
    }
    let value = text("retry-after")?;
    if let Ok(secs) = value.parse::<f64>() {
        return (secs.is_finite() && secs >= 0.0).then(|| Duration::from_secs_f64(secs));
    }
    let at = httpdate::parse_http_date(value).ok()?;
    Some(at.duration_since(now).unwrap_or(Duration::ZERO))
}

/// The provider's request id, from whichever header it uses.
#[cfg(feature = "transport")]
pub fn request_id(headers: &HeaderMap) -> Option<String> {
    const NAMES: [&str; 5] = [
        "request-id",
        "x-request-id",
        "x-amzn-requestid",
        "x-goog-request-id",
        "cf-ray",
    ];
    NAMES
        .iter()
        .find_map(|n| headers.get(*n))
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
}

/// `text` with every key replaced by `***`, cut to [`MAX_ERROR_BODY`] bytes.
pub fn scrub(text: &str, secrets: &[ApiKey]) -> String {
    let mut out = text.to_owned();
    for key in secrets {
        out = key.redact(&out);
    }
    if out.len() > MAX_ERROR_BODY {
        let mut cut = MAX_ERROR_BODY;
        while !out.is_char_boundary(cut) {
            cut -= 1;
        }
        out.truncate(cut);
        out.push_str("… [cut]");
    }
    out
}

/// Classifies an HTTP error response; the body is scrubbed of `secrets` first.
#[cfg(feature = "transport")]
pub fn classify_response(
    status: u16,
    headers: &HeaderMap,
    body: &str,
    secrets: &[ApiKey],
    now: SystemTime,
) -> ProviderError {
    let body = scrub(body, secrets);
    let request_id = request_id(headers);
    let retry_after = retry_after(headers, now);
    if is_context_overflow(status, &body) {
        return ProviderError::ContextOverflow {
            status,
            request_id,
            body,
        };
    }
    match status {
        401 | 403 => ProviderError::Auth {
            status,
            request_id,
            body,
        },
        429 => ProviderError::RateLimited {
            retry_after,
            status,
            request_id,
            body,
        },
        503 | 529 => ProviderError::Overloaded {
            retry_after,
            status,
            request_id,
            body,
        },
        500..=599 if body.to_ascii_lowercase().contains("overloaded") => {
            ProviderError::Overloaded {
                retry_after,
                status,
                request_id,
                body,
            }
        }
        // A request timeout is the server's problem, not the request's.
        408 | 500..=599 => ProviderError::Server {
            status,
            request_id,
            body,
        },
        _ => ProviderError::InvalidRequest {
            status,
            request_id,
            body,
        },
    }
}

/// Classifies an error reported inside a stream (status 0) from its type/code and message.
///
/// `kind` is the provider's error type or code (`overloaded_error`, `rate_limit_error`,
/// `context_length_exceeded`, …); `body` is the raw event payload kept for the caller.
pub fn classify_stream_error(kind: &str, message: &str, body: &str) -> ProviderError {
    // Gateways put the upstream's kind in the message ("Provider returned error: overloaded").
    let lower = format!("{kind} {message}").to_ascii_lowercase();
    let body = body.to_owned();
    if is_context_overflow(0, message) || is_context_overflow(0, kind) {
        return ProviderError::ContextOverflow {
            status: 0,
            request_id: None,
            body,
        };
    }
    if lower.contains("overloaded") || lower.contains("unavailable") {
        ProviderError::Overloaded {
            retry_after: None,
            status: 0,
            request_id: None,
            body,
        }
    } else if lower.contains("rate_limit")
        || lower.contains("rate-limit")
        || lower.contains("rate limit")
        || lower.split_whitespace().next() == Some("429")
    {
        ProviderError::RateLimited {
            retry_after: None,
            status: 0,
            request_id: None,
            body,
        }
    } else if lower.contains("auth") || lower.contains("permission") {
        ProviderError::Auth {
            status: 0,
            request_id: None,
            body,
        }
    } else if lower.contains("invalid_request") || lower.contains("not_found") {
        ProviderError::InvalidRequest {
            status: 0,
            request_id: None,
            body,
        }
    } else {
        // api_error, server_error, timeout and unknown kinds: the provider failed mid-answer.
        ProviderError::Server {
            status: 0,
            request_id: None,
            body,
        }
    }
}

#[cfg(all(test, feature = "transport"))]
mod tests {
    use super::*;
    use reqwest::header::HeaderValue;

    #[test]
    fn patterns_compile() {
        assert!(OVERFLOW.is_some() && NOT_OVERFLOW.is_some());
    }

    /// Every way into a `ProviderError` must call `body` an overflow: the HTTP classifier, the
    /// plain constructor, and the in-stream classifier (status 0).
    fn assert_overflow_everywhere(body: &str) {
        assert!(is_context_overflow(400, body), "HTTP 400: {body}");
        assert!(
            matches!(
                classify_response(400, &HeaderMap::new(), body, &[], SystemTime::now()),
                ProviderError::ContextOverflow { status: 400, .. }
            ),
            "classify_response: {body}"
        );
        assert!(
            matches!(
                ProviderError::from_http(400, None, body.to_owned(), None),
                ProviderError::ContextOverflow { status: 400, .. }
            ),
            "from_http: {body}"
        );
        assert!(
            matches!(
                classify_stream_error("invalid_request_error", body, body),
                ProviderError::ContextOverflow { status: 0, .. }
            ),
            "in-stream: {body}"
        );
    }

    /// One test per provider wording, with the provider's own example text (Pi's list).
    macro_rules! overflow_wordings {
        ($($name:ident: $body:expr,)*) => {$(
            #[test]
            fn $name() {
                assert_overflow_everywhere($body);
            }
        )*};
    }

    overflow_wordings! {
        overflow_anthropic_prompt_too_long:
            r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 213462 tokens > 200000 maximum"}}"#,
        overflow_anthropic_request_too_large:
            r#"{"type":"error","error":{"type":"request_too_large","message":"Request exceeds the maximum size"}}"#,
        overflow_bedrock: "ValidationException: Input is too long for requested model.",
        overflow_openai:
            r#"{"error":{"message":"Your input exceeds the context window of this model. Please adjust your input and try again.","type":"invalid_request_error"}}"#,
        overflow_gemini:
            r#"{"error":{"code":400,"message":"The input token count (1196265) exceeds the maximum number of tokens allowed (1048575).","status":"INVALID_ARGUMENT"}}"#,
        overflow_xai:
            r#"{"code":"Client specified an invalid argument","error":"This model's maximum prompt length is 131072 but the request contains 537812 tokens."}"#,
        overflow_groq:
            r#"{"error":{"message":"Please reduce the length of the messages or completion.","type":"invalid_request_error","param":"messages"}}"#,
        overflow_openrouter:
            "This endpoint's maximum context length is 200000 tokens. However, you requested about 250000 tokens",
        overflow_llama_cpp:
            r#"{"error":{"code":400,"message":"the request exceeds the available context size, try increasing it","type":"exceed_context_size_error"}}"#,
        overflow_lm_studio:
            "The number of tokens to keep from the initial prompt is greater than the context length",
        overflow_github_copilot: "prompt token count of 130000 exceeds the limit of 128000",
        overflow_minimax: "invalid params, context window exceeds limit (2013)",
        overflow_kimi:
            r#"{"error":{"message":"Your request exceeded model token limit: 262144 (requested: 300000)","type":"invalid_request_error"}}"#,
        overflow_mistral:
            "Prompt contains 140000 tokens and 0 draft tokens, too large for model with 131072 maximum context length",
        overflow_zai: "model_context_window_exceeded",
        overflow_ollama:
            r#"{"error":"prompt too long; exceeded max context length by 1200 tokens"}"#,
        overflow_ollama_without_max: "prompt too long; exceeded context length by 12 tokens",
        overflow_generic_code: r#"{"error":{"code":"context_length_exceeded"}}"#,
        overflow_generic_too_many_tokens: "Request has too many tokens",
        overflow_generic_token_limit: "token limit exceeded",
        overflow_qwen:
            "Range of input length should be [1, 129024]; input length 140000 exceeds context",
        overflow_cerebras_sdk_text: "413 status code (no body)",
    }

    #[test]
    fn cerebras_empty_400_and_413_are_overflow() {
        for status in [400, 413] {
            assert!(is_context_overflow(status, "  "));
            assert!(matches!(
                ProviderError::from_http(status, None, String::new(), None),
                ProviderError::ContextOverflow { .. }
            ));
        }
        assert!(!is_context_overflow(404, ""));
    }

    #[test]
    fn rate_limit_wordings_are_not_overflow() {
        for body in [
            "Throttling error: Too many tokens, please wait before trying again.",
            "Rate limit reached: too many tokens per minute",
            "Too many requests: token limit exceeded",
            "Limit 30000 TPM: too many tokens",
        ] {
            assert!(!is_context_overflow(400, body), "{body}");
        }
        assert!(!is_context_overflow(429, "prompt is too long"));
        assert!(!is_context_overflow(503, "prompt is too long"));
        assert!(matches!(
            ProviderError::from_http(429, None, "too many tokens".into(), None),
            ProviderError::RateLimited { .. }
        ));
    }

    #[test]
    fn every_provider_wording_is_overflow() {
        let bodies = [
            r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 210432 tokens > 200000 maximum"}}"#,
            r#"{"error":{"message":"Your input exceeds the context window of this model.","code":"context_length_exceeded"}}"#,
            "This model's maximum context length is 131072 tokens. However, you requested 140000 tokens",
            "The input token count (1200000) exceeds the maximum number of tokens allowed (1048576).",
            "Input is too long for requested model.",
            "This model's maximum prompt length is 131072 but the request contains 150000 tokens.",
            "Please reduce the length of the messages or completion.",
            "prompt token count of 130000 exceeds the limit of 128000",
            "the request exceeds the available context size, try increasing it",
            "The number of tokens to keep from the initial prompt is greater than the context length",
            "invalid params, context window exceeds limit (2013)",
            "Invalid request: Your request exceeded model token limit: 262144",
            "Prompt contains 140000 tokens, too large for model with 131072 maximum context length",
            "prompt too long; exceeded max context length by 100 tokens",
            "Range of input length should be [1, 129024]; input length 140000 exceeds context",
        ];
        for body in bodies {
            assert!(is_context_overflow(400, body), "{body}");
        }
        assert!(is_context_overflow(413, ""));
        assert!(!is_context_overflow(
            400,
            "messages.0.content: field required"
        ));
        assert!(!is_context_overflow(429, "too many tokens"));
        assert!(!is_context_overflow(
            400,
            "Rate limit reached: too many tokens per minute"
        ));
    }

    #[test]
    fn retry_after_in_seconds_ms_and_http_date() {
        let now = httpdate::parse_http_date("Sun, 06 Nov 1994 08:49:37 GMT").unwrap();
        let mut h = HeaderMap::new();
        assert_eq!(retry_after(&h, now), None);
        h.insert("retry-after", HeaderValue::from_static("7"));
        assert_eq!(retry_after(&h, now), Some(Duration::from_secs(7)));
        h.insert(
            "retry-after",
            HeaderValue::from_static("Sun, 06 Nov 1994 08:49:47 GMT"),
        );
        assert_eq!(retry_after(&h, now), Some(Duration::from_secs(10)));
        h.insert(
            "retry-after",
            HeaderValue::from_static("Sun, 06 Nov 1994 08:49:00 GMT"),
        );
        assert_eq!(retry_after(&h, now), Some(Duration::ZERO));
        h.insert("retry-after-ms", HeaderValue::from_static("250"));
        assert_eq!(retry_after(&h, now), Some(Duration::from_millis(250)));
        h.remove("retry-after-ms");
        h.insert("retry-after", HeaderValue::from_static("soon"));
        assert_eq!(retry_after(&h, now), None);
    }

    #[test]
    fn statuses_classify_and_bodies_lose_the_key() {
        let key = ApiKey::new("sk-live-abc");
        let mut h = HeaderMap::new();
        h.insert("request-id", HeaderValue::from_static("req_9"));
        h.insert("retry-after", HeaderValue::from_static("2"));
        let c =
            |s, b: &str| classify_response(s, &h, b, std::slice::from_ref(&key), SystemTime::now());
        let auth = c(401, "invalid x-api-key sk-live-abc");
        assert!(matches!(auth, ProviderError::Auth { .. }));
        assert!(!auth.to_string().contains("sk-live-abc"), "{auth}");
        assert_eq!(auth.request_id(), Some("req_9"));
        assert_eq!(
            c(429, "slow down").retry_after(),
            Some(Duration::from_secs(2))
        );
        assert!(matches!(c(529, "{}"), ProviderError::Overloaded { .. }));
        assert!(matches!(
            c(502, "bad gateway"),
            ProviderError::Server { .. }
        ));
        assert!(matches!(
            c(500, r#"{"error":{"type":"overloaded_error"}}"#),
            ProviderError::Overloaded { .. }
        ));
        assert!(matches!(
            c(400, "prompt is too long"),
            ProviderError::ContextOverflow { .. }
        ));
        assert!(matches!(
            c(404, "no model"),
            ProviderError::InvalidRequest { .. }
        ));
        let long = "x".repeat(MAX_ERROR_BODY * 2);
        assert!(c(400, &long).body().unwrap().len() < MAX_ERROR_BODY + 16);
    }

    #[test]
    fn stream_errors_classify_by_kind() {
        assert!(matches!(
            classify_stream_error("overloaded_error", "Overloaded", "{}"),
            ProviderError::Overloaded { status: 0, .. }
        ));
        assert!(matches!(
            classify_stream_error("invalid_request_error", "prompt is too long", "{}"),
            ProviderError::ContextOverflow { .. }
        ));
        assert!(matches!(
            classify_stream_error("rate_limit_error", "", "{}"),
            ProviderError::RateLimited { .. }
        ));
        assert!(matches!(
            classify_stream_error("api_error", "Internal", "{}"),
            ProviderError::Server { .. }
        ));
        assert!(matches!(
            classify_stream_error("502", "Provider returned error: overloaded", "{}"),
            ProviderError::Overloaded { .. }
        ));
    }
}
