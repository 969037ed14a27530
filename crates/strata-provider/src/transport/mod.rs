//! Transport shared by the protocol crates: HTTP, retries, SSE framing, the stream driver.
//!
//! Nothing here knows a provider's JSON shapes. The layers, bottom up:
//!
//! - [`HttpClient::post_json`] sends an [`HttpRequest`], re-sends retryable failures with
//!   jittered exponential backoff honouring `retry-after` ([`RetryPolicy`]) — but only until
//!   the first body byte — and classifies error responses ([`classify_response`],
//!   [`is_context_overflow`]) with keys scrubbed from every message.
//! - [`SseDecoder`] (a [`FrameDecoder`]) turns body bytes into [`Frame`]s, sans IO.
//! - A protocol implements [`StreamParser`]: frame in, [`Event`](crate::Event)s out,
//!   assembling the message with a [`MessageBuilder`].
//! - [`drive`] / [`StreamDriver`] connect them with one policy for unknown, corrupt, error,
//!   truncated and cancelled streams.
//! - [`parse_partial`] shows tool-call arguments while they stream.
//!
//! - [`HttpClient::stream_events`] re-sends a request whose stream failed after the first
//!   byte but before any of the reply was shown ([`resend`]).
//!
//! A protocol crate's `stream` is then: build the body, `stream_events` with its `drive`.

pub mod assembly;
pub mod auth;
pub mod classify;
#[cfg(feature = "transport")]
pub mod client;
#[cfg(feature = "transport")]
pub mod driver;
mod http_request;
pub mod partial_json;
#[cfg(feature = "transport")]
pub mod resend;
#[cfg(feature = "transport")]
pub mod retry;
pub mod sse;

pub use assembly::MessageBuilder;
pub use auth::{
    EnvLookup, auth_header, base_url, endpoint_speaking, expand_url, join_url, missing_key,
    process_env, process_env_lookup, resolve_api_key,
};
#[cfg(feature = "transport")]
pub use classify::{classify_response, request_id, retry_after};
pub use classify::{classify_stream_error, is_context_overflow, scrub};
#[cfg(feature = "transport")]
pub use client::{
    ByteStream, HttpClient, RetryNotice, RetryObserver, StreamingResponse, TransportConfig,
};
#[cfg(feature = "transport")]
pub use driver::{FrameOutcome, ParseError, StreamDriver, StreamParser, drive, drive_with};
pub use http_request::HttpRequest;
pub use partial_json::{ArgumentsError, parse_arguments, parse_partial};
#[cfg(feature = "transport")]
pub use resend::Driver;
#[cfg(feature = "transport")]
pub use retry::RetryPolicy;
pub use sse::{Flow, Frame, FrameDecoder, MAX_EVENT_BYTES, SseDecoder};
