//! Branch summaries on tree navigation: what the abandoned path did, as context for the
//! position the user moves to. Stored as Pi's `branch_summary`, so Pi reads it too.

use std::collections::HashSet;

use strata_context::{ContextMessage, EntrySource};
use strata_provider::{Cost, Message, Model, Provider, Request, StreamOptions, SystemBlock, Usage};
use strata_session::{AgentMessage, Entry, EntryId};

use crate::compact::{CompactionFailure, summarize_once};
use crate::error::CompactionError;
use crate::estimate::estimate_message_tokens;
use crate::files::{FileLists, FileOps};
use crate::prompt::{self, BRANCH_SUMMARY_PREAMBLE};
use crate::serialize::serialize_conversation;

/// Output cap of a branch summary (Pi's).
pub const BRANCH_SUMMARY_MAX_TOKENS: u32 = 2048;
/// The summary Pi stores when the abandoned path holds no messages.
pub const NO_CONTENT: &str = "No content to summarize";

/// What a branch summary covers.
#[derive(Debug, Clone, PartialEq)]
pub struct BranchPreparation {
    /// The deepest entry on both the abandoned path and the target's path (`None`: the
    /// paths share no entry).
    pub common_ancestor: Option<EntryId>,
    /// The abandoned entries, from just below the common ancestor to the old leaf.
    pub entries: Vec<EntryId>,
    /// The messages summarized, oldest first: the newest that fit the budget (tool results
    /// left out, as Pi).
    pub messages: Vec<ContextMessage>,
    /// Files read and modified on the abandoned path, with earlier branch summaries' lists.
    pub file_ops: FileOps,
    /// Estimated tokens of `messages`.
    pub tokens: u64,
}

impl BranchPreparation {
    /// The accumulated file lists.
    pub fn file_lists(&self) -> FileLists {
        self.file_ops.lists()
    }
}

/// A finished branch summary: pass `summary` and `details` to `Session::branch_with_summary`.
#[derive(Debug, Clone, PartialEq)]
pub struct BranchSummary {
    /// Pi's preamble, the summary, and the file tags.
    pub summary: String,
    /// `{readFiles, modifiedFiles}`.
    pub details: FileLists,
    /// Tokens the request used (zero when no request was needed).
    pub usage: Usage,
    /// What it cost.
    pub cost: Cost,
}

/// Collects the path abandoned when moving from `old_leaf` to `target` (`None`: the root) and
/// picks its messages newest first within `token_budget` (0: no limit). An over-budget
/// compaction or branch summary still goes in while the total is under 90% of the budget.
pub fn prepare_branch_summary(
    source: &impl EntrySource,
    old_leaf: &EntryId,
    target: Option<&EntryId>,
    token_budget: u64,
) -> Result<BranchPreparation, CompactionError> {
    let old_path = source.path_from_root(old_leaf)?;
    let old_ids: HashSet<&EntryId> = old_path.iter().map(|(id, _)| id).collect();
    let common_ancestor = match target {
        Some(target) => source
            .path_from_root(target)?
            .into_iter()
            .rev()
            .map(|(id, _)| id)
            .find(|id| old_ids.contains(id)),
        None => None,
    };
    let start = common_ancestor
        .as_ref()
        .and_then(|ancestor| old_path.iter().position(|(id, _)| id == ancestor))
        .map_or(0, |index| index + 1);
    let entries: Vec<EntryId> = old_path[start..].iter().map(|(id, _)| id.clone()).collect();
    let loaded = entries
        .iter()
        .map(|id| source.load(id).map(|entry| (id, entry)))
        .collect::<Result<Vec<_>, _>>()?;

    let mut file_ops = FileOps::new();
    for (_, entry) in &loaded {
        if let Entry::BranchSummary(summary) = &entry.entry
            && summary.from_hook != Some(true)
            && let Some(details) = &summary.details
        {
            file_ops.add_details(details);
        }
    }
    let mut messages = Vec::new();
    let mut tokens = 0u64;
    for (id, entry) in loaded.iter().rev() {
        let Some(message) = &entry.message else {
            continue;
        };
        if matches!(message.as_ref(), AgentMessage::ToolResult(_)) {
            continue;
        }
        file_ops.add_message(message);
        let cost = estimate_message_tokens(message);
        if token_budget > 0 && tokens + cost > token_budget {
            let summary_entry =
                matches!(entry.entry, Entry::Compaction(_) | Entry::BranchSummary(_));
            if summary_entry && (tokens as f64) < token_budget as f64 * 0.9 {
                messages.push(ContextMessage {
                    entry_id: (*id).clone(),
                    message: message.clone(),
                });
                tokens += cost;
            }
            break;
        }
        messages.push(ContextMessage {
            entry_id: (*id).clone(),
            message: message.clone(),
        });
        tokens += cost;
    }
    messages.reverse();
    Ok(BranchPreparation {
        common_ancestor,
        entries,
        messages,
        file_ops,
        tokens,
    })
}

/// The transcript-form request of a branch summary. `instructions` is the user's own text:
/// appended as a focus, or replacing the default prompt when `replace` is set.
pub fn branch_summary_request(
    model_id: &str,
    preparation: &BranchPreparation,
    instructions: Option<&str>,
    replace: bool,
) -> Request {
    let conversation = serialize_conversation(
        preparation
            .messages
            .iter()
            .map(|message| message.message.as_ref()),
    );
    let mut request = Request::new(model_id);
    request.system = vec![SystemBlock::text(prompt::SUMMARIZER_SYSTEM_PROMPT)];
    request.messages = vec![Message::user_text(prompt::transcript_branch(
        &conversation,
        &prompt::branch_instructions(instructions, replace),
    ))];
    request.max_tokens = Some(BRANCH_SUMMARY_MAX_TOKENS);
    request
}

/// Summarizes the abandoned path. Without messages no request is made and the summary is
/// Pi's "No content to summarize". A failure carries what an answered but unusable request
/// (cut short, empty) used, since it is billed all the same.
pub async fn summarize_branch(
    provider: &dyn Provider,
    model: &Model,
    preparation: &BranchPreparation,
    options: &StreamOptions,
    instructions: Option<&str>,
    replace: bool,
) -> Result<BranchSummary, CompactionFailure> {
    let details = preparation.file_lists();
    if preparation.messages.is_empty() {
        return Ok(BranchSummary {
            summary: NO_CONTENT.to_owned(),
            details,
            usage: Usage::default(),
            cost: Cost::default(),
        });
    }
    let request = branch_summary_request(&model.id, preparation, instructions, replace);
    let (text, usage, cost) = summarize_once(provider, model, &request, options, "branch").await?;
    Ok(BranchSummary {
        summary: format!("{BRANCH_SUMMARY_PREAMBLE}{text}{}", details.tags()),
        details,
        usage,
        cost,
    })
}
