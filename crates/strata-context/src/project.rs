//! ② project: context edits applied, then each chain entry becomes zero or more items.

use std::collections::HashSet;
use std::sync::Arc;

use serde_json::Value;
use strata_session::{AgentMessage, ContextAction, Entry, EntryId, SystemEntry, ToolDefinition};

use crate::chain::{Chain, ModelRef};
use crate::ledger::ToolLedger;
use crate::system::{SectionName, Sections, SnapshotSource};

/// What one chain entry contributes to the context.
#[derive(Debug, Clone, PartialEq)]
pub enum Projection {
    /// A conversation message (as Pi's `buildSessionContext` gives it).
    Message(Arc<AgentMessage>),
    /// A `system` entry: the snapshot if it is the chain's first, a patch otherwise.
    System(SystemChange),
}

/// The sections and tool changes of one `system` entry.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SystemChange {
    /// Full new text of each section it sets.
    pub sections: Sections,
    /// Tool definitions it declares.
    pub tools_added: Vec<Value>,
    /// Names of tools it withdraws.
    pub tools_removed: Vec<String>,
}

impl SystemChange {
    /// The change a `system` entry carries.
    pub fn of(entry: &SystemEntry) -> Self {
        Self {
            sections: sections_of(entry.sections.iter()),
            tools_added: entry.tools_added.iter().map(tool_value).collect(),
            tools_removed: entry.tools_removed.clone(),
        }
    }
}

/// One chain entry and what it contributes.
#[derive(Debug, Clone, PartialEq)]
pub struct Projected {
    /// The entry.
    pub entry_id: EntryId,
    /// Its contributions, in order (empty for settings, labels, excluded entries, …).
    pub items: Vec<Projection>,
}

/// The system state a chain starts from: what its compaction carries, or what the `system`
/// entries before the cut fold to when it carries nothing.
#[derive(Debug, Clone, PartialEq)]
pub struct ChainStart {
    /// Where the starting sections came from (`None` when the chain starts without any).
    pub source: SnapshotSource,
    /// The starting sections.
    pub sections: Sections,
    /// The tools live at the start.
    pub tools: ToolLedger,
}

impl Default for ChainStart {
    fn default() -> Self {
        Self {
            source: SnapshotSource::None,
            sections: Sections::new(),
            tools: ToolLedger::new(),
        }
    }
}

/// A projected chain: what ③ flatten consumes.
#[derive(Debug, Clone, PartialEq)]
pub struct ProjectedChain {
    /// The leaf the chain ends at.
    pub leaf: Option<EntryId>,
    /// The system state before the first entry.
    pub start: ChainStart,
    /// Each chain entry's contributions, in chain order.
    pub entries: Vec<Projected>,
    /// Entries excluded by context edits on the chain (whether or not on the chain).
    pub excluded: HashSet<EntryId>,
    /// The resolved model.
    pub model: Option<ModelRef>,
    /// The resolved thinking level.
    pub thinking_level: String,
}

/// Projects a chain: collects its context edits, then turns each entry into its items.
pub fn project(chain: &Chain) -> ProjectedChain {
    let excluded = exclusions(chain);
    let start = chain_start(chain);
    let entries = chain
        .links
        .iter()
        .enumerate()
        .map(|(index, link)| {
            let items = if excluded.contains(&link.id) {
                Vec::new()
            } else {
                project_entry(chain, index, &link.loaded)
            };
            Projected {
                entry_id: link.id.clone(),
                items,
            }
        })
        .collect();
    ProjectedChain {
        leaf: chain.leaf.clone(),
        start,
        entries,
        excluded,
        model: chain.model.clone(),
        thinking_level: chain.thinking_level.clone(),
    }
}

/// The targets of every `exclude` edit on the chain (edits off the chain do not count).
fn exclusions(chain: &Chain) -> HashSet<EntryId> {
    let mut excluded = HashSet::new();
    for link in &chain.links {
        if let Entry::ContextEdit(edit) = link.entry()
            && edit.action == ContextAction::Exclude
        {
            excluded.extend(edit.targets.iter().cloned());
        }
    }
    excluded
}

/// What entry `index` of the chain contributes (exclusions aside).
pub(crate) fn project_entry(
    chain: &Chain,
    index: usize,
    loaded: &crate::source::LoadedEntry,
) -> Vec<Projection> {
    let before_cut = chain.compacted && index <= chain.kept;
    match &loaded.entry {
        // Only the chain's own compaction becomes a summary; older ones in the kept span
        // produce nothing, as in Pi.
        Entry::Compaction(_) if !(chain.compacted && index == 0) => Vec::new(),
        // System entries at or before the cut are folded into the chain's start.
        Entry::System(_) if before_cut => Vec::new(),
        Entry::System(system) => vec![Projection::System(SystemChange::of(system))],
        _ => loaded
            .message
            .iter()
            .cloned()
            .map(Projection::Message)
            .collect(),
    }
}

fn chain_start(chain: &Chain) -> ChainStart {
    let Some(link) = chain.compaction() else {
        return ChainStart::default();
    };
    let Entry::Compaction(compaction) = link.entry() else {
        return ChainStart::default();
    };
    let mut start = ChainStart::default();
    let folded_systems = chain
        .before_cut_system
        .iter()
        .filter_map(|link| match link.entry() {
            Entry::System(system) => Some((&link.id, system)),
            _ => None,
        });
    match &compaction.system {
        Some(sections) => {
            start.source = SnapshotSource::Compaction(link.id.clone());
            start.sections = sections_of(sections.iter());
        }
        None => {
            for (_, system) in folded_systems.clone() {
                start.sections.extend(sections_of(system.sections.iter()));
                start.source = SnapshotSource::FoldedBeforeCompaction(link.id.clone());
            }
        }
    }
    match &compaction.tools {
        Some(tools) => {
            let definitions: Vec<Value> = tools.iter().map(tool_value).collect();
            start.tools.declare(&definitions, &link.id);
        }
        None => {
            for (id, system) in folded_systems {
                let definitions: Vec<Value> = system.tools_added.iter().map(tool_value).collect();
                start.tools.declare(&definitions, id);
                start
                    .tools
                    .remove(system.tools_removed.iter().map(String::as_str), id);
            }
        }
    }
    start
}

fn sections_of<'a>(sections: impl Iterator<Item = (&'a String, &'a String)>) -> Sections {
    sections
        .map(|(name, text)| (SectionName::new(name.clone()), text.clone()))
        .collect()
}

/// A tool definition as a JSON object (`name`, `description`, `parameters`, extra fields).
fn tool_value(tool: &ToolDefinition) -> Value {
    serde_json::to_value(tool).unwrap_or(Value::Null)
}
