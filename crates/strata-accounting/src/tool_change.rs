//! What a change of the tool set or the model costs the next request, priced from the row's
//! capabilities and the rendered chapters' sizes: one estimate, which the TUI's `/tools`,
//! `/model` and `/mcp` show before the user commits.

use strata_provider::Prices;

/// `1234` → `1.2k`, `45678` → `46k`, `1234567` → `1.2M`.
pub fn tokens(count: u64) -> String {
    match count {
        0..1_000 => count.to_string(),
        1_000..10_000 => format!("{:.1}k", count as f64 / 1e3),
        10_000..1_000_000 => format!("{}k", (count as f64 / 1e3).round() as u64),
        _ => format!("{:.1}M", count as f64 / 1e6),
    }
}

/// Dollars with enough digits to see small amounts.
pub fn dollars(amount: f64) -> String {
    if amount < 0.01 {
        format!("${amount:.4}")
    } else if amount < 10.0 {
        format!("${amount:.3}")
    } else {
        format!("${amount:.2}")
    }
}

/// What the provider can do with a tool change mid-conversation, and its prices.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCostBasis {
    /// `role: system` messages honoured mid-conversation.
    pub mid_conversation_system: bool,
    /// Without them, the change is said as a reminder with the next user message (the
    /// prefix stays) rather than folded into the system chapter.
    pub system_reminders: bool,
    /// Tools can be added without rewriting the tools chapter.
    pub tool_addition: bool,
    /// Tools can be declared deferred (outside the cached prefix).
    pub deferred_tools: bool,
    /// The model's prices.
    pub prices: Prices,
    /// Estimated tokens of the tools, system and messages chapters now.
    pub chapter_tokens: [u64; 3],
}

/// What a tool change costs the next request.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ToolChangeCost {
    /// Nothing changes.
    Nothing,
    /// The tools array stays; one system message (or reminder) is appended.
    Appended {
        /// Tokens of that message.
        tokens: u64,
        /// Their price at the cache-write rate.
        dollars: f64,
        /// Said as a reminder with the next user message, not as a system message.
        reminder: bool,
    },
    /// The prefix is rewritten from the tools chapter on.
    Rewritten {
        /// Tokens written again.
        tokens: u64,
        /// Their price at the cache-write rate.
        dollars: f64,
        /// The provider has no mid-conversation system messages (patches fold into chapter 2).
        folded: bool,
    },
}

impl ToolChangeCost {
    /// One sentence for the user.
    pub fn describe(&self) -> String {
        match self {
            Self::Nothing => "no change".into(),
            Self::Appended {
                tokens: t,
                dollars: d,
                reminder,
            } => format!(
                "the tools array stays; {} (≈{} tokens, ≈{})",
                if *reminder {
                    "a reminder goes with the next message"
                } else {
                    "one system message is appended"
                },
                tokens(*t),
                dollars(*d)
            ),
            Self::Rewritten {
                tokens: t,
                dollars: d,
                folded,
            } => {
                let why = if *folded {
                    "this provider has no mid-conversation system messages"
                } else {
                    "this provider cannot add tools without changing the tools array"
                };
                format!(
                    "{why}: the prompt is rewritten from the tools chapter on (≈{} tokens at the cache-write price, ≈{})",
                    tokens(*t),
                    dollars(*d)
                )
            }
        }
    }
}

/// Dollars for writing `tokens` of prompt again at `prices`' cache-write rate (the input
/// rate where the row has no cache-write price).
pub fn write_cost(prices: &Prices, tokens: u64) -> f64 {
    let rate = if prices.cache_write_5m > 0.0 {
        prices.cache_write_5m
    } else {
        prices.input
    };
    tokens as f64 * rate / 1e6
}

/// What switching the model does to the cache: nothing another model cached can be read, so
/// the next request writes the whole prompt (`chapter_tokens`) again at the new model's
/// prices. `requested`: a request was made in this session (before it nothing is cached).
pub fn switch_note(prices: &Prices, chapter_tokens: [u64; 3], requested: bool) -> String {
    if !requested {
        return "nothing is cached yet, so the switch costs nothing extra".to_owned();
    }
    let tokens: u64 = chapter_tokens.iter().sum();
    format!(
        "discards the cache: the next request writes the whole prompt again (≈{} tokens, ≈{} at its cache-write price)",
        self::tokens(tokens),
        dollars(write_cost(prices, tokens))
    )
}

