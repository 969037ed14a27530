//! The player: which scripted turn (or summary) answers a request, and the conversation key
//! that makes a retried request get the turn it retries.
//!
//! A request whose reply the output cap cuts does not advance the player: the server picks
//! on a copy and keeps the old position, so the next request gets the same turn (see
//! [`crate::scenario`]).

use std::collections::HashMap;
use std::hash::{DefaultHasher, Hash, Hasher};

use serde_json::Value;

use crate::config::Protocol;
use crate::scenario::{Conversation, Playback, RecallSpec, Scenario, TurnSpec};
use crate::summary::{SummaryKind, default_summary, join_split_turn};

/// What answers one request.
#[derive(Debug, Clone, PartialEq)]
pub enum Pick<'a> {
    /// A scripted turn, by index.
    Turn(usize, &'a TurnSpec),
    /// A turn made for this request: scripted turn `.0` with its recalled fact filled in, or
    /// a recall turn's fetch (the turn itself still to come), numbered past the script's
    /// last turn.
    Made(usize, Box<TurnSpec>),
    /// A summary request and the summary to return.
    Summary {
        /// What it asked for.
        kind: SummaryKind,
        /// The `[[summary]]` entry used, `None` for the default summary.
        entry: Option<usize>,
        /// The text.
        text: String,
    },
    /// No script, or past its end: the echo default.
    Echo,
}

impl Pick<'_> {
    /// The turn, as [`crate::scenario::reply`] takes it.
    pub fn turn(&self) -> Option<(usize, &TurnSpec)> {
        match self {
            Self::Turn(index, spec) => Some((*index, spec)),
            Self::Made(index, spec) => Some((*index, spec)),
            _ => None,
        }
    }
}

/// The playback position of one scenario: the next turn and summary, and the turns already
/// given to each conversation.
#[derive(Debug, Clone, Default)]
pub struct Player {
    next_turn: usize,
    used_summaries: Vec<usize>,
    answered: HashMap<u64, usize>,
    summarized: HashMap<u64, (SummaryKind, Option<usize>, String)>,
    /// Fetches made for each recall turn, by turn index.
    fetches: HashMap<usize, usize>,
}

impl Player {
    /// A player at the start of the script.
    pub fn new() -> Self {
        Self::default()
    }

    /// Picks what answers `conversation` under `scenario`'s playback, advancing the position.
    pub fn pick<'a>(&mut self, scenario: &'a Scenario, conversation: &Conversation) -> Pick<'a> {
        match scenario.playback {
            Playback::AssistantCount => scenario
                .turn(conversation)
                .map_or(Pick::Echo, |(index, spec)| Pick::Turn(index, spec)),
            Playback::Sequence => self.pick_in_sequence(scenario, conversation),
        }
    }

    fn pick_in_sequence<'a>(
        &mut self,
        scenario: &'a Scenario,
        conversation: &Conversation,
    ) -> Pick<'a> {
        if let Some(kind) = SummaryKind::recognise(conversation) {
            let (kind, entry, text) = self
                .summarized
                .entry(conversation.key)
                .or_insert_with(|| {
                    // A split-turn request is answered with two entries, as two requests
                    // would be: a history one and a turn-prefix one, joined by the marker.
                    let mut take = |part: SummaryKind| {
                        let unused = scenario.summaries.iter().enumerate().find(|(index, spec)| {
                            !self.used_summaries.contains(index)
                                && spec.kind.is_none_or(|k| k == part)
                        });
                        match unused {
                            Some((index, spec)) => {
                                self.used_summaries.push(index);
                                (Some(index), spec.text.clone())
                            }
                            None => (None, default_summary(part, conversation)),
                        }
                    };
                    if kind == SummaryKind::SplitTurn {
                        let (entry, history) = take(SummaryKind::History);
                        let (_, prefix) = take(SummaryKind::TurnPrefix);
                        (kind, entry, join_split_turn(&history, &prefix))
                    } else {
                        let (entry, text) = take(kind);
                        (kind, entry, text)
                    }
                })
                .clone();
            return Pick::Summary { kind, entry, text };
        }
        let (index, new) = match self.answered.get(&conversation.key) {
            Some(index) => (*index, false),
            None if self.next_turn < scenario.turns.len() => (self.next_turn, true),
            None => return Pick::Echo,
        };
        let Some(spec) = scenario.turns.get(index) else {
            return Pick::Echo;
        };
        let recalled = match &spec.recall {
            None => None,
            Some(recall) => match recall.find(&conversation.transcript) {
                Some(value) => Some(value),
                None => {
                    let fetches = self.fetches.entry(index).or_default();
                    if *fetches < RecallSpec::MAX_FETCHES {
                        // The turn waits for the request that holds the fetched output.
                        *fetches += 1;
                        // A fetch is numbered past the script's turns (one number per turn
                        // and attempt), so its call ids never collide with a turn's.
                        let number =
                            scenario.turns.len() + index * RecallSpec::MAX_FETCHES + *fetches;
                        return Pick::Made(number, Box::new(recall.fetch_turn()));
                    }
                    Some("unknown".to_owned())
                }
            },
        };
        if new {
            self.next_turn += 1;
            self.answered.insert(conversation.key, index);
        }
        match recalled {
            Some(value) => Pick::Made(index, Box::new(spec.with_recalled(&value))),
            None => Pick::Turn(index, spec),
        }
    }
}

