//! The provider's cache diagnosis, computed from the simulator's own view of each request.
//!
//! Anthropic (beta `cache-diagnosis-2026-04-07`, anthropic-python 2.17.0 `BetaDiagnostics`):
//! a request naming `diagnostics.previous_message_id` gets `diagnostics.cache_miss_reason`
//! — `model_changed`, `system_changed`, `tools_changed` or `messages_changed` with
//! `cache_missed_input_tokens`, `previous_message_not_found`, or `unavailable` when model,
//! system and tools match but another prompt-affecting parameter differs — and
//! `diagnostics: null` when nothing diverged. OpenAI (openai-python 3.63.0
//! `Response.prompt_cache_diagnostics`): a request naming `prompt_cache_options.
//! comparison_response_id` gets `cache_hit`, `cache_miss` with a `reason` and
//! `cache_missed_tokens`, or `comparison_response_not_found`.
//!
//! **Modelling choices.** The comparison is block by block in cache order (the simulator's
//! blocks, `crate::prompt`); "missed tokens" are the compared request's tokens from the first
//! differing block to its end, i.e. what it held that this request could not reuse. OpenAI's
//! `input_changed` covers both instructions and input items (the API names no system chapter).

use std::collections::{HashMap, VecDeque};

use serde_json::{Value, json};

use crate::prompt::{Chapter, Prompt};

/// How many responses keep their fingerprint for later comparison.
const KEPT: usize = 4096;

/// What the simulator remembers of a request to diagnose later ones against it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fingerprint {
    model: String,
    cache_key: Option<String>,
    params: u64,
    blocks: Vec<(Chapter, u64, u64)>,
}

impl Fingerprint {
    /// The fingerprint of a request to `model` with `prompt`, routed by `cache_key`, whose
    /// other prompt-affecting parameters hash to `params`.
    pub fn of(model: &str, cache_key: Option<&str>, params: u64, prompt: &Prompt) -> Self {
        Self {
            model: model.to_owned(),
            cache_key: cache_key.map(str::to_owned),
            params,
            blocks: prompt
                .blocks
                .iter()
                .map(|b| (b.chapter, b.hash, b.tokens.len() as u64))
                .collect(),
        }
    }

    fn tokens_from(&self, block: usize) -> u64 {
        self.blocks.iter().skip(block).map(|b| b.2).sum()
    }
}

/// What changed against the compared request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Changed {
    /// Another model.
    Model,
    /// Another `prompt_cache_key` (OpenAI).
    CacheKey,
    /// A tool definition.
    Tools,
    /// The system prompt (or instructions).
    System,
    /// The conversation.
    Messages,
    /// Same prompt, another prompt-affecting parameter (thinking, effort).
    Parameters,
}

/// The simulator's diagnosis of one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Diagnosis {
    /// The compared response is unknown (never sent, or forgotten).
    NotFound,
    /// The request reuses the compared one's whole prefix (it extends or repeats it).
    NoDivergence,
    /// The prefix diverged.
    Changed {
        /// What.
        what: Changed,
        /// Tokens of the compared request from the divergence on.
        missed_tokens: u64,
    },
}

/// Diagnoses `now` against `before` (`None`: not found).
pub fn diagnose(before: Option<&Fingerprint>, now: &Fingerprint) -> Diagnosis {
    let Some(before) = before else {
        return Diagnosis::NotFound;
    };
    let whole = |what| Diagnosis::Changed {
        what,
        missed_tokens: before.tokens_from(0),
    };
    if before.model != now.model {
        return whole(Changed::Model);
    }
    if before.cache_key != now.cache_key {
        return whole(Changed::CacheKey);
    }
    let first = before
        .blocks
        .iter()
        .zip(&now.blocks)
        .position(|(a, b)| (a.0, a.1) != (b.0, b.1));
    match first {
        Some(i) => {
            // A chapter that ended early in one request differs where the other goes on.
            let chapter = before.blocks[i].0.min_order(now.blocks[i].0);
            Diagnosis::Changed {
                what: match chapter {
                    Chapter::Tools => Changed::Tools,
                    Chapter::System => Changed::System,
                    Chapter::Messages => Changed::Messages,
                },
                missed_tokens: before.tokens_from(i),
            }
        }
        None if before.params != now.params => Diagnosis::Changed {
            what: Changed::Parameters,
            missed_tokens: before
                .blocks
                .iter()
                .filter(|b| b.0 == Chapter::Messages)
                .map(|b| b.2)
                .sum(),
        },
        None => Diagnosis::NoDivergence,
    }
}

