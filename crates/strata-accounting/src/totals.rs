//! A session's requests added up.

use serde::{Deserialize, Serialize};
use strata_provider::Usage;

use crate::record::{RequestKind, RequestRecord};

/// Tokens and dollars over a set of requests.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Totals {
    /// Requests counted (answers, summaries and pings).
    pub requests: usize,
    /// Of those, keep-warm pings.
    pub pings: usize,
    /// Tokens, writes split by lifetime.
    pub usage: Usage,
    /// Dollars.
    pub cost: f64,
}

impl Totals {
    /// The sum of `records`.
    pub fn of<'a>(records: impl IntoIterator<Item = &'a RequestRecord>) -> Self {
        let mut totals = Self::default();
        for record in records {
            totals.add(record);
        }
        totals
    }

    /// Adds one request.
    pub fn add(&mut self, record: &RequestRecord) {
        self.requests += 1;
        if record.kind == RequestKind::KeepWarm {
            self.pings += 1;
        }
        self.usage += record.usage;
        self.cost += record.cost;
    }

    /// Adds another set's sums (a parent's and its children's).
    pub fn merge(&mut self, other: &Self) {
        self.requests += other.requests;
        self.pings += other.pings;
        self.usage += other.usage;
        self.cost += other.cost;
    }

    /// Share of the prompt tokens read from the cache (`None` before any prompt).
    pub fn hit_rate(&self) -> Option<f64> {
        hit_rate(self.usage.cache_read, self.usage.prompt_tokens())
    }
}

/// Share of `prompt` tokens read from the cache (`None` before any prompt): every session
/// hit rate strata shows (totals, the footer's running counters).
pub fn hit_rate(cache_read: u64, prompt: u64) -> Option<f64> {
    (prompt > 0).then(|| cache_read as f64 / prompt as f64)
}
