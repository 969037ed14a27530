//! Task folding: a finished task older than the kept recent ones becomes its prompt and one
//! assistant message — a note of every call it made and what each showed, then its final
//! answer — through Pi 1.x `context_edit`s (the calls and results omitted, the answer's content
//! replaced; the session file keeps everything). Masking leaves a task's calls, its short
//! outputs and the stubs of its long ones in every later request; folding leaves a line a call.
//! Like masking it is priced: the reads saved over the requests still expected must exceed the
//! rewrite from the first folded message on. It is done as a task starts, when only the new
//! prompt follows the folded tasks and that rewrite is smallest.

use std::collections::HashMap;

use serde_json::Value;
use strata_context::{Context, ContextMessage};
use strata_session::{AgentMessage, AssistantMessage, ContentBlock, EntryId};

use crate::cost::CachePrices;
use crate::mask::{
    MaskEntry, MaskEntryKind, MaskingOutlook, MaskingSettings, STUB_OPENING, StubFacts,
    describe_call, joined_text, rewrite_start,
};

/// How a folded task's note opens: an assistant message whose text starts so is folded.
pub const FOLD_OPENING: &str = "[task folded to save context:";

/// Longest output a note repeats whole (characters, one line); a longer one is noted by its
/// line count and key lines, as a masking stub notes it.
const WHOLE_OUTPUT_CHARS: usize = 100;

/// One task to fold.
#[derive(Debug, Clone, PartialEq)]
pub struct FoldedTask {
    /// The task's messages between its prompt and its final answer: left out of later
    /// requests.
    pub omitted: Vec<EntryId>,
    /// The final answer's entry: its content becomes [`FoldedTask::note`].
    pub answer: EntryId,
    /// The note of the calls, then the answer's text.
    pub note: String,
}

/// The tasks worth folding now.
#[derive(Debug, Clone, PartialEq)]
pub struct FoldPlan {
    /// The tasks, oldest first.
    pub tasks: Vec<FoldedTask>,
    /// Tokens the plan removes from every later request.
    pub saved_tokens: u64,
    /// Tokens written again because the request changes from the first folded message on.
    pub rewritten_tokens: u64,
    /// USD the reads saved over the expected remaining requests.
    pub saved_usd: f64,
    /// USD of the rewrite (written instead of read once).
    pub rewrite_usd: f64,
}

/// The finished tasks before the kept recent ones worth folding now, with what the folds save
/// and what they cost to write again; `None` when folding is off, nothing pays, or the context
/// does not end at a task's prompt (a warm prefix is folded only as a task starts).
///
/// A task folds when it is a prompt, then assistant messages and tool results only, then a
/// final assistant message with text and no tool call. A task with anything else in it (a
/// custom or system message, a summary, a shell run) is left whole, and so is one whose
/// assistant messages carry a provider's own items (a hosted tool search's call and output):
/// the next request must carry those as they came.
///
/// `entries` are [`crate::mask_entries`] of `context` (the tokens and kinds masking plans
/// with), taken once for both planners.
pub fn plan_folding(
    context: &Context,
    entries: &[MaskEntry],
    settings: &MaskingSettings,
    prices: &CachePrices,
    outlook: MaskingOutlook,
) -> Option<FoldPlan> {
    if !settings.enabled
        || !settings.fold_tasks
        || outlook.remaining_requests == 0
        || entries.len() != context.messages.len()
    {
        return None;
    }
    // Folded as a task starts, when only its prompt follows what changes: later in the task
    // the rewrite would take the task's own messages too (a cold prefix is written anyway).
    let at_task_start = entries
        .last()
        .is_some_and(|entry| entry.kind == MaskEntryKind::UserPrompt);
    if !at_task_start && !outlook.prefix_cold {
        return None;
    }
    let prompts: Vec<usize> = entries
        .iter()
        .enumerate()
        .filter(|(_, entry)| entry.kind == MaskEntryKind::UserPrompt)
        .map(|(index, _)| index)
        .collect();
    let keep = settings.keep_recent_tasks.max(1);
    let kept_from = *prompts.get(prompts.len().checked_sub(keep)?)?;
    let mut tasks = Vec::new();
    let mut saved_tokens = 0u64;
    let mut first_change = None;
    for (position, &start) in prompts.iter().enumerate() {
        let end = prompts.get(position + 1).copied().unwrap_or(entries.len());
        if end > kept_from {
            break;
        }
        let Some((task, saved)) =
            fold_task(&entries[start + 1..end], &context.messages[start + 1..end])
        else {
            continue;
        };
        first_change.get_or_insert(start + 1);
        saved_tokens += saved;
        tasks.push(task);
    }
    let first = first_change?;
    let rewrite_from = rewrite_start(entries, first, outlook.lookback_blocks);
    let after: u64 = entries[rewrite_from..]
        .iter()
        .map(|entry| entry.tokens)
        .sum();
    let rewritten_tokens = after.saturating_sub(saved_tokens);
    let per_token = |usd_per_million: f64| usd_per_million / 1_000_000.0;
    let saved_usd =
        per_token(prices.read) * saved_tokens as f64 * outlook.remaining_requests as f64;
    let rewrite_usd = if outlook.prefix_cold {
        0.0
    } else {
        per_token(prices.rewrite_premium()) * rewritten_tokens as f64
    };
    (saved_usd > rewrite_usd).then_some(FoldPlan {
        tasks,
        saved_tokens,
        rewritten_tokens,
        saved_usd,
        rewrite_usd,
    })
}

