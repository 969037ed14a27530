//! How an `auto` server's tools reach the model: declared in every request, or found with
//! `mcp_tool_search` when the model needs them — whichever the session's prices make cheaper.
//!
//! Declared tools are paid on every request: read from the cache at the read price, and
//! written once. A searched server costs a search round trip per tool the model looks for: one
//! more request that re-reads the prompt, the call's output, and the found definitions, which
//! then stay in the conversation (written once, read on every later request), plus the two
//! search tools declared instead. The server is searched when carrying its definitions costs
//! more than that over a working session:
//!
//! ```text
//! carried  = T × (read × H + write)
//! searched = S × (read × H + write)
//!          + N × (P × read + Q × output + F × (write + read × H))
//! search when carried > searched, i.e. T > S + N × (P × read + Q × output + F × (write + read × H)) / (read × H + write)
//! ```
//!
//! with T the server's definition tokens, H = [`HORIZON_REQUESTS`], N = [`SEARCHES`], P =
//! [`PROMPT_TOKENS`], Q = [`SEARCH_CALL_TOKENS`], F = [`FOUND_TOOLS`] × the server's average
//! definition and S = [`SEARCH_TOOLS_TOKENS`]. Only ratios of prices matter, so a model's
//! threshold follows from its price row alone.

use serde_json::Value;

use crate::catalog::ListedTool;

/// The rule in a sentence, for `strata config`.
pub const RULE: &str = "declared, or reached through mcp_tool_search when carrying its definitions in every request (100 requests) costs more at the model's prices than two search round trips (each re-reads a 20k-token prompt and keeps two found definitions); decided at its first listing and kept, shown with its figures in /mcp and `strata mcp list`";

/// Requests a declared tool is carried for: a working session.
pub const HORIZON_REQUESTS: f64 = 100.0;
/// Search round trips the model makes per searched server (each finds the tool it needs).
pub const SEARCHES: f64 = 2.0;
/// Prompt tokens a search round trip re-reads (a session well under way).
pub const PROMPT_TOKENS: f64 = 20_000.0;
/// Output tokens of one `mcp_tool_search` call.
pub const SEARCH_CALL_TOKENS: f64 = 60.0;
/// Definitions one search brings into the conversation (the one wanted and a near match).
pub const FOUND_TOOLS: f64 = 2.0;
/// `mcp_tool_search` and `mcp_tool_call` declared.
pub const SEARCH_TOOLS_TOKENS: f64 = 250.0;

/// Prices per million tokens of the session's model (any unit: only ratios matter).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TokenPrices {
    /// Input read from the cache.
    pub cache_read: f64,
    /// Input written to the cache (uncached input where the provider does not charge writes).
    pub cache_write: f64,
    /// Output.
    pub output: f64,
}

impl Default for TokenPrices {
    /// The common ratios when the model's prices are unknown: reads at 0.1× input, writes at
    /// 1.25×, output at 5× (Anthropic's).
    fn default() -> Self {
        Self {
            cache_read: 0.1,
            cache_write: 1.25,
            output: 5.0,
        }
    }
}

/// Tokens of a definition, estimated at four bytes a token (as strata's own estimates).
pub fn definition_tokens(tool: &ListedTool) -> f64 {
    let bytes = tool.name.len() + tool.description.len() + schema_bytes(&tool.input_schema);
    bytes as f64 / 4.0
}

fn schema_bytes(schema: &Value) -> usize {
    match schema {
        Value::Null => 0,
        other => other.to_string().len(),
    }
}

/// The definition tokens above which a server is cheaper searched than declared, for a server
/// whose definitions average `average_tokens`.
pub fn threshold_tokens(prices: &TokenPrices, average_tokens: f64) -> f64 {
    let carried_per_token = prices.cache_read * HORIZON_REQUESTS + prices.cache_write;
    if carried_per_token <= 0.0 {
        return f64::INFINITY;
    }
    let found = FOUND_TOOLS * average_tokens;
    let round_trip = PROMPT_TOKENS * prices.cache_read
        + SEARCH_CALL_TOKENS * prices.output
        + found * (prices.cache_write + prices.cache_read * HORIZON_REQUESTS);
    SEARCH_TOOLS_TOKENS + SEARCHES * round_trip / carried_per_token
}

