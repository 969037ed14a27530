//! ③ flatten: one ordered message list, the system prompt, the tool ledger, model and thinking.

use serde::Serialize;
use strata_session::{EntryId, LazyMessage};

use crate::chain::ModelRef;
use crate::ledger::ToolLedger;
use crate::project::{ProjectedChain, Projection, SystemChange, with_instructions};
use crate::system::{SnapshotSource, SystemPatch, SystemPrompt};

/// A message of the context and the entry it came from.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ContextMessage {
    /// The entry that produced the message.
    pub entry_id: EntryId,
    /// The message, in Pi's shape.
    #[serde(serialize_with = "serialize_shared")]
    pub message: LazyMessage,
}

fn serialize_shared<S: serde::Serializer>(
    message: &LazyMessage,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    message.as_ref().serialize(serializer)
}

/// A Pi system message of the context and where it stands among the messages.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PlacedSystemMessage {
    /// The entry that produced it (a system message, or the chain's compaction).
    pub entry_id: EntryId,
    /// How many context messages precede it.
    pub after_messages: usize,
    /// The message, in Pi's shape.
    #[serde(serialize_with = "serialize_shared")]
    pub message: LazyMessage,
}

/// Everything a request is built from: what `render` consumes.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Context {
    /// The leaf the context was built for (`None`: before the first entry).
    pub leaf: Option<EntryId>,
    /// The conversation, in order.
    pub messages: Vec<ContextMessage>,
    /// The system prompt: snapshot sections and later patches with their positions.
    pub system: SystemPrompt,
    /// Every tool declared since the chain's start, with which are live.
    pub tools: ToolLedger,
    /// The resolved model (last `model_change` or assistant message on the path).
    pub model: Option<ModelRef>,
    /// The resolved thinking level (last `thinking_level_change` on the path, else `"off"`).
    pub thinking_level: String,
    /// Pi's system messages in the context (the compaction's checkpoint first), with their
    /// places: what Pi's `buildSessionContext` lists among the messages. strata's own view of
    /// them is `system` and `tools`.
    pub system_messages: Vec<PlacedSystemMessage>,
    /// Entries of the path left out because they are not valid entries of their type (file,
    /// line, field): the context is built without them, as without a torn line. Callers
    /// report them; the file is never rewritten.
    #[serde(skip)]
    pub skipped: Vec<strata_session::Diagnostic>,
}

impl Context {
    /// A context with no messages, no system prompt and no tools.
    pub fn empty(leaf: Option<EntryId>) -> Self {
        Self {
            leaf,
            messages: Vec::new(),
            system: SystemPrompt::default(),
            tools: ToolLedger::new(),
            model: None,
            thinking_level: crate::chain::DEFAULT_THINKING_LEVEL.to_owned(),
            system_messages: Vec::new(),
            skipped: Vec::new(),
        }
    }

    /// Adds one entry's contribution at the end: messages appended, a `system` change taken
    /// as the snapshot when none exists yet, as a patch otherwise.
    pub(crate) fn push(&mut self, entry_id: &EntryId, item: Projection) {
        match item {
            Projection::Message(message) => {
                self.messages.push(ContextMessage {
                    entry_id: entry_id.clone(),
                    message,
                });
            }
            Projection::System(change) => self.push_system(entry_id, change),
            Projection::Checkpoint(message) => self.place_system(entry_id, message),
        }
    }

    fn place_system(&mut self, entry_id: &EntryId, message: LazyMessage) {
        self.system_messages.push(PlacedSystemMessage {
            entry_id: entry_id.clone(),
            after_messages: self.messages.len(),
            message,
        });
    }

    fn push_system(&mut self, entry_id: &EntryId, mut change: SystemChange) {
        if let Some(message) = change.message.take() {
            self.place_system(entry_id, message);
        }
        // Pi withdraws before it declares: a tool removed and added again is redefined.
        self.tools
            .remove(change.tools_removed.iter().map(String::as_str), entry_id);
        self.tools.declare(&change.tools_added, entry_id);
        if !change.instructions.is_empty() {
            let intro = crate::system::SectionName::new("intro");
            let mut sections = self.system.folded();
            if let Some(text) = change.sections.get(&intro) {
                sections.insert(intro.clone(), text.clone());
            }
            with_instructions(&mut sections, &change.instructions);
            if let Some(text) = sections.remove(&intro) {
                change.sections.insert(intro, text);
            }
        }
        if self.system.source == SnapshotSource::None {
            self.system.source = SnapshotSource::SystemEntry(entry_id.clone());
            self.system.snapshot = change.sections;
        } else {
            self.system.patches.push(SystemPatch {
                entry_id: entry_id.clone(),
                after_messages: self.messages.len(),
                sections: change.sections,
                tools_added: change.tools_added,
                tools_removed: change.tools_removed,
            });
        }
    }
}

/// Flattens a projected chain into a [`Context`].
pub fn flatten(projected: ProjectedChain) -> Context {
    let mut context = Context::empty(projected.leaf);
    context.model = projected.model;
    context.thinking_level = projected.thinking_level;
    context.skipped = projected.skipped;
    context.system.source = projected.start.source;
    context.system.snapshot = projected.start.sections;
    context.tools = projected.start.tools;
    for projected_entry in projected.entries {
        for item in projected_entry.items {
            context.push(&projected_entry.entry_id, item);
        }
    }
    context
}
