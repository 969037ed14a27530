//! The wire protocols: each parses its own request shape into a [`Parsed`] request and
//! renders replies, streams and errors exactly as its provider does.

pub mod anthropic;
pub mod bedrock;
pub mod chat;
pub mod eventstream;
pub mod gemini;
pub mod responses;

use axum::http::{HeaderMap, HeaderValue, StatusCode};
use bytes::Bytes;
use serde_json::Value;

use crate::cache::CacheAccounting;
use crate::config::{ModelProfile, Protocol, Retention};
use crate::prompt::Prompt;
use crate::scenario::{Conversation, Reply};
use crate::tokens::Tokenizer;

/// A request reduced to what the simulator needs.
#[derive(Debug, Clone, Default)]
pub struct Parsed {
    /// The model id.
    pub model: String,
    /// Whether the client asked for a stream.
    pub stream: bool,
    /// The blocks in cache order.
    pub prompt: Prompt,
    /// What the scripted model needs.
    pub conversation: Conversation,
    /// `prompt_cache_key`, where the protocol has one.
    pub cache_key: Option<String>,
    /// Chat Completions `stream_options.include_usage`.
    pub include_usage: bool,
    /// Responses: the input items after resolving `previous_response_id` (for storing).
    pub items: Vec<Value>,
    /// Responses: whether the response is stored for `previous_response_id`.
    pub store: bool,
    /// The output cap the request sets, in tokens (`max_tokens` and its kin).
    pub max_output_tokens: Option<u64>,
    /// OpenAI `prompt_cache_retention`, when the request sets it.
    pub retention: Option<Retention>,
    /// Responses: the request's `tools`, which every `Response` object echoes.
    pub tools: Vec<Value>,
    /// Responses: `include` names `reasoning.encrypted_content`, so reasoning items carry it.
    pub encrypted_reasoning: bool,
    /// The provider's own tool search, when the request declares it (crate::tool_search).
    pub tool_search: Option<crate::tool_search::ToolSearch>,
    /// The response a cache diagnosis is asked against (Anthropic `diagnostics.
    /// previous_message_id`, which may be null; OpenAI `prompt_cache_options.
    /// comparison_response_id`); `None` when no diagnosis is asked for.
    pub diagnose: Option<Option<String>>,
    /// OpenAI `prompt_cache_options.prewarm`: fill the cache, generate nothing.
    pub prewarm: bool,
    /// Hash of the request-level parameters the cache keys on besides the blocks (thinking,
    /// effort); 0 when there are none. Anthropic: part of the messages chapter; Responses:
    /// of the whole prompt.
    pub params: u64,
    /// The optional features the request uses, by the name a profile's `rejects` lists, each
    /// with the error the provider sends when it refuses it.
    pub features: Vec<(&'static str, String)>,
}

/// Everything a renderer needs about the reply.
#[derive(Debug, Clone)]
pub struct Outcome<'a> {
    /// The reply to render.
    pub reply: &'a Reply,
    /// The cache accounting of the prompt.
    pub cache: &'a CacheAccounting,
    /// Output tokens (thinking included).
    pub output_tokens: u64,
    /// Of the output tokens, thinking tokens.
    pub reasoning_tokens: u64,
    /// A unique suffix for ids of this response.
    pub id: String,
    /// Unix seconds.
    pub created: u64,
    /// The model profile (usage dialect).
    pub profile: &'a ModelProfile,
    /// Characters per streamed delta.
    pub delta_chars: usize,
    /// The cache diagnosis, when the request asked for one.
    pub diagnosis: Option<crate::diagnosis::Diagnosis>,
}

/// A refusal, rendered in each provider's own error shape.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ErrorKind {
    /// A malformed or invalid request.
    BadRequest(String),
    /// The prompt is longer than the model's window.
    ContextLength {
        /// Prompt tokens.
        tokens: u64,
        /// The window.
        window: u64,
    },
    /// Rate limited.
    RateLimit {
        /// Seconds to wait.
        retry_after_secs: u64,
    },
    /// Internal error.
    Server,
    /// Overloaded.
    Overloaded,
    /// Unknown route or model.
    NotFound(String),
    /// The request body is larger than the server reads.
    TooLarge {
        /// The limit, in bytes.
        limit: usize,
    },
}

/// An error response: status, headers, body.
pub type ErrorResponse = (StatusCode, HeaderMap, Bytes);

/// Reads a request body as JSON, with the provider's wording for unparsable bodies left to
/// the caller.
pub fn json_body(body: &[u8]) -> Result<Value, String> {
    let value: Value =
        serde_json::from_slice(body).map_err(|e| format!("invalid JSON body: {e}"))?;
    if value.is_object() {
        Ok(value)
    } else {
        Err("request body must be a JSON object".to_owned())
    }
}

