//! The cache minimum: a prefix shorter than the row's `min_cacheable_tokens` is never cached,
//! so every request pays all of it at the input price until the conversation grows past the
//! minimum. Where that costs more than writing the minimum once and reading it after, the
//! system chapter gets a filler block that brings the prefix (tools and system chapters) to
//! the minimum, and the system chapter's breakpoint caches it from the first request on.
//!
//! The choice is priced with the row's multipliers: over the [`EXPECTED_REQUESTS`] a task
//! takes at the least, the padded prefix costs one write and reads after it; the bare prefix
//! costs its size on every request. A prefix far under the minimum (most of it would be
//! filler) stays as it is. The chapters it is computed from do not change within a chain
//! under strata's policy (changes are patches in chapter 3), so the filler does not either.

use strata_provider::{CacheStyle, CacheTtl, Capabilities, SystemBlock, ToolDefinition};

use crate::render::digest;

/// Section name of the filler block.
pub const CACHE_FLOOR_SECTION: &str = "cache_floor";

/// Requests a chain sends at the least when the model calls a tool (the call, then the
/// answer after its result): the horizon over which the filler must pay for itself.
pub const EXPECTED_REQUESTS: u64 = 2;

/// The filler aims this far above the minimum by the estimate (bytes / 4): the estimate
/// overcounts text of 5 bytes a token by a quarter, which a fifth more tokens makes up for.
const MARGIN_PERCENT: u64 = 20;

/// The filler's opening line, so that the model reads it as nothing.
const FLOOR_HEADER: &str = "The rest of this block only brings the prompt to the provider's cache minimum so that it can be cached; it says nothing.\n";

/// One filler word: 4 bytes, one token (o200k, and what the estimate counts).
const FILLER_WORD: &str = " pad";

/// What the render did about the cache minimum.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Floor {
    /// The prefix reaches the minimum (or the row caches nothing): nothing to do.
    Reached,
    /// The prefix is under the minimum and filler would cost more than it saves.
    Below {
        /// The prefix's estimated tokens.
        prefix: u64,
        /// The row's minimum.
        minimum: u64,
    },
    /// Filler of `tokens` brings the prefix to the minimum.
    Padded {
        /// The prefix's estimated tokens before the filler.
        prefix: u64,
        /// The filler's estimated tokens.
        tokens: u64,
        /// The row's minimum.
        minimum: u64,
    },
}

/// Tokens of `lines` serialized as the chapters' canonical lines, estimated at 4 bytes each.
fn estimate<T: serde::Serialize>(lines: &[T]) -> u64 {
    let mut bytes = Vec::new();
    for line in lines {
        digest::write_line(&mut bytes, line);
    }
    (bytes.len() as u64).div_ceil(4)
}

/// Decides the filler for a prefix of `tools` and `system` on a row with `capabilities`,
/// breakpoints asking for `ttl`.
pub(crate) fn plan(
    tools: &[ToolDefinition],
    system: &[SystemBlock],
    capabilities: &Capabilities,
    ttl: CacheTtl,
) -> Floor {
    let minimum = u64::from(capabilities.min_cacheable_tokens);
    if minimum == 0 || capabilities.cache_style == CacheStyle::None {
        return Floor::Reached;
    }
    let prefix = estimate(tools) + estimate(system);
    if prefix >= minimum {
        return Floor::Reached;
    }
    let target = minimum + minimum * MARGIN_PERCENT / 100;
    let prices = &capabilities.price_multipliers;
    let write = match ttl {
        CacheTtl::OneHour => prices.cache_write_1h,
        _ => prices.cache_write_5m,
    };
    // In units of one uncached input token, over the expected requests.
    let padded =
        write * target as f64 + prices.cache_read * ((EXPECTED_REQUESTS - 1) * target) as f64;
    let bare = (EXPECTED_REQUESTS * prefix) as f64;
    if padded < bare {
        Floor::Padded {
            prefix,
            tokens: target - prefix,
            minimum,
        }
    } else {
        Floor::Below { prefix, minimum }
    }
}

/// The filler block of about `tokens` tokens.
pub(crate) fn block(tokens: u64) -> SystemBlock {
    // The header and the line's JSON framing (`{"section":…,"text":…}`) count too.
    let header = estimate(&[SystemBlock::section(CACHE_FLOOR_SECTION, FLOOR_HEADER)]);
    let words = tokens.saturating_sub(header).max(1);
    let mut text = String::with_capacity(FLOOR_HEADER.len() + words as usize * FILLER_WORD.len());
    text.push_str(FLOOR_HEADER);
    for _ in 0..words {
        text.push_str(FILLER_WORD);
    }
    SystemBlock::section(CACHE_FLOOR_SECTION, text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use strata_provider::PriceMultipliers;

    fn anthropic(minimum: u32) -> Capabilities {
        Capabilities {
            cache_style: CacheStyle::ExplicitBreakpoints,
            max_breakpoints: 4,
            min_cacheable_tokens: minimum,
            price_multipliers: PriceMultipliers {
                cache_read: 0.1,
                cache_write_5m: 1.25,
                cache_write_1h: 2.0,
            },
            ..Capabilities::default()
        }
    }

    fn system_of(tokens: u64) -> Vec<SystemBlock> {
        // `{"text":"…"}\n` is 12 bytes of framing.
        vec![SystemBlock::text("x".repeat((tokens * 4 - 12) as usize))]
    }

    #[test]
    fn a_prefix_near_the_minimum_is_padded_past_it_and_a_small_one_is_not() {
        let caps = anthropic(1024);
        let near = system_of(840);
        let Floor::Padded { tokens, .. } = plan(&[], &near, &caps, CacheTtl::FiveMinutes) else {
            panic!("840 of 1024 tokens: writing the minimum once is cheaper than 840 twice");
        };
        let padded = [near[0].clone(), block(tokens)];
        assert!(
            estimate(&padded) >= 1024 + 1024 / 5,
            "{}",
            estimate(&padded)
        );
        assert!(estimate(&padded) <= 1024 + 1024 / 5 + 2);
        // At the 1h write price the same prefix does not pay back in two requests.
        assert_eq!(
            plan(&[], &near, &caps, CacheTtl::OneHour),
            Floor::Below {
                prefix: 840,
                minimum: 1024
            }
        );
        assert_eq!(
            plan(&[], &system_of(300), &caps, CacheTtl::FiveMinutes),
            Floor::Below {
                prefix: 300,
                minimum: 1024
            }
        );
        assert_eq!(
            plan(&[], &system_of(1100), &caps, CacheTtl::FiveMinutes),
            Floor::Reached
        );
        assert_eq!(
            plan(&[], &near, &Capabilities::default(), CacheTtl::FiveMinutes),
            Floor::Reached,
            "a row that caches nothing"
        );
    }
}
