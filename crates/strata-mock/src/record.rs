//! What the server remembers about each request: route, model, status, cache accounting.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::cache::{CacheAccounting, ChapterTokens, Chapters};
use crate::config::{CacheStyle, Protocol};
use crate::fault::FaultKind;
use crate::prompt::Chapter;
use crate::summary::SummaryKind;

/// One request as the mock saw and answered it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RequestRecord {
    /// 1-based sequence number.
    pub seq: u64,
    /// The route's protocol.
    pub protocol: Protocol,
    /// The URL path.
    pub path: String,
    /// The model id ("" when the request did not parse).
    pub model: String,
    /// Whether the reply was streamed.
    pub stream: bool,
    /// Virtual time of arrival, milliseconds.
    pub at_ms: u64,
    /// HTTP status sent.
    pub status: u16,
    /// The error message sent, for refusals.
    pub error: Option<String>,
    /// The cache style applied.
    pub cache_style: Option<CacheStyle>,
    /// `prompt_cache_key`, where sent.
    pub cache_key: Option<String>,
    /// Cache accounting (absent when the request was refused before the cache).
    pub cache: Option<Accounting>,
    /// Output tokens of the reply.
    pub output_tokens: u64,
    /// Where this request first differs from the previous one in its cache namespace
    /// (Anthropic's `tools_changed` / `system_changed` / `messages_changed`); `None` when it
    /// only appends to it, repeats it, or is the first.
    #[serde(default)]
    pub changed: Option<Change>,
    /// The scripted turn played (`None` for echo, summaries or refusals).
    pub turn: Option<usize>,
    /// The summary a summary request asked for (`sequence` playback), when it was one.
    #[serde(default)]
    pub summary: Option<SummaryKind>,
    /// The fault applied, if any.
    pub fault: Option<FaultKind>,
    /// Input tokens a provider tool search run inside the reply loaded (counted in
    /// `cache.input_tokens`, not in the body: `crate::tool_search`).
    #[serde(default)]
    pub search_loaded_tokens: u64,
    /// The request body, when the server records bodies; for a message-thread continue, the
    /// full request it stands for (what the cache and the model see), the body as sent being
    /// in `thread_body`.
    pub body: Option<Value>,
    /// Sent as a `response.create` message on a Responses WebSocket, not an HTTP request.
    #[serde(default)]
    pub websocket: bool,
    /// Bytes uploaded for this request: the HTTP body or the socket message.
    #[serde(default)]
    pub upload_bytes: u64,
    /// Time to the first output event on the mock's latency model ([`crate::latency`]), in
    /// milliseconds; 0 for a refusal.
    #[serde(default)]
    pub ttft_ms: f64,
    /// A message-thread continue's body as sent (only the new messages), or a Gemini request's
    /// that named an explicit cache (only what follows the cache), when the server records
    /// bodies.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thread_body: Option<Value>,
    /// Bytes of the request body as received (what the client uploaded).
    #[serde(default)]
    pub body_bytes: u64,
    /// The Gemini explicit cache (`cachedContent`) the request named and was served from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cached_content: Option<String>,
    /// Anthropic message threads: the response this request continued (its body held only
    /// the new messages); `None` for a full request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub continued: Option<String>,
}

impl RequestRecord {
    /// A record of request `seq` to `path`, arrived at `at_ms`, before anything is known of
    /// how it is answered: status 200, not streamed, nothing cached, played or refused yet.
    pub fn received(seq: u64, protocol: Protocol, path: String, model: String, at_ms: u64) -> Self {
        Self {
            seq,
            protocol,
            path,
            model,
            stream: false,
            at_ms,
            status: 200,
            error: None,
            cache_style: None,
            cache_key: None,
            cache: None,
            output_tokens: 0,
            changed: None,
            turn: None,
            summary: None,
            fault: None,
            search_loaded_tokens: 0,
            body: None,
            websocket: false,
            upload_bytes: 0,
            ttft_ms: 0.0,
            thread_body: None,
            body_bytes: 0,
            continued: None,
            cached_content: None,
        }
    }
}

/// The first block that differs from the previous request in the same cache namespace.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Change {
    /// The chapter it is in.
    pub chapter: Chapter,
    /// Its index among the request's blocks.
    pub block: usize,
}

/// Cache accounting in a record (the serializable mirror of [`CacheAccounting`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Accounting {
    /// All prompt tokens.
    pub input_tokens: u64,
    /// Read from cache.
    pub cache_read: u64,
    /// Written to cache.
    pub cache_write: u64,
    /// Written with the 5m lifetime.
    pub cache_write_5m: u64,
    /// Written with the 1h lifetime.
    pub cache_write_1h: u64,
    /// Neither read nor written.
    pub uncached: u64,
    /// Per chapter: tools.
    pub tools: Split,
    /// Per chapter: system.
    pub system: Split,
    /// Per chapter: messages.
    pub messages: Split,
    /// Input cost in units of one uncached input token, at the model's cache price ratios.
    #[serde(default)]
    pub input_cost_units: f64,
}

/// Read / written / uncached tokens of one chapter.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Split {
    /// Read.
    pub read: u64,
    /// Written.
    pub written: u64,
    /// Uncached.
    pub uncached: u64,
}

impl From<ChapterTokens> for Split {
    fn from(c: ChapterTokens) -> Self {
        Self {
            read: c.read,
            written: c.written,
            uncached: c.uncached,
        }
    }
}

impl From<&CacheAccounting> for Accounting {
    fn from(c: &CacheAccounting) -> Self {
        let Chapters {
            tools,
            system,
            messages,
        } = c.chapters;
        Self {
            input_tokens: c.input_tokens,
            cache_read: c.cache_read,
            cache_write: c.cache_write,
            cache_write_5m: c.cache_write_5m,
            cache_write_1h: c.cache_write_1h,
            uncached: c.uncached,
            tools: tools.into(),
            system: system.into(),
            messages: messages.into(),
            input_cost_units: 0.0,
        }
    }
}