/// Reads an optional output-cap field: absent or null is no cap; anything but a
/// non-negative integer is refused with OpenAI's wording, naming `name`.
pub fn token_cap(value: Option<&Value>, name: &str) -> Result<Option<u64>, String> {
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(value) => value.as_u64().map(Some).ok_or_else(|| {
            if value.is_i64() {
                format!(
                    "Invalid '{name}': integer below minimum value. Expected a value >= 1, but got {value} instead."
                )
            } else {
                format!(
                    "Invalid type for '{name}': expected an integer, but got {} instead.",
                    json_type(value)
                )
            }
        }),
    }
}

/// Reads OpenAI's `prompt_cache_retention`: `in_memory` or `24h`; absent or null is none.
pub fn retention(body: &Value) -> Result<Option<Retention>, String> {
    match body.get("prompt_cache_retention") {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(value)) => match value.as_str() {
            "in_memory" | "in-memory" => Ok(Some(Retention::InMemory)),
            "24h" => Ok(Some(Retention::Extended)),
            other => Err(format!(
                "Invalid value: '{other}'. Supported values are: 'in_memory' and '24h'."
            )),
        },
        Some(other) => Err(format!(
            "Invalid type for 'prompt_cache_retention': expected one of 'in_memory' or '24h', but got {} instead.",
            json_type(other)
        )),
    }
}

/// How OpenAI's errors name a JSON value's type ("an object", "a string", …).
pub fn json_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(n) if n.is_f64() => "a decimal",
        Value::Number(_) => "an integer",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// `event: NAME` + `data: JSON` + blank line.
pub fn sse_event(name: &str, data: &Value) -> Bytes {
    Bytes::from(format!("event: {name}\ndata: {data}\n\n"))
}

/// `data: JSON` + blank line.
pub fn sse_data(data: &Value) -> Bytes {
    Bytes::from(format!("data: {data}\n\n"))
}

/// Splits text into deltas of at most `size` characters (never inside a character).
pub fn chunks(text: &str, size: usize) -> Vec<String> {
    let size = size.max(1);
    let mut out = Vec::new();
    let mut current = String::new();
    for (count, ch) in text.chars().enumerate() {
        if count > 0 && count % size == 0 {
            out.push(std::mem::take(&mut current));
        }
        current.push(ch);
    }
    if !current.is_empty() {
        out.push(current);
    }
    out
}

/// Headers with a JSON content type and the rate-limit wait, when there is one.
pub fn error_headers(kind: &ErrorKind) -> HeaderMap {
    let mut headers = HeaderMap::new();
    headers.insert("content-type", HeaderValue::from_static("application/json"));
    if let ErrorKind::RateLimit { retry_after_secs } = kind {
        headers.insert("retry-after", HeaderValue::from(*retry_after_secs));
        headers.insert(
            "retry-after-ms",
            HeaderValue::from(retry_after_secs.saturating_mul(1000)),
        );
    }
    headers
}

/// The text of a content value that is a string or an array of text parts.
pub fn text_of(content: Option<&Value>, part_types: &[&str]) -> Option<String> {
    match content? {
        Value::String(text) => Some(text.clone()),
        Value::Array(parts) => {
            let texts: Vec<&str> = parts
                .iter()
                .filter(|p| {
                    p.get("type")
                        .and_then(Value::as_str)
                        .is_none_or(|t| part_types.contains(&t))
                })
                .filter_map(|p| p.get("text").and_then(Value::as_str))
                .collect();
            (!texts.is_empty()).then(|| texts.join("\n"))
        }
        _ => None,
    }
}

/// What one protocol implements.
pub trait Wire {
    /// Which protocol.
    const PROTOCOL: Protocol;
    /// Content type of the streamed body.
    const STREAM_CONTENT_TYPE: &'static str = "text/event-stream";

    /// Parses a request body; `path_model` is the model named in the URL, if any.
    fn parse(
        body: &Value,
        path_model: Option<&str>,
        ctx: &ParseContext<'_>,
    ) -> Result<Parsed, String>;
    /// The non-streamed reply body.
    fn respond(parsed: &Parsed, outcome: &Outcome<'_>) -> Value;
    /// The streamed reply, one element per event.
    fn stream(parsed: &Parsed, outcome: &Outcome<'_>) -> Vec<Bytes>;
    /// An error response.
    fn error(kind: &ErrorKind) -> ErrorResponse;
    /// The in-stream error event, sent as the stream's event number `index` (0-based).
    fn stream_error(index: usize) -> Bytes;
    /// A malformed event.
    fn malformed() -> Bytes;
}

/// What a parser may look up.
pub struct ParseContext<'a> {
    /// The shared tokenizer.
    pub tokenizer: &'a Tokenizer,
    /// Responses: the stored item list of a previous response.
    pub previous: &'a (dyn Fn(&str) -> Option<Vec<Value>> + Sync),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_respect_characters() {
        assert_eq!(chunks("héllo wörld", 4), vec!["héll", "o wö", "rld"]);
        assert!(chunks("", 4).is_empty());
    }
}
