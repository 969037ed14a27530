//! Chapter 1: the tools array built from the ledger.

use std::collections::HashSet;

use serde_json::{Value, json};
use strata_provider::{Capabilities, ToolDefinition};
use strata_session::{AgentMessage, EntryId};

use crate::flatten::Context;
use crate::ledger::LedgerTool;

/// Name of the deferred placeholder tool declared from the first request on.
pub const DEFERRED_PLACEHOLDER: &str = "__strata_deferred_placeholder__";

/// The placeholder's definition: a deferred tool that is never offered to the model, so that
/// the provider's tool-search block sits in the prefix before any real tool is deferred.
pub fn deferred_placeholder() -> ToolDefinition {
    ToolDefinition {
        name: DEFERRED_PLACEHOLDER.to_owned(),
        description: "Placeholder that keeps deferred tool loading cache-stable. Never call it."
            .to_owned(),
        parameters: json!({"type": "object", "properties": {}}),
        defer_loading: true,
    }
}

/// The field of a ledger definition that asks for on-demand loading from the tool's first
/// declaration on (set by the agent for tools whose `Tool::defer_loading` is true).
pub const DEFER_LOADING_FIELD: &str = "defer_loading";

/// Whether a ledger tool asked to be deferred from its first declaration.
fn asks_deferral(tool: &LedgerTool) -> bool {
    tool.definition.get(DEFER_LOADING_FIELD) == Some(&Value::Bool(true))
}

/// How the tools chapter is laid out for one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ToolLayout {
    /// Withdrawn tools leave the array (fallback fold, naive policy).
    pub live_only: bool,
    /// Tools declared mid-chain are deferred (sent with `defer_loading`).
    pub defer_later: bool,
    /// Tools that ask for it ([`DEFER_LOADING_FIELD`]) are deferred from their first
    /// declaration (the row has tool search).
    pub defer_asked: bool,
    /// The placeholder follows the tools the chain started with.
    pub placeholder: bool,
    /// Tools declared mid-chain stay out of the array: their `tool_addition` defines them
    /// (`Capabilities::inline_tools`).
    pub inline_later: bool,
    /// Only the tools [`guessed_tools`] names are shown (the dynamic-tools policy).
    pub guessed_only: bool,
}

impl ToolLayout {
    /// The layout strata uses for `capabilities`; `fold` when patches fold into chapter 2.
    pub fn strata(capabilities: &Capabilities, fold: bool) -> Self {
        let deferred = capabilities.deferred_tools;
        let inline = !fold
            && capabilities.inline_tools
            && capabilities.tool_addition
            && capabilities.mid_conversation_system;
        Self {
            live_only: fold,
            defer_later: !fold && deferred && capabilities.tool_addition && !inline,
            defer_asked: deferred,
            // Only later tools needed it, and they are defined inline.
            placeholder: deferred && capabilities.deferred_tool_placeholder && !inline,
            inline_later: inline,
            guessed_only: false,
        }
    }

    /// The dynamic-tools layout: live tools the model is guessed to need, nothing deferred.
    pub fn dynamic() -> Self {
        Self {
            guessed_only: true,
            ..Self::naive()
        }
    }

    /// The naive layout: live tools only, nothing deferred, no placeholder.
    pub fn naive() -> Self {
        Self {
            live_only: true,
            defer_later: false,
            defer_asked: false,
            placeholder: false,
            inline_later: false,
            guessed_only: false,
        }
    }
}

/// The ids of the chain's patches: a tool declared by one of them came mid-chain.
pub(crate) fn patch_ids(context: &Context) -> HashSet<&EntryId> {
    context
        .system
        .patches
        .iter()
        .map(|patch| &patch.entry_id)
        .collect()
}

