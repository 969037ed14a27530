//! `get_entries` and `get_tree` (Pi 1.x): the session file's entries in append order, as a
//! cursor-paged list or as the tree they form.

use std::collections::HashMap;
use std::path::Path;

use serde_json::{Value, json};
use strata_session::Tree;

/// Every entry (the header excluded) in append order, or only those after `since`; with the
/// leaf's id. An unknown `since` is an error, as in Pi.
pub fn entries(file: &Path, since: Option<&str>) -> Result<Value, String> {
    let session = crate::sessions::read(file)?;
    let tree = session.tree();
    let mut all = tree.iter();
    if let Some(since) = since {
        if !tree.contains(since) {
            return Err(format!("Entry not found: {since}"));
        }
        // Skip up to and including the cursor.
        all.by_ref().find(|entry| entry.id().as_str() == since);
    }
    let entries: Vec<Value> = all.filter_map(|entry| entry_json(&entry)).collect();
    Ok(json!({"entries": entries, "leafId": tree.leaf()}))
}

/// The entries as Pi's tree nodes `{entry, children, label?}`: roots are entries without a
/// parent or whose parent is missing; children in append order.
pub fn tree(file: &Path) -> Result<Value, String> {
    let session = crate::sessions::read(file)?;
    let tree = session.tree();
    let mut children: HashMap<usize, Vec<usize>> = HashMap::new();
    let mut roots = Vec::new();
    let index: HashMap<&str, usize> = tree
        .iter()
        .enumerate()
        .map(|(i, entry)| (entry.id().as_str(), i))
        .collect();
    for (i, entry) in tree.iter().enumerate() {
        match entry.parent_id().and_then(|p| index.get(p.as_str())) {
            Some(parent) => children.entry(*parent).or_default().push(i),
            None => roots.push(i),
        }
    }
    let nodes: Vec<Value> = roots
        .into_iter()
        .filter_map(|root| node(tree, root, &children))
        .collect();
    Ok(json!({"tree": nodes, "leafId": tree.leaf()}))
}

/// One node and its subtree, built with an explicit stack: a long session is a deep chain.
fn node(tree: &Tree, root: usize, children: &HashMap<usize, Vec<usize>>) -> Option<Value> {
    // Post-order: a node is built once all its children are.
    let mut built: HashMap<usize, Value> = HashMap::new();
    let mut stack = vec![(root, false)];
    while let Some((at, expanded)) = stack.pop() {
        let kids = children.get(&at).map(Vec::as_slice).unwrap_or(&[]);
        if !expanded {
            stack.push((at, true));
            stack.extend(kids.iter().rev().map(|&kid| (kid, false)));
            continue;
        }
        let entry = tree.get_index(at)?;
        let kids: Vec<Value> = kids.iter().filter_map(|kid| built.remove(kid)).collect();
        let mut value = json!({"entry": entry_json(&entry)?, "children": kids});
        if let Some(label) = entry.label() {
            value["label"] = json!(label);
        }
        built.insert(at, value);
    }
    built.remove(&root)
}

/// One entry as Pi persists it.
pub fn entry_json(entry: &strata_session::EntryRef<'_>) -> Option<Value> {
    entry
        .entry()
        .ok()
        .and_then(|e| serde_json::to_value(e).ok())
}
