//! What a compaction will summarize and keep, read from the session tree.

use std::collections::HashSet;

use strata_context::{ContextMessage, EntrySource, Link};
use strata_session::{AgentMessage, EditEffect, Entry, EntryId, EntryKind};

use crate::cut::find_cut_point;
use crate::error::CompactionError;
use crate::estimate::{estimate_context_tokens, estimate_message_tokens};
use crate::files::{FileLists, FileOps};
use crate::serialize::serialize_conversation;
use crate::settings::CompactionSettings;

/// Longest quote of a boundary message in a cache-friendly instruction, in characters.
const EXCERPT_CHARS: usize = 240;

/// Everything a compaction needs, decided before any request is made.
#[derive(Debug, Clone, PartialEq)]
pub struct Preparation {
    /// The first entry kept after the summary.
    pub first_kept_entry_id: EntryId,
    /// Messages the history summary covers, oldest first: from the previous compaction's
    /// first kept entry (so its kept tail is never lost) up to the cut, or up to the turn
    /// start when the turn is split.
    pub messages_to_summarize: Vec<ContextMessage>,
    /// The early part of a split turn: from the turn start up to the cut.
    pub turn_prefix: Vec<ContextMessage>,
    /// Whether the cut falls inside a turn.
    pub is_split_turn: bool,
    /// Estimated context tokens before compaction.
    pub tokens_before: u64,
    /// The previous compaction's summary, to be updated.
    pub previous_summary: Option<String>,
    /// Files read and modified: the previous compaction's lists, the lists of the branch
    /// summaries before the cut, and what the summarized messages and the turn prefix show.
    pub file_ops: FileOps,
    /// The opening of the first kept message, as the transcript would show it.
    pub kept_from_excerpt: String,
    /// The opening of the split turn's first message.
    pub turn_start_excerpt: Option<String>,
}

impl Preparation {
    /// The accumulated file lists.
    pub fn file_lists(&self) -> FileLists {
        self.file_ops.lists()
    }

    /// Estimated tokens of what the summary replaces: the summarized messages, the turn
    /// prefix and the previous summary.
    pub fn replaced_tokens(&self) -> u64 {
        let messages: u64 = self
            .messages_to_summarize
            .iter()
            .chain(&self.turn_prefix)
            .map(|message| estimate_message_tokens(&message.message))
            .sum();
        let previous = self
            .previous_summary
            .as_deref()
            .map_or(0, |summary| crate::estimate::js_len(summary).div_ceil(4));
        messages + previous
    }
}

fn excerpt(message: &AgentMessage) -> String {
    let text = serialize_conversation([message]);
    let single_line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let mut excerpt: String = single_line.chars().take(EXCERPT_CHARS).collect();
    if single_line.chars().count() > EXCERPT_CHARS {
        excerpt.push('…');
    }
    excerpt
}

fn message_of(link: &Link) -> Option<ContextMessage> {
    // Older compactions are never summarized again: their summary is the previous summary.
    if matches!(link.entry(), Entry::Compaction(_)) {
        return None;
    }
    // System messages are the prompt, not conversation: the compaction's checkpoint carries
    // them, so they are neither summarized nor kept as messages.
    link.loaded
        .message
        .as_ref()
        .filter(|message| !matches!(message.as_ref(), AgentMessage::System(_)))
        .map(|message| ContextMessage {
            entry_id: link.id.clone(),
            message: message.clone(),
        })
}

