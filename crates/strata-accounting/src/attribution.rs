//! What hooks and extensions cost in cache writes. Whatever one adds at the end of the
//! conversation (a hook's context, an extension's ingress rewrite) is written into the cache
//! once, by the request that first carries it; the entry that adds it names its source and
//! that cost under [`ATTRIBUTION_FIELD`] (in a `custom_message`'s `details`, or a `custom`
//! entry's `data`, both Pi-readable and never sent), and [`attributions`] sums them per
//! source over every branch (all were paid).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use strata_session::{Entry, EntryKind, Tree};

/// `customType` of a `custom` entry holding only attributions, for what was added where no
/// entry of the adder's own can say it (an extension's tools in a ledger patch).
pub const ATTRIBUTION_CUSTOM_TYPE: &str = "strata.cache-write";

/// The field holding a list of [`Attribution`]s.
pub const ATTRIBUTION_FIELD: &str = "cacheWriteBy";

/// What one hook or extension added, as cache writes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Attribution {
    /// The hook's command, or `extension NAME`.
    pub source: String,
    /// Tokens written (Pi's estimate: a quarter of the characters, rounded up).
    pub tokens: u64,
    /// Dollars, at the model's cache-write price.
    pub cost: f64,
}

impl Attribution {
    /// `text` added by `source`, priced as cache writes at `write_price` dollars per million
    /// tokens.
    pub fn of(source: impl Into<String>, text: &str, write_price: f64) -> Self {
        let tokens = (text.chars().count() as u64).div_ceil(4);
        Self {
            source: source.into(),
            tokens,
            cost: tokens as f64 * write_price / 1_000_000.0,
        }
    }

    /// Folds `list` into one per source (first-seen order).
    pub fn merged(list: Vec<Attribution>) -> Vec<Attribution> {
        let mut merged: Vec<Attribution> = Vec::new();
        for item in list {
            match merged.iter_mut().find(|m| m.source == item.source) {
                Some(existing) => {
                    existing.tokens += item.tokens;
                    existing.cost += item.cost;
                }
                None => merged.push(item),
            }
        }
        merged
    }

    /// `list` as the value of [`ATTRIBUTION_FIELD`].
    pub fn to_value(list: &[Attribution]) -> Value {
        serde_json::to_value(list).unwrap_or(Value::Null)
    }
}

/// What `entry` attributes (none for an entry no hook or extension wrote).
pub fn attributions_of(entry: &Entry) -> Vec<Attribution> {
    let field = match entry {
        Entry::CustomMessage(message) => message.details.as_ref(),
        Entry::Custom(custom) => custom.data.as_ref(),
        _ => None,
    };
    field
        .and_then(|value| value.get(ATTRIBUTION_FIELD))
        .and_then(|list| serde_json::from_value::<Vec<Attribution>>(list.clone()).ok())
        .unwrap_or_default()
}

/// Every attribution in `tree`, summed per source, costliest first.
pub fn attributions(tree: &Tree) -> Vec<Attribution> {
    let mut sums = BTreeMap::new();
    add_attributions(&mut sums, tree, 0);
    sorted_attributions(&sums)
}

/// Adds the attributions of `tree`'s entries from position `start` on to `sums` (per source,
/// in file order, so counting on from a position sums exactly as one pass does).
pub fn add_attributions(sums: &mut BTreeMap<String, Attribution>, tree: &Tree, start: usize) {
    // Only custom entries carry the field; the others (almost every line) are ruled out by
    // their kind, and custom ones without it by a substring test, before anything is parsed.
    let needle = format!("\"{ATTRIBUTION_FIELD}\"");
    let carries = |reference: &strata_session::EntryRef<'_>| {
        matches!(
            reference.kind(),
            EntryKind::Custom | EntryKind::CustomMessage
        ) && reference
            .read_line()
            .is_ok_and(|line| line.contains(needle.as_str()))
    };
    for reference in tree.iter().skip(start).filter(carries) {
        let Ok(entry) = reference.entry() else {
            continue;
        };
        for item in attributions_of(&entry) {
            let sum = sums.entry(item.source.clone()).or_insert(Attribution {
                source: item.source,
                tokens: 0,
                cost: 0.0,
            });
            sum.tokens += item.tokens;
            sum.cost += item.cost;
        }
    }
}

/// `sums` as a list, costliest first.
pub fn sorted_attributions(sums: &BTreeMap<String, Attribution>) -> Vec<Attribution> {
    let mut all: Vec<Attribution> = sums.values().cloned().collect();
    all.sort_by(|a, b| b.cost.total_cmp(&a.cost).then(a.source.cmp(&b.source)));
    all
}

/// What hooks and extensions added at the end of the conversation, as the cache writes of
/// the requests that first carried it (part of the session's cost, not on top of it): a
/// total line, then one per source; nothing when none added anything. The TUI's `/context`
/// and `strata stats` show these lines.
pub fn attribution_lines(attributed: &[Attribution]) -> Vec<String> {
    if attributed.is_empty() {
        return Vec::new();
    }
    let cost: f64 = attributed.iter().map(|a| a.cost).sum();
    let tokens: u64 = attributed.iter().map(|a| a.tokens).sum();
    let mut lines = vec![format!(
        "hooks and extensions: {tokens} tokens written to the cache, ${cost:.6} (included in the cost)"
    )];
    lines.extend(attributed.iter().map(|item| {
        format!(
            "  {}  {} tokens  ${:.6}",
            item.source, item.tokens, item.cost
        )
    }));
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_priced_as_cache_writes_a_quarter_token_per_character() {
        let one = Attribution::of("extension guard", &"x".repeat(4_001), 3.75);
        assert_eq!(one.tokens, 1_001);
        assert!((one.cost - 1_001.0 * 3.75 / 1e6).abs() < 1e-12);
        let merged = Attribution::merged(vec![
            Attribution::of("a", "abcd", 1.0),
            Attribution::of("b", "abcd", 1.0),
            Attribution::of("a", "abcdefgh", 1.0),
        ]);
        assert_eq!(
            merged
                .iter()
                .map(|m| (m.source.as_str(), m.tokens))
                .collect::<Vec<_>>(),
            vec![("a", 3), ("b", 1)]
        );
    }
}