/// The conversation's identity: a hash of its messages (the part after the system prompt)
/// with cache markers (`cache_control`, Bedrock `cachePoint` blocks) left out. A retried
/// request has the key of the one it retries; any new message changes it.
pub fn conversation_key(protocol: Protocol, body: &Value) -> u64 {
    let mut hasher = DefaultHasher::new();
    let messages: Vec<&Value> = match protocol {
        Protocol::Anthropic | Protocol::Bedrock => list(body.get("messages")).collect(),
        Protocol::Chat => list(body.get("messages"))
            .skip_while(|m| is_system(m))
            .collect(),
        Protocol::Responses => {
            body.get("previous_response_id")
                .and_then(Value::as_str)
                .hash(&mut hasher);
            match body.get("input") {
                Some(Value::Array(items)) => items.iter().skip_while(|m| is_system(m)).collect(),
                Some(other) => vec![other],
                None => Vec::new(),
            }
        }
        Protocol::Gemini => list(body.get("contents")).collect(),
    };
    for message in messages {
        without_cache_markers(message).to_string().hash(&mut hasher);
    }
    hasher.finish()
}

fn list(value: Option<&Value>) -> impl Iterator<Item = &Value> {
    value.and_then(Value::as_array).into_iter().flatten()
}

fn is_system(message: &Value) -> bool {
    matches!(
        message.get("role").and_then(Value::as_str),
        Some("system" | "developer")
    )
}