/// The tools array: the chain's starting tools in ledger order, the placeholder, the starting
/// tools that asked to be deferred, then tools declared mid-chain in ledger order (deferred
/// where the layout says so, or where they asked and the layout allows it). A deferred tool
/// is never in the cached prefix, so a deferred server's tools cost nothing until searched.
pub(crate) fn tools_chapter(context: &Context, layout: ToolLayout) -> Vec<ToolDefinition> {
    let patches = patch_ids(context);
    let later = |tool: &LedgerTool| patches.contains(&tool.declared_by);
    let guessed: HashSet<String> = if layout.guessed_only {
        guessed_tools(context).into_iter().collect()
    } else {
        HashSet::new()
    };
    let shown = |tool: &&LedgerTool| {
        (!layout.live_only || tool.is_live())
            && (!layout.guessed_only || guessed.contains(&tool.name))
    };
    let asked = |tool: &LedgerTool| layout.defer_asked && asks_deferral(tool);
    let all = context.tools.all();
    let mut tools: Vec<ToolDefinition> = all
        .iter()
        .filter(|tool| !later(tool) && !asked(tool))
        .filter(shown)
        .map(|tool| definition(tool, false))
        .collect();
    // The provider's tool search, before anything deferred, from the first request of a
    // chain that defers tools for search (a deferred MCP server's): the model finds them
    // with it. A search-deferred tool that first appears mid-chain brings it in then.
    if all.iter().any(asked) {
        tools.push(ToolDefinition::tool_search());
    }
    // Also for a chain that starts with no tools: its first deferred tool must not move
    // the tools chapter's first byte.
    if layout.placeholder {
        tools.push(deferred_placeholder());
    }
    tools.extend(
        all.iter()
            .filter(|tool| !later(tool) && asked(tool))
            .filter(shown)
            .map(|tool| definition(tool, true)),
    );
    // A tool defined inline cannot be defined again in the same request, so one redefined
    // mid-chain goes to the chapter with its latest definition (rewritten from there, as
    // without inline definitions) and its additions refer to it.
    let inline =
        |tool: &LedgerTool| layout.inline_later && !asked(tool) && tool.redefined_by.is_none();
    tools.extend(
        all.iter()
            .filter(|tool| later(tool) && !inline(tool))
            .filter(shown)
            .map(|tool| definition(tool, layout.defer_later || asked(tool))),
    );
    tools
}

/// How many of the last context messages the dynamic-tools policy looks at for tool calls.
pub const DYNAMIC_TOOLS_RECENT_MESSAGES: usize = 8;

/// The live tools the dynamic-tools policy sends, in ledger order: those called in the last
/// [`DYNAMIC_TOOLS_RECENT_MESSAGES`] messages, those the last user message names, and the
/// first live tool when nothing else is guessed (a request always offers one tool).
pub fn guessed_tools(context: &Context) -> Vec<String> {
    let recent = context
        .messages
        .len()
        .saturating_sub(DYNAMIC_TOOLS_RECENT_MESSAGES);
    let mut called: HashSet<&str> = HashSet::new();
    for message in &context.messages[recent..] {
        if let AgentMessage::Assistant(assistant) = message.message.as_ref() {
            called.extend(assistant.tool_calls().map(|call| call.name.as_str()));
        }
    }
    let last_user = context
        .messages
        .iter()
        .rev()
        .find_map(|message| match message.message.as_ref() {
            AgentMessage::User(user) => Some(user.content.text_joined(" ")),
            _ => None,
        })
        .unwrap_or_default();
    let named = |name: &str| {
        last_user
            .split(|c: char| !(c.is_alphanumeric() || c == '_' || c == '-'))
            .any(|word| word == name)
    };
    let mut guessed: Vec<String> = context
        .tools
        .live()
        .filter(|tool| called.contains(tool.name.as_str()) || named(&tool.name))
        .map(|tool| tool.name.clone())
        .collect();
    if guessed.is_empty()
        && let Some(first) = context.tools.live().next()
    {
        guessed.push(first.name.clone());
    }
    guessed
}

/// A ledger definition (`name`, `description`, `parameters`, extra fields) as a request tool;
/// fields the neutral request has no place for are left to the definition's owner.
pub(crate) fn definition(tool: &LedgerTool, defer_loading: bool) -> ToolDefinition {
    from_value(&tool.name, &tool.definition, defer_loading)
}

/// A declared definition as a request tool.
pub(crate) fn from_value(name: &str, value: &Value, defer_loading: bool) -> ToolDefinition {
    ToolDefinition {
        name: name.to_owned(),
        description: value
            .get("description")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned(),
        parameters: value
            .get("parameters")
            .filter(|parameters| !parameters.is_null())
            .cloned()
            .unwrap_or_else(|| json!({"type": "object", "properties": {}})),
        defer_loading,
    }
}
