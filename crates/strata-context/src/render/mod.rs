//! Render: a flattened [`Context`] becomes a provider-neutral [`Request`] in three chapters
//! (tools, system, messages) whose bytes change as late as possible.
//!
//! - Chapter 1, tools: every tool declared since the chain's start, in declaration order,
//!   never shortened or reordered; a removal is said in chapter 3. Where the provider defers
//!   tools, tools declared mid-chain are deferred and a placeholder follows the starting tools
//!   from the first request on.
//! - Chapter 2, system: the snapshot's sections in the fixed order.
//! - Chapter 3, messages: the conversation as Pi converts it, with each patch as a
//!   mid-conversation system message right after the first user message at or after the point
//!   it happened (never between a tool call and its result); patches placed at the same user
//!   message share one system message.
//!
//! Without mid-conversation system messages a patch is said in a marked reminder (a user
//! message, [`REMINDER_OPEN`]) right after the next user message, chapters 1 and 2 unchanged,
//! where the row says so (`Capabilities::system_reminders`, the table's default); otherwise
//! every patch folds into chapter 2 and the tools array is rewritten to the live set. Breakpoints follow the last tool, the system chapter
//! and the last message.
//!
//! [`render`] is pure; [`Renderer`] gives the same bytes while reusing the previous request's
//! serialized messages. [`Rendered::report`] and [`Renderer::render`] give a [`RenderReport`].

mod convert;
mod digest;
mod floor;
mod plan;
mod prompt;
mod renderer;
mod report;
mod tools;

use std::collections::HashSet;

use strata_provider::{
    Breakpoint, BreakpointPosition, CacheTtl, Capabilities, Dialect, Message, Request,
    ThinkingLevel, ToolDefinition,
};

use crate::flatten::Context;

pub use convert::{
    BRANCH_SUMMARY_PREFIX, BRANCH_SUMMARY_SUFFIX, COMPACTION_SUMMARY_PREFIX,
    COMPACTION_SUMMARY_SUFFIX, NO_RESULT_PROVIDED, bash_execution_text,
};
pub use digest::{Chapter, ChapterDigest, Divergence, Fnv1a, RequestBytes};
pub use floor::{CACHE_FLOOR_SECTION, EXPECTED_REQUESTS};
pub use renderer::Renderer;
pub use report::{RenderNote, RenderReport};
pub use tools::{
    DEFER_LOADING_FIELD, DEFERRED_PLACEHOLDER, DYNAMIC_TOOLS_RECENT_MESSAGES, deferred_placeholder,
    guessed_tools,
};

use plan::{Item, Plan};
use prompt::{Declarations, patches_message, system_chapter};
pub use prompt::{REMINDER_CLOSE, REMINDER_OPEN};
use tools::{ToolLayout, tools_chapter};

/// The line that opens chapter 1 when any tool is deferred: it stands for the tool-search
/// block the provider adds ahead of the tool definitions.
pub const DEFERRED_TOOLS_LINE: &[u8] = b"{\"deferred_tools\":true}\n";

/// How changes to the system prompt and the tool set are laid into a request.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum RenderPolicy {
    /// strata's: append-only tools, patches as mid-conversation system messages, folding only
    /// where the provider lacks them.
    #[default]
    Strata,
    /// What most harnesses do: the system prompt is rewritten in place on every change and
    /// withdrawn tools are cut from the array (for comparisons).
    Naive,
    /// What some harnesses do to send fewer tokens: per request, the tools array holds only the
    /// live tools the model is guessed to need (those called in the recent messages plus those
    /// the last user message names), recomputed every time (for comparisons).
    DynamicTools,
}

/// Settings of a render beyond the context and the capabilities.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RenderOptions {
    /// How changes are laid out.
    pub policy: RenderPolicy,
    /// Cache-routing key, usually the session id.
    pub cache_key: Option<String>,
    /// Output token cap.
    pub max_tokens: Option<u32>,
    /// Lifetime asked for at each breakpoint.
    pub ttl: CacheTtl,
    /// Whose shapes the request takes: [`Dialect::Pi`] for a session whose prompt Pi wrote,
    /// so the prefix Pi cached is read (the system chapter then goes as one block, as Pi
    /// joins it, and the adapter writes Pi's wire forms).
    pub dialect: Dialect,
}

