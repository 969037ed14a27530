//! Keeping the session's stored system prompt in step with what the agent would build now.
//!
//! The session holds a `system` snapshot and later patches; a context folds them. Comparing
//! that fold with freshly built sections and the live tool set gives the one `system` entry
//! to append: the whole snapshot when the chain has none, otherwise only what changed, or
//! nothing. So resuming a session sends the stored bytes, and a change found on disk arrives
//! as a patch at the end.

use std::collections::BTreeMap;

use serde_json::Value;
use strata_context::Context;
use strata_session::ToolDefinition;

use crate::prompt::SectionTexts;

/// A `system` entry to append.
#[derive(Debug, Clone, PartialEq)]
pub struct SystemUpdate {
    /// Whether this is the chain's first system entry (the snapshot) rather than a patch.
    pub snapshot: bool,
    /// Full new text of each section that changed (all sections for a snapshot); an empty
    /// text clears a section.
    pub sections: BTreeMap<String, String>,
    /// Tools declared by this entry (new, or redeclared with a changed definition).
    pub tools_added: Vec<ToolDefinition>,
    /// Tools no longer live.
    pub tools_removed: Vec<String>,
}

/// The entry that brings `context`'s system prompt and tool ledger to `sections` and
/// `tools`, or `None` when they already match.
pub fn plan(
    context: &Context,
    sections: &SectionTexts,
    tools: &[ToolDefinition],
) -> Option<SystemUpdate> {
    let has_snapshot = !matches!(context.system.source, strata_context::SnapshotSource::None);
    if !has_snapshot && context.tools.is_empty() {
        return Some(SystemUpdate {
            snapshot: true,
            sections: sections.clone(),
            tools_added: tools.to_vec(),
            tools_removed: Vec::new(),
        });
    }

    let current: BTreeMap<String, String> = context
        .system
        .folded()
        .into_iter()
        .map(|(name, text)| (name.as_str().to_owned(), text))
        .collect();
    let mut changed = BTreeMap::new();
    for (name, text) in sections {
        if current.get(name) != Some(text) {
            changed.insert(name.clone(), text.clone());
        }
    }
    for (name, text) in &current {
        if !sections.contains_key(name) && !text.is_empty() {
            changed.insert(name.clone(), String::new());
        }
    }

    let live: BTreeMap<&str, &Value> = context
        .tools
        .live()
        .map(|tool| (tool.name.as_str(), &tool.definition))
        .collect();
    let mut tools_added = Vec::new();
    for tool in tools {
        let wanted = serde_json::to_value(tool).unwrap_or(Value::Null);
        if live.get(tool.name.as_str()) != Some(&&wanted) {
            tools_added.push(tool.clone());
        }
    }
    let wanted_names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    let tools_removed: Vec<String> = live
        .keys()
        .filter(|name| !wanted_names.contains(name))
        .map(|name| (*name).to_owned())
        .collect();

    if changed.is_empty() && tools_added.is_empty() && tools_removed.is_empty() {
        return None;
    }
    Some(SystemUpdate {
        snapshot: !has_snapshot,
        sections: changed,
        tools_added,
        tools_removed,
    })
}
