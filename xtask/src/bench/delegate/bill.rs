//! Where a delegate run's bill goes (the parent's requests and the children's; cache writes,
//! cache reads, uncached input, output), and the floor: the least any harness could pay for
//! the script, whatever its prompts, tools and cache marks.

use std::fmt::Write as _;

use strata_mock::RequestRecord;
use strata_provider::Prices;

use super::{Shape, exploration, handlers};
use crate::bench::run::{Bill, record_bill};

/// Per scripted turn of the delegating script, the child that plays it (`None`: the parent).
/// A child's turns follow its delegation call: its exploration, then its answer.
pub fn child_of_turns(shape: Shape) -> Vec<Option<usize>> {
    let mut owners = vec![None];
    for (child, handler) in handlers().iter().enumerate() {
        owners.push(None);
        owners.extend(std::iter::repeat_n(
            Some(child),
            exploration(handler).len() + 1,
        ));
    }
    let after = super::scenario(true, shape).turns.len() - owners.len();
    owners.extend(std::iter::repeat_n(None, after));
    owners
}

/// The records a run's rows are made of: answered, accounted, for the workload's model.
fn accounted<'a>(
    records: &'a [RequestRecord],
    model: &'a str,
) -> impl Iterator<Item = &'a RequestRecord> {
    records
        .iter()
        .filter(move |r| r.model == model && r.status == 200 && r.cache.is_some())
}

/// Who sent `record`: the child playing its turn, or the parent (its own turns, re-fetches
/// past the script, anything unscripted).
fn owner(record: &RequestRecord, owners: &[Option<usize>]) -> Option<usize> {
    record
        .turn
        .and_then(|turn| owners.get(turn).copied().flatten())
}

/// A run's bill split between the parent's requests and the children's.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Split {
    /// The parent's requests.
    pub parent: Bill,
    /// Every child's requests.
    pub children: Bill,
}

impl Split {
    /// The split of `records` (one run of the script of `shape`) at `prices`.
    /// `owners` as [`child_of_turns`] gives them (empty: no children).
    pub fn of(
        records: &[RequestRecord],
        model: &str,
        owners: &[Option<usize>],
        prices: &Prices,
    ) -> Self {
        let mut split = Self::default();
        for record in accounted(records, model) {
            let Some(cache) = &record.cache else { continue };
            let bill = record_bill(cache, record.output_tokens, prices);
            match owner(record, owners) {
                Some(_) => split.children.add(&bill),
                None => split.parent.add(&bill),
            }
        }
        split
    }
}

/// The least any harness could pay for the script: every request carries the conversation it
/// continues (the parent's, or its child's from the task on) and nothing else, reads all of
/// it that the previous request of that conversation sent, and writes only what is new (each
/// tool output, task and answer written once); the output as scripted.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Floor {
    /// Tokens written (each new tail once).
    pub written: u64,
    /// Tokens sent once and never read again (the new tail of each conversation's last
    /// request), paid at the cheaper of writing and plain input.
    pub unread: u64,
    /// Tokens read (each request's earlier conversation).
    pub read: u64,
    /// Output tokens.
    pub output: u64,
    /// Requests.
    pub requests: usize,
    /// Tools and system tokens of the parent's first request (the smallest head a harness
    /// here sends).
    pub head: u64,
    /// The floor with no head at all, USD.
    pub cost: f64,
    /// What writing [`Floor::unread`] would cost over sending it, USD: a harness pays it
    /// when it cannot know a request is its conversation's last.
    pub tail_premium: f64,
    /// The floor with [`Floor::head`] written once and read by every later request, USD.
    pub cost_with_head: f64,
}

impl Floor {
    /// The floor from `records`, a run whose children start fresh (their conversation is their
    /// task and their own work, as small as a child's can be); the messages each request sent
    /// are the conversation, its tools and system chapters the head.
    /// `owners` as [`child_of_turns`] gives them.
    pub fn of(
        records: &[RequestRecord],
        model: &str,
        owners: &[Option<usize>],
        prices: &Prices,
    ) -> Self {
        // The conversation each owner's previous request sent, in tokens.
        let mut sent: std::collections::HashMap<Option<usize>, u64> =
            std::collections::HashMap::new();
        // Per request: its owner and the tokens it adds to its conversation.
        let mut added: Vec<(Option<usize>, u64)> = Vec::new();
        let mut floor = Self::default();
        for record in accounted(records, model) {
            let Some(cache) = &record.cache else { continue };
            let messages = cache.messages.read + cache.messages.written + cache.messages.uncached;
            let who = owner(record, owners);
            let previous = sent.insert(who, messages).unwrap_or(0);
            let read = previous.min(messages);
            floor.read += read;
            added.push((who, messages - read));
            floor.output += record.output_tokens;
            if floor.requests == 0 {
                floor.head = cache.tools.read
                    + cache.tools.written
                    + cache.tools.uncached
                    + cache.system.read
                    + cache.system.written
                    + cache.system.uncached;
            }
            floor.requests += 1;
        }
        // What a conversation's last request adds no later request reads: it need not be
        // written, only sent (the cheaper of the two); the rest is written once.
        let mut last_of: std::collections::HashMap<Option<usize>, usize> =
            std::collections::HashMap::new();
        for (index, (who, _)) in added.iter().enumerate() {
            last_of.insert(*who, index);
        }
        for (index, (who, tokens)) in added.iter().enumerate() {
            if last_of.get(who) == Some(&index) {
                floor.unread += tokens;
            } else {
                floor.written += tokens;
            }
        }
        // Where a provider bills no write premium, writing is paying the input once.
        let write = if prices.cache_write_5m > 0.0 {
            prices.cache_write_5m
        } else {
            prices.input
        };
        let usd = |tokens: u64, price: f64| tokens as f64 * price / 1_000_000.0;
        floor.tail_premium = usd(floor.unread, write) - usd(floor.unread, write.min(prices.input));
        floor.cost = usd(floor.written, write)
            + usd(floor.unread, write.min(prices.input))
            + usd(floor.read, prices.cache_read)
            + usd(floor.output, prices.output);
        let head_reads = floor.head * (floor.requests.saturating_sub(1) as u64);
        floor.cost_with_head =
            floor.cost + usd(floor.head, write) + usd(head_reads, prices.cache_read);
        floor
    }
}

