//! What front ends share with a running agent: the steering queue and abort switch, and the
//! retry events of the transport.

use super::*;

/// Queue and abort switch shared with front ends while a run is going.
#[derive(Debug, Clone, Default)]
pub struct Control {
    inner: Arc<Mutex<ControlState>>,
}

#[derive(Debug, Default)]
struct ControlState {
    steering: VecDeque<(String, Vec<ImageContent>)>,
    /// Messages from work that outlived its tool call, delivered with the steering but
    /// counted apart (the front end's steering queue knows nothing of them).
    arrivals: VecDeque<String>,
    cancel: CancellationToken,
}

impl Control {
    /// Queues a message delivered after the current tool batch (or when the model stops).
    pub fn steer(&self, text: impl Into<String>) {
        self.steer_with_images(text, Vec::new());
    }

    /// Queues a message with images, delivered as [`Control::steer`] delivers text.
    pub fn steer_with_images(&self, text: impl Into<String>, images: Vec<ImageContent>) {
        if let Ok(mut state) = self.inner.lock() {
            state.steering.push_back((text.into(), images));
        }
    }

    /// Stops the stream and the running tools; the session stays well-formed.
    pub fn abort(&self) {
        if let Ok(state) = self.inner.lock() {
            state.cancel.cancel();
        }
    }

    /// Queues a message a tool's background work posted (a child agent's answer), delivered
    /// at the next turn boundary like steering.
    pub fn arrive(&self, text: impl Into<String>) {
        if let Ok(mut state) = self.inner.lock() {
            state.arrivals.push_back(text.into());
        }
    }

    /// The arrivals not delivered (the run ended first): the driver runs them next.
    pub fn take_arrivals(&self) -> Vec<String> {
        self.inner
            .lock()
            .map(|mut s| s.arrivals.drain(..).collect())
            .unwrap_or_default()
    }

    /// Drops the steering messages not yet delivered; returns how many.
    pub fn clear_steering(&self) -> usize {
        self.inner.lock().map_or(0, |mut state| {
            let count = state.steering.len();
            state.steering.clear();
            count
        })
    }

    pub(super) fn take_steering(&self) -> Vec<(String, Vec<ImageContent>)> {
        self.inner
            .lock()
            .map(|mut s| s.steering.drain(..).collect())
            .unwrap_or_default()
    }

    /// A fresh token for a run (a cancelled one stays cancelled).
    pub(super) fn start_run(&self) -> CancellationToken {
        match self.inner.lock() {
            Ok(mut state) => {
                if state.cancel.is_cancelled() {
                    state.cancel = CancellationToken::new();
                }
                state.cancel.clone()
            }
            Err(_) => CancellationToken::new(),
        }
    }
}

/// Carries the transport's retry notices to an agent's event channel. Build the provider's
/// `HttpClient` with [`RetryEvents::observer`] and give the same value to
/// [`Agent::with_retry_events`]: the client exists before the agent does.
#[derive(Clone, Default)]
pub struct RetryEvents {
    slot: Arc<Mutex<Option<UnboundedSender<AgentEvent>>>>,
}

impl std::fmt::Debug for RetryEvents {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RetryEvents").finish_non_exhaustive()
    }
}

impl RetryEvents {
    /// A forwarder with no agent attached yet (notices are dropped until one is).
    pub fn new() -> Self {
        Self::default()
    }

    /// The observer to hand to `HttpClient::with_retry_observer`.
    pub fn observer(&self) -> strata_provider::transport::RetryObserver {
        let slot = Arc::clone(&self.slot);
        Arc::new(move |notice: &strata_provider::transport::RetryNotice| {
            if let Ok(slot) = slot.lock()
                && let Some(events) = slot.as_ref()
            {
                let _ = events.send(AgentEvent::Retry {
                    attempt: notice.attempt,
                    wait_ms: u64::try_from(notice.wait.as_millis()).unwrap_or(u64::MAX),
                    error: notice.error.clone(),
                });
            }
        })
    }

    pub(super) fn attach(&self, events: Option<UnboundedSender<AgentEvent>>) {
        if let Ok(mut slot) = self.slot.lock() {
            *slot = events;
        }
    }
}
