//! The cost-aware trigger: compact when re-reading the context over the requests still expected
//! costs more than summarising it once and writing the smaller context.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use strata_provider::Prices;

use crate::settings::SummaryMode;

/// Summary length assumed when pricing a compaction before it runs (tokens); a typical
/// structured summary of a coding session.
pub const EXPECTED_SUMMARY_TOKENS: u64 = 1_500;

/// What decides that a context is due for compaction.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum CompactionTrigger {
    /// Only when the context nears the window (`window - reserve_tokens`, or `trigger_percent`).
    Window,
    /// Also earlier, as soon as [`cost_says_compact`] holds; the window rule stays as a backstop.
    /// The default: the lowest bill with every task done on the bench's workloads
    /// (docs/benchmarks.md, "Choosing the default").
    #[default]
    Cost,
}

/// The quantities the cost rule weighs, in tokens and requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CostEstimate {
    /// The context as it would be sent now.
    pub context_tokens: u64,
    /// The part of it a compaction would keep verbatim (the recent tail).
    pub kept_tokens: u64,
    /// The summary a compaction would write.
    pub summary_tokens: u64,
    /// Requests still expected in the session.
    pub remaining_requests: u64,
    /// How the summary request reads the context.
    pub summary_mode: SummaryMode,
}

impl CostEstimate {
    /// USD of leaving the context as it is: every remaining request reads it from the cache.
    pub fn cost_of_waiting(&self, prices: &Prices) -> f64 {
        per_token(prices.cache_read) * self.context_tokens as f64 * self.remaining_requests as f64
    }

    /// USD of compacting now: the summary request's input (read from the cache in the
    /// cache-friendly form, full price in the transcript form) and output, one write of the
    /// smaller context, then every remaining request reading that.
    pub fn cost_of_compacting(&self, prices: &Prices) -> f64 {
        let input_price = match self.summary_mode {
            SummaryMode::CacheFriendly => prices.cache_read,
            SummaryMode::Transcript => prices.input,
        };
        let after = self.kept_tokens.min(self.context_tokens) + self.summary_tokens;
        per_token(input_price) * self.context_tokens as f64
            + per_token(prices.output) * self.summary_tokens as f64
            + per_token(prices.cache_write_5m) * after as f64
            + per_token(prices.cache_read) * after as f64 * self.remaining_requests as f64
    }
}

fn per_token(usd_per_million: f64) -> f64 {
    usd_per_million / 1_000_000.0
}

/// Whether compacting now is cheaper than re-reading the context over the remaining requests.
/// A model with no cache-read price (or none at all) never triggers: there is nothing to weigh.
pub fn cost_says_compact(estimate: &CostEstimate, prices: &Prices) -> bool {
    if prices.cache_read <= 0.0 && prices.input <= 0.0 {
        return false;
    }
    estimate.cost_of_waiting(prices) > estimate.cost_of_compacting(prices)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sonnet() -> Prices {
        Prices {
            input: 3.0,
            output: 15.0,
            cache_read: 0.3,
            cache_write_5m: 3.75,
            cache_write_1h: 6.0,
        }
    }

    fn estimate(context_tokens: u64, remaining_requests: u64) -> CostEstimate {
        CostEstimate {
            context_tokens,
            kept_tokens: 8_000,
            summary_tokens: EXPECTED_SUMMARY_TOKENS,
            remaining_requests,
            summary_mode: SummaryMode::CacheFriendly,
        }
    }

    #[test]
    fn a_long_future_makes_an_early_compaction_pay() {
        // 30k re-read 40 times at $0.30/M = $0.36; compacting: 30k read + 1.5k out + 9.5k
        // written + 9.5k read 40 times = $0.009 + $0.0225 + $0.0356 + $0.114.
        assert!(cost_says_compact(&estimate(30_000, 40), &sonnet()));
        assert!(!cost_says_compact(&estimate(30_000, 3), &sonnet()));
    }

    #[test]
    fn a_context_no_larger_than_the_kept_tail_is_never_worth_compacting() {
        assert!(!cost_says_compact(&estimate(9_000, 1_000), &sonnet()));
    }

    #[test]
    fn the_transcript_form_pays_full_price_for_its_input() {
        let cached = estimate(50_000, 10);
        let transcript = CostEstimate {
            summary_mode: SummaryMode::Transcript,
            ..cached
        };
        let difference =
            transcript.cost_of_compacting(&sonnet()) - cached.cost_of_compacting(&sonnet());
        assert!(
            (difference - 50_000.0 * 2.7 / 1e6).abs() < 1e-9,
            "{difference}"
        );
    }

    #[test]
    fn free_models_never_trigger() {
        assert!(!cost_says_compact(
            &estimate(100_000, 1_000),
            &Prices::default()
        ));
    }
}