/// One row of the bill table.
pub fn bill_row(out: &mut String, workload: &str, cache: &str, who: &str, split: &Split) {
    let cell = |bill: &Bill| {
        format!(
            "{:.4} | {:.4} | {:.4} | {:.4}",
            bill.writes, bill.reads, bill.uncached, bill.output
        )
    };
    let _ = writeln!(
        out,
        "| {workload} | {cache} | {who} | {:.4} | {} | {:.4} | {} | {:.4} |",
        split.parent.total(),
        cell(&split.parent),
        split.children.total(),
        cell(&split.children),
        split.parent.total() + split.children.total(),
    );
}

/// The bill table's head.
pub const BILL_HEAD: &str = "| workload | cache | harness / mode | parent | writes | reads | uncached | output | children | writes | reads | uncached | output | total |\n\
     |---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_child_owns_its_exploration_and_answer_and_nothing_else() {
        for shape in Shape::ALL {
            let owners = child_of_turns(shape);
            let script = super::super::scenario(true, shape);
            assert_eq!(owners.len(), script.turns.len());
            for (turn, owner) in script.turns.iter().zip(&owners) {
                let delegates = turn.tool_calls.iter().any(|c| c.tool == "task");
                if delegates || turn.user.is_some() || turn.recall.is_some() {
                    assert_eq!(*owner, None, "{turn:?}");
                }
            }
            // Each child plays its four calls and its answer; the answer is the turn before
            // the next delegation (or the registry edits).
            for child in 0..handlers().len() {
                let turns: Vec<usize> = (0..owners.len())
                    .filter(|t| owners[*t] == Some(child))
                    .collect();
                assert_eq!(turns.len(), 5);
                assert!(turns.windows(2).all(|w| w[1] == w[0] + 1), "{turns:?}");
                let answer = &script.turns[turns[4]];
                assert!(answer.tool_calls.is_empty());
                assert_eq!(
                    answer.text.as_deref(),
                    Some(super::super::child_answer(&handlers()[child]).as_str())
                );
                assert_eq!(
                    script.turns[turns[0] - 1].tool_calls[0].tool,
                    "task",
                    "the turn before a child's first is its delegation"
                );
            }
        }
    }

    fn record(turn: Option<usize>, messages: u64, output: u64) -> RequestRecord {
        let mut record = RequestRecord::received(
            1,
            strata_mock::Protocol::Anthropic,
            "/v1/messages".into(),
            "m".into(),
            0,
        );
        record.status = 200;
        record.turn = turn;
        record.output_tokens = output;
        let mut cache = strata_mock::Accounting::default();
        cache.messages.written = messages;
        cache.input_tokens = messages;
        cache.cache_write = messages;
        cache.cache_write_5m = messages;
        record.cache = Some(cache);
        record
    }

    #[test]
    fn the_floor_writes_each_conversations_new_tail_once_and_reads_the_rest() {
        let prices = Prices {
            input: 1.0,
            output: 10.0,
            cache_read: 0.1,
            cache_write_5m: 2.0,
            ..Prices::default()
        };
        let owners = child_of_turns(Shape::Lean);
        let child_turn = owners.iter().position(|o| *o == Some(0)).unwrap();
        // Parent 100 tokens, its child 50 then 80, the parent again at 130.
        let records = [
            record(Some(0), 100, 1),
            record(Some(child_turn), 50, 1),
            record(Some(child_turn + 1), 80, 1),
            record(Some(child_turn - 1), 130, 1),
        ];
        let floor = Floor::of(&records, "m", &owners, &prices);
        // The child's second request and the parent's second are their conversations' last:
        // what they add is sent, not written.
        assert_eq!(floor.written, 100 + 50);
        assert_eq!(floor.unread, 30 + 30);
        assert_eq!(floor.read, 50 + 100);
        assert_eq!(floor.output, 4);
        let expected = (150.0 * 2.0 + 60.0 * 1.0 + 150.0 * 0.1 + 4.0 * 10.0) / 1e6;
        assert!((floor.cost - expected).abs() < 1e-12, "{}", floor.cost);
        assert!((floor.tail_premium - 60.0 * (2.0 - 1.0) / 1e6).abs() < 1e-12);
        let split = Split::of(&records, "m", &owners, &prices);
        assert!((split.children.writes - 130.0 * 2.0 / 1e6).abs() < 1e-12);
        assert!((split.parent.writes - 230.0 * 2.0 / 1e6).abs() < 1e-12);
    }
}
