//! Faults the server injects on request: error statuses before a response, and broken,
//! slow or cut streams.

use serde::{Deserialize, Serialize};

use crate::config::Protocol;

/// One kind of failure, rendered in each provider's own shape.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum FaultKind {
    /// 429 with a `retry-after` header.
    RateLimit {
        /// Seconds sent in `retry-after`.
        #[serde(default = "one")]
        retry_after_secs: u64,
    },
    /// 500 internal error.
    ServerError,
    /// The provider's overloaded answer (Anthropic 529; 503 elsewhere).
    Overloaded,
    /// The provider's context-length error, whatever the prompt's size.
    ContextLength,
    /// The stream ends without its terminal event after this many events.
    CutAfter {
        /// Events sent before the cut.
        events: usize,
    },
    /// The event at this index is replaced by a malformed one (bad JSON, or a bad CRC on
    /// Bedrock); the stream goes on after it.
    Malformed {
        /// Index of the broken event.
        at_event: usize,
    },
    /// After this many events the provider's in-stream error event, then the end.
    StreamError {
        /// Events sent before the error.
        after_events: usize,
    },
    /// Every event is delayed.
    Slow {
        /// Delay before each event, in milliseconds.
        delay_ms: u64,
    },
    /// The connection is accepted and the request read, and nothing is ever answered (no
    /// status line): a client without a first-byte timeout waits forever.
    Hang,
    /// After this many events the stream goes silent and stays open: a mid-reply stall.
    StallAfter {
        /// Events sent before the silence.
        events: usize,
    },
}

fn one() -> u64 {
    1
}

/// A queued fault: applies to the next request (on `protocol`, when given), `times` times.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Fault {
    /// What goes wrong.
    #[serde(flatten)]
    pub kind: FaultKind,
    /// Only requests on this route consume it.
    #[serde(default)]
    pub protocol: Option<Protocol>,
    /// How many requests it applies to.
    #[serde(default = "one_usize")]
    pub times: usize,
}

fn one_usize() -> usize {
    1
}

impl Fault {
    /// A fault for the next request on any route.
    pub fn next(kind: FaultKind) -> Self {
        Self {
            kind,
            protocol: None,
            times: 1,
        }
    }

    /// Restricts the fault to one route.
    pub fn on(mut self, protocol: Protocol) -> Self {
        self.protocol = Some(protocol);
        self
    }

    /// Applies the fault to `times` requests.
    pub fn times(mut self, times: usize) -> Self {
        self.times = times;
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn faults_read_from_json_with_defaults() {
        let fault: Fault = serde_json::from_str(r#"{"kind":"rate_limit"}"#).unwrap();
        assert_eq!(
            fault,
            Fault::next(FaultKind::RateLimit {
                retry_after_secs: 1
            })
        );
        let fault: Fault = serde_json::from_str(
            r#"{"kind":"cut_after","events":3,"protocol":"anthropic","times":2}"#,
        )
        .unwrap();
        assert_eq!(
            fault,
            Fault::next(FaultKind::CutAfter { events: 3 })
                .on(Protocol::Anthropic)
                .times(2)
        );
    }
}
