//! How a child starts, chosen by price: a **fork** re-reads the parent's cached prefix on every
//! request it makes; a **fresh** child writes a small prefix of its own once and re-reads that.
//! The child's own work (its tool outputs, its answers) costs the same either way, so only the
//! prefixes are compared.

use std::time::Duration;

use strata_compaction::CachePrices;
use strata_provider::{CacheRetention, CacheStyle, Capabilities, Model, UsageDialect};

/// How a child starts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum SpawnMode {
    /// From the parent's exact prefix (tools, system, conversation up to the spawning call).
    Fork,
    /// From a prompt of its own.
    Fresh,
    /// Whichever the prices say is cheaper.
    #[default]
    Auto,
}

impl SpawnMode {
    /// `fork`, `fresh` or `auto`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Fork => "fork",
            Self::Fresh => "fresh",
            Self::Auto => "auto",
        }
    }
}

impl std::fmt::Display for SpawnMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for SpawnMode {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text.trim().to_ascii_lowercase().as_str() {
            "fork" => Ok(Self::Fork),
            "fresh" => Ok(Self::Fresh),
            "auto" => Ok(Self::Auto),
            other => Err(format!("unknown spawn mode `{other}` (fork, fresh, auto)")),
        }
    }
}

/// The start chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Start {
    /// From the parent's prefix.
    Fork,
    /// From its own prompt.
    Fresh,
}

impl Start {
    /// `fork` or `fresh`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Fork => "fork",
            Self::Fresh => "fresh",
        }
    }
}

/// What the row's cache charges and how long it keeps a prefix.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CacheModel {
    /// Prices per million tokens, writes at the lifetime in use.
    pub prices: CachePrices,
    /// Whether the row caches prompts at all.
    pub caches: bool,
    /// How long an unread prefix lives; `None`: no stated lifetime (DeepSeek's disk cache
    /// keeps prefixes for hours), counted as alive.
    pub lifetime: Option<Duration>,
    /// Prefixes shorter than this are not cached.
    pub min_cacheable_tokens: u64,
}

impl CacheModel {
    /// The cache of `model` on a row with `capabilities`, at the lifetime `retention` asks for.
    pub fn for_model(
        capabilities: &Capabilities,
        model: &Model,
        retention: CacheRetention,
    ) -> Self {
        let ttl = capabilities.cache_ttl(retention);
        let caches = capabilities.cache_style != CacheStyle::None && model.prices.cache_read > 0.0;
        let stated = caches
            && capabilities.wire.usage_dialect != UsageDialect::DeepseekHitMiss
            && !capabilities.ttl_options.is_empty();
        Self {
            prices: CachePrices::new(&model.prices, ttl == strata_provider::CacheTtl::OneHour),
            caches,
            lifetime: stated.then(|| Duration::from_secs(ttl.seconds())),
            min_cacheable_tokens: u64::from(capabilities.min_cacheable_tokens),
        }
    }
}

/// What the choice is made from.
#[derive(Debug, Clone, PartialEq)]
pub struct SpawnInputs {
    /// The parent's rendered prefix up to the spawning call, in tokens (its last request's
    /// prompt: input + cache read + cache write).
    pub parent_prefix_tokens: u64,
    /// Time since the parent's last request read or wrote that prefix.
    pub parent_prefix_age: Duration,
    /// A fresh child's own prefix (its tools, system prompt and task), in tokens.
    pub fresh_prefix_tokens: u64,
    /// The head of that prefix byte-identical to the parent's (its tools and system chapters,
    /// when the child runs the parent's tools and prompt and shares its cache route), in
    /// tokens: a prefix cache serves it from what the parent wrote, so only the rest is new.
    pub fresh_shared_tokens: u64,
    /// Requests the child is expected to make.
    pub expected_requests: u64,
    /// Why the child cannot fork (another model, no parent file, …); `None`: it can.
    pub fork_blocked: Option<String>,
}

/// The choice, what each start was estimated to cost, and why.
#[derive(Debug, Clone, PartialEq)]
pub struct Decision {
    /// How the child starts.
    pub start: Start,
    /// A fork's prefix cost in dollars (`None` when it cannot fork).
    pub fork_cost: Option<f64>,
    /// A fresh child's prefix cost in dollars.
    pub fresh_cost: f64,
    /// One line saying why, for `/context`, the tool result's details and logs.
    pub reason: String,
}

const PER_TOKEN: f64 = 1e-6;