/// Decides what compacting the path ending at `leaf` summarizes and keeps. `None` when there
/// is nothing to do: the leaf is a compaction already, or nothing lies before the cut.
pub fn prepare(
    source: &impl EntrySource,
    leaf: &EntryId,
    settings: &CompactionSettings,
) -> Result<Option<Preparation>, CompactionError> {
    let path = source.path_from_root(leaf)?;
    if path
        .last()
        .is_some_and(|(_, kind)| *kind == EntryKind::Compaction)
    {
        return Ok(None);
    }
    let previous_index = path
        .iter()
        .rposition(|(_, kind)| *kind == EntryKind::Compaction);
    let mut previous_summary = None;
    let mut file_ops = FileOps::new();
    let mut boundary_start = 0;
    if let Some(index) = previous_index {
        let loaded = source.load(&path[index].0)?;
        if let Entry::Compaction(previous) = &loaded.entry {
            previous_summary = Some(previous.summary.clone());
            if previous.from_hook != Some(true)
                && let Some(details) = &previous.details
            {
                file_ops.add_details(details);
            }
            // From the previous compaction's first kept entry: its kept tail is summarized
            // now, never dropped (Pi's bug #2608 started after the compaction instead).
            boundary_start = previous
                .first_kept_entry_id
                .as_ref()
                .and_then(|first| path[..index].iter().position(|(id, _)| id == first))
                .unwrap_or(index + 1);
        }
    }
    let entries: Vec<Link> = path[boundary_start..]
        .iter()
        .map(|(id, _)| {
            Ok(Link {
                id: id.clone(),
                loaded: source.load(id)?,
            })
        })
        .collect::<Result<_, CompactionError>>()?;
    // Edits of a group cut short count for nothing, as in the context.
    let edits =
        strata_session::counted_edits(entries.iter().filter_map(|link| match link.entry() {
            Entry::ContextEdit(edit) => Some(&**edit),
            _ => None,
        }));
    let excluded: HashSet<EntryId> = edits
        .into_iter()
        .flat_map(|edit| {
            edit.effects()
                .into_iter()
                .filter(|(_, effect)| *effect == EditEffect::Omit)
                .map(|(target, _)| target.clone())
                .collect::<Vec<_>>()
        })
        .collect();

    let cut = find_cut_point(
        &entries,
        0,
        entries.len(),
        settings.keep_recent_tokens,
        &excluded,
    );
    let Some(first_kept) = entries.get(cut.first_kept) else {
        return Ok(None);
    };
    let history_end = cut.turn_start.unwrap_or(cut.first_kept);
    let collect = |range: std::ops::Range<usize>| -> Vec<ContextMessage> {
        entries[range]
            .iter()
            .filter(|link| !excluded.contains(&link.id))
            .filter_map(message_of)
            .collect()
    };
    let messages_to_summarize = collect(0..history_end);
    let turn_prefix = match cut.turn_start {
        Some(start) => collect(start..cut.first_kept),
        None => Vec::new(),
    };
    if messages_to_summarize.is_empty() && turn_prefix.is_empty() {
        return Ok(None);
    }
    // Branch summaries being folded in carry the lists of the branches they summarize (Pi's
    // rule for them: its own, not an extension's `fromHook` ones; modified files as edited).
    for link in entries[..cut.first_kept]
        .iter()
        .filter(|link| !excluded.contains(&link.id))
    {
        if let Entry::BranchSummary(summary) = link.entry()
            && summary.from_hook != Some(true)
            && let Some(details) = &summary.details
        {
            file_ops.add_details(details);
        }
    }
    for message in messages_to_summarize.iter().chain(&turn_prefix) {
        file_ops.add_message(&message.message);
    }
    let kept_from_excerpt = entries[cut.first_kept..]
        .iter()
        .filter(|link| !excluded.contains(&link.id))
        .find_map(message_of)
        .map(|message| excerpt(&message.message))
        .unwrap_or_default();
    let turn_start_excerpt = cut
        .turn_start
        .and_then(|start| entries[start].loaded.message.as_deref().map(excerpt));
    let context = strata_context::build(source, Some(leaf))?;
    Ok(Some(Preparation {
        first_kept_entry_id: first_kept.id.clone(),
        is_split_turn: cut.is_split_turn(),
        messages_to_summarize,
        turn_prefix,
        tokens_before: estimate_context_tokens(&context),
        previous_summary,
        file_ops,
        kept_from_excerpt,
        turn_start_excerpt,
    }))
}
