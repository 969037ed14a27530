//! How an `auto` server's tools reach the model: declared in every request, found with the
//! provider's own tool search where the row has it, or found with `mcp_tool_search` — whichever
//! the session's prices make cheapest.
//!
//! Declared tools are paid on every request: read from the cache at the read price, and
//! written once. A server searched with `mcp_tool_search` costs a search round trip per tool
//! the model looks for: one more request that re-reads the prompt, the call's output, and the
//! found definitions, which then stay in the conversation (written once, read on every later
//! request), plus the two search tools declared instead. The provider's tool search (Anthropic
//! `defer_loading` with the tool search tool, OpenAI Responses `tool_search`) runs inside the
//! response: no extra request, but what the model sees of a deferred tool before it is found
//! stays in every request — OpenAI shows each one's name and description, Anthropic nothing
//! ([`Searchable`]), and the search call's output and the found
//! definitions are paid as with `mcp_tool_search`. A server whose tools arrive, or change,
//! once the conversation is under way costs more: where names and descriptions are seen
//! (OpenAI) they move the tools chapter and the provider rewrites what follows; on Anthropic
//! the tools are announced and withdrawn with references. R, one rewrite of a P-token prompt
//! (what `cargo xtask bench-mcp` measured on both), is added. In tokens carried per request:
//!
//! ```text
//! declared = T
//! client   = S + N × (P × read + Q × output + F × (write + read × H)) / (read × H + write)
//! provider = D + V + (N × (Q × output + F × (write + read × H)) + R) / (read × H + write)
//! R        = P × (write − read)
//! ```
//!
//! with T the server's definition tokens, D the tokens of their names and descriptions, H =
//! [`HORIZON_REQUESTS`], N = [`SEARCHES`], P = [`PROMPT_TOKENS`], Q = [`SEARCH_CALL_TOKENS`],
//! F = [`FOUND_TOOLS`] × the server's average definition, S = [`SEARCH_TOOLS_TOKENS`] and V =
//! [`PROVIDER_SEARCH_TOOL_TOKENS`]. The cheapest wins (declared on a tie); only ratios of prices
//! matter, so a model's choice follows from its price row alone.

use serde_json::Value;

use crate::catalog::ListedTool;

/// The rule in a sentence, for `strata config`.
pub const RULE: &str = "the cheapest at the model's prices over 100 requests of: declared in every request; the provider's own tool search where the row has it (defer_loading: no extra request, two found definitions kept; on OpenAI each tool's name and description still carried; tools arriving mid-chain priced as a rewrite of a 20k-token prompt); or mcp_tool_search (two search round trips, each re-reading a 20k-token prompt, two found definitions kept); decided at its first listing and kept, shown with its figures in /mcp and `strata mcp list`";

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
/// The provider's search tool declared (`{"type": "tool_search"}`, Anthropic's regex tool).
pub const PROVIDER_SEARCH_TOOL_TOKENS: f64 = 20.0;

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

/// Tokens of what OpenAI shows of a deferred tool before it is found: name and description.
pub fn searchable_tokens(tool: &ListedTool) -> f64 {
    (tool.name.len() + tool.description.len()) as f64 / 4.0
}

/// One found definition's cost over the horizon, and a request's carrying cost per token.
fn per_search(prices: &TokenPrices, average_tokens: f64, round_trip: bool) -> f64 {
    let found = FOUND_TOOLS * average_tokens;
    let prompt = if round_trip {
        PROMPT_TOKENS * prices.cache_read
    } else {
        0.0
    };
    prompt
        + SEARCH_CALL_TOKENS * prices.output
        + found * (prices.cache_write + prices.cache_read * HORIZON_REQUESTS)
}

fn carried_per_token(prices: &TokenPrices) -> f64 {
    prices.cache_read * HORIZON_REQUESTS + prices.cache_write
}

/// The definition tokens above which a server is cheaper behind `mcp_tool_search` than
/// declared, for a server whose definitions average `average_tokens`.
pub fn threshold_tokens(prices: &TokenPrices, average_tokens: f64) -> f64 {
    let carried = carried_per_token(prices);
    if carried <= 0.0 {
        return f64::INFINITY;
    }
    SEARCH_TOOLS_TOKENS + SEARCHES * per_search(prices, average_tokens, true) / carried
}

