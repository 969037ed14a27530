//! What one run of a workload produces, whoever ran it: one row per request sent to the
//! provider, the tasks completed, and the totals the tables are made of. strata's own runs and
//! the peers' runs (Pi, Claude Code) fill the same types, so one table writer serves all.

use serde::{Deserialize, Serialize};
use strata_mock::prompt::Chapter;
use strata_mock::{Accounting, RequestRecord};
use strata_provider::Prices;

/// What the mock's accounting of one request costs at `prices` (USD per million tokens).
pub fn record_cost(cache: &Accounting, output_tokens: u64, prices: &Prices) -> f64 {
    record_bill(cache, output_tokens, prices).total()
}

/// [`record_cost`], split into what the reads, the writes, the uncached input and the output
/// cost.
pub fn record_bill(cache: &Accounting, output_tokens: u64, prices: &Prices) -> Bill {
    let usd = |tokens: u64, price: f64| tokens as f64 * price / 1_000_000.0;
    Bill {
        reads: usd(cache.cache_read, prices.cache_read),
        writes: usd(cache.cache_write_5m, prices.cache_write_5m)
            + usd(cache.cache_write_1h, prices.cache_write_1h),
        uncached: usd(cache.uncached, prices.input),
        output: usd(output_tokens, prices.output),
    }
}

/// A bill split by what was paid for, USD.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Bill {
    /// Tokens read from the cache.
    pub reads: f64,
    /// Tokens written to the cache (every lifetime).
    pub writes: f64,
    /// Input neither read nor written.
    pub uncached: f64,
    /// Output tokens.
    pub output: f64,
}

impl Bill {
    /// The whole bill.
    pub fn total(&self) -> f64 {
        self.reads + self.writes + self.uncached + self.output
    }

    pub(crate) fn add(&mut self, other: &Self) {
        self.reads += other.reads;
        self.writes += other.writes;
        self.uncached += other.uncached;
        self.output += other.output;
    }
}

/// What the request would have cost had the cache been ideal (never expiring, reading any
/// prefix ever sent): its `new_tokens` paid as this request paid its misses (written at the
/// lifetimes it wrote, or uncached; a request that missed nothing pays them as input), the rest
/// read, the output as it was. Summed over a run, no cache can bill that run's requests less.
pub fn floor_cost(cache: &Accounting, new_tokens: u64, output_tokens: u64, prices: &Prices) -> f64 {
    let new_tokens = new_tokens.min(cache.input_tokens);
    let missed = cache.cache_write_5m + cache.cache_write_1h + cache.uncached;
    let share = |part: u64| {
        if missed == 0 {
            0.0
        } else {
            new_tokens as f64 * part as f64 / missed as f64
        }
    };
    let new_cost = if missed == 0 {
        new_tokens as f64 * prices.input
    } else {
        share(cache.cache_write_5m) * prices.cache_write_5m
            + share(cache.cache_write_1h) * prices.cache_write_1h
            + share(cache.uncached) * prices.input
    };
    (new_cost
        + (cache.input_tokens - new_tokens) as f64 * prices.cache_read
        + output_tokens as f64 * prices.output)
        / 1_000_000.0
}

/// The mock's records already made into rows, by sequence number. Records come in the order
/// requests finish, and concurrent requests (a harness's two split-turn summaries) finish out
/// of order, so what is new is found by number, not by position.
#[derive(Debug, Clone, Default)]
pub struct TakenRecords(std::collections::HashSet<u64>);

impl TakenRecords {
    /// The records of `records` not taken before, in request order; marks them taken.
    pub fn fresh(&mut self, records: Vec<RequestRecord>) -> Vec<RequestRecord> {
        let mut fresh: Vec<RequestRecord> = records
            .into_iter()
            .filter(|record| self.0.insert(record.seq))
            .collect();
        fresh.sort_by_key(|record| record.seq);
        fresh
    }
}

