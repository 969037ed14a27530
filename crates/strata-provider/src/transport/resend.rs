//! Re-sending a request whose stream failed after the first byte but before anything was
//! shown.
//!
//! [`HttpClient::post_json`] retries only until the first body byte. Past it, a provider can
//! still fail before the reply begins: an in-stream `overloaded_error` right after
//! `message_start`, a stream cut or stalled before its first delta, a corrupt first frame.
//! Nothing of the reply has reached the user then, so the request is simply sent again —
//! the events held back so far (`Start`, usage) are dropped, and the caller sees one clean
//! stream. Once a delta (text, thinking, a tool call) or `Done` has been passed on, a failure
//! ends the stream with its partial message instead ([`Event::Error`]'s `partial`): re-sending
//! then would show the user a second, different beginning, so the turn is the agent's to
//! re-issue with the partial reply recorded. Every re-send is announced to the client's retry
//! observer, as pre-first-byte retries are.

use std::collections::VecDeque;
use std::sync::Arc;

use futures::StreamExt;
use tokio_util::sync::CancellationToken;

use super::HttpRequest;
use super::client::{HttpClient, StreamingResponse};
use crate::error::ProviderError;
use crate::event::{Event, EventStream};

/// Turns a response into its event stream (a protocol's parser behind [`super::drive`]).
pub type Driver = Arc<dyn Fn(StreamingResponse) -> EventStream + Send + Sync>;

/// Whether `event` shows the user something of the reply (so a re-send would be visible).
fn shows_reply(event: &Event) -> bool {
    !matches!(
        event,
        Event::Start { .. } | Event::Usage(_) | Event::CacheDiagnosis(_)
    )
}

/// Whether a failure before anything was shown is worth a re-send: the retryable kinds, and
/// a corrupt frame (the next answer is a new stream).
fn resendable(error: &ProviderError) -> bool {
    error.is_retryable() || matches!(error, ProviderError::Decode { .. })
}

impl HttpClient {
    /// Sends `request` and streams its events through `driver`, re-sending it when the stream
    /// fails before any of the reply was shown (see the module docs), within the request's
    /// retry budget. Errors before the first byte are [`HttpClient::post_json`]'s.
    pub async fn stream_events(
        &self,
        request: HttpRequest,
        cancel: &CancellationToken,
        driver: Driver,
    ) -> Result<EventStream, ProviderError> {
        let response = self.post_json(&request, cancel).await?;
        let state = State {
            current: driver(response),
            driver,
            client: self.clone(),
            request,
            cancel: cancel.clone(),
            held: Vec::new(),
            pending: VecDeque::new(),
            shown: false,
            resends: 0,
            over: false,
        };
        Ok(Box::pin(futures::stream::unfold(state, State::next)))
    }
}

struct State {
    current: EventStream,
    driver: Driver,
    client: HttpClient,
    request: HttpRequest,
    cancel: CancellationToken,
    /// Events not passed on yet because nothing of the reply was shown.
    held: Vec<Event>,
    pending: VecDeque<Event>,
    shown: bool,
    resends: u32,
    over: bool,
}

impl State {
    async fn next(mut self) -> Option<(Event, Self)> {
        loop {
            if self.cancel.is_cancelled() && !self.over {
                // Cancelled: what is held or pending is dropped; the inner stream ends
                // with `Cancelled` at once.
                self.pending.clear();
                self.held.clear();
                self.shown = true;
            }
            if let Some(event) = self.pending.pop_front() {
                return Some((event, self));
            }
            if self.over {
                return None;
            }
            let Some(event) = self.current.next().await else {
                self.over = true;
                self.pending.extend(self.held.drain(..));
                continue;
            };
            if self.shown {
                return Some((event, self));
            }
            match event {
                Event::Error { error, partial } => {
                    if let Some(error) = self.resend(error).await {
                        self.over = true;
                        self.pending.extend(self.held.drain(..));
                        self.pending.push_back(Event::Error { error, partial });
                    }
                }
                event if shows_reply(&event) => {
                    self.shown = true;
                    self.pending.extend(self.held.drain(..));
                    self.pending.push_back(event);
                }
                event => self.held.push(event),
            }
        }
    }

    /// Re-sends the request after `error`; gives the error back when it is final.
    async fn resend(&mut self, error: ProviderError) -> Option<ProviderError> {
        if !resendable(&error) || self.cancel.is_cancelled() {
            return Some(error);
        }
        let policy = self.client.policy_for(&self.request);
        // A corrupt frame is not "retryable" for the policy; it waits as a cut stream would.
        let basis = match &error {
            ProviderError::Decode { message } => ProviderError::Truncated {
                reason: message.clone(),
            },
            other => other.clone(),
        };
        let Some(wait) = policy.delay(self.resends, &basis) else {
            return Some(error);
        };
        self.resends += 1;
        self.client.notify_retry(self.resends, wait, &error);
        tokio::select! {
            biased;
            () = self.cancel.cancelled() => return Some(ProviderError::Cancelled),
            () = tokio::time::sleep(wait) => {}
        }
        match self.client.post_json(&self.request, &self.cancel).await {
            Ok(response) => {
                self.held.clear();
                self.current = (self.driver)(response);
                None
            }
            Err(error) => Some(error),
        }
    }
}