/// The fold of one task's messages after its prompt (`entries`, with their `messages`), and
/// the tokens it saves; `None` when the task is not a finished run of calls (or is folded
/// already, or saves nothing).
fn fold_task(entries: &[MaskEntry], messages: &[ContextMessage]) -> Option<(FoldedTask, u64)> {
    let ((answer, steps), (final_message, step_messages)) =
        (entries.split_last()?, messages.split_last()?);
    let AgentMessage::Assistant(final_message) = final_message.message.as_ref() else {
        return None;
    };
    if steps.is_empty()
        || final_message.tool_calls().next().is_some()
        || carries_provider_items(final_message)
    {
        return None;
    }
    let answer_text = joined_text(&final_message.content, "\n\n");
    if answer_text.trim().is_empty() || answer_text.starts_with(FOLD_OPENING) {
        return None;
    }
    let mut calls: Vec<(&str, String)> = Vec::new();
    let mut outputs: HashMap<&str, String> = HashMap::new();
    for message in step_messages {
        match message.message.as_ref() {
            // A provider's own items (a hosted tool search's call and the definitions it
            // loaded) must reach the next request as they came: such a task stays whole.
            AgentMessage::Assistant(assistant) if carries_provider_items(assistant) => {
                return None;
            }
            AgentMessage::Assistant(assistant) => calls.extend(
                assistant
                    .tool_calls()
                    .map(|call| (call.id.as_str(), describe_call(&call.name, &call.arguments))),
            ),
            AgentMessage::ToolResult(result) => {
                let text = joined_text(&result.content, "\n");
                let shown = if result.is_error {
                    format!("error: {}", first_line(&text))
                } else {
                    showed(&text)
                };
                outputs.insert(result.tool_call_id.as_str(), shown);
            }
            _ => return None,
        }
    }
    if calls.is_empty() {
        return None;
    }
    let noted: Vec<String> = calls
        .iter()
        .map(|(id, call)| match outputs.get(id) {
            Some(shown) if !shown.is_empty() => format!("{call} → {shown}"),
            Some(_) => call.clone(),
            None => format!("{call} → no result"),
        })
        .collect();
    let note = format!(
        "{FOLD_OPENING} it called {}; call a tool again to see an output whole]\n\n{answer_text}",
        noted.join("; ")
    );
    let omitted_tokens: u64 = steps.iter().map(|step| step.tokens).sum();
    let note_tokens = (note.len() as u64).div_ceil(4);
    let saved = (omitted_tokens + answer.tokens).checked_sub(note_tokens)?;
    if saved == 0 {
        return None;
    }
    Some((
        FoldedTask {
            omitted: steps.iter().map(|step| step.id.clone()).collect(),
            answer: answer.id.clone(),
            note,
        },
        saved,
    ))
}

/// What a note says an output showed: a short one-line output whole, a masked output its
/// stub's words, a longer one its line count and key lines ([`StubFacts`]).
fn showed(text: &str) -> String {
    let text = text.trim();
    if let Some(stub) = text.strip_prefix(STUB_OPENING) {
        return format!("masked earlier:{}", stub.trim_end_matches(']'));
    }
    if !text.contains('\n') && text.chars().count() <= WHOLE_OUTPUT_CHARS {
        return text.to_owned();
    }
    let facts = StubFacts::of(text);
    let lines = format!("{} lines", facts.lines);
    if facts.key_lines.is_empty() {
        lines
    } else {
        format!("{lines}; it showed: {}", facts.key_lines.join(" | "))
    }
}

fn first_line(text: &str) -> String {
    let line = text.lines().next().unwrap_or("").trim();
    line.chars().take(WHOLE_OUTPUT_CHARS).collect()
}

/// Whether an assistant message holds blocks of the provider's own (kept whole as
/// `ContentBlock::Unknown`, replayed as they came).
fn carries_provider_items(message: &AssistantMessage) -> bool {
    message
        .content
        .iter()
        .any(|block| matches!(block, ContentBlock::Unknown(_)))
}

/// The replacement content of a folded answer, as the `context_edit` carries it.
pub fn fold_replacement(task: &FoldedTask) -> Value {
    Value::String(task.note.clone())
}
