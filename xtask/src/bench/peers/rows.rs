//! strata-mock's records of a peer's requests as the benchmark's [`RequestRow`]s: the same
//! accounting, miss causes, prices and ideal as strata's own runs.

use std::collections::HashSet;

use anyhow::Result;
use serde_json::Value;
use strata_mock::RequestRecord;

use crate::bench::ideal::IdealCache;
use crate::bench::run::{
    MissCause, RequestKind, RequestRow, TakenRecords, floor_cost, record_bill,
};

/// Text only summary requests carry: strata's and Pi's summary instructions, and Claude
/// Code's compaction prompt.
const SUMMARY_MARKERS: [&str; 4] = [
    "Use exactly this format:",
    "Rules for the update:",
    "Summarize it so the kept remainder of the turn makes sense",
    "Your task is to create a detailed summary of the conversation so far",
];

/// Requests the rows leave out, and why.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Left {
    /// Requests for another model than the workload's (a harness's side requests).
    pub other_model: Vec<String>,
    /// Requests refused (status, message).
    pub refused: Vec<(u16, String)>,
    /// Requests whose prompt the ideal counted differently from the mock.
    pub ideal_mismatch: usize,
    /// Tokens written with the 1-hour lifetime (the rows sum both lifetimes).
    pub written_1h: u64,
}

/// Turns records into rows as they arrive (the mock keeps only its newest bodies).
pub struct Rows {
    /// The rows so far.
    pub rows: Vec<RequestRow>,
    /// What was left out.
    pub left: Left,
    model: String,
    /// The records already taken.
    taken: TakenRecords,
    start_ms: Option<u64>,
    prices: strata_provider::Prices,
    ideal: IdealCache,
    first_done: HashSet<Option<String>>,
    /// Turns in the peer's scenario: a reply numbered past them is a recall turn's fetch.
    pub scripted_turns: Option<usize>,
}

impl Rows {
    /// Rows for requests to `model`, priced at `prices`, against `ideal`.
    pub fn new(model: &str, prices: strata_provider::Prices, ideal: IdealCache) -> Self {
        Self {
            rows: Vec::new(),
            left: Left::default(),
            model: model.to_owned(),
            taken: TakenRecords::default(),
            start_ms: None,
            prices,
            ideal,
            first_done: HashSet::new(),
            scripted_turns: None,
        }
    }

    /// Takes the records not seen yet.
    pub fn take(&mut self, records: Vec<RequestRecord>) -> Result<()> {
        for record in &self.taken.fresh(records) {
            self.push(record)?;
        }
        Ok(())
    }

    fn push(&mut self, record: &RequestRecord) -> Result<()> {
        if record.model != self.model {
            self.left
                .other_model
                .push(format!("{} {}", record.model, record.path));
            return Ok(());
        }
        if record.status != 200 {
            self.left
                .refused
                .push((record.status, record.error.clone().unwrap_or_default()));
            return Ok(());
        }
        let Some(cache) = record.cache else {
            self.left
                .refused
                .push((record.status, "no accounting".into()));
            return Ok(());
        };
        let start = *self.start_ms.get_or_insert(record.at_ms);
        self.left.written_1h += cache.cache_write_1h;
        let (new_tokens, kind) = match &record.body {
            Some(body) => {
                let (new_tokens, total) = self.ideal.account(body)?;
                if total != cache.input_tokens {
                    self.left.ideal_mismatch += 1;
                }
                let kind = if record.summary.is_some() {
                    RequestKind::Summary
                } else {
                    kind_of(body)
                };
                (new_tokens.min(cache.input_tokens), kind)
            }
            None => (cache.input_tokens, RequestKind::Turn),
        };
        let first = self.first_done.insert(record.cache_key.clone());
        let cause = MissCause::of(first, record, &cache);
        let bill = record_bill(&cache, record.output_tokens, &self.prices);
        let cost = bill.total();
        let floor_cost = floor_cost(&cache, new_tokens, record.output_tokens, &self.prices);
        self.rows.push(RequestRow {
            seq: self.rows.len() + 1,
            at_ms: record.at_ms.saturating_sub(start),
            kind,
            input: cache.input_tokens,
            cache_read: cache.cache_read,
            cache_write: cache.cache_write,
            uncached: cache.uncached,
            output: record.output_tokens,
            cost,
            floor_cost,
            new_tokens,
            cause,
            bill,
            refetch: record
                .turn
                .is_some_and(|turn| self.scripted_turns.is_some_and(|n| turn >= n)),
        });
        Ok(())
    }
}

fn kind_of(body: &Value) -> RequestKind {
    let text = body.to_string();
    if SUMMARY_MARKERS.iter().any(|marker| text.contains(marker)) {
        RequestKind::Summary
    } else {
        RequestKind::Turn
    }
}

#[cfg(test)]
mod tests {
    use strata_mock::Protocol;

    use super::*;
    use crate::bench::ideal::BodyShape;

    fn record(seq: u64, model: &str) -> RequestRecord {
        RequestRecord {
            stream: true,
            ..RequestRecord::received(
                seq,
                Protocol::Anthropic,
                "/v1/messages".into(),
                model.into(),
                seq,
            )
        }
    }

    #[test]
    fn records_finishing_out_of_order_are_all_taken_in_request_order() {
        let mut rows = Rows::new(
            "m",
            strata_provider::Prices::default(),
            IdealCache::new(BodyShape::Anthropic, 1, 0),
        );
        // Two concurrent requests: 3 finished before 2; then 2 and 4 arrive.
        rows.take(vec![record(1, "other"), record(3, "other")])
            .unwrap();
        rows.take(vec![
            record(1, "other"),
            record(3, "other"),
            record(2, "other"),
            record(4, "other"),
        ])
        .unwrap();
        assert_eq!(
            rows.left.other_model.len(),
            4,
            "every request counted once: {:?}",
            rows.left.other_model
        );
    }
}