/// Estimates the next request's extra cost for adding tools (with their definitions'
/// estimated tokens) and removing tools (by name).
pub fn tool_change_cost(
    basis: &ToolCostBasis,
    added: &[(String, u64)],
    removed: &[String],
) -> ToolChangeCost {
    if added.is_empty() && removed.is_empty() {
        return ToolChangeCost::Nothing;
    }
    let price = |tokens: u64| write_cost(&basis.prices, tokens);
    let added_tokens: u64 = added.iter().map(|(_, tokens)| tokens).sum();
    let [tools, system, messages] = basis.chapter_tokens;
    if !basis.mid_conversation_system && !basis.system_reminders {
        let tokens = tools + system + messages + added_tokens;
        return ToolChangeCost::Rewritten {
            tokens,
            dollars: price(tokens),
            folded: true,
        };
    }
    let deferrable = basis.deferred_tools && basis.tool_addition;
    if !added.is_empty() && !deferrable {
        // The new definitions join the tools chapter: everything after its old end is new.
        let tokens = added_tokens + system + messages;
        return ToolChangeCost::Rewritten {
            tokens,
            dollars: price(tokens),
            folded: false,
        };
    }
    // A short framing line, each removed name, and each added definition.
    let tokens = 16 + 8 * removed.len() as u64 + added_tokens;
    ToolChangeCost::Appended {
        tokens,
        dollars: price(tokens),
        reminder: !basis.mid_conversation_system,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn basis(mid: bool, addition: bool) -> ToolCostBasis {
        ToolCostBasis {
            mid_conversation_system: mid,
            system_reminders: false,
            tool_addition: addition,
            deferred_tools: addition,
            prices: Prices {
                input: 3.0,
                output: 15.0,
                cache_read: 0.3,
                cache_write_5m: 3.75,
                cache_write_1h: 6.0,
                cache_storage: 0.0,
            },
            chapter_tokens: [1_000, 2_000, 7_000],
        }
    }

    #[test]
    fn token_counts_are_short() {
        assert_eq!(tokens(999), "999");
        assert_eq!(tokens(1_234), "1.2k");
        assert_eq!(tokens(45_678), "46k");
        assert_eq!(tokens(1_234_567), "1.2M");
        assert_eq!(dollars(0.00123), "$0.0012");
        assert_eq!(dollars(1.5), "$1.500");
    }

    #[test]
    fn removing_a_tool_appends_a_message_where_the_provider_allows_it() {
        let cost = tool_change_cost(&basis(true, true), &[], &["bash".into()]);
        assert_eq!(
            cost,
            ToolChangeCost::Appended {
                tokens: 24,
                dollars: 24.0 * 3.75 / 1e6,
                reminder: false,
            }
        );
    }

    #[test]
    fn a_reminder_row_keeps_the_prefix_and_says_the_change_with_the_next_message() {
        let reminders = ToolCostBasis {
            system_reminders: true,
            ..basis(false, false)
        };
        let cost = tool_change_cost(&reminders, &[], &["bash".into()]);
        assert_eq!(
            cost,
            ToolChangeCost::Appended {
                tokens: 24,
                dollars: 24.0 * 3.75 / 1e6,
                reminder: true,
            }
        );
        assert!(
            cost.describe()
                .contains("a reminder goes with the next message")
        );
        // A new definition still joins the tools array.
        let added = tool_change_cost(&reminders, &[("grep".into(), 300)], &[]);
        assert!(matches!(
            added,
            ToolChangeCost::Rewritten { folded: false, .. }
        ));
    }

    #[test]
    fn without_mid_conversation_system_the_whole_prefix_is_rewritten() {
        let cost = tool_change_cost(&basis(false, false), &[("grep".into(), 300)], &[]);
        assert_eq!(
            cost,
            ToolChangeCost::Rewritten {
                tokens: 10_300,
                dollars: 10_300.0 * 3.75 / 1e6,
                folded: true
            }
        );
        assert!(cost.describe().contains("rewritten from the tools chapter"));
    }

    #[test]
    fn adding_a_tool_without_deferral_rewrites_after_the_tools_chapter() {
        let cost = tool_change_cost(&basis(true, false), &[("grep".into(), 300)], &[]);
        assert_eq!(
            cost,
            ToolChangeCost::Rewritten {
                tokens: 9_300,
                dollars: 9_300.0 * 3.75 / 1e6,
                folded: false
            }
        );
    }
}
