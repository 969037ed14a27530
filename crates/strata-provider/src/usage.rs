//! Normalized token usage, model prices and the cost they add up to.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Token counts of one response, normalized across providers.
///
/// `input` is the *uncached* input only: the total prompt is
/// `input + cache_read + cache_write_5m + cache_write_1h`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Usage {
    /// Input tokens neither read from nor written to the cache.
    pub input: u64,
    /// Output tokens, reasoning included.
    pub output: u64,
    /// Input tokens read from the prompt cache.
    pub cache_read: u64,
    /// Input tokens written to the cache with a 5-minute (or provider-default) lifetime.
    pub cache_write_5m: u64,
    /// Input tokens written to the cache with a 1-hour lifetime.
    pub cache_write_1h: u64,
    /// Explicit-cache storage paid for, in token-seconds (Gemini `cachedContents`: the cache's
    /// tokens times the lifetime asked at creation). Not prompt tokens: priced per token-hour.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cache_storage: u64,
    /// Tokens of explicit caches created for this request by a request of their own (Gemini
    /// `cachedContents.create`), billed at the input price. Not prompt tokens: this request
    /// reads them (`cache_read`), so counting them in the prompt would count them twice.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cache_create: u64,
}

fn is_zero(v: &u64) -> bool {
    *v == 0
}

fn is_zero_f64(v: &f64) -> bool {
    *v == 0.0
}

impl Usage {
    /// All cache writes, whatever their lifetime.
    pub fn cache_write(&self) -> u64 {
        self.cache_write_5m + self.cache_write_1h
    }

    /// The whole prompt: uncached, read and written input tokens.
    pub fn prompt_tokens(&self) -> u64 {
        self.input + self.cache_read + self.cache_write()
    }

    /// Prompt plus output tokens.
    pub fn total_tokens(&self) -> u64 {
        self.prompt_tokens() + self.output
    }

    /// Share of the prompt read from the cache, in `0.0..=1.0` (0 for an empty prompt).
    pub fn cache_hit_rate(&self) -> f64 {
        let prompt = self.prompt_tokens();
        if prompt == 0 {
            0.0
        } else {
            self.cache_read as f64 / prompt as f64
        }
    }

    /// What these tokens cost at `prices`.
    pub fn cost(&self, prices: &Prices) -> Cost {
        let per_token = |tokens: u64, per_mtok: f64| tokens as f64 * per_mtok / 1_000_000.0;
        Cost {
            input: per_token(self.input, prices.input),
            output: per_token(self.output, prices.output),
            cache_read: per_token(self.cache_read, prices.cache_read),
            cache_write_5m: per_token(self.cache_write_5m, prices.cache_write_5m),
            cache_write_1h: per_token(self.cache_write_1h, prices.cache_write_1h),
            explicit_cache: per_token(self.cache_create, prices.input)
                + per_token(self.cache_storage, prices.cache_storage) / 3600.0,
        }
    }
}

impl std::ops::Add for Usage {
    type Output = Usage;

    fn add(self, rhs: Usage) -> Usage {
        Usage {
            input: self.input + rhs.input,
            output: self.output + rhs.output,
            cache_read: self.cache_read + rhs.cache_read,
            cache_write_5m: self.cache_write_5m + rhs.cache_write_5m,
            cache_write_1h: self.cache_write_1h + rhs.cache_write_1h,
            cache_storage: self.cache_storage + rhs.cache_storage,
            cache_create: self.cache_create + rhs.cache_create,
        }
    }
}

impl std::ops::AddAssign for Usage {
    fn add_assign(&mut self, rhs: Usage) {
        *self = *self + rhs;
    }
}

/// A model's prices in USD per million tokens, one per usage bucket.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Prices {
    /// Uncached input.
    pub input: f64,
    /// Output (reasoning included).
    pub output: f64,
    /// Input read from the cache.
    pub cache_read: f64,
    /// Input written to the cache with a 5-minute lifetime.
    pub cache_write_5m: f64,
    /// Input written to the cache with a 1-hour lifetime.
    pub cache_write_1h: f64,
    /// Explicit-cache storage, USD per million tokens per hour (0 where the row has none).
    #[serde(default, skip_serializing_if = "is_zero_f64")]
    pub cache_storage: f64,
}

impl Prices {
    /// Prices derived from base rates and the provider's cache multipliers.
    pub fn from_multipliers(input: f64, output: f64, multipliers: &PriceMultipliers) -> Self {
        Self {
            input,
            output,
            cache_read: input * multipliers.cache_read,
            cache_write_5m: input * multipliers.cache_write_5m,
            cache_write_1h: input * multipliers.cache_write_1h,
            cache_storage: 0.0,
        }
    }
}

/// Cache prices as multiples of the uncached input price.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PriceMultipliers {
    /// Cache read price ÷ input price.
    pub cache_read: f64,
    /// 5-minute cache write price ÷ input price.
    pub cache_write_5m: f64,
    /// 1-hour cache write price ÷ input price.
    pub cache_write_1h: f64,
}