/// Where the tokens of a request that were not read from the cache are charged: the chapter
/// where the request first departs from the previous one in its cache namespace, or why the
/// cache had nothing to give.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MissCause {
    /// The first request of its cache namespace: everything is new.
    First,
    /// The request changed the tools array.
    Tools,
    /// The request changed the system prompt.
    System,
    /// The request changed an earlier message (compaction, branch, a rewritten transcript).
    Messages,
    /// The request only appended: the miss is the appended part.
    Appended,
    /// The request only appended, yet nothing was read: the entry had expired (TTL).
    Expired,
}

impl MissCause {
    /// Where the mock's `record` charges its misses: the first request of its namespace, the
    /// chapter where it departs from the previous request, an expired entry, or the appended
    /// tail.
    pub fn of(first: bool, record: &RequestRecord, cache: &Accounting) -> Self {
        if first {
            return Self::First;
        }
        match record.changed {
            Some(change) => match change.chapter {
                Chapter::Tools => Self::Tools,
                Chapter::System => Self::System,
                Chapter::Messages => Self::Messages,
            },
            None if cache.cache_read == 0 => Self::Expired,
            None => Self::Appended,
        }
    }

    /// The name used in tables.
    pub fn name(self) -> &'static str {
        match self {
            Self::First => "first",
            Self::Tools => "tools",
            Self::System => "system",
            Self::Messages => "messages",
            Self::Appended => "appended",
            Self::Expired => "expired",
        }
    }

    /// Every cause, in table order.
    pub const ALL: [Self; 6] = [
        Self::First,
        Self::Tools,
        Self::System,
        Self::Messages,
        Self::Appended,
        Self::Expired,
    ];
}

/// What a request was for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RequestKind {
    /// A turn of the agent loop.
    Turn,
    /// A compaction summary.
    Summary,
    /// A branch summary.
    BranchSummary,
    /// A keep-warm ping while the user is idle (the last request again, one token out).
    KeepWarm,
}

/// One request as the provider (here: strata-mock) accounted it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RequestRow {
    /// 1-based position in the run.
    pub seq: usize,
    /// Virtual time of arrival, milliseconds since the run started.
    pub at_ms: u64,
    /// What the request was for.
    pub kind: RequestKind,
    /// All prompt tokens.
    pub input: u64,
    /// Read from the cache.
    pub cache_read: u64,
    /// Written to the cache (every lifetime).
    pub cache_write: u64,
    /// Neither read nor written.
    pub uncached: u64,
    /// Output tokens.
    pub output: u64,
    /// What the request cost at list prices, USD.
    pub cost: f64,
    /// What it would have cost with an ideal cache ([`floor_cost`]), USD.
    #[serde(default)]
    pub floor_cost: f64,
    /// Prompt tokens an ideal prefix cache would still have to process: those past the longest
    /// prefix shared with any earlier request (rounded to the cache's granularity).
    pub new_tokens: u64,
    /// Where the misses of this request are charged.
    pub cause: MissCause,
    /// The cost split by what was paid for.
    #[serde(default)]
    pub bill: Bill,
    /// The scripted model sent it to fetch again a fact its context no longer held (a recall
    /// turn's fetch, see `strata_mock::scenario::RecallSpec`).
    #[serde(default)]
    pub refetch: bool,
}

impl RequestRow {
    /// Tokens not read from the cache.
    pub fn missed(&self) -> u64 {
        self.cache_write + self.uncached
    }
}

