//! Cache lifetime settings and keeping a short-lived prompt cache warm while the user is idle.
//!
//! A provider drops a cached prefix a few minutes after its last use (Anthropic's 5-minute
//! breakpoints, OpenAI's in-memory retention). A user who pauses longer than that pays the
//! whole prefix again as a write on the next prompt. Re-sending the last request with a
//! one-token answer reads the prefix instead (0.1x) and restarts its lifetime. That is worth
//! doing while it costs less than the write it averts: at most `(write − read) / read` pings
//! per idle period (11 on Anthropic's 5-minute cache, 9 on OpenAI's), after which the cache is
//! let go — the ski-rental bound, so an idle user never costs more than about twice what
//! perfect foresight would have paid.
//!
//! The ping is the last request byte for byte (tools, system, messages, breakpoints, cache
//! key, thinking settings) with only the output cap lowered; the cache covers the prompt, not
//! the cap. Its usage is recorded in the session as a Pi 1.x `usage` entry of kind
//! `cache_warm`, so the bill (`strata stats`, and Pi's totals) includes it.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use strata_provider::{
    CacheRetention, CacheStyle, CacheTtl, Capabilities, ReasoningStyle, UsageDialect,
};

/// `customType` of the `custom` entry recording one keep-warm request (defined with the
/// session's accounting, which reads it).
pub use strata_accounting::KEEP_WARM_CUSTOM_TYPE;

/// Output cap of a keep-warm request on a row without an output-free warm-up: only its prompt
/// matters. Rows with one (`Capabilities::prewarm`) ask for none
/// (`Capabilities::warm_up_max_tokens`).
pub const KEEP_WARM_MAX_TOKENS: u32 = 1;

/// `[cache]`: how long prefixes should live and whether to keep them warm while idle.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CacheSettings {
    /// Lifetime asked for at each breakpoint (`auto`, `short`, `long`).
    pub retention: CacheRetention,
    /// Re-send the last request while idle so the cache does not expire.
    pub keep_warm: bool,
    /// How long before the lifetime ends a ping is sent, in seconds.
    pub keep_warm_margin_secs: u64,
    /// Most pings per idle period; `None`: the break-even count of the row's prices.
    pub keep_warm_max_pings: Option<u32>,
}

impl Default for CacheSettings {
    fn default() -> Self {
        Self {
            retention: CacheRetention::Auto,
            keep_warm: true,
            keep_warm_margin_secs: 30,
            keep_warm_max_pings: None,
        }
    }
}

/// When to ping and how often, for one provider row and lifetime.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct KeepWarmPlan {
    /// Time from the last request (or ping) to the next ping.
    pub interval: Duration,
    /// Pings per idle period.
    pub max_pings: u32,
    /// Output tokens a ping asks for: 0 where the row warms without output (Anthropic
    /// `max_tokens: 0`, OpenAI `prompt_cache_options.prewarm`), else the fewest the API takes.
    pub output_tokens: u32,
}

impl KeepWarmPlan {
    /// What one ping of a `prompt_tokens` prompt costs at `prices`, in dollars: the prompt
    /// read from the cache plus the output it asks for (at most that: a model may stop sooner).
    pub fn ping_cost(&self, prompt_tokens: u64, prices: &strata_provider::Prices) -> f64 {
        (prompt_tokens as f64 * prices.cache_read + f64::from(self.output_tokens) * prices.output)
            / 1_000_000.0
    }
}