impl Chapter {
    /// The earlier of two chapters in cache order.
    fn min_order(self, other: Chapter) -> Chapter {
        let rank = |c: Chapter| match c {
            Chapter::Tools => 0,
            Chapter::System => 1,
            Chapter::Messages => 2,
        };
        if rank(other) < rank(self) {
            other
        } else {
            self
        }
    }
}

impl Diagnosis {
    /// Anthropic's `diagnostics` object (`null` when nothing diverged).
    pub fn anthropic(&self) -> Value {
        let reason = match *self {
            Self::NotFound => json!({"type": "previous_message_not_found"}),
            Self::NoDivergence => return Value::Null,
            Self::Changed {
                what: Changed::Parameters | Changed::CacheKey,
                ..
            } => json!({"type": "unavailable"}),
            Self::Changed {
                what,
                missed_tokens,
            } => {
                let kind = match what {
                    Changed::Model => "model_changed",
                    Changed::Tools => "tools_changed",
                    Changed::System => "system_changed",
                    _ => "messages_changed",
                };
                json!({"type": kind, "cache_missed_input_tokens": missed_tokens})
            }
        };
        json!({ "cache_miss_reason": reason })
    }

    /// OpenAI's `prompt_cache_diagnostics` object.
    pub fn openai(&self) -> Value {
        match *self {
            Self::NotFound => json!({"type": "comparison_response_not_found"}),
            Self::NoDivergence => json!({"type": "cache_hit"}),
            Self::Changed {
                what,
                missed_tokens,
            } => {
                let reason = match what {
                    Changed::Model => "model_changed",
                    Changed::CacheKey => "prompt_cache_key_changed",
                    Changed::Tools => "tools_changed",
                    Changed::System | Changed::Messages => "input_changed",
                    Changed::Parameters => "reasoning_effort_changed",
                };
                json!({"type": "cache_miss", "reason": reason, "cache_missed_tokens": missed_tokens})
            }
        }
    }
}

/// Fingerprints of the newest responses, by response id.
#[derive(Debug, Default)]
pub struct Fingerprints {
    by_id: HashMap<String, Fingerprint>,
    order: VecDeque<String>,
}

impl Fingerprints {
    /// Remembers `fingerprint` under response id `id`, forgetting the oldest beyond the limit.
    pub fn insert(&mut self, id: String, fingerprint: Fingerprint) {
        if self.order.len() >= KEPT
            && let Some(old) = self.order.pop_front()
        {
            self.by_id.remove(&old);
        }
        self.order.push_back(id.clone());
        self.by_id.insert(id, fingerprint);
    }

    /// The fingerprint of response `id`.
    pub fn get(&self, id: &str) -> Option<&Fingerprint> {
        self.by_id.get(id)
    }

    /// Forgets everything.
    pub fn clear(&mut self) {
        self.by_id.clear();
        self.order.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::prompt::PromptBuilder;
    use crate::tokens::Tokenizer;

    fn fp(tokenizer: &Tokenizer, system: &str, messages: &[&str]) -> Fingerprint {
        let mut b = PromptBuilder::new(tokenizer);
        b.push(Chapter::Tools, "tool", "{\"name\":\"read\"}", None);
        b.push(Chapter::System, "system", system, None);
        for m in messages {
            b.push(Chapter::Messages, "user", m, None);
        }
        Fingerprint::of("m", None, 0, &b.finish())
    }

    #[test]
    fn the_first_differing_chapter_is_the_reason() {
        let t = Tokenizer::new();
        let before = fp(&t, "you are helpful", &["hi", "there"]);
        assert_eq!(
            diagnose(
                Some(&before),
                &fp(&t, "you are helpful", &["hi", "there", "more"])
            ),
            Diagnosis::NoDivergence
        );
        let changed = diagnose(Some(&before), &fp(&t, "you are terse", &["hi", "there"]));
        let Diagnosis::Changed {
            what,
            missed_tokens,
        } = changed
        else {
            panic!("{changed:?}")
        };
        assert_eq!(what, Changed::System);
        assert_eq!(missed_tokens, before.tokens_from(1));
        assert_eq!(
            changed.anthropic()["cache_miss_reason"]["type"],
            "system_changed"
        );
        assert_eq!(changed.openai()["reason"], "input_changed");
        assert_eq!(
            diagnose(None, &before).anthropic()["cache_miss_reason"]["type"],
            "previous_message_not_found"
        );
        assert!(Diagnosis::NoDivergence.anthropic().is_null());
    }
}
