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

/// What the cache in use charges, USD per million tokens: the prices the cost rules weigh.
/// Built from a model's [`Prices`] and the lifetime the session asks for, so a 1-hour
/// breakpoint's dearer write is what a rewrite costs there.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CachePrices {
    /// A token read from the cache (the input price where nothing is cached).
    pub read: f64,
    /// A token written to the cache at the lifetime in use (what an automatic cache charges
    /// for a miss; the input price where nothing is cached).
    pub write: f64,
    /// An uncached input token.
    pub input: f64,
    /// An output token.
    pub output: f64,
}

impl CachePrices {
    /// The prices of `prices` with writes at the 1-hour lifetime when `one_hour`, else at
    /// the 5-minute one (a row without a separate write price charges the input price).
    pub fn new(prices: &Prices, one_hour: bool) -> Self {
        if prices.cache_read <= 0.0 {
            // Nothing is cached: every request pays every token as input.
            return Self {
                read: prices.input,
                write: prices.input,
                input: prices.input,
                output: prices.output,
            };
        }
        let write = match (one_hour, prices.cache_write_1h, prices.cache_write_5m) {
            (true, hour, _) if hour > 0.0 => hour,
            (_, _, five) if five > 0.0 => five,
            _ => prices.input,
        };
        Self {
            read: prices.cache_read,
            write,
            input: prices.input,
            output: prices.output,
        }
    }

    /// What a token written again costs over reading it: the premium of a rewrite.
    pub fn rewrite_premium(&self) -> f64 {
        (self.write - self.read).max(0.0)
    }

    /// Whether nothing has a price: no rule has anything to weigh.
    pub fn is_free(&self) -> bool {
        self.read <= 0.0 && self.input <= 0.0
    }
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
    /// Tokens the context grows by per request, as measured over this epoch (0: unknown or
    /// not growing).
    pub growth_per_request: u64,
}

impl CostEstimate {
    /// USD of leaving the context as it is: every remaining request reads it from the cache.
    pub fn cost_of_waiting(&self, prices: &CachePrices) -> f64 {
        per_token(prices.read) * self.context_tokens as f64 * self.remaining_requests as f64
    }

    /// Tokens the context holds right after a compaction: the kept tail and the summary.
    pub fn after_tokens(&self) -> u64 {
        self.kept_tokens.min(self.context_tokens) + self.summary_tokens
    }

    /// USD one compaction costs beyond the reads every request pays anyway: the summary
    /// request's input (read from the cache in the cache-friendly form, full price in the
    /// transcript form) and output, and the smaller context written once instead of read.
    pub fn compaction_overhead(&self, prices: &CachePrices) -> f64 {
        let input_price = match self.summary_mode {
            SummaryMode::CacheFriendly => prices.read,
            SummaryMode::Transcript => prices.input,
        };
        per_token(input_price) * self.context_tokens as f64
            + per_token(prices.output) * self.summary_tokens as f64
            + per_token(prices.rewrite_premium()) * self.after_tokens() as f64
    }

    /// USD of compacting now: [`Self::compaction_overhead`], then every remaining request
    /// reading the smaller context.
    pub fn cost_of_compacting(&self, prices: &CachePrices) -> f64 {
        self.compaction_overhead(prices)
            + per_token(prices.read)
                * self.after_tokens() as f64
                * (self.remaining_requests as f64 + 1.0)
    }

    /// The context size at which compacting gives the lowest cost per request in a session
    /// that keeps growing by [`Self::growth_per_request`]: a compaction every cycle pays its
    /// overhead `C` once, and the context read in between averages half-way from the size
    /// after it to the size at it, so the cycle is best `sqrt(2 C g / read)` tokens long (the
    /// economic order quantity). Above the window limit the window compacts first: this is
    /// then never reached. `None` when the context does not grow or reads are free.
    pub fn best_compaction_point(&self, prices: &CachePrices) -> Option<u64> {
        if self.growth_per_request == 0 || prices.read <= 0.0 {
            return None;
        }
        let cycle = (2.0 * self.compaction_overhead(prices) * self.growth_per_request as f64
            / per_token(prices.read))
        .sqrt();
        Some(self.after_tokens() + cycle.ceil() as u64)
    }
}

fn per_token(usd_per_million: f64) -> f64 {
    usd_per_million / 1_000_000.0
}