/// The decision for one server's first listing, with the figures behind it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Decision {
    /// Reach the tools through search.
    pub search: bool,
    /// The server's definition tokens.
    pub tokens: f64,
    /// The break-even at these prices.
    pub threshold: f64,
}

impl Decision {
    /// One line for `/mcp` and `strata mcp list`.
    pub fn explain(&self) -> String {
        let k = |tokens: f64| format!("{:.1}k", tokens / 1000.0);
        if self.search {
            format!(
                "auto: its tools (~{} tokens) cost more carried in every request than searched (break-even ~{} tokens at this model's prices), so they are reached through mcp_tool_search",
                k(self.tokens),
                k(self.threshold)
            )
        } else {
            format!(
                "auto: its tools (~{} tokens) cost less carried in every request than searched (break-even ~{} tokens at this model's prices), so they are declared",
                k(self.tokens),
                k(self.threshold)
            )
        }
    }
}

/// Whether an `auto` server listing `tools` is searched at `prices`.
pub fn decide(tools: &[ListedTool], prices: &TokenPrices) -> Decision {
    let tokens: f64 = tools.iter().map(definition_tokens).sum();
    let average = if tools.is_empty() {
        0.0
    } else {
        tokens / tools.len() as f64
    };
    let threshold = threshold_tokens(prices, average);
    Decision {
        search: !tools.is_empty() && tokens > threshold,
        tokens,
        threshold,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tools(count: usize, description_bytes: usize) -> Vec<ListedTool> {
        (0..count)
            .map(|i| ListedTool {
                name: format!("tool_{i}"),
                description: "d".repeat(description_bytes),
                input_schema: json!({"type": "object", "properties": {}}),
            })
            .collect()
    }

    fn opus() -> TokenPrices {
        // claude-opus-4-8 per million tokens: reads 0.5, 5-minute writes 6.25, output 25.
        TokenPrices {
            cache_read: 0.5,
            cache_write: 6.25,
            output: 25.0,
        }
    }

    #[test]
    fn a_small_server_is_declared_and_a_large_one_searched() {
        let small = decide(&tools(4, 200), &opus());
        assert!(!small.search, "{small:?}");
        let large = decide(&tools(40, 600), &opus());
        assert!(large.search, "{large:?}");
        assert!(large.explain().contains("mcp_tool_search"));
        assert!(small.explain().contains("declared"));
    }

    #[test]
    fn the_threshold_is_the_break_even_of_the_two_costs() {
        let prices = opus();
        let average = 150.0;
        let t = threshold_tokens(&prices, average);
        let h = HORIZON_REQUESTS;
        let carried = |tokens: f64| tokens * (prices.cache_read * h + prices.cache_write);
        let searched = carried(SEARCH_TOOLS_TOKENS)
            + SEARCHES
                * (PROMPT_TOKENS * prices.cache_read
                    + SEARCH_CALL_TOKENS * prices.output
                    + FOUND_TOOLS * average * (prices.cache_write + prices.cache_read * h));
        assert!((carried(t) - searched).abs() < 1e-6 * searched);
    }

    #[test]
    fn only_price_ratios_matter_and_dearer_reads_lower_the_threshold() {
        let prices = opus();
        let scaled = TokenPrices {
            cache_read: prices.cache_read * 3.0,
            cache_write: prices.cache_write * 3.0,
            output: prices.output * 3.0,
        };
        let a = threshold_tokens(&prices, 150.0);
        assert!((a - threshold_tokens(&scaled, 150.0)).abs() < 1e-9);
        // Reads dearer against output: carrying costs more, searching sooner pays.
        let dear_reads = TokenPrices {
            cache_read: prices.cache_read * 4.0,
            ..prices
        };
        assert!(threshold_tokens(&dear_reads, 150.0) < a);
        // A model whose writes are free and reads nothing never pays for carrying.
        let free = TokenPrices {
            cache_read: 0.0,
            cache_write: 0.0,
            output: 1.0,
        };
        assert!(!decide(&tools(100, 1000), &free).search);
    }
}
