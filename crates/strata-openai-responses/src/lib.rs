//! strata adapter for the OpenAI Responses API (`POST {base}/responses`).
//!
//! - [`request::build_request`] turns a rendered [`strata_provider::Request`] into the body:
//!   `input` items, `tools`, `reasoning`, `prompt_cache_key`, `store: false`.
//! - [`stream::ResponsesParser`] is the sans-IO SSE parser producing [`strata_provider::Event`]s.
//! - [`usage::normalize_usage`] maps `ResponseUsage` to [`strata_provider::Usage`].
//! - [`chatgpt`] holds the ChatGPT-plan (Codex) backend's headers.
//! - [`websocket`]: the Responses WebSocket mode, each turn's new items on a session's socket,
//!   with the full HTTP request as the fallback.

pub mod chatgpt;
mod pi;
pub mod request;
pub mod stream;
pub mod usage;
pub mod websocket;

pub use request::{BuiltRequest, SystemPlacement, build_request};
pub use stream::{ResponsesParser, classify_stream_error};
pub use usage::normalize_usage;
pub mod provider;
pub use provider::{ResponsesConfig, ResponsesProvider};