/// A fork's prefix cost: the first request reads the parent's prefix (writes it when it has
/// expired), every later one reads it again.
pub fn fork_cost(inputs: &SpawnInputs, cache: &CacheModel) -> f64 {
    let p = inputs.parent_prefix_tokens as f64;
    let n = inputs.expected_requests.max(1) as f64;
    if !cache.caches || inputs.parent_prefix_tokens < cache.min_cacheable_tokens {
        return n * p * cache.prices.input * PER_TOKEN;
    }
    let first = if warm(inputs, cache) {
        cache.prices.read
    } else {
        cache.prices.write
    };
    (p * first + (n - 1.0) * p * cache.prices.read) * PER_TOKEN
}

/// A fresh child's prefix cost: its first request reads the head it shares with the parent
/// (writes it when the parent's prefix has expired) and writes the rest; every later request
/// reads the whole prefix (all input where the prefix is too short to cache or nothing is
/// cached).
pub fn fresh_cost(inputs: &SpawnInputs, cache: &CacheModel) -> f64 {
    let f = inputs.fresh_prefix_tokens as f64;
    let n = inputs.expected_requests.max(1) as f64;
    if !cache.caches || inputs.fresh_prefix_tokens < cache.min_cacheable_tokens {
        return n * f * cache.prices.input * PER_TOKEN;
    }
    let shared = inputs.fresh_shared_tokens.min(inputs.fresh_prefix_tokens);
    let shared_read = shared >= cache.min_cacheable_tokens && warm(inputs, cache);
    let (read_first, written_first) = if shared_read {
        (shared as f64, f - shared as f64)
    } else {
        (0.0, f)
    };
    (read_first * cache.prices.read
        + written_first * cache.prices.write
        + (n - 1.0) * f * cache.prices.read)
        * PER_TOKEN
}

/// Whether the parent's prefix is still in the cache.
fn warm(inputs: &SpawnInputs, cache: &CacheModel) -> bool {
    cache
        .lifetime
        .is_none_or(|lifetime| inputs.parent_prefix_age < lifetime)
}

/// Chooses how the child starts. A forced mode is honoured unless a fork is impossible; `auto`
/// takes the cheaper estimate (a fork on a tie: it also knows everything the parent knew).
pub fn choose(mode: SpawnMode, inputs: &SpawnInputs, cache: &CacheModel) -> Decision {
    let fresh = fresh_cost(inputs, cache);
    if let Some(why) = &inputs.fork_blocked {
        let reason = match mode {
            SpawnMode::Fresh => "fresh: asked for".to_owned(),
            _ => format!("fresh: cannot fork ({why})"),
        };
        return Decision {
            start: Start::Fresh,
            fork_cost: None,
            fresh_cost: fresh,
            reason,
        };
    }
    let fork = fork_cost(inputs, cache);
    let (start, why) = match mode {
        SpawnMode::Fork => (Start::Fork, "asked for".to_owned()),
        SpawnMode::Fresh => (Start::Fresh, "asked for".to_owned()),
        SpawnMode::Auto if fork <= fresh => (Start::Fork, explain(Start::Fork, inputs, cache)),
        SpawnMode::Auto => (Start::Fresh, explain(Start::Fresh, inputs, cache)),
    };
    let (chosen, other) = match start {
        Start::Fork => (fork, fresh),
        Start::Fresh => (fresh, fork),
    };
    let other_name = match start {
        Start::Fork => "fresh",
        Start::Fresh => "fork",
    };
    Decision {
        start,
        fork_cost: Some(fork),
        fresh_cost: fresh,
        reason: format!(
            "{}: ${chosen:.4} against {other_name} ${other:.4} over ~{} requests; {why}",
            start.as_str(),
            inputs.expected_requests.max(1),
        ),
    }
}

