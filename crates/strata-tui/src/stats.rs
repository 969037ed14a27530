//! What the footer counts: the last request's tokens, the session's cache hit rate and cost,
//! and whether the last request broke the cache and why (the accounting's [`BreakCause`], as
//! `strata stats` and the export say it). Also the estimate of what a tool-set change will
//! cost on the current provider.

use strata_accounting::BreakCause;
use strata_context::render::{Chapter, Divergence};
use strata_provider::{Cost, Prices, Usage};

/// Token and cost counters behind the footer.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Stats {
    /// The last request's tokens.
    pub last: Option<Usage>,
    /// The last request's cost in dollars.
    pub last_cost: f64,
    /// Why the last request broke the cache (`None`: it kept the cached prefix).
    pub cache_break: Option<BreakCause>,
    /// Prompt tokens over the session (uncached + read + written).
    pub prompt_tokens: u64,
    /// Cache-read tokens over the session.
    pub cache_read: u64,
    /// Dollars over the session, summaries included.
    pub cost: f64,
    /// Dollars the ended child agents spent (results' `details.subagent.usage.cost`; a
    /// background one's, read from its file), in their own files and not in [`Self::cost`].
    pub children_cost: f64,
    /// Requests counted.
    pub requests: usize,
    /// Of those, keep-warm pings sent while idle.
    pub pings: usize,
    /// The divergence reported when the request in flight started.
    pending: Option<Divergence>,
    /// The context's size estimated from its chapters after a compaction, until the next
    /// request reports the real one (the last request's usage describes the old context).
    compacted_context: Option<u64>,
    /// A compaction ended; the next status carries the new context's chapters.
    compacted: bool,
    /// The model changed since the last request: `provider/model` before and after.
    model_switched: Option<(String, String)>,
    /// A compaction wrote this entry since the last request.
    compacted_at: Option<String>,
    /// The tool set changed since the last request.
    tools_changed: bool,
}

impl Stats {
    /// A request is about to be sent; `divergence` says where it departs from the previous.
    pub fn request_started(&mut self, divergence: Option<Divergence>) {
        self.pending = divergence;
    }

    /// The next request goes to another model (`provider/model` before and after): the
    /// renderer starts afresh, so no divergence is reported, yet nothing the old model cached
    /// can be read.
    pub fn model_switched(&mut self, from: &str, to: &str) {
        self.model_switched = Some((from.to_owned(), to.to_owned()));
    }

    /// The tool set was changed (`/tools`): a divergence in the next request is that change,
    /// priced when it was made.
    pub fn tools_changed(&mut self) {
        self.tools_changed = true;
    }

    /// The request in flight finished with `usage` costing `cost`.
    pub fn request_finished(&mut self, usage: &Usage, cost: &Cost) {
        let divergence = self.pending.take();
        // Back on a model whose cache is still warm, the read shows nothing broke.
        let new_model = self.model_switched.take().filter(|_| usage.cache_read == 0);
        let compacted = self.compacted_at.take();
        let tools_changed = std::mem::take(&mut self.tools_changed);
        self.cache_break = match divergence {
            _ if new_model.is_some() => {
                new_model.map(|(from, to)| BreakCause::ModelSwitch { from, to })
            }
            Some(Divergence::At { .. }) if compacted.is_some() => {
                compacted.map(|entry| BreakCause::Compaction { entry })
            }
            Some(Divergence::At {
                chapter: Chapter::Tools,
                ..
            }) if tools_changed => Some(BreakCause::ToolChange {
                entry: "/tools".to_owned(),
            }),
            Some(Divergence::At {
                offset, chapter, ..
            }) => Some(BreakCause::ChangedPrefix {
                through: None,
                byte: Some(offset as u64),
                chapter: Some(chapter_name(chapter).to_owned()),
            }),
            Some(Divergence::Extends { .. } | Divergence::Identical) | None => None,
        };
        self.last = Some(*usage);
        self.last_cost = cost.total();
        self.compacted_context = None;
        self.compacted = false;
        self.add(usage, cost.total());
    }

    /// Adds a request made outside the loop (a summary) to the session totals.
    pub fn add(&mut self, usage: &Usage, dollars: f64) {
        self.prompt_tokens += usage.prompt_tokens();
        self.cache_read += usage.cache_read;
        self.cost += dollars;
        self.requests += 1;
    }

    /// Share of the session's prompt tokens read from the cache.
    pub fn hit_rate(&self) -> Option<f64> {
        (self.prompt_tokens > 0).then(|| self.cache_read as f64 / self.prompt_tokens as f64)
    }

    /// Tokens the context holds after the last request (prompt plus answer).
    pub fn context_used(&self) -> Option<u64> {
        self.compacted_context
            .or_else(|| self.last.map(|usage| usage.total_tokens()))
    }

    /// A compaction wrote entry `entry`: the context shrank, and the last request no longer
    /// says how big it is; the next request's new prefix is the compaction's doing.
    pub fn compaction_finished(&mut self, entry: &str) {
        self.compacted = true;
        self.compacted_at = Some(entry.to_owned());
    }

    /// The worker's status after a command: after a compaction, its chapter estimate stands
    /// for the context until the next request.
    pub fn status_arrived(&mut self, chapter_tokens: [u64; 3]) {
        if std::mem::take(&mut self.compacted) {
            self.compacted_context = Some(chapter_tokens.iter().sum());
        }
    }