/// One workload run by one harness with one strategy on one cache model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Run {
    /// Who ran it: `strata`, `pi`, `claude-code`.
    pub harness: String,
    /// The strategy's name (`strata`, `naive`, `dynamic-tools`, `cost-trigger`; a peer's name).
    pub strategy: String,
    /// The workload's name.
    pub workload: String,
    /// The cache model's name (see [`super::model::CacheModel::name`]).
    pub cache_model: String,
    /// Every request, in order.
    pub requests: Vec<RequestRow>,
    /// Tasks that ended as scripted.
    pub tasks_completed: usize,
    /// Tasks in the workload.
    pub tasks_total: usize,
    /// Compactions the run made.
    pub compactions: usize,
    /// The `seq` of the first request after each restart of the harness.
    #[serde(default)]
    pub restarts: Vec<usize>,
    /// Compactions written from a summary a memory play had ready (or made without a model
    /// request): the agent waited for no summary request at them.
    #[serde(default)]
    pub prepared_compactions: usize,
}

/// Sums over a run's requests.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Totals {
    /// Requests.
    pub requests: usize,
    /// Prompt tokens.
    pub input: u64,
    /// Read from the cache.
    pub cache_read: u64,
    /// Written.
    pub cache_write: u64,
    /// Uncached.
    pub uncached: u64,
    /// Output.
    pub output: u64,
    /// USD.
    pub cost: f64,
    /// Tokens new to an ideal cache.
    pub new_tokens: u64,
    /// The cost split by what was paid for.
    pub bill: Bill,
    /// Re-fetch requests (see [`RequestRow::refetch`]).
    pub refetches: usize,
    /// What the re-fetch requests cost, USD. Their tool output is paid again by the requests
    /// after them; this counts the requests themselves.
    pub refetch_cost: f64,
}

impl Totals {
    /// The sums of `rows`.
    pub fn of<'a>(rows: impl IntoIterator<Item = &'a RequestRow>) -> Self {
        let mut totals = Self::default();
        for row in rows {
            totals.requests += 1;
            totals.input += row.input;
            totals.cache_read += row.cache_read;
            totals.cache_write += row.cache_write;
            totals.uncached += row.uncached;
            totals.output += row.output;
            totals.cost += row.cost;
            totals.new_tokens += row.new_tokens;
            totals.bill.add(&row.bill);
            if row.refetch {
                totals.refetches += 1;
                totals.refetch_cost += row.cost;
            }
        }
        totals
    }

    /// Token-weighted hit rate: read / (uncached + read + written).
    pub fn hit_rate(&self) -> f64 {
        let all = self.uncached + self.cache_read + self.cache_write;
        if all == 0 {
            0.0
        } else {
            self.cache_read as f64 / all as f64
        }
    }

    /// The hit rate of an ideal prefix cache on the same requests: 1 − new / all.
    pub fn ideal_hit_rate(&self) -> f64 {
        if self.input == 0 {
            0.0
        } else {
            1.0 - self.new_tokens as f64 / self.input as f64
        }
    }

    /// Mean prompt tokens per request.
    pub fn mean_input(&self) -> f64 {
        if self.requests == 0 {
            0.0
        } else {
            self.input as f64 / self.requests as f64
        }
    }
}

impl Run {
    /// Sums over every request.
    pub fn totals(&self) -> Totals {
        Totals::of(&self.requests)
    }

    /// What the agent waited at each compaction attempt, milliseconds of the mock's clock,
    /// sorted: for summary requests in a row (one attempt), the time from the first of them
    /// to the next request (the model writing the summary while the task stands still); for a
    /// compaction made without a request ([`Self::prepared_compactions`]), nothing.
    pub fn compaction_waits_ms(&self) -> Vec<u64> {
        let mut waits = vec![0; self.prepared_compactions];
        let mut first_summary: Option<u64> = None;
        for row in &self.requests {
            match (row.kind, first_summary) {
                (RequestKind::Summary, None) => first_summary = Some(row.at_ms),
                (RequestKind::Summary, Some(_)) => {}
                (_, Some(at)) => {
                    waits.push(row.at_ms.saturating_sub(at));
                    first_summary = None;
                }
                (_, None) => {}
            }
        }
        waits.sort_unstable();
        waits
    }

    /// Whether every task ended as scripted.
    pub fn all_tasks_completed(&self) -> bool {
        self.tasks_completed == self.tasks_total
    }