fn explain(start: Start, inputs: &SpawnInputs, cache: &CacheModel) -> String {
    let p = group(inputs.parent_prefix_tokens);
    let f = group(inputs.fresh_prefix_tokens);
    if !cache.caches {
        return format!(
            "no prompt cache on this row: the {f}-token fresh prefix is smaller than the parent's {p}"
        );
    }
    let state = match (warm(inputs, cache), cache.lifetime) {
        (true, Some(lifetime)) => format!(
            "warm ({}s old of {}s)",
            inputs.parent_prefix_age.as_secs(),
            lifetime.as_secs()
        ),
        (true, None) => "cached with no stated lifetime".to_owned(),
        (false, _) => format!(
            "expired ({}s old): a fork would write it again",
            inputs.parent_prefix_age.as_secs()
        ),
    };
    let shared = inputs.fresh_shared_tokens.min(inputs.fresh_prefix_tokens);
    let head_read = shared >= cache.min_cacheable_tokens && warm(inputs, cache);
    let written = if head_read {
        format!(
            "writing {} new tokens of a {f}-token prefix (its {} tools and system tokens read from the parent's cache)",
            group(inputs.fresh_prefix_tokens - shared),
            group(shared)
        )
    } else {
        format!("writing a {f}-token prefix")
    };
    let own = if head_read {
        format!(
            "a {f}-token prefix of its own, {} of it read from the parent's cache,",
            group(shared)
        )
    } else {
        format!("a {f}-token prefix of its own")
    };
    match start {
        Start::Fork => format!(
            "re-reading the parent's {p}-token prefix ({state}) at ${:.3}/Mtok costs less than {written} at ${:.3}/Mtok",
            cache.prices.read, cache.prices.write
        ),
        Start::Fresh => format!(
            "{own} costs less than re-reading the parent's {p}-token prefix ({state}) on every request"
        ),
    }
}