    /// Totals recomputed from a session's accounted requests (answers, summaries and pings,
    /// The counters of a session as the runtime's read model adds them up (every request
    /// the file records; the last answer's figures).
    pub fn of(stats: &strata_runtime::SessionStats) -> Self {
        let totals = &stats.totals;
        Self {
            last: stats.last,
            last_cost: stats.last_cost,
            prompt_tokens: totals.usage.prompt_tokens(),
            cache_read: totals.usage.cache_read,
            cost: totals.cost,
            children_cost: stats.children_cost,
            requests: totals.requests,
            pings: totals.pings,
            ..Self::default()
        }
    }

    /// A keep-warm ping finished: billed with the session, not the last answer's figures.
    pub fn ping_finished(&mut self, usage: &Usage, dollars: f64) {
        self.add(usage, dollars);
        self.pings += 1;
    }
}

/// What hooks and extensions added at the end of the conversation, as the cache writes of
/// the requests that first carried it (part of the session's cost, not on top of it): a
/// total line, then one per source; nothing when none added anything. `/context` and
/// `strata stats` show these lines.
pub fn attribution_lines(attributed: &[strata_accounting::Attribution]) -> Vec<String> {
    if attributed.is_empty() {
        return Vec::new();
    }
    let cost: f64 = attributed.iter().map(|a| a.cost).sum();
    let tokens: u64 = attributed.iter().map(|a| a.tokens).sum();
    let mut lines = vec![format!(
        "hooks and extensions: {} tokens written to the cache, ${cost:.6} (included in the cost)",
        tokens
    )];
    lines.extend(attributed.iter().map(|item| {
        format!(
            "  {}  {} tokens  ${:.6}",
            item.source, item.tokens, item.cost
        )
    }));
    lines
}

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

/// The chapter's name as the footer says it.
pub fn chapter_name(chapter: Chapter) -> &'static str {
    match chapter {
        Chapter::Tools => "tools",
        Chapter::System => "system",
        Chapter::Messages => "messages",
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
    fn a_break_is_reported_with_its_chapter_and_cleared_by_an_extension() {
        let mut stats = Stats::default();
        let usage = Usage {
            input: 100,
            output: 50,
            cache_read: 900,
            ..Default::default()
        };
        let cost = Cost {
            input: 0.01,
            ..Cost::default()
        };
        stats.request_started(Some(Divergence::At {
            offset: 10,
            chapter: Chapter::System,
            chapter_offset: 3,
        }));
        stats.request_finished(&usage, &cost);
        assert_eq!(
            stats.cache_break,
            Some(BreakCause::ChangedPrefix {
                through: None,
                byte: Some(10),
                chapter: Some("system".to_owned()),
            })
        );
        assert!(!stats.cache_break.as_ref().unwrap().is_expected());
        stats.request_started(Some(Divergence::Extends { at: 40 }));
        stats.request_finished(&usage, &cost);
        assert_eq!(stats.cache_break, None);
        assert_eq!(stats.hit_rate(), Some(0.9));
        assert_eq!(stats.requests, 2);
        assert!((stats.cost - 0.02).abs() < 1e-12);
        assert_eq!(stats.context_used(), Some(1_050));
    }

    #[test]
    fn the_first_request_to_a_new_model_that_reads_nothing_is_a_break() {
        let mut stats = Stats::default();
        let cold = Usage {
            input: 20,
            output: 5,
            cache_write_5m: 4_000,
            ..Default::default()
        };
        let warm = Usage {
            cache_read: 3_900,
            cache_write_5m: 100,
            ..cold
        };
        stats.model_switched("a/one", "b/two");
        stats.request_started(None);
        stats.request_finished(&cold, &Cost::default());
        assert_eq!(
            stats.cache_break,
            Some(BreakCause::ModelSwitch {
                from: "a/one".to_owned(),
                to: "b/two".to_owned()
            })
        );
        // The flag is spent: the next request is judged by its divergence again.
        stats.request_started(Some(Divergence::Extends { at: 10 }));
        stats.request_finished(&cold, &Cost::default());
        assert_eq!(stats.cache_break, None);
        // Back on a model whose entries are still alive: it reads, nothing broke.
        stats.model_switched("b/two", "a/one");
        stats.request_started(None);
        stats.request_finished(&warm, &Cost::default());
        assert_eq!(stats.cache_break, None);
    }

    #[test]
    fn a_divergence_after_a_compaction_or_a_tool_change_is_an_expected_break() {
        let mut stats = Stats::default();
        let usage = Usage {
            input: 10,
            output: 5,
            cache_write_5m: 2_000,
            ..Default::default()
        };
        let at = |chapter| {
            Some(Divergence::At {
                offset: 300,
                chapter,
                chapter_offset: 0,
            })
        };
        stats.compaction_finished("c0ffee00");
        stats.request_started(at(Chapter::Messages));
        stats.request_finished(&usage, &Cost::default());
        assert_eq!(
            stats.cache_break,
            Some(BreakCause::Compaction {
                entry: "c0ffee00".to_owned()
            })
        );
        stats.tools_changed();
        stats.request_started(at(Chapter::Tools));
        stats.request_finished(&usage, &Cost::default());
        assert!(matches!(
            stats.cache_break,
            Some(BreakCause::ToolChange { .. })
        ));
        // Spent: the same divergence again is unexplained.
        stats.request_started(at(Chapter::Tools));
        stats.request_finished(&usage, &Cost::default());
        assert!(!stats.cache_break.unwrap().is_expected());
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
