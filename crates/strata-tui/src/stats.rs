//! What the footer counts: the last request's tokens, the session's cache hit rate and cost,
//! and whether the last request broke the cache and why (the accounting's [`BreakCause`], as
//! `strata stats` and the export say it). What a tool-set change or a model switch costs is
//! the accounting's ([`tool_change_cost`], [`switch_note`]).

use strata_accounting::BreakCause;
/// The accounting's words and prices, as the footer and `/tools` say them.
pub use strata_accounting::tool_change::{
    ToolChangeCost, ToolCostBasis, dollars, switch_note, tokens, tool_change_cost, write_cost,
};
use strata_context::render::{Chapter, Divergence};
use strata_provider::{Cost, Usage};

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
        strata_accounting::hit_rate(self.cache_read, self.prompt_tokens)
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

/// The chapter's name as the footer says it.
pub fn chapter_name(chapter: Chapter) -> &'static str {
    match chapter {
        Chapter::Tools => "tools",
        Chapter::System => "system",
        Chapter::Messages => "messages",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
