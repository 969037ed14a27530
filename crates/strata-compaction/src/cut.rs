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
            *message.message,
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
            *message.message,
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
        if excluded.contains(&entries[i].id) || matches!(*message.message, AgentMessage::System(_))
        {
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
            // A system message before the cut is taken in like a settings entry.
            Entry::Message(message) if matches!(*message.message, AgentMessage::System(_)) => {
                cut -= 1;
            }
            Entry::Message(_) | Entry::Compaction(_) => break,
            _ => cut -= 1,
        }
    }
    // Judged by the first message at or after the cut: settings entries the cut took in
    // before a user message do not make a split turn (Pi looks at the entry itself and would
    // summarize a whole turn as a "prefix").
    let at_user = entries[cut..end]
        .iter()
        .find(|link| matches!(link.entry(), Entry::Message(_)) || is_valid_cut(link.entry()))
        .is_some_and(|link| {
            matches!(
                link.entry(),
                Entry::Message(message) if matches!(*message.message, AgentMessage::User(_))
            )
        });
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

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use serde_json::json;
    use strata_context::LoadedEntry;

    use super::*;

    fn link(id: &str, value: serde_json::Value) -> Link {
        let mut map = value.as_object().cloned().unwrap_or_default();
        map.insert("id".into(), json!(id));
        map.insert("parentId".into(), serde_json::Value::Null);
        map.insert("timestamp".into(), json!("2026-01-01T00:00:00.000Z"));
        let entry = Entry::from_json_map(map).expect("entry");
        Link {
            id: EntryId::new(id),
            loaded: Arc::new(LoadedEntry::new(entry)),
        }
    }

    fn user(id: &str, chars: usize) -> Link {
        link(
            id,
            json!({"type": "message", "message": {"role": "user", "content": "u".repeat(chars), "timestamp": 0}}),
        )
    }

    fn result(id: &str, chars: usize) -> Link {
        link(
            id,
            json!({"type": "message", "message": {"role": "toolResult", "toolCallId": "c", "toolName": "read", "content": [{"type": "text", "text": "r".repeat(chars)}], "isError": false, "timestamp": 0}}),
        )
    }

    #[test]
    fn the_cut_moves_forward_past_tool_results_and_back_over_settings() {
        let entries = [
            user("u1", 400),
            link(
                "m",
                json!({"type": "model_change", "provider": "p", "modelId": "x"}),
            ),
            user("u2", 400),
            result("r1", 400),
            result("r2", 400),
        ];
        let none = HashSet::new();
        // 200 tokens reached at r1: the next valid cut at or after it does not exist, so the
        // first valid cut point keeps everything.
        let cut = find_cut_point(&entries, 0, entries.len(), 200, &none);
        assert_eq!(cut.first_kept, 0);
        // 300 tokens reached at u2, a user message; the model_change before it comes along.
        let cut = find_cut_point(&entries, 0, entries.len(), 300, &none);
        assert_eq!(cut.first_kept, 1);
        assert!(!cut.is_split_turn());
        // Excluded messages do not count toward the budget.
        let excluded: HashSet<EntryId> = [EntryId::new("r2")].into_iter().collect();
        let cut = find_cut_point(&entries, 0, entries.len(), 200, &excluded);
        assert_eq!(cut.first_kept, 1);
    }
}
