//! Cut points: where the kept tail starts. Never at a tool result, so a tool call and its
//! result are never separated.

use std::collections::HashSet;

use strata_context::Link;
use strata_session::{AgentMessage, Entry, EntryId};

use crate::estimate::estimate_message_tokens;

/// Where a compaction cuts a range of path entries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CutPoint {
    /// Index of the first entry kept.
    pub first_kept: usize,
    /// Index of the user message that opened the turn the cut falls in, when the cut splits a
    /// turn (the cut is not at a user message).
    pub turn_start: Option<usize>,
}

impl CutPoint {
    /// Whether the cut falls inside a turn.
    pub fn is_split_turn(&self) -> bool {
        self.turn_start.is_some()
    }
}

/// Whether the kept tail may start at this entry: user, assistant, bashExecution, custom and
/// summary messages, `branch_summary` and `custom_message` entries; never a tool result.
pub fn is_valid_cut(entry: &Entry) -> bool {
    match entry {
        Entry::Message(message) => matches!(
            message.message,
            AgentMessage::User(_)
                | AgentMessage::Assistant(_)
                | AgentMessage::BashExecution(_)
                | AgentMessage::Custom(_)
                | AgentMessage::BranchSummary(_)
                | AgentMessage::CompactionSummary(_)
        ),
        Entry::BranchSummary(_) | Entry::CustomMessage(_) => true,
        _ => false,
    }
}

/// Whether an entry opens a turn: a user or bashExecution message, a branch summary or a
/// custom message.
fn starts_turn(entry: &Entry) -> bool {
    match entry {
        Entry::Message(message) => matches!(
            message.message,
            AgentMessage::User(_) | AgentMessage::BashExecution(_)
        ),
        Entry::BranchSummary(_) | Entry::CustomMessage(_) => true,
        _ => false,
    }
}

/// The turn start at or before `index`, not before `start`.
pub fn find_turn_start(entries: &[Link], index: usize, start: usize) -> Option<usize> {
    (start..=index)
        .rev()
        .find(|&i| entries.get(i).is_some_and(|link| starts_turn(link.entry())))
}

/// Pi's `findCutPoint` over `entries[start..end]`: walk back from the newest `message` entry
/// summing chars/4 estimates; once the sum reaches `keep_recent_tokens`, cut at the first valid
/// cut point at or after that entry (none reached: keep from the first valid one). The cut
/// then takes in the non-message entries right before it (settings, labels), stopping at a
/// message or a compaction. Messages in `excluded` are not in context and do not count.
pub fn find_cut_point(
    entries: &[Link],
    start: usize,
    end: usize,
    keep_recent_tokens: u64,
    excluded: &HashSet<EntryId>,
) -> CutPoint {
    let end = end.min(entries.len());
    let cut_points: Vec<usize> = (start..end)
        .filter(|&i| is_valid_cut(entries[i].entry()))
        .collect();
    let Some(&first_valid) = cut_points.first() else {
        return CutPoint {
            first_kept: start,
            turn_start: None,
        };
    };
    let mut cut = first_valid;
    let mut accumulated = 0u64;
    for i in (start..end).rev() {
        let Entry::Message(message) = entries[i].entry() else {
            continue;
        };
        if excluded.contains(&entries[i].id) {
            continue;
        }
        accumulated += estimate_message_tokens(&message.message);
        if accumulated >= keep_recent_tokens {
            if let Some(&at_or_after) = cut_points.iter().find(|&&c| c >= i) {
                cut = at_or_after;
            }
            break;
        }
    }
    while cut > start {
        match entries[cut - 1].entry() {
            Entry::Message(_) | Entry::Compaction(_) => break,
            _ => cut -= 1,
        }
    }
    let at_user = matches!(
        entries[cut].entry(),
        Entry::Message(message) if matches!(message.message, AgentMessage::User(_))
    );
    let turn_start = if at_user {
        None
    } else {
        find_turn_start(entries, cut, start)
    };
    CutPoint {
        first_kept: cut,
        turn_start,
    }
}