fn without_cache_markers(value: &Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .filter(|(key, _)| key.as_str() != "cache_control")
                .map(|(key, item)| (key.clone(), without_cache_markers(item)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(
            items
                .iter()
                .filter(|item| item.get("cachePoint").is_none())
                .map(without_cache_markers)
                .collect(),
        ),
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// A conversation under `key` whose last user message is `text`.
    fn asking(key: u64, text: &str) -> Conversation {
        Conversation {
            key,
            last_user_text: Some(text.into()),
            ..Conversation::default()
        }
    }

    #[test]
    fn cache_markers_do_not_change_the_key() {
        let plain =
            json!({"messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}]});
        let marked = json!({"messages": [{"role": "user", "content": [{"type": "text", "text": "hi", "cache_control": {"type": "ephemeral"}}]}]});
        assert_eq!(
            conversation_key(Protocol::Anthropic, &plain),
            conversation_key(Protocol::Anthropic, &marked)
        );
        let bedrock = json!({"messages": [{"role": "user", "content": [{"text": "hi"}, {"cachePoint": {"type": "default"}}]}]});
        let bedrock_plain = json!({"messages": [{"role": "user", "content": [{"text": "hi"}]}]});
        assert_eq!(
            conversation_key(Protocol::Bedrock, &bedrock),
            conversation_key(Protocol::Bedrock, &bedrock_plain)
        );
        let longer =
            json!({"messages": [{"role": "user", "content": [{"type": "text", "text": "hi!"}]}]});
        assert_ne!(
            conversation_key(Protocol::Anthropic, &plain),
            conversation_key(Protocol::Anthropic, &longer)
        );
    }

    #[test]
    fn the_system_prompt_is_not_part_of_the_key() {
        let a = json!({"messages": [{"role": "system", "content": "a"}, {"role": "user", "content": "hi"}]});
        let b = json!({"messages": [{"role": "system", "content": "b"}, {"role": "user", "content": "hi"}]});
        assert_eq!(
            conversation_key(Protocol::Chat, &a),
            conversation_key(Protocol::Chat, &b)
        );
    }

    #[test]
    fn sequence_playback_replays_a_retry_and_skips_summaries() {
        let scenario = Scenario::from_toml(
            "playback = \"sequence\"\n[[turn]]\ntext = \"one\"\n[[turn]]\ntext = \"two\"\n[[summary]]\ntext = \"S\"\n",
            "inline",
        )
        .unwrap();
        let mut player = Player::new();
        let first = asking(1, "go");
        let summary = asking(
            2,
            "[Context checkpoint request — not a message from the user]",
        );
        let second = Conversation {
            key: 3,
            ..Conversation::default()
        };
        assert!(matches!(player.pick(&scenario, &first), Pick::Turn(0, _)));
        assert!(matches!(player.pick(&scenario, &first), Pick::Turn(0, _)));
        assert_eq!(
            player.pick(&scenario, &summary),
            Pick::Summary {
                kind: SummaryKind::History,
                entry: Some(0),
                text: "S".into()
            }
        );
        assert!(matches!(player.pick(&scenario, &second), Pick::Turn(1, _)));
        let third = Conversation {
            key: 4,
            ..Conversation::default()
        };
        assert_eq!(player.pick(&scenario, &third), Pick::Echo);
        let another_summary = Conversation {
            key: 5,
            ..summary.clone()
        };
        assert!(matches!(
            player.pick(&scenario, &another_summary),
            Pick::Summary { entry: None, .. }
        ));
    }

    #[test]
    fn a_split_turn_request_is_answered_with_a_history_and_a_turn_prefix_entry() {
        let scenario = Scenario::from_toml(
            "playback = \"sequence\"\n[[summary]]\ntext = \"P\"\nkind = \"turn_prefix\"\n[[summary]]\ntext = \"H\"\nkind = \"history\"\n[[summary]]\ntext = \"H2\"\n",
            "inline",
        )
        .unwrap();
        let mut player = Player::new();
        let split = asking(
            1,
            "[Context checkpoint request — not a message from the user]\n<turn-start>\nthen a line holding only === TURN CONTEXT ===",
        );
        let Pick::Summary { kind, entry, text } = player.pick(&scenario, &split) else {
            panic!("a split-turn checkpoint is a summary request");
        };
        assert_eq!(kind, SummaryKind::SplitTurn);
        assert_eq!(entry, Some(1));
        assert_eq!(text, "H\n\n=== TURN CONTEXT ===\n\nP");
        // Both entries are spent: the next history request gets the third.
        let history = asking(
            2,
            "[Context checkpoint request — not a message from the user]",
        );
        assert!(matches!(
            player.pick(&scenario, &history),
            Pick::Summary { entry: Some(2), .. }
        ));
    }

    #[test]
    fn a_summary_entry_with_a_kind_answers_only_that_kind() {
        let scenario = Scenario::from_toml(
            "playback = \"sequence\"\n[[summary]]\ntext = \"H\"\nkind = \"history\"\n[[summary]]\ntext = \"P\"\nkind = \"turn_prefix\"\n",
            "inline",
        )
        .unwrap();
        let mut player = Player::new();
        let prefix = asking(
            1,
            "[Context checkpoint request — not a message from the user]\n<turn-start>",
        );
        let history = asking(
            2,
            "[Context checkpoint request — not a message from the user]",
        );
        // The turn prefix arrives first and still gets its own entry.
        assert!(matches!(
            player.pick(&scenario, &prefix),
            Pick::Summary { entry: Some(1), .. }
        ));
        assert!(matches!(
            player.pick(&scenario, &history),
            Pick::Summary { entry: Some(0), .. }
        ));
    }

    #[test]
    fn a_recall_turn_uses_a_fact_in_context_and_fetches_one_that_is_not() {
        let scenario = Scenario::from_toml(
            r#"
playback = "sequence"
[[turn]]
text = "Writing it down."
[[turn.tool_call]]
tool = "write"
args = { path = "notes.txt", content = "the value is {recall}" }
[turn.recall]
marker = "fact-7: "
fetch_text = "Re-reading the facts."
fetch = [{ tool = "read", args = { path = "facts/f7.txt" } }]
[[turn]]
text = "Done."
"#,
            "inline",
        )
        .unwrap();
        let without = |key| Conversation {
            key,
            transcript: "nothing here\nfact-8: zzz\n".into(),
            ..Conversation::default()
        };
        let with = |key| Conversation {
            key,
            transcript: "old fact-7: aaa\nfact-7: c0ffee-2, more\n".into(),
            ..Conversation::default()
        };
        // Not in context: the fetch, and the turn still waits.
        let mut player = Player::new();
        let Pick::Made(number, fetch) = player.pick(&scenario, &without(1)) else {
            panic!("a missing fact is fetched");
        };
        assert!(
            number >= scenario.turns.len(),
            "a fetch is numbered past the script"
        );
        assert_eq!(fetch.tool_calls[0].tool, "read");
        assert_eq!(fetch.text.as_deref(), Some("Re-reading the facts."));
        // In context: the turn plays with the newest copy of the value, and is consumed.
        let Pick::Made(0, turn) = player.pick(&scenario, &with(2)) else {
            panic!("a fact in context is used");
        };
        assert_eq!(
            turn.tool_calls[0].args["content"],
            serde_json::json!("the value is c0ffee-2")
        );
        assert!(matches!(player.pick(&scenario, &with(3)), Pick::Turn(1, _)));
        // A fact that never comes back is played as unknown after the fetches, no loop.
        let mut player = Player::new();
        for key in 0..RecallSpec::MAX_FETCHES as u64 {
            assert!(
                matches!(player.pick(&scenario, &without(10 + key)), Pick::Made(n, _) if n > 1)
            );
        }
        let Pick::Made(0, turn) = player.pick(&scenario, &without(20)) else {
            panic!("the turn plays after the fetches");
        };
        assert_eq!(
            turn.tool_calls[0].args["content"],
            serde_json::json!("the value is unknown")
        );
    }
}