impl RenderOptions {
    /// Defaults: strata's policy, no cache key, no cap, five-minute breakpoints.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets the cache key.
    pub fn cache_key(mut self, key: impl Into<String>) -> Self {
        self.cache_key = Some(key.into());
        self
    }

    /// Sets the output token cap.
    pub fn max_tokens(mut self, max_tokens: u32) -> Self {
        self.max_tokens = Some(max_tokens);
        self
    }

    /// Sets the breakpoint lifetime.
    pub fn ttl(mut self, ttl: CacheTtl) -> Self {
        self.ttl = ttl;
        self
    }

    /// Sets the policy.
    pub fn policy(mut self, policy: RenderPolicy) -> Self {
        self.policy = policy;
        self
    }

    /// Sets the dialect.
    pub fn dialect(mut self, dialect: Dialect) -> Self {
        self.dialect = dialect;
        self
    }
}

/// A rendered request with its canonical bytes and notes.
#[derive(Debug, Clone, PartialEq)]
pub struct Rendered {
    /// The request for the provider adapter.
    pub request: Request,
    /// Its canonical bytes, chapter by chapter.
    pub bytes: RequestBytes,
    /// What the caller should know about it.
    pub notes: Vec<RenderNote>,
}

impl Rendered {
    /// Lengths and hashes of the chapters and, given the previous request, where this one
    /// departs from it.
    pub fn report(&self, previous: Option<&Rendered>) -> RenderReport {
        let bytes = &self.bytes;
        let digests = [
            ChapterDigest::of(&bytes.tools),
            ChapterDigest::of(&bytes.system),
            ChapterDigest::of(&bytes.messages),
            ChapterDigest::of(&bytes.deferred),
        ];
        let previous = previous.map(|previous| &previous.bytes);
        let divergence = previous.map(|previous| bytes.divergence_from(previous));
        let deferred_changed = previous.is_some_and(|previous| previous.deferred != bytes.deferred);
        RenderReport::new(
            bytes,
            digests,
            deferred_changed,
            divergence,
            self.notes.clone(),
        )
    }
}

/// Renders `context` for a provider with `capabilities`, with default [`RenderOptions`].
pub fn render(context: &Context, capabilities: &Capabilities) -> Request {
    render_with(context, capabilities, &RenderOptions::default()).request
}

/// Renders `context` with `options`, keeping the canonical bytes and notes.
pub fn render_with(
    context: &Context,
    capabilities: &Capabilities,
    options: &RenderOptions,
) -> Rendered {
    let frame = Frame::new(context, capabilities, options);
    let mut request = frame.request_head(context, options);
    request.messages = frame
        .plan
        .items
        .iter()
        .map(|item| frame.message(context, capabilities, *item))
        .collect();
    request.breakpoints = breakpoints(&request, capabilities, options.ttl);
    let mut bytes = RequestBytes::default();
    tools_bytes(&request.tools, &mut bytes.tools, &mut bytes.deferred);
    for block in &request.system {
        digest::write_line(&mut bytes.system, block);
    }
    for message in &request.messages {
        digest::write_line(&mut bytes.messages, message);
    }
    Rendered {
        request,
        bytes,
        notes: frame.notes,
    }
}

/// Everything of one render except the converted messages: shared by [`render_with`] and
/// [`Renderer`] so both lay a context out identically.
pub(crate) struct Frame<'a> {
    /// Tools chapter.
    pub tools: Vec<ToolDefinition>,
    /// System chapter.
    pub system: Vec<strata_provider::SystemBlock>,
    /// Chapter 3's order.
    pub plan: Plan<'a>,
    /// Notes.
    pub notes: Vec<RenderNote>,
    declarations: Declarations<'a>,
}

