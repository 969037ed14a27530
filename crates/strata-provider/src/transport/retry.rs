//! When and how long to wait before re-sending a request that failed before its first byte.

use std::time::Duration;

use crate::error::ProviderError;

/// Retry limits: how many re-sends, and the bounds of the jittered exponential backoff.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Re-sends after the first attempt (0 disables retrying).
    pub max_retries: u32,
    /// Delay before the first re-send; doubles each time.
    pub base_delay: Duration,
    /// Longest delay; a `retry-after` beyond it is not waited for (the error is returned).
    pub max_delay: Duration,
}

impl Default for RetryPolicy {
    /// Pi's settings: 3 retries, 2 s doubling, at most 60 s.
    fn default() -> Self {
        Self {
            max_retries: 3,
            base_delay: Duration::from_secs(2),
            max_delay: Duration::from_secs(60),
        }
    }
}

impl RetryPolicy {
    /// No retries at all.
    pub fn none() -> Self {
        Self {
            max_retries: 0,
            ..Self::default()
        }
    }

    /// The wait before re-send number `attempt` (0-based) after `error`, or `None` to give up.
    ///
    /// Only retryable errors are retried. A provider's `retry-after` is honoured as given
    /// (it knows its own limits); otherwise the delay is `base · 2^attempt`, capped, with
    /// "equal jitter" (half fixed, half random) so that clients do not retry in lockstep.
    pub fn delay(&self, attempt: u32, error: &ProviderError) -> Option<Duration> {
        if attempt >= self.max_retries || !error.is_retryable() {
            return None;
        }
        if let Some(asked) = error.retry_after() {
            return (asked <= self.max_delay).then_some(asked);
        }
        let exp = self
            .base_delay
            .saturating_mul(2u32.saturating_pow(attempt.min(30)))
            .min(self.max_delay);
        let half = exp / 2;
        let jitter = half.mul_f64(fastrand::f64());
        Some(half + jitter)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn server() -> ProviderError {
        ProviderError::Server {
            status: 500,
            request_id: None,
            body: String::new(),
        }
    }

    #[test]
    fn backoff_doubles_with_jitter_and_caps() {
        let p = RetryPolicy {
            max_retries: 10,
            base_delay: Duration::from_millis(100),
            max_delay: Duration::from_millis(500),
        };
        for _ in 0..50 {
            let d0 = p.delay(0, &server()).unwrap();
            assert!((50..=100).contains(&d0.as_millis()), "{d0:?}");
            let d2 = p.delay(2, &server()).unwrap();
            assert!((200..=400).contains(&d2.as_millis()), "{d2:?}");
            let d9 = p.delay(9, &server()).unwrap();
            assert!((250..=500).contains(&d9.as_millis()), "{d9:?}");
        }
        assert_eq!(p.delay(10, &server()), None);
    }

    #[test]
    fn retry_after_is_honoured_unless_beyond_the_cap() {
        let p = RetryPolicy::default();
        let limited = |secs| ProviderError::RateLimited {
            retry_after: Some(Duration::from_secs(secs)),
            status: 429,
            request_id: None,
            body: String::new(),
        };
        assert_eq!(p.delay(0, &limited(7)), Some(Duration::from_secs(7)));
        assert_eq!(p.delay(0, &limited(600)), None);
    }

    #[test]
    fn non_retryable_errors_are_not_retried() {
        let p = RetryPolicy::default();
        let auth = ProviderError::Auth {
            status: 401,
            request_id: None,
            body: String::new(),
        };
        assert_eq!(p.delay(0, &auth), None);
        assert_eq!(RetryPolicy::none().delay(0, &server()), None);
    }
}