/// What the provider's tool search costs, in tokens carried per request, for a server whose
/// names and descriptions take `searchable` tokens and whose definitions average
/// `average_tokens`.
pub fn provider_search_tokens(prices: &TokenPrices, searchable: f64, average_tokens: f64) -> f64 {
    let carried = carried_per_token(prices);
    if carried <= 0.0 {
        return f64::INFINITY;
    }
    // A server whose deferred tools arrive mid-chain moves the tools chapter (OpenAI: what is
    // seen of them is in the prefix) or announces and withdraws them with references
    // (Anthropic): `cargo xtask bench-mcp` measured it at about one rewrite of the prompt on
    // both rows (anthropic-5m 0.56x naive through the provider's search against 0.48x through
    // mcp_tool_search), so both pay it.
    let rewrite = PROMPT_TOKENS * (prices.cache_write - prices.cache_read).max(0.0);
    searchable
        + PROVIDER_SEARCH_TOOL_TOKENS
        + (SEARCHES * per_search(prices, average_tokens, false) + rewrite) / carried
}

/// How an `auto` server's tools reach the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Route {
    /// Declared in every request.
    Declared,
    /// Declared with `defer_loading`, found by the provider's tool search.
    ProviderSearch,
    /// Behind `mcp_tool_search` / `mcp_tool_call`.
    ClientSearch,
}

/// The decision for one server's first listing, with the figures behind it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Decision {
    /// Not declared: reached through a search (the provider's or `mcp_tool_search`).
    pub search: bool,
    /// The route chosen.
    pub route: Route,
    /// The server's definition tokens.
    pub tokens: f64,
    /// The break-even of `mcp_tool_search` at these prices.
    pub threshold: f64,
    /// The provider's tool search in carried tokens, when the row has it.
    pub provider: Option<f64>,
}

impl Decision {
    /// One line for `/mcp` and `strata mcp list`.
    pub fn explain(&self) -> String {
        let k = |tokens: f64| format!("{:.1}k", tokens / 1000.0);
        let provider = match self.provider {
            Some(tokens) => format!(", the provider's tool search ~{}", k(tokens)),
            None => String::new(),
        };
        let figures = format!(
            "declared ~{}, mcp_tool_search ~{}{provider} tokens a request at this model's prices",
            k(self.tokens),
            k(self.threshold)
        );
        match self.route {
            Route::Declared => format!("auto: declared ({figures})"),
            Route::ProviderSearch => format!(
                "auto: declared with defer_loading, found with the provider's tool search ({figures})"
            ),
            Route::ClientSearch => {
                format!("auto: reached through mcp_tool_search ({figures})")
            }
        }
    }
}

/// What the provider's tool search shows the model of a deferred tool before it is found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Searchable {
    /// Its name and description (OpenAI Responses), the default: the dearer assumption.
    #[default]
    NameAndDescription,
    /// Nothing (Anthropic: deferred tools are not in the prefix).
    Nothing,
}

