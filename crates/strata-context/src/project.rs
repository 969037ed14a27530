//! ② project: context edits applied, then each chain entry becomes zero or more items.

use std::collections::{HashMap, HashSet};

use serde_json::{Map, Value};
use strata_session::{
    AgentMessage, EditEffect, Entry, EntryId, LazyMessage, Replacement, Role, SystemEntry,
    SystemMessage, ToolDefinition, counted_edits,
};

use crate::chain::{Chain, ModelRef};
use crate::ledger::ToolLedger;
use crate::system::{SectionName, Sections, SnapshotSource};

/// What one chain entry contributes to the context.
#[derive(Debug, Clone, PartialEq)]
pub enum Projection {
    /// A conversation message (as Pi's `buildSessionContext` gives it).
    Message(LazyMessage),
    /// A system message (or a strata `system` entry from before them): the snapshot if it is
    /// the chain's first, a patch otherwise.
    System(SystemChange),
    /// The chain's compaction checkpoint (`compaction.systemMessage`): already the chain's
    /// start, listed only so that Pi's message list holds it.
    Checkpoint(LazyMessage),
}

/// The sections and tool changes of one system message.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SystemChange {
    /// Full new text of each section it sets (a section Pi removes becomes empty).
    pub sections: Sections,
    /// Instruction text it adds (Pi's `content`); strata appends it to the `intro` section.
    pub instructions: String,
    /// Tool definitions it declares.
    pub tools_added: Vec<Value>,
    /// Names of tools it withdraws.
    pub tools_removed: Vec<String>,
    /// The Pi message it came from (`None` for strata's earlier `system` entries, which Pi
    /// does not read).
    pub message: Option<LazyMessage>,
}

impl SystemChange {
    /// The change a strata `system` entry from before Pi 1.x's system messages carries.
    pub fn of(entry: &SystemEntry) -> Self {
        Self {
            sections: sections_of(entry.sections.iter()),
            instructions: String::new(),
            tools_added: entry.tools_added.iter().map(tool_value).collect(),
            tools_removed: entry.tools_removed.clone(),
            message: None,
        }
    }

