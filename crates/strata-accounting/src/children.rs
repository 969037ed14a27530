//! What a session's delegated children (`task` calls) spent, read from their own files: the
//! one reading behind `strata stats` and rpc's `get_session_stats`, so both say the same.

use std::path::{Path, PathBuf};

use strata_provider::Catalog;
use strata_session::{Delegated, Session, Tree};

use crate::{RequestRecord, Totals, records};

/// One child's own requests, and its children's.
#[derive(Debug, Clone, PartialEq)]
pub struct ChildRecords {
    /// Its file.
    pub path: PathBuf,
    /// `fork` or `fresh`.
    pub start: String,
    /// The task's short description.
    pub description: String,
    /// Its own requests (a fork's copy of the parent's left out).
    pub records: Vec<RequestRecord>,
    /// Tokens its first request read from the cache the parent wrote (a fork's prefix).
    pub read_from_parent: u64,
    /// The sessions it delegated to in turn.
    pub children: Vec<ChildRecords>,
}

/// The children's figures added up, at every depth.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ChildrenTotals {
    /// Their requests.
    pub totals: Totals,
    /// Tokens forked children read from their parent's prefix.
    pub read_from_parents: u64,
}

/// A file's billed requests, priced from `catalog` where the file recorded no cost.
pub fn priced_records(tree: &Tree, catalog: &Catalog) -> Vec<RequestRecord> {
    let mut records = records(tree);
    for record in &mut records {
        if let Some(model) = catalog.model(&record.provider, &record.model) {
            record.price_if_missing(&model.prices);
        }
    }
    records
}

/// Keeps only the child's own requests: a fork holds a copy of the parent's path up to the
/// spawning entry, whose requests the parent already counted. Returns how many were left out
/// and what its first own request read from the parent's prefix (a fresh child reads none).
pub fn own_part(child: &Delegated, records: &mut Vec<RequestRecord>) -> (usize, u64) {
    let dropped = records
        .iter()
        .position(|r| r.id == child.entry_id)
        .map_or(0, |at| at + 1);
    records.drain(..dropped);
    let read = match (child.start.as_str(), records.first()) {
        ("fork", Some(first)) => first.usage.cache_read,
        _ => 0,
    };
    (dropped, read)
}

/// The children of the session at `parent`, each read like any session; a child that cannot
/// be read is left out and said in the returned warnings.
pub fn children(parent: &Path, catalog: &Catalog) -> (Vec<ChildRecords>, Vec<String>) {
    let mut warnings = Vec::new();
    let found = children_into(parent, catalog, &mut warnings);
    (found, warnings)
}

fn children_into(
    parent: &Path,
    catalog: &Catalog,
    warnings: &mut Vec<String>,
) -> Vec<ChildRecords> {
    let delegated = match strata_session::try_delegated_from(parent) {
        Ok(delegated) => delegated,
        Err(error) => {
            warnings.push(format!("the children of {}: {error}", parent.display()));
            return Vec::new();
        }
    };
    let mut found = Vec::new();
    for child in delegated {
        let mut records = match Session::open(child.path()) {
            Ok(opened) => priced_records(opened.session.tree(), catalog),
            Err(error) => {
                warnings.push(format!("{}: {error}, skipped", child.path().display()));
                continue;
            }
        };
        let (_, read_from_parent) = own_part(&child, &mut records);
        found.push(ChildRecords {
            path: child.path().to_path_buf(),
            children: children_into(child.path(), catalog, warnings),
            start: child.start,
            description: child.description,
            records,
            read_from_parent,
        });
    }
    found
}

impl ChildrenTotals {
    /// `children` and theirs, added up.
    pub fn of(children: &[ChildRecords]) -> Self {
        let mut all = Vec::new();
        let mut read_from_parents = 0;
        let mut stack: Vec<&ChildRecords> = children.iter().collect();
        while let Some(child) = stack.pop() {
            all.extend(child.records.iter());
            read_from_parents += child.read_from_parent;
            stack.extend(child.children.iter());
        }
        Self {
            totals: Totals::of(all),
            read_from_parents,
        }
    }
}