impl<'a> Frame<'a> {
    pub fn new(context: &'a Context, capabilities: &Capabilities, options: &RenderOptions) -> Self {
        let (fold, layout) = match options.policy {
            RenderPolicy::Strata => {
                let fold = !capabilities.mid_conversation_system && !capabilities.system_reminders;
                (fold, ToolLayout::strata(capabilities, fold))
            }
            RenderPolicy::Naive => (true, ToolLayout::naive()),
            RenderPolicy::DynamicTools => {
                let fold = !capabilities.mid_conversation_system;
                (fold, ToolLayout::dynamic())
            }
        };
        let tools = tools_chapter(context, layout);
        let system = if fold {
            system_chapter(&context.system.folded())
        } else {
            system_chapter(&context.system.snapshot)
        };
        let mut system = match options.dialect {
            Dialect::Strata => system,
            Dialect::Pi => pi_system(system),
        };
        // Another harness's prefix keeps its bytes; the comparison policies do what others do.
        let floor = if options.policy == RenderPolicy::Strata && options.dialect == Dialect::Strata
        {
            floor::plan(&tools, &system, capabilities, options.ttl)
        } else {
            floor::Floor::Reached
        };
        if let floor::Floor::Padded { tokens, .. } = floor {
            system.push(floor::block(tokens));
        }
        let plan = plan::plan(context, !fold);
        let deferred: HashSet<&str> = context
            .tools
            .all()
            .iter()
            .filter(|tool| {
                tools
                    .iter()
                    .any(|shown| shown.defer_loading && shown.name == tool.name)
            })
            .map(|tool| tool.name.as_str())
            .collect();
        let mut notes = notes(context, fold, &plan, &deferred);
        match floor {
            floor::Floor::Reached => {}
            floor::Floor::Below { prefix, minimum } => {
                notes.push(RenderNote::BelowCacheMinimum { prefix, minimum });
            }
            floor::Floor::Padded {
                prefix,
                tokens,
                minimum,
            } => notes.push(RenderNote::CacheFloor {
                prefix,
                filler: tokens,
                minimum,
            }),
        }
        let declarations = Declarations::new(context, deferred);
        Self {
            tools,
            system,
            plan,
            notes,
            declarations,
        }
    }

    /// The request with chapters 1 and 2 and the settings, chapter 3 still empty.
    pub fn request_head(&self, context: &Context, options: &RenderOptions) -> Request {
        let model = context
            .model
            .as_ref()
            .map(|model| model.model_id.clone())
            .unwrap_or_default();
        let mut request = Request::new(model);
        request.tools = self.tools.clone();
        request.system = self.system.clone();
        request.cache_key = options.cache_key.clone();
        request.max_tokens = options.max_tokens;
        request.dialect = options.dialect;
        request.thinking = context
            .thinking_level
            .parse::<ThinkingLevel>()
            .unwrap_or_default();
        request
    }

    /// The message one plan item becomes.
    pub fn message(
        &self,
        context: &Context,
        capabilities: &Capabilities,
        item: Item<'_>,
    ) -> Message {
        match item {
            Item::Message(index) => {
                let message = &context.messages[index].message;
                convert::convert(message, context.model.as_ref())
                    // The plan holds only messages that are sent, which always convert.
                    .unwrap_or_else(|| Message {
                        role: strata_provider::Role::User,
                        content: Vec::new(),
                    })
            }
            Item::Patches { first, end } => patches_message(
                &context.system.patches,
                first..end,
                capabilities,
                &self.declarations,
            ),
            Item::MissingResult { call_id, .. } => convert::missing_result(call_id),
        }
    }
}

/// The system chapter as Pi sends it: one block, the sections joined by a blank line (Pi
/// 1.6 `getSystemMessageText`), none when there is no text.
fn pi_system(blocks: Vec<strata_provider::SystemBlock>) -> Vec<strata_provider::SystemBlock> {
    if blocks.len() < 2 {
        return blocks;
    }
    let text: Vec<&str> = blocks.iter().map(|block| block.text.as_str()).collect();
    vec![strata_provider::SystemBlock::text(text.join("\n\n"))]
}

/// Chapter 1's prefix lines and the deferred definitions.
pub(crate) fn tools_bytes(tools: &[ToolDefinition], prefix: &mut Vec<u8>, deferred: &mut Vec<u8>) {
    if tools.iter().any(|tool| tool.defer_loading) {
        prefix.extend_from_slice(DEFERRED_TOOLS_LINE);
    }
    for tool in tools {
        digest::write_line(
            if tool.defer_loading {
                &mut *deferred
            } else {
                &mut *prefix
            },
            tool,
        );
    }
}