/// The keep-warm plan for a row under `settings`, or `None` when pinging cannot pay: keep-warm
/// is off, the cache has no lifetime worth refreshing (none, DeepSeek's disk cache, a day or
/// longer), a read costs as much as a write, or thinking budgets would change with the cap.
pub fn plan(
    capabilities: &Capabilities,
    settings: &CacheSettings,
    thinking_on: bool,
) -> Option<KeepWarmPlan> {
    if !settings.keep_warm {
        return None;
    }
    let ttl = capabilities.cache_ttl(settings.retention);
    match capabilities.cache_style {
        CacheStyle::None => return None,
        // Disk caches keep prefixes for hours to days with no stated lifetime.
        CacheStyle::AutomaticPrefix
            if capabilities.wire.usage_dialect == UsageDialect::DeepseekHitMiss =>
        {
            return None;
        }
        _ => {}
    }
    if ttl >= CacheTtl::TwentyFourHours || capabilities.ttl_options.is_empty() {
        return None;
    }
    // A lower cap lowers an Anthropic thinking budget with it, and a changed budget drops the
    // cached messages: the ping would write instead of read.
    if thinking_on && capabilities.reasoning == ReasoningStyle::AnthropicBudget {
        return None;
    }
    let read = capabilities.price_multipliers.cache_read;
    let write = capabilities.cache_write_multiplier(ttl);
    let break_even = if read > 0.0 {
        // The epsilon keeps 1.9 / 0.1 at 19, not 18.999….
        ((write - read) / read + 1e-9).floor().max(0.0) as u32
    } else {
        0
    };
    let max_pings = settings.keep_warm_max_pings.unwrap_or(break_even);
    let interval =
        Duration::from_secs(ttl.seconds().saturating_sub(settings.keep_warm_margin_secs));
    (max_pings > 0 && !interval.is_zero()).then_some(KeepWarmPlan {
        interval,
        max_pings,
        output_tokens: capabilities.warm_up_max_tokens(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use strata_provider::Catalog;

    fn row(provider: &str, model: &str) -> Capabilities {
        Catalog::builtin().unwrap().capabilities(provider, model)
    }

    #[test]
    fn five_minute_breakpoints_are_pinged_until_a_rewrite_would_have_been_cheaper() {
        let plan = plan(
            &row("anthropic", "claude-opus-4-8"),
            &CacheSettings::default(),
            true,
        )
        .unwrap();
        assert_eq!(plan.interval, Duration::from_secs(270));
        // (1.25 − 0.1) / 0.1 = 11.5 reads cost less than one write.
        assert_eq!(plan.max_pings, 11);
        let long = CacheSettings {
            retention: CacheRetention::Long,
            ..CacheSettings::default()
        };
        let plan = plan_for(&row("anthropic", "claude-opus-4-8"), &long);
        assert_eq!(plan.interval, Duration::from_secs(3570));
        assert_eq!(plan.max_pings, 19);
    }

    fn plan_for(capabilities: &Capabilities, settings: &CacheSettings) -> KeepWarmPlan {
        plan(capabilities, settings, false).unwrap()
    }

    #[test]
    fn caches_that_outlive_an_idle_user_are_left_alone() {
        let settings = CacheSettings::default();
        // gpt-5.5 keeps prefixes 24 hours; DeepSeek's disk cache has no stated lifetime.
        assert_eq!(plan(&row("openai", "gpt-5.5"), &settings, false), None);
        assert_eq!(
            plan(&row("deepseek", "deepseek-v4-flash"), &settings, false),
            None
        );
        let off = CacheSettings {
            keep_warm: false,
            ..settings
        };
        assert_eq!(
            plan(&row("anthropic", "claude-opus-4-8"), &off, false),
            None
        );
        // In-memory retention asked for explicitly: pinged, free writes make 9 the limit.
        let short = CacheSettings {
            retention: CacheRetention::Short,
            ..settings
        };
        let plan = plan_for(&row("openai", "gpt-5.4"), &short);
        assert_eq!(plan.max_pings, 9);
        assert_eq!(plan.interval, Duration::from_secs(270));
    }

    #[test]
    fn pings_ask_for_no_output_where_the_row_warms_without_any_and_say_their_price() {
        let settings = CacheSettings::default();
        let opus = plan_for(&row("anthropic", "claude-opus-4-8"), &settings);
        assert_eq!(opus.output_tokens, 0);
        let prices = strata_provider::Prices {
            input: 5.0,
            output: 25.0,
            cache_read: 0.5,
            cache_write_5m: 6.25,
            cache_write_1h: 10.0,
            cache_storage: 0.0,
        };
        // 100k tokens read at $0.50/MTok, nothing generated.
        assert!((opus.ping_cost(100_000, &prices) - 0.05).abs() < 1e-12);
        // A row documenting no output-free warm-up asks for one token.
        let without = Capabilities {
            prewarm: strata_provider::Prewarm::None,
            ..row("anthropic", "claude-opus-4-8")
        };
        let plan = plan_for(&without, &settings);
        assert_eq!(plan.output_tokens, 1);
        assert!((plan.ping_cost(100_000, &prices) - 0.050025).abs() < 1e-12);
    }

    #[test]
    fn a_thinking_budget_that_the_cap_would_change_stops_pings() {
        let budget = Capabilities {
            reasoning: ReasoningStyle::AnthropicBudget,
            ..row("anthropic", "claude-opus-4-8")
        };
        assert_eq!(plan(&budget, &CacheSettings::default(), true), None);
        assert!(plan(&budget, &CacheSettings::default(), false).is_some());
    }
}
