//! The order of chapter 3: context messages as Pi sends them, missing tool results where Pi
//! inserts them, and each system patch right after the first user message at or after the
//! point it happened; patches placed at the same user message share one system message, so
//! every system message directly follows a user message.

use std::collections::HashSet;

use strata_session::AgentMessage;

use crate::flatten::Context;
use crate::render::convert::{Kind, kind_of};
use crate::system::SystemPatch;

/// One message of chapter 3, before conversion.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Item<'a> {
    /// `context.messages[index]`, converted.
    Message(usize),
    /// `context.system.patches[first..end]`, the patches placed after one user message, as
    /// one mid-conversation system message stating each change in order.
    Patches { first: usize, end: usize },
    /// The error result for call `call_id` of the assistant turn `context.messages[turn]`.
    MissingResult { turn: usize, call_id: &'a str },
}

/// Chapter 3's order and the patches still waiting for a user message.
#[derive(Debug, Clone, Default)]
pub(crate) struct Plan<'a> {
    /// Messages in request order.
    pub items: Vec<Item<'a>>,
    /// Indices of patches with no user message after them yet.
    pub pending: Vec<usize>,
}

/// Whether a patch says anything (an empty one renders no message).
pub(crate) fn is_empty_patch(patch: &SystemPatch) -> bool {
    patch.sections.is_empty() && patch.tools_added.is_empty() && patch.tools_removed.is_empty()
}

/// Orders chapter 3. With `inline_patches` off (patches folded into chapter 2) no patch is
/// placed.
pub(crate) fn plan(context: &Context, inline_patches: bool) -> Plan<'_> {
    let patches = &context.system.patches;
    let mut items = Vec::with_capacity(context.messages.len() + patches.len());
    let mut calls = OpenCalls::default();
    let mut next_patch = 0;
    for (index, context_message) in context.messages.iter().enumerate() {
        let message: &AgentMessage = &context_message.message;
        match kind_of(message) {
            Kind::Skipped => {}
            Kind::DroppedAssistant => calls.close(&mut items),
            Kind::Assistant => {
                calls.close(&mut items);
                items.push(Item::Message(index));
                if let AgentMessage::Assistant(assistant) = message {
                    calls.open(index, assistant.tool_calls().map(|call| call.id.as_str()));
                }
            }
            Kind::ToolResult => {
                if let AgentMessage::ToolResult(result) = message {
                    calls.answered.insert(result.tool_call_id.as_str());
                }
                items.push(Item::Message(index));
            }
            Kind::User => {
                calls.close(&mut items);
                items.push(Item::Message(index));
                // The patches that happened at or before this point follow this user message,
                // together: a second system message would follow a system message.
                let first = next_patch;
                while inline_patches
                    && next_patch < patches.len()
                    && patches[next_patch].after_messages <= index + 1
                {
                    next_patch += 1;
                }
                if patches[first..next_patch]
                    .iter()
                    .any(|patch| !is_empty_patch(patch))
                {
                    items.push(Item::Patches {
                        first,
                        end: next_patch,
                    });
                }
            }
        }
    }
    calls.close(&mut items);
    let pending = if inline_patches {
        (next_patch..patches.len())
            .filter(|index| !is_empty_patch(&patches[*index]))
            .collect()
    } else {
        Vec::new()
    };
    Plan { items, pending }
}

/// Tool calls of the last assistant turn and the results seen for them (Pi's
/// `pendingToolCalls` / `existingToolResultIds`).
#[derive(Debug, Default)]
struct OpenCalls<'a> {
    turn: usize,
    calls: Vec<&'a str>,
    answered: HashSet<&'a str>,
}

impl<'a> OpenCalls<'a> {
    fn open(&mut self, turn: usize, calls: impl Iterator<Item = &'a str>) {
        self.turn = turn;
        self.calls.extend(calls);
        self.answered.clear();
    }

    /// Emits an error result for every open call without one, then forgets them.
    fn close(&mut self, items: &mut Vec<Item<'a>>) {
        for call_id in self.calls.drain(..) {
            if !self.answered.contains(call_id) {
                items.push(Item::MissingResult {
                    turn: self.turn,
                    call_id,
                });
            }
        }
        self.answered.clear();
    }
}