    /// The change a Pi system message carries; `message` is that message as stored.
    pub fn of_message(system: &SystemMessage, message: Option<LazyMessage>) -> Self {
        Self {
            sections: system
                .section_changes()
                .map(|(name, text)| (SectionName::new(name), text.unwrap_or_default()))
                .collect(),
            instructions: system.instructions(),
            tools_added: system.tools_added().iter().map(tool_value).collect(),
            tools_removed: system.tools_removed().map(str::to_owned).collect(),
            message,
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
    /// Entries a context edit on the chain omits or replaces (whether or not on the chain).
    pub excluded: HashSet<EntryId>,
    /// The resolved model.
    pub model: Option<ModelRef>,
    /// The resolved thinking level.
    pub thinking_level: String,
    /// Entries of the path left out because they do not parse as their type.
    pub skipped: Vec<strata_session::Diagnostic>,
}

/// Projects a chain: collects its context edits, then turns each entry into its items.
pub fn project(chain: &Chain) -> ProjectedChain {
    let edits = edits(chain);
    let start = chain_start(chain);
    let entries = chain
        .links
        .iter()
        .enumerate()
        .map(|(index, link)| {
            let items = project_entry(chain, index, &link.loaded);
            Projected {
                entry_id: link.id.clone(),
                items: match edits.get(&link.id) {
                    Some(edit) => edit.apply(items),
                    None => items,
                },
            }
        })
        .collect();
    let excluded = edits.into_keys().collect();
    ProjectedChain {
        leaf: chain.leaf.clone(),
        start,
        entries,
        excluded,
        model: chain.model.clone(),
        thinking_level: chain.thinking_level.clone(),
        skipped: chain.skipped.clone(),
    }
}

/// What the latest context edit on the chain does to one target.
#[derive(Debug, Clone, PartialEq)]
enum Edit {
    /// `replacement: null` (or strata's earlier `exclude`): no message.
    Omit,
    /// New content, role and metadata kept.
    Replace(Replacement),
}

impl Edit {
    /// The target's items after the edit, as Pi's `projectContextEntry` makes them.
    fn apply(&self, items: Vec<Projection>) -> Vec<Projection> {
        let Self::Replace(replacement) = self else {
            return Vec::new();
        };
        items
            .into_iter()
            .map(|item| match item {
                Projection::Message(message) => {
                    Projection::Message(replaced(&message, replacement))
                }
                other => other,
            })
            .collect()
    }
}

/// The latest edit of each target among the chain's edits (edits off the chain, or cut away
/// by its compaction, do not count: edits are branch-relative).
fn edits(chain: &Chain) -> HashMap<EntryId, Edit> {
    let mut edits = HashMap::new();
    // A group of edits cut short (a fold killed between its lines) counts for nothing.
    let on_chain = chain.links.iter().filter_map(|link| match link.entry() {
        Entry::ContextEdit(edit) => Some(&**edit),
        _ => None,
    });
    for edit in counted_edits(on_chain) {
        for (target, effect) in edit.effects() {
            let edit = match effect {
                EditEffect::Omit => Edit::Omit,
                EditEffect::Replace(replacement) => Edit::Replace(replacement.clone()),
            };
            edits.insert(target.clone(), edit);
        }
    }
    edits
}

/// `message` with its content replaced: user, assistant, tool-result and custom messages
/// take the new content (a string becomes one text block for assistant and tool results);
/// other roles are kept as they are.
fn replaced(message: &LazyMessage, replacement: &Replacement) -> LazyMessage {
    let wants_blocks = match message.get() {
        AgentMessage::User(_) | AgentMessage::Custom(_) => false,
        AgentMessage::Assistant(_) | AgentMessage::ToolResult(_) => true,
        _ => return message.clone(),
    };
    // Pi spreads the message it read, so its keys keep their order with `content` in its
    // place: a message still held as its line's JSON is edited as that JSON.
    let from_line = message
        .json()
        .and_then(|json| serde_json::from_str::<Map<String, Value>>(&json).ok());
    let in_line_order = from_line.is_some();
    let mut json = match from_line {
        Some(json) => json,
        None => match message.to_json() {
            Value::Object(json) => json,
            _ => return message.clone(),
        },
    };
    match &replacement.content {
        Some(Value::String(text)) if wants_blocks => {
            json.insert(
                "content".into(),
                serde_json::json!([{ "type": "text", "text": text }]),
            );
        }
        Some(content) => {
            json.insert("content".into(), content.clone());
        }
        None => {
            json.shift_remove("content");
        }
    }
    if in_line_order
        && let Ok(text) = serde_json::to_string(&json)
        && let Some(kept) = LazyMessage::from_json(message.role_kind(), &text)
    {
        return kept;
    }
    // Content this crate cannot type (or none at all) keeps the message as raw JSON, exactly
    // as Pi would send it on.
    LazyMessage::new(
        serde_json::from_value(Value::Object(json.clone())).unwrap_or(AgentMessage::Unknown(json)),
    )
}

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
        Entry::Compaction(compaction) => {
            let checkpoint = compaction.system_message.clone().map(|system| {
                Projection::Checkpoint(LazyMessage::new(AgentMessage::System(system)))
            });
            checkpoint
                .into_iter()
                .chain(loaded.message.iter().cloned().map(Projection::Message))
                .collect()
        }
        // System messages at or before the cut are folded into the chain's start (Pi drops
        // those of the kept range in favour of the compaction's checkpoint).
        Entry::System(_) if before_cut => Vec::new(),
        Entry::System(system) => vec![Projection::System(SystemChange::of(system))],
        // By the role the entry knows: a message kept as its line's JSON is not parsed here.
        Entry::Message(entry) if entry.message.role_kind() == Role::System => {
            match (&*entry.message, &loaded.message) {
                _ if before_cut => Vec::new(),
                (AgentMessage::System(system), message) => vec![Projection::System(
                    SystemChange::of_message(system, message.clone()),
                )],
                _ => Vec::new(),
            }
        }
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
            Entry::System(system) => Some((&link.id, SystemChange::of(system))),
            Entry::Message(entry) => match &*entry.message {
                AgentMessage::System(system) => {
                    Some((&link.id, SystemChange::of_message(system, None)))
                }
                _ => None,
            },
            _ => None,
        });
    if let Some(checkpoint) = &compaction.system_message {
        let change = SystemChange::of_message(checkpoint, None);
        start.source = SnapshotSource::Compaction(link.id.clone());
        start.sections = change.sections;
        with_instructions(&mut start.sections, &change.instructions);
        start.tools.declare(&change.tools_added, &link.id);
        return start;
    }
    match &compaction.system {
        Some(sections) => {
            start.source = SnapshotSource::Compaction(link.id.clone());
            start.sections = sections_of(sections.iter());
        }
        None => {
            for (_, system) in folded_systems.clone() {
                start.sections.extend(system.sections);
                with_instructions(&mut start.sections, &system.instructions);
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
                start
                    .tools
                    .remove(system.tools_removed.iter().map(String::as_str), id);
                start.tools.declare(&system.tools_added, id);
            }
        }
    }
    start
}

/// Appends Pi's instruction text to the `intro` section (Pi renders it before every section).
pub(crate) fn with_instructions(sections: &mut Sections, instructions: &str) {
    if instructions.is_empty() {
        return;
    }
    let intro = sections.entry(SectionName::new("intro")).or_default();
    if !intro.is_empty() {
        intro.push_str("\n\n");
    }
    intro.push_str(instructions);
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