/// How an `auto` server listing `tools` is reached at `prices`; `provider_search` is what the
/// row's own tool search shows of a deferred tool, `None` where the row has none.
pub fn decide(
    tools: &[ListedTool],
    prices: &TokenPrices,
    provider_search: Option<Searchable>,
) -> Decision {
    let tokens: f64 = tools.iter().map(definition_tokens).sum();
    let average = if tools.is_empty() {
        0.0
    } else {
        tokens / tools.len() as f64
    };
    let threshold = threshold_tokens(prices, average);
    let provider = provider_search.map(|shown| {
        let searchable: f64 = match shown {
            Searchable::NameAndDescription => tools.iter().map(searchable_tokens).sum(),
            Searchable::Nothing => 0.0,
        };
        provider_search_tokens(prices, searchable, average)
    });
    let route = if tools.is_empty() {
        Route::Declared
    } else {
        let mut best = (tokens, Route::Declared);
        if let Some(cost) = provider
            && cost < best.0
        {
            best = (cost, Route::ProviderSearch);
        }
        if threshold < best.0 {
            best = (threshold, Route::ClientSearch);
        }
        best.1
    };
    Decision {
        search: route != Route::Declared,
        route,
        tokens,
        threshold,
        provider,
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
        let small = decide(&tools(4, 200), &opus(), None);
        assert!(!small.search, "{small:?}");
        let large = decide(&tools(40, 600), &opus(), None);
        assert!(large.search, "{large:?}");
        assert!(large.explain().contains("mcp_tool_search"));
        assert!(small.explain().starts_with("auto: declared ("));
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
        assert!(!decide(&tools(100, 1000), &free, Some(Searchable::Nothing)).search);
    }

    #[test]
    fn the_providers_search_wins_where_it_saves_the_round_trips() {
        // Writes at the read price (a disk cache's): a mid-chain arrival costs no rewrite, and
        // no extra request beats both other routes for forty large tools on Anthropic's search.
        let prices = TokenPrices {
            cache_read: 0.5,
            cache_write: 0.5,
            output: 25.0,
        };
        let schema_heavy: Vec<ListedTool> = (0..40)
            .map(|i| ListedTool {
                name: format!("tool_{i}"),
                description: "d".repeat(20),
                input_schema: json!({"type": "object", "properties": {
                    "query": {"type": "string", "description": "s".repeat(600)}}}),
            })
            .collect();
        let large = decide(&schema_heavy, &prices, Some(Searchable::Nothing));
        assert_eq!(large.route, Route::ProviderSearch, "{large:?}");
        assert!(large.explain().contains("provider's tool search"));
        let cost = large.provider.unwrap();
        assert!(cost < large.threshold && cost < large.tokens, "{large:?}");
        // Without it on the row, the same server goes behind mcp_tool_search.
        assert_eq!(
            decide(&schema_heavy, &prices, None).route,
            Route::ClientSearch
        );
        // At claude-opus-4-8's prices the rewrite a mid-chain arrival costs outweighs the
        // round trips: mcp_tool_search (what bench-mcp measured).
        assert_eq!(
            decide(&schema_heavy, &opus(), Some(Searchable::Nothing)).route,
            Route::ClientSearch
        );
        // A small server stays declared either way.
        assert_eq!(
            decide(&tools(4, 200), &prices, Some(Searchable::Nothing)).route,
            Route::Declared
        );
        // On OpenAI the names and descriptions stay in the prefix: tools whose description is
        // most of them cost about as much deferred as declared.
        let described: Vec<ListedTool> = (0..40)
            .map(|i| ListedTool {
                name: format!("tool_{i}"),
                description: "d".repeat(2400),
                input_schema: json!({"type": "object"}),
            })
            .collect();
        let decision = decide(&described, &prices, Some(Searchable::NameAndDescription));
        assert_eq!(decision.route, Route::ClientSearch, "{decision:?}");
    }

    #[test]
    fn the_providers_search_cost_is_what_it_carries_plus_its_searches() {
        let prices = opus();
        let (searchable, average) = (500.0, 150.0);
        let h = HORIZON_REQUESTS;
        let carried = |tokens: f64| tokens * (prices.cache_read * h + prices.cache_write);
        let expected = carried(searchable + PROVIDER_SEARCH_TOOL_TOKENS)
            + SEARCHES
                * (SEARCH_CALL_TOKENS * prices.output
                    + FOUND_TOOLS * average * (prices.cache_write + prices.cache_read * h))
            + PROMPT_TOKENS * (prices.cache_write - prices.cache_read);
        let got = carried(provider_search_tokens(&prices, searchable, average));
        assert!((got - expected).abs() < 1e-6 * expected);
        // The same searches through mcp_tool_search cost the prompt re-reads instead of the
        // rewrite.
        let client = carried(threshold_tokens(&prices, average) - SEARCH_TOOLS_TOKENS);
        let provider =
            carried(provider_search_tokens(&prices, 0.0, average) - PROVIDER_SEARCH_TOOL_TOKENS);
        let rewrite = PROMPT_TOKENS * (prices.cache_write - prices.cache_read);
        assert!(
            (client - (provider - rewrite) - SEARCHES * PROMPT_TOKENS * prices.cache_read).abs()
                < 1e-6 * client
        );
    }
}
