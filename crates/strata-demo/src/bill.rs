//! The bill: one row per request from strata-mock's own accounting, priced with the
//! capability table's prices, and the totals of each run.

use serde::Serialize;
use strata_mock::{RequestRecord, SummaryKind};
use strata_provider::{Prices, Usage};

/// One request as the mock accounted it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Row {
    /// The mock's sequence number.
    pub seq: u64,
    /// `answer N` (the scripted model's answer), `summary: history`, `summary: branch`, … or `refused (429)`.
    pub kind: String,
    /// Prompt tokens of the tools chapter.
    pub tools: u64,
    /// Prompt tokens of the system chapter.
    pub system: u64,
    /// Prompt tokens of the messages chapter.
    pub messages: u64,
    /// All prompt tokens.
    pub input: u64,
    /// Read from the cache.
    pub cache_read: u64,
    /// Written to the cache.
    pub cache_write: u64,
    /// Neither read nor written.
    pub uncached: u64,
    /// Output tokens.
    pub output: u64,
    /// `cache_read / input`.
    pub hit_rate: f64,
    /// Price of the request in USD.
    pub cost_usd: f64,
}

/// The sums of a run's rows.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Totals {
    /// Requests.
    pub requests: usize,
    /// All prompt tokens.
    pub input: u64,
    /// Read from the cache.
    pub cache_read: u64,
    /// Written to the cache.
    pub cache_write: u64,
    /// Neither read nor written.
    pub uncached: u64,
    /// Output tokens.
    pub output: u64,
    /// `cache_read / input`.
    pub hit_rate: f64,
    /// Total price in USD.
    pub cost_usd: f64,
}

/// What a provider bills for one request's tokens. A cache write the table gives no price
/// for is billed as ordinary input (automatic caches store prefixes at the input price).
pub fn cost(usage: &Usage, prices: &Prices) -> f64 {
    let write_5m = if prices.cache_write_5m > 0.0 {
        prices.cache_write_5m
    } else {
        prices.input
    };
    let write_1h = if prices.cache_write_1h > 0.0 {
        prices.cache_write_1h
    } else {
        write_5m
    };
    let billed = Prices {
        cache_write_5m: write_5m,
        cache_write_1h: write_1h,
        ..*prices
    };
    usage.cost(&billed).total()
}

/// The usage buckets of a record's accounting.
pub fn usage_of(record: &RequestRecord) -> Usage {
    let cache = record.cache.unwrap_or_default();
    Usage {
        input: cache.uncached,
        output: record.output_tokens,
        cache_read: cache.cache_read,
        cache_write_5m: cache.cache_write_5m,
        cache_write_1h: cache.cache_write_1h,
        cache_storage: 0,
        cache_create: 0,
    }
}

fn kind(record: &RequestRecord) -> String {
    if record.status != 200 {
        return format!("refused ({})", record.status);
    }
    match (record.summary, record.turn) {
        (Some(SummaryKind::History), _) => "summary: compaction".to_owned(),
        (Some(SummaryKind::TurnPrefix), _) => "summary: turn prefix".to_owned(),
        (Some(SummaryKind::SplitTurn), _) => "summary: split turn".to_owned(),
        (Some(SummaryKind::Branch), _) => "summary: branch".to_owned(),
        // The scripted model's answer number: one request, not a whole turn of the agent.
        (None, Some(turn)) => format!("answer {}", turn + 1),
        (None, None) => "echo".to_owned(),
    }
}

fn rate(read: u64, input: u64) -> f64 {
    if input == 0 {
        0.0
    } else {
        read as f64 / input as f64
    }
}

/// The row of one record.
pub fn row(record: &RequestRecord, prices: &Prices) -> Row {
    let cache = record.cache.unwrap_or_default();
    let chapter = |split: strata_mock::Split| split.read + split.written + split.uncached;
    Row {
        seq: record.seq,
        kind: kind(record),
        tools: chapter(cache.tools),
        system: chapter(cache.system),
        messages: chapter(cache.messages),
        input: cache.input_tokens,
        cache_read: cache.cache_read,
        cache_write: cache.cache_write,
        uncached: cache.uncached,
        output: record.output_tokens,
        hit_rate: rate(cache.cache_read, cache.input_tokens),
        cost_usd: cost(&usage_of(record), prices),
    }
}

/// The sums of `rows`.
pub fn totals(rows: &[Row]) -> Totals {
    let mut totals = Totals {
        requests: rows.len(),
        ..Totals::default()
    };
    for row in rows {
        totals.input += row.input;
        totals.cache_read += row.cache_read;
        totals.cache_write += row.cache_write;
        totals.uncached += row.uncached;
        totals.output += row.output;
        totals.cost_usd += row.cost_usd;
    }
    totals.hit_rate = rate(totals.cache_read, totals.input);
    totals
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unpriced_cache_write_is_billed_as_input() {
        let prices = Prices {
            input: 2.0,
            output: 8.0,
            cache_read: 0.5,
            cache_write_5m: 0.0,
            cache_write_1h: 0.0,
            cache_storage: 0.0,
        };
        let usage = Usage {
            input: 1_000_000,
            output: 0,
            cache_read: 1_000_000,
            cache_write_5m: 1_000_000,
            cache_write_1h: 0,
            cache_storage: 0,
            cache_create: 0,
        };
        assert!((cost(&usage, &prices) - 4.5).abs() < 1e-9);
    }

    #[test]
    fn totals_add_up_the_rows() {
        let row = |read, input, cost_usd| Row {
            seq: 1,
            kind: "answer 1".into(),
            tools: 0,
            system: 0,
            messages: input,
            input,
            cache_read: read,
            cache_write: 0,
            uncached: input - read,
            output: 5,
            hit_rate: 0.0,
            cost_usd,
        };
        let totals = totals(&[row(0, 100, 0.25), row(300, 400, 0.5)]);
        assert_eq!(totals.requests, 2);
        assert_eq!(totals.input, 500);
        assert_eq!(totals.cache_read, 300);
        assert_eq!(totals.output, 10);
        assert!((totals.hit_rate - 0.6).abs() < 1e-9);
        assert!((totals.cost_usd - 0.75).abs() < 1e-9);
    }
}