/// After the last tool, after the system chapter, after the last message; trimmed to the
/// provider's limit keeping the latest. Where a slot is left, a fourth goes just before the
/// latest user prompt that tool results follow (the current task's, from its second request
/// on): every request of a task then refreshes the entry for "everything before this task",
/// so going back to retry or re-edit the prompt — a branch from before it — still reads it
/// after the short lifetime of the entries the task's earlier requests wrote. On the next
/// task's first request the slot stays there, before the task just finished: when that
/// request masks the finished task's outputs (observation masking, strata-compaction), the
/// rewrite starts at that task's prompt instead of at the chain's start, however many blocks
/// the task took (Anthropic looks back only about 20 blocks from a breakpoint). It costs
/// nothing: the tokens written are the same, only split at one more point.
pub(crate) fn breakpoints(
    request: &Request,
    capabilities: &Capabilities,
    ttl: CacheTtl,
) -> Vec<Breakpoint> {
    let mut positions = Vec::with_capacity(4);
    if !request.tools.is_empty() {
        positions.push(BreakpointPosition::Tools);
    }
    if !request.system.is_empty() {
        positions.push(BreakpointPosition::System);
    }
    let last = request.messages.len().checked_sub(1);
    if let Some(index) = last {
        positions.push(BreakpointPosition::Message { index });
    }
    let limit = if capabilities.uses_breakpoints() {
        usize::from(capabilities.max_breakpoints)
    } else {
        usize::MAX
    };
    if positions.len() > limit {
        positions.drain(..positions.len() - limit);
    }
    let before_prompt = task_start(&request.messages).and_then(|prompt| prompt.checked_sub(1));
    if let Some(index) = before_prompt
        && positions.len() < limit
        && Some(index) != last
    {
        let at = positions.len().saturating_sub(1);
        positions.insert(at, BreakpointPosition::Message { index });
    }
    positions
        .into_iter()
        .map(|position| Breakpoint { position, ttl })
        .collect()
}

/// Index of the latest user prompt that a tool result follows: where the latest task with
/// results started. The latest prompt when none does, or when that task opens the chain (no
/// message before it to put a breakpoint on).
fn task_start(messages: &[strata_provider::Message]) -> Option<usize> {
    let latest = messages.iter().rposition(is_prompt)?;
    let answered = messages[latest..].iter().any(carries_tool_result);
    if answered {
        return Some(latest);
    }
    messages[..latest]
        .iter()
        .enumerate()
        .rev()
        .filter(|(_, message)| is_prompt(message))
        .find(|(index, _)| messages[*index..latest].iter().any(carries_tool_result))
        .map(|(index, _)| index)
        .filter(|&index| index > 0)
        .or(Some(latest))
}

/// A message that carries a tool result (a user message on the wire).
fn carries_tool_result(message: &strata_provider::Message) -> bool {
    message
        .content
        .iter()
        .any(|block| matches!(block, strata_provider::ContentBlock::ToolResult { .. }))
}

/// A user message a person wrote (tool results travel in user messages too).
fn is_prompt(message: &strata_provider::Message) -> bool {
    message.role == strata_provider::Role::User && !carries_tool_result(message)
}

fn notes(
    context: &Context,
    fold: bool,
    plan: &Plan<'_>,
    deferred: &HashSet<&str>,
) -> Vec<RenderNote> {
    let patches = &context.system.patches;
    let mut notes = Vec::new();
    if fold && !patches.is_empty() {
        notes.push(RenderNote::PatchesFolded {
            patches: patches.len(),
        });
    }
    for index in &plan.pending {
        notes.push(RenderNote::PatchPending {
            entry_id: patches[*index].entry_id.clone(),
        });
    }
    let patch_ids = tools::patch_ids(context);
    if !fold {
        for tool in context.tools.all() {
            if patch_ids.contains(&tool.declared_by) && !deferred.contains(tool.name.as_str()) {
                notes.push(RenderNote::ToolAppended {
                    name: tool.name.clone(),
                    by: tool.declared_by.clone(),
                });
            }
        }
    }
    // A redefinition before the chain's start (folded into a compaction) rewrote nothing
    // this chain sends; one by a patch rewrote the array from that tool on.
    for tool in context.tools.all() {
        if let Some(by) = tool
            .redefined_by
            .as_ref()
            .filter(|by| patch_ids.contains(by))
        {
            notes.push(RenderNote::ToolRedefined {
                name: tool.name.clone(),
                by: by.clone(),
            });
        }
    }
    notes
}
