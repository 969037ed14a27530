//! Effort changes that keep the prefix: where a row can change reasoning effort with a
//! message in the conversation (Anthropic per-message `output_config.effort` on a
//! `role: "system"` message, OpenAI `configuration_update` input items;
//! `Capabilities::mid_conversation_effort`), the request-level effort stays what the session
//! started with and each change is said at the point of the conversation where it happened.
//!
//! The adapter sees requests, not the session, so it remembers per session where each change
//! was inserted: the position in the wire message list and a hash of the message before it.
//! A later request re-inserts them at the same places while those messages are unchanged
//! (an append-only conversation); when they are not (a compaction, another branch), the record
//! is dropped and the request starts over with its own effort at the request level — the full
//! miss a row without the feature pays anyway.

use std::collections::HashMap;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::{Arc, Mutex};

use serde_json::Value;

use crate::request::ThinkingLevel;

#[derive(Debug, Clone)]
struct Track {
    base: ThinkingLevel,
    /// (insert before this index of the unmodified list, level, hash of the message before).
    changes: Vec<(usize, ThinkingLevel, u64)>,
}

/// Where to say effort changes in one request: the request-level effort, and the levels to
/// insert at positions of the wire message list (each position an index of the list before
/// any insertion; insert from the last to the first).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EffortPlan {
    /// The effort to send at the request level (the session's first).
    pub base: ThinkingLevel,
    /// `(index, level)`: say `level` just before the message at `index` (at the end when
    /// `index` is the list's length).
    pub changes: Vec<(usize, ThinkingLevel)>,
}

/// Each session's effort changes, for one adapter.
#[derive(Debug, Clone, Default)]
pub struct EffortChanges {
    sessions: Arc<Mutex<HashMap<String, Track>>>,
}

/// A message's hash without its cache markers (`cache_control`, `prompt_cache_breakpoint`),
/// which move from request to request while the content stays.
fn hash_of(message: &Value) -> u64 {
    fn strip(value: &Value) -> Value {
        match value {
            Value::Object(map) => Value::Object(
                map.iter()
                    .filter(|(k, _)| {
                        !matches!(k.as_str(), "cache_control" | "prompt_cache_breakpoint")
                    })
                    .map(|(k, v)| (k.clone(), strip(v)))
                    .collect(),
            ),
            Value::Array(items) => Value::Array(items.iter().map(strip).collect()),
            other => other.clone(),
        }
    }
    let mut hasher = DefaultHasher::new();
    strip(message).to_string().hash(&mut hasher);
    hasher.finish()
}

impl EffortChanges {
    /// An empty record.
    pub fn new() -> Self {
        Self::default()
    }

    /// The plan for a request of `session` asking for `level`, whose wire messages (before
    /// any insertion) are `messages`. Records a change when `level` differs from the
    /// session's current effort. Changes to or from `Off` are not made in the conversation:
    /// the session starts over at the request level.
    pub fn plan(
        &self,
        session: Option<&str>,
        messages: &[Value],
        level: ThinkingLevel,
    ) -> EffortPlan {
        let mut sessions = self
            .sessions
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let key = session.unwrap_or_default().to_owned();
        let fresh = Track {
            base: level,
            changes: Vec::new(),
        };
        let track = sessions.entry(key).or_insert_with(|| fresh.clone());
        let intact = track.changes.iter().all(|&(at, _, hash)| {
            at >= 1 && at <= messages.len() && hash_of(&messages[at - 1]) == hash
        });
        let current = track.changes.last().map_or(track.base, |c| c.1);
        let through_off = level == ThinkingLevel::Off || current == ThinkingLevel::Off;
        if !intact || (level != current && through_off) {
            *track = fresh;
        } else if level != current
            && let Some(last) = messages.last()
        {
            // Said after the request's last message: the previous requests' bytes stay.
            let at = messages.len();
            // A change at the same place replaces the one before it (nothing was sent between).
            track.changes.retain(|c| c.0 != at);
            if track.changes.last().map_or(track.base, |c| c.1) != level {
                track.changes.push((at, level, hash_of(last)));
            }
        }
        EffortPlan {
            base: track.base,
            changes: track.changes.iter().map(|&(at, l, _)| (at, l)).collect(),
        }
    }
}

impl EffortPlan {
    /// Inserts `make(level)` into `messages` at each planned position, last first so the
    /// earlier positions stay valid.
    pub fn insert(&self, messages: &mut Vec<Value>, make: impl Fn(ThinkingLevel) -> Value) {
        for &(at, level) in self.changes.iter().rev() {
            if at <= messages.len() {
                messages.insert(at, make(level));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn list(n: usize) -> Vec<Value> {
        (0..n)
            .map(|i| json!({"role": "user", "content": format!("m{i}")}))
            .collect()
    }

    #[test]
    fn a_change_is_said_where_it_happened_and_repeated_there() {
        let effort = EffortChanges::new();
        let s = Some("s");
        let first = effort.plan(s, &list(1), ThinkingLevel::High);
        assert_eq!(first.base, ThinkingLevel::High);
        assert!(first.changes.is_empty());
        let changed = effort.plan(s, &list(3), ThinkingLevel::Low);
        assert_eq!(changed.base, ThinkingLevel::High);
        assert_eq!(changed.changes, [(3, ThinkingLevel::Low)]);
        // Later requests keep it at the same place.
        let later = effort.plan(s, &list(5), ThinkingLevel::Low);
        assert_eq!(later.changes, [(3, ThinkingLevel::Low)]);
        let mut messages = list(5);
        later.insert(&mut messages, |l| json!({"effort": l.as_str()}));
        assert_eq!(messages[3], json!({"effort": "low"}));
        assert_eq!(messages.len(), 6);
        // Back to the first level: a second change.
        let back = effort.plan(s, &list(7), ThinkingLevel::High);
        assert_eq!(
            back.changes,
            [(3, ThinkingLevel::Low), (7, ThinkingLevel::High)]
        );
    }

    #[test]
    fn a_moved_cache_marker_is_no_change_of_history() {
        let effort = EffortChanges::new();
        let s = Some("s");
        effort.plan(s, &list(1), ThinkingLevel::High);
        let mut marked = list(3);
        marked[2]["cache_control"] = json!({"type": "ephemeral"});
        effort.plan(s, &marked, ThinkingLevel::Low);
        let plan = effort.plan(s, &list(5), ThinkingLevel::Low);
        assert_eq!(plan.changes, [(3, ThinkingLevel::Low)]);
    }

    #[test]
    fn a_rewritten_history_or_a_switch_through_off_starts_over() {
        let effort = EffortChanges::new();
        let s = Some("s");
        effort.plan(s, &list(1), ThinkingLevel::High);
        effort.plan(s, &list(3), ThinkingLevel::Low);
        // A compaction: the list is shorter and different.
        let mut compacted = list(2);
        compacted[0] = json!({"role": "user", "content": "summary"});
        let plan = effort.plan(s, &compacted, ThinkingLevel::Low);
        assert_eq!((plan.base, plan.changes.len()), (ThinkingLevel::Low, 0));
        let off = effort.plan(s, &list(4), ThinkingLevel::Off);
        assert_eq!((off.base, off.changes.len()), (ThinkingLevel::Off, 0));
        // Other sessions are apart.
        let other = effort.plan(Some("t"), &list(4), ThinkingLevel::Medium);
        assert_eq!(other.base, ThinkingLevel::Medium);
    }
}