    /// Missed tokens (written + uncached) by cause, in [`MissCause::ALL`] order.
    pub fn misses_by_cause(&self) -> [(MissCause, u64); 6] {
        MissCause::ALL.map(|cause| {
            let missed = self
                .requests
                .iter()
                .filter(|row| row.cause == cause)
                .map(RequestRow::missed)
                .sum();
            (cause, missed)
        })
    }

    /// For each restart: the share of the last request's prompt before it that the first
    /// request after it read from the cache.
    pub fn restart_reads(&self) -> Vec<f64> {
        self.restarts
            .iter()
            .filter_map(|seq| {
                let after = self.requests.iter().find(|row| row.seq >= *seq)?;
                let before = self
                    .requests
                    .iter()
                    .rev()
                    .find(|row| row.seq < *seq && row.kind == RequestKind::Turn)?;
                Some(after.cache_read as f64 / before.input.max(1) as f64)
            })
            .collect()
    }

    /// `workload / cache model / strategy`, for messages.
    pub fn label(&self) -> String {
        format!(
            "{} / {} / {}",
            self.workload, self.cache_model, self.strategy
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(read: u64, write: u64, uncached: u64, new_tokens: u64) -> RequestRow {
        RequestRow {
            seq: 1,
            at_ms: 0,
            kind: RequestKind::Turn,
            input: read + write + uncached,
            cache_read: read,
            cache_write: write,
            uncached,
            output: 10,
            cost: 0.5,
            floor_cost: 0.25,
            new_tokens,
            cause: MissCause::Appended,
            bill: Bill {
                reads: 0.1,
                writes: 0.2,
                uncached: 0.1,
                output: 0.1,
            },
            refetch: false,
        }
    }

    #[test]
    fn hit_rate_weighs_tokens_and_counts_writes_as_misses() {
        let totals = Totals::of(&[row(900, 100, 0, 100), row(0, 0, 1000, 1000)]);
        assert_eq!(totals.input, 2000);
        assert!((totals.hit_rate() - 0.45).abs() < 1e-12);
        assert!((totals.ideal_hit_rate() - 0.45).abs() < 1e-12);
        assert!((totals.cost - 1.0).abs() < 1e-12);
        assert_eq!(Totals::default().hit_rate(), 0.0);
    }

    #[test]
    fn the_floor_pays_only_the_new_tokens_as_the_request_paid_its_misses() {
        let prices = Prices {
            input: 5.0,
            output: 25.0,
            cache_read: 0.5,
            cache_write_5m: 6.25,
            cache_write_1h: 10.0,
            cache_storage: 0.0,
        };
        // 1,000 tokens, 400 written at 5m and 100 at 1h, of which only 250 are new.
        let cache = Accounting {
            input_tokens: 1000,
            cache_read: 500,
            cache_write: 500,
            cache_write_5m: 400,
            cache_write_1h: 100,
            ..Accounting::default()
        };
        let floor = floor_cost(&cache, 250, 10, &prices);
        let expected = (200.0 * 6.25 + 50.0 * 10.0 + 750.0 * 0.5 + 10.0 * 25.0) / 1e6;
        assert!((floor - expected).abs() < 1e-12, "{floor} vs {expected}");
        assert!(floor < record_cost(&cache, 10, &prices));
        // A request that missed nothing the ideal calls new pays those tokens as input, and
        // the floor never exceeds what was paid when the ideal and the cache agree.
        let read_all = Accounting {
            input_tokens: 1000,
            cache_read: 1000,
            ..Accounting::default()
        };
        assert!(
            (floor_cost(&read_all, 0, 0, &prices) - record_cost(&read_all, 0, &prices)).abs()
                < 1e-12
        );
        assert!(
            (floor_cost(&read_all, 100, 0, &prices) - (100.0 * 5.0 + 900.0 * 0.5) / 1e6).abs()
                < 1e-12
        );
    }
}
