//! The `Provider` trait and per-call options.

use async_trait::async_trait;
use futures::StreamExt;
use tokio_util::sync::CancellationToken;

use crate::capabilities::Protocol;
use crate::error::{ApiKey, ProviderError};
use crate::event::{Event, EventStream, StopReason};
use crate::model::Model;
use crate::request::{Message, Request};
use crate::transport::HttpRequest;
use crate::usage::{Cost, Usage};

/// Per-call settings that are not part of the request body's meaning.
#[derive(Debug, Clone)]
pub struct StreamOptions {
    /// Session id, for providers that route by session (headers such as `session_id`).
    pub session_id: Option<String>,
    /// Cache routing key; falls back to `Request::cache_key`.
    pub cache_key: Option<String>,
    /// Cancels the request and its stream.
    pub cancel: CancellationToken,
    /// Retries allowed before the first byte of the stream.
    pub max_retries: u32,
    /// Extra HTTP headers, sent after the adapter's own.
    pub headers: Vec<(String, String)>,
    /// The key to authenticate with; `None` for keyless local servers.
    pub api_key: Option<ApiKey>,
    /// Overrides the row's base URL (tests, proxies, the mock server).
    pub base_url: Option<String>,
}

impl Default for StreamOptions {
    fn default() -> Self {
        Self {
            session_id: None,
            cache_key: None,
            cancel: CancellationToken::new(),
            max_retries: 3,
            headers: Vec::new(),
            api_key: None,
            base_url: None,
        }
    }
}

/// A finished response, as collected by [`Provider::complete`].
#[derive(Debug, Clone, PartialEq)]
pub struct Completion {
    /// The assistant message.
    pub message: Message,
    /// Why the model stopped.
    pub stop_reason: StopReason,
    /// Final token counts.
    pub usage: Usage,
    /// Cost at the model's prices.
    pub cost: Cost,
}

/// Something that sends a [`Request`] to a model and streams the answer.
#[async_trait]
pub trait Provider: Send + Sync {
    /// The wire protocol this implementation speaks.
    fn protocol(&self) -> Protocol;

    /// Sends `request` and returns the event stream.
    async fn stream(
        &self,
        model: &Model,
        request: &Request,
        options: &StreamOptions,
    ) -> Result<EventStream, ProviderError>;

    /// The HTTP request [`Provider::stream`] sends for `request`, built by the same code:
    /// its URL and body are the bytes that go on the wire (`strata context --format
    /// request` prints them). Credentials that need I/O to obtain (OAuth tokens) are not
    /// fetched here, so their header may be missing. Providers that speak no HTTP (test
    /// doubles) keep the default, which says so.
    fn http_request(
        &self,
        model: &Model,
        request: &Request,
        options: &StreamOptions,
    ) -> Result<HttpRequest, ProviderError> {
        let _ = (model, request, options);
        Err(ProviderError::InvalidRequest {
            status: 0,
            request_id: None,
            body: format!("the {} provider sends no HTTP request", self.protocol()),
        })
    }

    /// Sends `request` and waits for the whole answer.
    ///
    /// A stream that ends without `Done` is [`ProviderError::Truncated`]; no completion is invented.
    async fn complete(
        &self,
        model: &Model,
        request: &Request,
        options: &StreamOptions,
    ) -> Result<Completion, ProviderError> {
        let mut stream = self.stream(model, request, options).await?;
        let mut last_event = "nothing";
        while let Some(event) = stream.next().await {
            match event {
                Event::Done {
                    stop_reason,
                    message,
                    usage,
                } => {
                    return Ok(Completion {
                        message,
                        stop_reason,
                        cost: usage.cost(&model.prices),
                        usage,
                    });
                }
                Event::Error { error, .. } => return Err(error),
                Event::Start { .. } => last_event = "start",
                Event::TextDelta { .. } => last_event = "text delta",
                Event::ThinkingDelta { .. } => last_event = "thinking delta",
                Event::ToolCallStart { .. } => last_event = "tool call start",
                Event::ToolCallDelta { .. } => last_event = "tool call delta",
                Event::ToolCallEnd { .. } => last_event = "tool call end",
                Event::Usage(_) => last_event = "usage",
                Event::CacheDiagnosis(_) => last_event = "cache diagnosis",
            }
        }
        Err(ProviderError::Truncated {
            reason: format!("stream ended after {last_event} without a done event"),
        })
    }
}
