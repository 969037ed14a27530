//! The system prompt of a chain: a snapshot of named sections and the patches appended later.

use std::cmp::Ordering;
use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::Value;
use strata_session::EntryId;

/// The fixed order of the known sections; unknown names follow, sorted. strata's own
/// sections and Pi 1.x's (`preamble`, `addendum`, `project_context`) in one order that keeps
/// each harness's: a Pi session's prompt reads as Pi joined it.
pub const SECTION_ORDER: [&str; 9] = [
    "preamble",
    "intro",
    "tools",
    "rules",
    "docs",
    "addendum",
    "project_context",
    "skills",
    "cwd",
];

/// A section name, ordered as the system prompt joins them.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
#[serde(transparent)]
pub struct SectionName(String);

impl SectionName {
    /// Wraps a section name.
    pub fn new(name: impl Into<String>) -> Self {
        Self(name.into())
    }

    /// The name as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Position among the known sections, or `None` for a name outside the fixed order.
    fn rank(&self) -> Option<usize> {
        SECTION_ORDER.iter().position(|known| *known == self.0)
    }
}

impl Ord for SectionName {
    fn cmp(&self, other: &Self) -> Ordering {
        match (self.rank(), other.rank()) {
            (Some(a), Some(b)) => a.cmp(&b),
            (Some(_), None) => Ordering::Less,
            (None, Some(_)) => Ordering::Greater,
            (None, None) => self.0.cmp(&other.0),
        }
    }
}

impl PartialOrd for SectionName {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// Section texts by name, iterated in the system prompt's order.
pub type Sections = BTreeMap<SectionName, String>;

/// A `system` entry after the snapshot: the sections and tools that changed at that point.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SystemPatch {
    /// The `system` entry that carries the patch.
    pub entry_id: EntryId,
    /// How many context messages precede the patch: it happened between message
    /// `after_messages - 1` and message `after_messages`.
    pub after_messages: usize,
    /// Full new text of each changed section.
    pub sections: Sections,
    /// Tools declared by the patch (full definitions).
    pub tools_added: Vec<Value>,
    /// Names of tools the patch withdraws.
    pub tools_removed: Vec<String>,
}

/// Where the system prompt's snapshot came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase", tag = "kind", content = "entryId")]
pub enum SnapshotSource {
    /// No `system` entry and no compaction snapshot on the chain (every Pi session).
    None,
    /// The first `system` entry on the chain.
    SystemEntry(EntryId),
    /// The `system` snapshot folded into the chain's compaction.
    Compaction(EntryId),
    /// `system` entries before a compaction that carries no snapshot, folded together.
    FoldedBeforeCompaction(EntryId),
}

/// The system prompt of a context: the snapshot sections and the patches, in chain order.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SystemPrompt {
    /// Where the snapshot came from.
    pub source: SnapshotSource,
    /// The snapshot's sections, in the fixed order.
    pub snapshot: Sections,
    /// Later `system` entries, in chain order.
    pub patches: Vec<SystemPatch>,
}

impl Default for SystemPrompt {
    fn default() -> Self {
        Self {
            source: SnapshotSource::None,
            snapshot: Sections::new(),
            patches: Vec::new(),
        }
    }
}

impl SystemPrompt {
    /// The snapshot's sections joined in order with blank lines (empty sections skipped).
    pub fn snapshot_text(&self) -> String {
        join_sections(&self.snapshot)
    }

    /// Every section with all patches applied: what the prompt says at the chain's end.
    pub fn folded(&self) -> Sections {
        let mut sections = self.snapshot.clone();
        for patch in &self.patches {
            for (name, text) in &patch.sections {
                sections.insert(name.clone(), text.clone());
            }
        }
        sections
    }
}

/// Joins sections in order with a blank line between them, skipping empty ones.
pub fn join_sections(sections: &Sections) -> String {
    let mut joined = String::new();
    for text in sections.values().filter(|text| !text.is_empty()) {
        if !joined.is_empty() {
            joined.push_str("\n\n");
        }
        joined.push_str(text);
    }
    joined
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sections_sort_in_fixed_order_then_by_name() {
        let names = [
            "zeta", "cwd", "alpha", "tools", "intro", "skills", "docs", "rules",
        ];
        let sections: Sections = names
            .iter()
            .map(|name| (SectionName::new(*name), (*name).to_owned()))
            .collect();
        let order: Vec<&str> = sections.keys().map(SectionName::as_str).collect();
        assert_eq!(
            order,
            [
                "intro", "tools", "rules", "docs", "skills", "cwd", "alpha", "zeta"
            ]
        );
    }

    #[test]
    fn folded_applies_patches_in_order() {
        let mut prompt = SystemPrompt::default();
        prompt
            .snapshot
            .insert(SectionName::new("intro"), "hi".into());
        prompt
            .snapshot
            .insert(SectionName::new("rules"), "r1".into());
        for (id, text) in [("p1", "r2"), ("p2", "r3")] {
            prompt.patches.push(SystemPatch {
                entry_id: EntryId::new(id),
                after_messages: 0,
                sections: [(SectionName::new("rules"), text.to_owned())]
                    .into_iter()
                    .collect(),
                tools_added: vec![],
                tools_removed: vec![],
            });
        }
        assert_eq!(join_sections(&prompt.folded()), "hi\n\nr3");
        assert_eq!(prompt.snapshot_text(), "hi\n\nr1");
    }
}
