//! Chapter 2 (the system prompt's sections) and the mid-conversation system message a patch
//! becomes in chapter 3.

use std::collections::{HashMap, HashSet};
use std::ops::Range;

use serde_json::Value;
use strata_provider::{Capabilities, ContentBlock, Message, Role, SystemBlock};
use strata_session::EntryId;

use crate::flatten::Context;
use crate::render::tools::{DEFER_LOADING_FIELD, from_value};
use crate::system::{Sections, SystemPatch};

/// One block per non-empty section, in the fixed section order.
pub(crate) fn system_chapter(sections: &Sections) -> Vec<SystemBlock> {
    sections
        .iter()
        .filter(|(_, text)| !text.is_empty())
        .map(|(name, text)| SystemBlock::section(name.as_str(), text.clone()))
        .collect()
}

/// When each tool was first declared: 0 for the chain's start, `n + 1` for patch `n`.
pub(crate) struct Declarations<'a> {
    order: HashMap<&'a str, usize>,
    deferred: HashSet<&'a str>,
}

impl<'a> Declarations<'a> {
    /// Reads the ledger; `deferred` names the tools the tools chapter defers.
    pub fn new(context: &'a Context, deferred: HashSet<&'a str>) -> Self {
        let patch_order: HashMap<&EntryId, usize> = context
            .system
            .patches
            .iter()
            .enumerate()
            .map(|(index, patch)| (&patch.entry_id, index + 1))
            .collect();
        let order = context
            .tools
            .all()
            .iter()
            .map(|tool| {
                (
                    tool.name.as_str(),
                    patch_order.get(&tool.declared_by).copied().unwrap_or(0),
                )
            })
            .collect();
        Self { order, deferred }
    }

    /// Whether `name` is in the tools chapter by the time patch `index` happens.
    fn declared_by_patch(&self, name: &str, index: usize) -> bool {
        self.order
            .get(name)
            .is_some_and(|order| *order <= index + 1)
    }
}

/// The one system message for `patches[range]` (the patches placed after one user message):
/// each patch's changes in patch order.
pub(crate) fn patches_message(
    patches: &[SystemPatch],
    range: Range<usize>,
    capabilities: &Capabilities,
    declarations: &Declarations<'_>,
) -> Message {
    let mut content = Vec::new();
    for index in range {
        if let Some(patch) = patches.get(index) {
            patch_content(patch, index, capabilities, declarations, &mut content);
        }
    }
    if capabilities.mid_conversation_system {
        return Message {
            role: Role::System,
            content,
        };
    }
    // The reminder fallback: the same change, said in a marked user message.
    let mut text = String::from(REMINDER_OPEN);
    for block in &content {
        if let ContentBlock::Text { text: part, .. } = block {
            text.push_str(part);
            text.push('\n');
        }
    }
    text.push_str(REMINDER_CLOSE);
    Message {
        role: Role::User,
        content: vec![ContentBlock::text(text)],
    }
}

/// Opens the reminder that says a system or tool change on a provider without
/// mid-conversation system messages (`Capabilities::system_reminders`).
pub const REMINDER_OPEN: &str = "<system-reminder>\nThis is a system message from the harness, not from the user: the \
     instructions or tools changed.\n";
/// Closes it.
pub const REMINDER_CLOSE: &str = "</system-reminder>";

/// What patch `index` changed, stated as a change, with `tool_removal` / `tool_addition`
/// blocks where the provider has them and text otherwise.
fn patch_content(
    patch: &SystemPatch,
    index: usize,
    capabilities: &Capabilities,
    declarations: &Declarations<'_>,
    content: &mut Vec<ContentBlock>,
) {
    for (name, text) in &patch.sections {
        let name = name.as_str();
        content.push(ContentBlock::text(if text.is_empty() {
            format!("System prompt update: the `{name}` section was removed.")
        } else {
            format!("System prompt update: the `{name}` section changed. It now reads:\n\n{text}")
        }));
    }
    // A removal can only name a tool the tools chapter already declares.
    let removed: Vec<String> = patch
        .tools_removed
        .iter()
        .filter(|name| declarations.declared_by_patch(name, index))
        .cloned()
        .collect();
    if !removed.is_empty() {
        if capabilities.tool_removal {
            content.push(ContentBlock::ToolRemoval { names: removed });
        } else {
            content.push(ContentBlock::text(format!(
                "Tool update: these tools are no longer available; do not call them: {}.",
                quoted_list(&removed)
            )));
        }
    }
    // A tool that asked for deferral is found by the provider's tool search where the row has
    // it: announcing it would load its definition inline (a `tool_reference`), which is what
    // deferring it saves.
    let searched = |tool: &Value| {
        capabilities.deferred_tools && tool.get(DEFER_LOADING_FIELD) == Some(&Value::Bool(true))
    };
    let added: Vec<(&str, &Value)> = patch
        .tools_added
        .iter()
        .filter(|tool| !searched(tool))
        .filter_map(|tool| Some((tool.get("name")?.as_str()?, tool)))
        .collect();
    if !added.is_empty() {
        if capabilities.tool_addition {
            let tools = added
                .iter()
                .map(|(name, tool)| from_value(name, tool, declarations.deferred.contains(name)))
                .collect();
            content.push(ContentBlock::ToolAddition { tools });
        } else {
            let names: Vec<String> = added.iter().map(|(name, _)| (*name).to_owned()).collect();
            content.push(ContentBlock::text(format!(
                "Tool update: these tools are now available: {}.",
                quoted_list(&names)
            )));
        }
    }
}

fn quoted_list(names: &[String]) -> String {
    names
        .iter()
        .map(|name| format!("`{name}`"))
        .collect::<Vec<_>>()
        .join(", ")
}
