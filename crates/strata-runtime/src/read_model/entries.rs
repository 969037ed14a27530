//! The session's entries as Pi's session commands read them: the cursor-paged list
//! (`get_entries`), the tree they form (`get_tree`), the user messages a fork may start before
//! (`get_fork_messages`) and a compaction's result (`compact`), all from the tree in memory.

use std::collections::HashMap;

use strata_session::{AgentMessage, Entry, EntryId, EntryKind, Session, Tree};

use crate::query::{Answer, EntryNode, UserMessage};

/// Every entry after `since` (all when `None`), with the leaf; an unknown `since` is Pi's
/// `Entry not found` error. An entry that cannot be read is left out.
pub fn entries(session: &Session, since: Option<&EntryId>) -> Result<Answer, String> {
    let tree = session.tree();
    let mut all = tree.iter();
    if let Some(since) = since {
        if !tree.contains(since) {
            return Err(format!("Entry not found: {since}"));
        }
        // Skip up to and including the cursor.
        all.by_ref().find(|entry| entry.id() == since);
    }
    Ok(Answer::Entries {
        entries: all.filter_map(|entry| entry.entry().ok()).collect(),
        leaf: tree.leaf().cloned(),
    })
}

/// The entries as a forest: roots are entries without a parent or whose parent is missing;
/// children in append order. An entry that cannot be read is left out with its subtree.
pub fn entry_tree(session: &Session) -> Answer {
    let tree = session.tree();
    let index: HashMap<&str, usize> = tree
        .iter()
        .enumerate()
        .map(|(i, entry)| (entry.id().as_str(), i))
        .collect();
    let mut children: HashMap<usize, Vec<usize>> = HashMap::new();
    let mut roots = Vec::new();
    for (i, entry) in tree.iter().enumerate() {
        match entry.parent_id().and_then(|p| index.get(p.as_str())) {
            Some(parent) => children.entry(*parent).or_default().push(i),
            None => roots.push(i),
        }
    }
    Answer::EntryTree {
        roots: roots
            .into_iter()
            .filter_map(|root| node(tree, root, &children))
            .collect(),
        leaf: tree.leaf().cloned(),
    }
}

/// One node and its subtree, built with an explicit stack: a long session is a deep chain.
fn node(tree: &Tree, root: usize, children: &HashMap<usize, Vec<usize>>) -> Option<EntryNode> {
    // Post-order: a node is built once all its children are.
    let mut built: HashMap<usize, EntryNode> = HashMap::new();
    let mut stack = vec![(root, false)];
    while let Some((at, expanded)) = stack.pop() {
        let kids = children.get(&at).map(Vec::as_slice).unwrap_or(&[]);
        if !expanded {
            stack.push((at, true));
            stack.extend(kids.iter().rev().map(|&kid| (kid, false)));
            continue;
        }
        let Some(entry) = tree.get_index(at) else {
            continue;
        };
        let Ok(read) = entry.entry() else {
            continue;
        };
        let node = EntryNode {
            entry: read,
            children: kids.iter().filter_map(|kid| built.remove(kid)).collect(),
            label: entry.label().map(str::to_owned),
        };
        built.insert(at, node);
    }
    built.remove(&root)
}

/// Every user message with text in file order, all branches (Pi's `get_fork_messages`).
pub fn user_messages(session: &Session) -> Vec<UserMessage> {
    let mut found = Vec::new();
    for entry in session.tree().iter() {
        if !matches!(entry.kind(), EntryKind::Message(_)) {
            continue;
        }
        if let Ok(Entry::Message(message)) = entry.entry()
            && let AgentMessage::User(user) = &*message.message
        {
            let text = user.content.text_joined("");
            if !text.is_empty() {
                found.push(UserMessage {
                    entry_id: entry.id().clone(),
                    text,
                });
            }
        }
    }
    found
}

/// The compaction entry `id` (`None`: the newest in the file) with Pi's estimate of the
/// context right after it.
pub fn compaction(session: &Session, id: Option<&EntryId>) -> Result<Answer, String> {
    let tree = session.tree();
    let id = match id {
        Some(id) => id.clone(),
        None => tree
            .iter()
            .rev()
            .find(|entry| entry.kind() == EntryKind::Compaction)
            .map(|entry| entry.id().clone())
            .ok_or_else(|| "the session has no compaction".to_owned())?,
    };
    match tree.entry(&id) {
        Ok(Entry::Compaction(entry)) => Ok(Answer::Compaction {
            tokens_after: super::tokens_after_compaction(tree, &id),
            entry,
        }),
        _ => Err(format!("{id} is not a compaction entry")),
    }
}