/// Whether compacting now is cheaper: re-reading the context over the remaining requests costs
/// more than compacting it, and — where the context is measured to grow — it has reached
/// [`CostEstimate::best_compaction_point`] (earlier, the next compaction comes the sooner and
/// the overheads add up; near a small window that point lies past the window limit, and the
/// window trigger alone compacts). A model with no prices never triggers.
pub fn cost_says_compact(estimate: &CostEstimate, prices: &CachePrices) -> bool {
    if prices.is_free() {
        return false;
    }
    let pays = estimate.cost_of_waiting(prices) > estimate.cost_of_compacting(prices);
    let at_best_point = estimate
        .best_compaction_point(prices)
        .is_none_or(|point| estimate.context_tokens >= point);
    pays && at_best_point
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sonnet_prices() -> Prices {
        Prices {
            input: 3.0,
            output: 15.0,
            cache_read: 0.3,
            cache_write_5m: 3.75,
            cache_write_1h: 6.0,
            cache_storage: 0.0,
        }
    }

    fn sonnet() -> CachePrices {
        CachePrices::new(&sonnet_prices(), false)
    }

    fn estimate(context_tokens: u64, remaining_requests: u64) -> CostEstimate {
        CostEstimate {
            context_tokens,
            kept_tokens: 8_000,
            summary_tokens: EXPECTED_SUMMARY_TOKENS,
            remaining_requests,
            summary_mode: SummaryMode::CacheFriendly,
            growth_per_request: 0,
        }
    }

    #[test]
    fn a_long_future_makes_an_early_compaction_pay() {
        // 30k re-read 40 times at $0.30/M = $0.36; compacting: 30k read + 1.5k out + 9.5k
        // written instead of read + 9.5k read 41 times = $0.009 + $0.0225 + $0.0328 + $0.117.
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
            &CachePrices::new(&Prices::default(), false)
        ));
    }

    #[test]
    fn the_one_hour_lifetime_prices_the_rewrite_at_its_own_write() {
        let five = CachePrices::new(&sonnet_prices(), false);
        let hour = CachePrices::new(&sonnet_prices(), true);
        assert!((five.rewrite_premium() - 3.45).abs() < 1e-9);
        assert!((hour.rewrite_premium() - 5.7).abs() < 1e-9);
        let e = estimate(30_000, 10);
        assert!(e.compaction_overhead(&hour) > e.compaction_overhead(&five));
        // No cache at all: every token is input each time, a rewrite costs nothing extra.
        let uncached = CachePrices::new(
            &Prices {
                input: 1.0,
                output: 2.0,
                ..Prices::default()
            },
            false,
        );
        assert_eq!(uncached.rewrite_premium(), 0.0);
        assert_eq!(uncached.read, 1.0);
    }

    #[test]
    fn a_growing_context_compacts_at_the_best_point_not_as_soon_as_it_pays() {
        let growing = CostEstimate {
            growth_per_request: 500,
            ..estimate(20_000, 200)
        };
        // It pays (20k read 200 times against 9.5k), but the cycle that minimises the cost per
        // request is sqrt(2 × overhead × 500 / read) tokens past the 9.5k after it.
        assert!(growing.cost_of_waiting(&sonnet()) > growing.cost_of_compacting(&sonnet()));
        let point = growing.best_compaction_point(&sonnet()).unwrap();
        let overhead = growing.compaction_overhead(&sonnet());
        let cycle = (2.0 * overhead * 500.0 / 0.3e-6).sqrt();
        assert_eq!(point, 9_500 + cycle.ceil() as u64);
        assert!(point > 20_000, "{point}");
        assert!(!cost_says_compact(&growing, &sonnet()));
        // A little past it (the summary request reads the larger context, so the point moves
        // up with it a little).
        let grown = CostEstimate {
            context_tokens: point + 1_000,
            ..growing
        };
        assert!(cost_says_compact(&grown, &sonnet()));
    }

    #[test]
    fn in_a_small_window_the_best_point_lies_past_the_window_limit() {
        // A 30k window compacting at 25.9k: with 1,000 tokens a request and Opus prices, the
        // best cycle ends past it, so the cost rule never fires before the window does.
        let opus = CachePrices::new(
            &Prices {
                input: 5.0,
                output: 25.0,
                cache_read: 0.5,
                cache_write_5m: 6.25,
                cache_write_1h: 10.0,
                cache_storage: 0.0,
            },
            false,
        );
        let e = CostEstimate {
            context_tokens: 20_000,
            kept_tokens: 6_000,
            summary_tokens: EXPECTED_SUMMARY_TOKENS,
            remaining_requests: 50,
            summary_mode: SummaryMode::CacheFriendly,
            growth_per_request: 1_000,
        };
        assert!(
            e.cost_of_waiting(&opus) > e.cost_of_compacting(&opus),
            "it would pay"
        );
        assert!(e.best_compaction_point(&opus).unwrap() > 25_900);
        assert!(!cost_says_compact(&e, &opus));
    }
}