impl Default for PriceMultipliers {
    /// No discount and no premium: every input token at the input price.
    fn default() -> Self {
        Self {
            cache_read: 1.0,
            cache_write_5m: 1.0,
            cache_write_1h: 1.0,
        }
    }
}

/// Cost in USD, one figure per usage bucket.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Cost {
    /// Uncached input.
    pub input: f64,
    /// Output.
    pub output: f64,
    /// Cache reads.
    pub cache_read: f64,
    /// 5-minute cache writes.
    pub cache_write_5m: f64,
    /// 1-hour cache writes.
    pub cache_write_1h: f64,
    /// Explicit caches outside the prompt: their create requests and their storage.
    #[serde(default, skip_serializing_if = "is_zero_f64")]
    pub explicit_cache: f64,
}

impl Cost {
    /// All cache writes.
    pub fn cache_write(&self) -> f64 {
        self.cache_write_5m + self.cache_write_1h
    }

    /// The sum of every bucket.
    pub fn total(&self) -> f64 {
        self.input + self.output + self.cache_read + self.cache_write() + self.explicit_cache
    }
}

impl std::ops::Add for Cost {
    type Output = Cost;

    fn add(self, rhs: Cost) -> Cost {
        Cost {
            input: self.input + rhs.input,
            output: self.output + rhs.output,
            cache_read: self.cache_read + rhs.cache_read,
            cache_write_5m: self.cache_write_5m + rhs.cache_write_5m,
            cache_write_1h: self.cache_write_1h + rhs.cache_write_1h,
            explicit_cache: self.explicit_cache + rhs.explicit_cache,
        }
    }
}

impl std::ops::AddAssign for Cost {
    fn add_assign(&mut self, rhs: Cost) {
        *self = *self + rhs;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-12
    }

    /// Claude Opus 4.x prices from Anthropic's pricing page (USD/MTok).
    fn opus() -> Prices {
        Prices {
            input: 5.0,
            output: 25.0,
            cache_read: 0.5,
            cache_write_5m: 6.25,
            cache_write_1h: 10.0,
            cache_storage: 0.0,
        }
    }

    #[test]
    fn cost_prices_each_bucket_separately() {
        let usage = Usage {
            input: 1_000,
            output: 2_000,
            cache_read: 100_000,
            cache_write_5m: 4_000,
            cache_write_1h: 3_000,
            cache_storage: 0,
            cache_create: 0,
        };
        let cost = usage.cost(&opus());
        assert!(close(cost.input, 0.005));
        assert!(close(cost.output, 0.05));
        assert!(close(cost.cache_read, 0.05));
        assert!(close(cost.cache_write_5m, 0.025));
        assert!(close(cost.cache_write_1h, 0.03));
        assert!(close(cost.cache_write(), 0.055));
        assert!(close(cost.total(), 0.16));
    }

    #[test]
    fn one_hour_writes_cost_more_than_five_minute_writes() {
        let five = Usage {
            cache_write_5m: 1_000_000,
            ..Usage::default()
        };
        let hour = Usage {
            cache_write_1h: 1_000_000,
            ..Usage::default()
        };
        assert!(close(five.cost(&opus()).total(), 6.25));
        assert!(close(hour.cost(&opus()).total(), 10.0));
    }

    #[test]
    fn usage_totals_and_hit_rate() {
        let usage = Usage {
            input: 10,
            output: 5,
            cache_read: 80,
            cache_write_5m: 6,
            cache_write_1h: 4,
            cache_storage: 0,
            cache_create: 0,
        };
        assert_eq!(usage.prompt_tokens(), 100);
        assert_eq!(usage.total_tokens(), 105);
        assert!(close(usage.cache_hit_rate(), 0.8));
        assert!(close(Usage::default().cache_hit_rate(), 0.0));
        let mut sum = usage;
        sum += usage;
        assert_eq!(sum.cache_read, 160);
    }

    #[test]
    fn explicit_caches_are_priced_outside_the_prompt_and_counted_in_the_total() {
        // 10,000 tokens created, then kept for 30 minutes at $4.50 per million token-hours.
        let usage = Usage {
            cache_create: 10_000,
            cache_storage: 10_000 * 1_800,
            ..Usage::default()
        };
        let prices = Prices {
            input: 1.25,
            cache_write_5m: 9.0,
            cache_storage: 4.5,
            ..Prices::default()
        };
        let cost = usage.cost(&prices);
        // The create at the input price (not the write price), the storage per token-hour.
        assert!(close(cost.explicit_cache, 0.0125 + 0.0225), "{cost:?}");
        assert!(close(cost.total(), 0.0125 + 0.0225));
        assert_eq!(
            usage.prompt_tokens(),
            0,
            "a create and storage are not prompt tokens"
        );
    }

    #[test]
    fn prices_from_multipliers() {
        let m = PriceMultipliers {
            cache_read: 0.1,
            cache_write_5m: 1.25,
            cache_write_1h: 2.0,
        };
        let p = Prices::from_multipliers(3.0, 15.0, &m);
        assert!(close(p.cache_read, 0.3));
        assert!(close(p.cache_write_5m, 3.75));
        assert!(close(p.cache_write_1h, 6.0));
    }
}
