//! The virtual clock: real elapsed time plus whatever the admin endpoint has added, so TTL
//! expiry is tested without waiting.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Milliseconds since the server started, plus advances.
#[derive(Debug)]
pub struct VirtualClock {
    start: Instant,
    offset_ms: AtomicU64,
}

impl Default for VirtualClock {
    fn default() -> Self {
        Self::new()
    }
}

impl VirtualClock {
    /// A clock at zero.
    pub fn new() -> Self {
        Self {
            start: Instant::now(),
            offset_ms: AtomicU64::new(0),
        }
    }

    /// The current virtual time in milliseconds.
    pub fn now_ms(&self) -> u64 {
        let real = u64::try_from(self.start.elapsed().as_millis()).unwrap_or(u64::MAX);
        real.saturating_add(self.offset_ms.load(Ordering::Relaxed))
    }

    /// Moves the clock forward.
    pub fn advance(&self, by: Duration) -> u64 {
        let ms = u64::try_from(by.as_millis()).unwrap_or(u64::MAX);
        self.offset_ms.fetch_add(ms, Ordering::Relaxed);
        self.now_ms()
    }
}