/// `12345` as `12,345`.
fn group(value: u64) -> String {
    let digits = value.to_string();
    let mut out = String::new();
    for (index, c) in digits.chars().enumerate() {
        if index > 0 && (digits.len() - index).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use strata_provider::Catalog;

    fn cache(provider: &str, model: &str, retention: CacheRetention) -> CacheModel {
        let catalog = Catalog::builtin_shared().unwrap();
        let row = catalog.provider(provider).unwrap();
        let model = catalog.model(provider, model).unwrap();
        CacheModel::for_model(&row.capabilities(&model.id), &model, retention)
    }

    fn inputs(parent: u64, age_secs: u64, fresh: u64, requests: u64) -> SpawnInputs {
        SpawnInputs {
            parent_prefix_tokens: parent,
            parent_prefix_age: Duration::from_secs(age_secs),
            fresh_prefix_tokens: fresh,
            fresh_shared_tokens: 0,
            expected_requests: requests,
            fork_blocked: None,
        }
    }

    #[test]
    fn anthropic_5m_forks_a_short_parent_and_starts_fresh_under_a_long_one() {
        let cache = cache("anthropic", "claude-sonnet-4-5", CacheRetention::Short);
        assert_eq!(cache.lifetime, Some(Duration::from_secs(300)));
        // A short child under a modest parent: reading 8k three times beats writing 4k.
        let small = choose(SpawnMode::Auto, &inputs(8_000, 20, 4_000, 3), &cache);
        assert_eq!(small.start, Start::Fork, "{}", small.reason);
        assert!(
            small.reason.contains("8,000-token prefix"),
            "{}",
            small.reason
        );
        // A long child under a 100k parent: 10 reads of 100k cost more than one 4k write.
        let large = choose(SpawnMode::Auto, &inputs(100_000, 20, 4_000, 10), &cache);
        assert_eq!(large.start, Start::Fresh, "{}", large.reason);
        assert!(large.fork_cost.unwrap() > large.fresh_cost);
    }

    #[test]
    fn anthropic_expired_parent_prefix_is_priced_as_a_write() {
        let cache = cache("anthropic", "claude-sonnet-4-5", CacheRetention::Short);
        let warm = fork_cost(&inputs(8_000, 60, 4_000, 3), &cache);
        let cold = fork_cost(&inputs(8_000, 600, 4_000, 3), &cache);
        assert!(cold > warm);
        let decision = choose(SpawnMode::Auto, &inputs(8_000, 600, 4_000, 3), &cache);
        assert_eq!(decision.start, Start::Fresh, "{}", decision.reason);
        assert!(decision.reason.contains("expired"), "{}", decision.reason);
    }

    #[test]
    fn openai_automatic_cache_writes_at_the_input_price() {
        let cache = cache("openai", "gpt-5.2", CacheRetention::Short);
        assert!(cache.caches);
        assert_eq!(cache.prices.write, cache.prices.input);
        let small = choose(SpawnMode::Auto, &inputs(8_000, 20, 4_000, 3), &cache);
        assert_eq!(small.start, Start::Fork, "{}", small.reason);
        let large = choose(SpawnMode::Auto, &inputs(100_000, 20, 4_000, 10), &cache);
        assert_eq!(large.start, Start::Fresh, "{}", large.reason);
        // A fresh prefix under the 1,024-token minimum is all input, every request.
        let tiny = inputs(2_000, 20, 900, 4);
        assert!(
            (fresh_cost(&tiny, &cache) - 4.0 * 900.0 * cache.prices.input * PER_TOKEN).abs()
                < 1e-12
        );
    }

    #[test]
    fn deepseek_disk_cache_never_expires_in_the_estimate() {
        let cache = cache("deepseek", "deepseek-v4-pro", CacheRetention::Short);
        assert_eq!(cache.lifetime, None);
        // An hour-old prefix still reads: the fork's first request is a read.
        let hour_old = inputs(10_000, 3_600, 4_000, 2);
        let decision = choose(SpawnMode::Auto, &hour_old, &cache);
        assert_eq!(decision.start, Start::Fork, "{}", decision.reason);
        assert!(
            (fork_cost(&hour_old, &cache) - 2.0 * 10_000.0 * cache.prices.read * PER_TOKEN).abs()
                < 1e-12
        );
        // Reads at about 1% of a miss: only a very long parent under a long child tips it.
        let long = choose(SpawnMode::Auto, &inputs(200_000, 10, 4_000, 10), &cache);
        assert_eq!(long.start, Start::Fresh, "{}", long.reason);
    }

    #[test]
    fn a_fresh_child_reads_the_head_it_shares_with_the_parent() {
        // DeepSeek's reads cost about 2% of a miss: priced as all written, a 2k fresh prefix
        // looks dearer than re-reading a 6k parent six times, but its tools and system
        // chapters are the parent's and read from the parent's cache, so only its task is new.
        let deepseek = cache("deepseek", "deepseek-v4-flash", CacheRetention::Short);
        let unshared = inputs(6_400, 10, 1_820, 6);
        let shared = SpawnInputs {
            fresh_shared_tokens: 1_700,
            ..unshared.clone()
        };
        assert_eq!(
            choose(SpawnMode::Auto, &unshared, &deepseek).start,
            Start::Fork
        );
        let decision = choose(SpawnMode::Auto, &shared, &deepseek);
        assert_eq!(decision.start, Start::Fresh, "{}", decision.reason);
        assert!(
            decision
                .reason
                .contains("1,700 of it read from the parent's cache"),
            "{}",
            decision.reason
        );
        let expected = (1_700.0 * deepseek.prices.read
            + 120.0 * deepseek.prices.write
            + 5.0 * 1_820.0 * deepseek.prices.read)
            * PER_TOKEN;
        assert!((fresh_cost(&shared, &deepseek) - expected).abs() < 1e-12);
        // An expired parent prefix serves nothing: the shared head is written again.
        let anthropic = cache("anthropic", "claude-sonnet-4-5", CacheRetention::Short);
        let cold = SpawnInputs {
            parent_prefix_age: Duration::from_secs(600),
            ..shared.clone()
        };
        assert!(
            (fresh_cost(&cold, &anthropic)
                - fresh_cost(
                    &SpawnInputs {
                        fresh_shared_tokens: 0,
                        ..cold.clone()
                    },
                    &anthropic
                ))
            .abs()
                < 1e-12
        );
        assert!(fresh_cost(&shared, &anthropic) < fresh_cost(&unshared, &anthropic));
    }

    #[test]
    fn a_forced_mode_is_honoured_unless_a_fork_is_impossible() {
        let cache = cache("anthropic", "claude-sonnet-4-5", CacheRetention::Short);
        let large = inputs(100_000, 20, 4_000, 10);
        assert_eq!(choose(SpawnMode::Fork, &large, &cache).start, Start::Fork);
        let blocked = SpawnInputs {
            fork_blocked: Some("the agent runs on another model".into()),
            ..inputs(8_000, 20, 4_000, 3)
        };
        let decision = choose(SpawnMode::Fork, &blocked, &cache);
        assert_eq!(decision.start, Start::Fresh);
        assert_eq!(
            decision.reason,
            "fresh: cannot fork (the agent runs on another model)"
        );
    }

    #[test]
    fn modes_parse_and_print() {
        for mode in [SpawnMode::Fork, SpawnMode::Fresh, SpawnMode::Auto] {
            assert_eq!(mode.to_string().parse::<SpawnMode>(), Ok(mode));
        }
        assert!("clone".parse::<SpawnMode>().is_err());
        assert_eq!(group(1_234_567), "1,234,567");
    }
}
