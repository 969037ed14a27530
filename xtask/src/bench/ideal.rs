//! The ideal: how many prompt tokens of each request are new — past the longest prefix it
//! shares with any earlier request of the run — counted in strata-mock's own blocks and tokens
//! and rounded to the cache's granularity and minimum. No lifetime: an ideal cache never
//! forgets, so the gap to it is what expiry, breakpoints and layout cost.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use anyhow::{Result, anyhow};
use serde_json::Value;
use strata_mock::protocol::{ParseContext, Wire};
use strata_mock::tokens::Tokenizer;

/// Which parser reads the recorded bodies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BodyShape {
    /// Anthropic Messages.
    Anthropic,
    /// OpenAI Responses.
    Responses,
    /// Chat Completions.
    Chat,
}

/// The blocks (hash and tokens) that followed one prefix.
type Followers = Vec<(u64, Arc<[u32]>)>;

/// Prefixes seen so far in a run.
pub struct IdealCache {
    shape: BodyShape,
    increment: u64,
    min_tokens: u64,
    tokenizer: Tokenizer,
    seen: HashSet<u64>,
    /// Blocks that followed each prefix, for the shared part of a block that changed.
    followers: HashMap<u64, Followers>,
}

/// Followers kept per prefix (a branch point has a few).
const MAX_FOLLOWERS: usize = 8;
/// The prefix key of an empty prompt.
const ROOT: u64 = 0x5354_5241_5441_0001;

fn mix(key: u64, hash: u64) -> u64 {
    (key.rotate_left(29) ^ hash)
        .wrapping_mul(0x9E37_79B9_7F4A_7C15)
        .wrapping_add(0x2545_F491_4F6C_DD1D)
}

impl IdealCache {
    /// An empty history for bodies of `shape`, cached in units of `increment` from `min_tokens`.
    pub fn new(shape: BodyShape, increment: u64, min_tokens: u64) -> Self {
        Self {
            shape,
            increment: increment.max(1),
            min_tokens,
            tokenizer: Tokenizer::new(),
            seen: HashSet::new(),
            followers: HashMap::new(),
        }
    }

    /// The new tokens of the request `body` and its total; remembers its prefixes.
    pub fn account(&mut self, body: &Value) -> Result<(u64, u64)> {
        let none = |_: &str| None;
        let ctx = ParseContext {
            tokenizer: &self.tokenizer,
            previous: &none,
        };
        let parsed = match self.shape {
            BodyShape::Anthropic => {
                strata_mock::protocol::anthropic::Anthropic::parse(body, None, &ctx)
            }
            BodyShape::Responses => {
                strata_mock::protocol::responses::Responses::parse(body, None, &ctx)
            }
            BodyShape::Chat => strata_mock::protocol::chat::Chat::parse(body, None, &ctx),
        }
        .map_err(|e| anyhow!("the mock's parser refused a recorded body: {e}"))?;
        let blocks = &parsed.prompt.blocks;
        let total = parsed.prompt.total_tokens();
        let mut key = ROOT;
        let mut shared = 0u64;
        let mut matching = true;
        let mut keys = Vec::with_capacity(blocks.len());
        for block in blocks {
            let next = mix(key, block.hash);
            if matching {
                if self.seen.contains(&next) {
                    shared += block.tokens.len() as u64;
                } else {
                    matching = false;
                    let partial = self.followers.get(&key).map_or(0, |followers| {
                        followers
                            .iter()
                            .map(|(_, tokens)| common_prefix(tokens, &block.tokens))
                            .max()
                            .unwrap_or(0)
                    });
                    shared += partial as u64;
                }
            }
            keys.push((key, next));
            key = next;
        }
        for ((parent, next), block) in keys.into_iter().zip(blocks) {
            if self.seen.insert(next) {
                let followers = self.followers.entry(parent).or_default();
                if followers.len() < MAX_FOLLOWERS {
                    followers.push((block.hash, block.tokens.clone()));
                }
            }
        }
        let readable = if shared < self.min_tokens {
            0
        } else {
            shared / self.increment * self.increment
        };
        Ok((total - readable.min(total), total))
    }
}

fn common_prefix(a: &[u32], b: &[u32]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn body(messages: &[&str]) -> Value {
        let messages: Vec<Value> = messages
            .iter()
            .enumerate()
            .map(|(i, text)| {
                json!({"role": if i % 2 == 0 { "user" } else { "assistant" }, "content": [{"type": "text", "text": text}]})
            })
            .collect();
        json!({"model": "claude-sonnet-4-5", "max_tokens": 100, "system": "You are a bench.", "messages": messages})
    }

    #[test]
    fn an_appended_request_is_new_only_past_the_shared_prefix() {
        let mut ideal = IdealCache::new(BodyShape::Anthropic, 1, 0);
        let (new_first, total_first) = ideal.account(&body(&["hello there"])).unwrap();
        assert_eq!(new_first, total_first, "the first request is all new");
        let (new_second, total_second) = ideal
            .account(&body(&["hello there", "hi", "read the file please"]))
            .unwrap();
        assert!(new_second < total_second);
        assert_eq!(total_second - new_second, total_first);
        // Going back to the first request's prefix (a branch) reads it again.
        let (new_branch, total_branch) = ideal
            .account(&body(&["hello there", "something else"]))
            .unwrap();
        assert!(total_branch - new_branch >= total_first);
    }

    #[test]
    fn granularity_and_minimum_round_the_shared_prefix_down() {
        let mut ideal = IdealCache::new(BodyShape::Anthropic, 128, 1024);
        ideal.account(&body(&["short"])).unwrap();
        let (new, total) = ideal.account(&body(&["short", "a", "b"])).unwrap();
        assert_eq!(new, total, "a shared prefix under the minimum is not read");
    }
}
