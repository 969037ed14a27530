//! The provider-neutral view of a request that the cache simulator works on: an ordered list
//! of blocks (tools → system → messages), each with its tokens and optional breakpoint.

use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::tokens::{Tokenizer, hash_str};

/// The three parts of a request, in the order providers cache them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Chapter {
    /// Tool definitions.
    Tools,
    /// The system prompt.
    System,
    /// The conversation.
    Messages,
}

/// The lifetime asked for at a breakpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub enum Ttl {
    /// Five minutes (the default).
    #[serde(rename = "5m")]
    Short,
    /// One hour.
    #[serde(rename = "1h")]
    Long,
}

impl Ttl {
    /// Parses the wire spelling; anything but `1h` is the default five minutes.
    pub fn parse(value: Option<&str>) -> Self {
        match value {
            Some("1h") => Self::Long,
            _ => Self::Short,
        }
    }
}

/// One content unit: a tool definition, a system block, or a message content block.
#[derive(Debug, Clone)]
pub struct Block {
    /// Which chapter it belongs to.
    pub chapter: Chapter,
    /// Hash of its canonical text (role and chapter included).
    pub hash: u64,
    /// Its tokens.
    pub tokens: Arc<[u32]>,
    /// The breakpoint set on it, if any.
    pub breakpoint: Option<Ttl>,
    /// Whether a breakpoint may be placed on it (thinking blocks cannot carry one).
    pub cacheable: bool,
}

/// A request reduced to blocks.
#[derive(Debug, Clone, Default)]
pub struct Prompt {
    /// Blocks in cache order.
    pub blocks: Vec<Block>,
}

impl Prompt {
    /// Total tokens of all blocks.
    pub fn total_tokens(&self) -> u64 {
        self.blocks.iter().map(|b| b.tokens.len() as u64).sum()
    }

    /// Puts a breakpoint on the last block that may carry one (automatic `cache_control`).
    pub fn mark_last_cacheable(&mut self, ttl: Ttl) {
        if let Some(block) = self.blocks.iter_mut().rev().find(|b| b.cacheable) {
            block.breakpoint.get_or_insert(ttl);
        }
    }

    /// Makes `params` part of the identity of the messages chapter: every prefix reaching into
    /// it changes with them (0 changes nothing).
    pub fn key_messages_on(&mut self, params: u64) {
        if params == 0 {
            return;
        }
        if let Some(block) = self
            .blocks
            .iter_mut()
            .find(|b| b.chapter == Chapter::Messages)
        {
            let mut hasher = DefaultHasher::new();
            (block.hash, params).hash(&mut hasher);
            block.hash = hasher.finish();
        }
    }

    /// Sets a breakpoint on the block pushed last (Bedrock's `cachePoint` follows its block).
    pub fn mark_previous(&mut self, ttl: Ttl) -> bool {
        match self.blocks.last_mut() {
            Some(block) => {
                block.breakpoint = Some(ttl);
                true
            }
            None => false,
        }
    }
}

/// Builds a [`Prompt`], tokenizing each block through the shared memo.
pub struct PromptBuilder<'a> {
    tokenizer: &'a Tokenizer,
    prompt: Prompt,
}

impl<'a> PromptBuilder<'a> {
    /// An empty prompt.
    pub fn new(tokenizer: &'a Tokenizer) -> Self {
        Self {
            tokenizer,
            prompt: Prompt::default(),
        }
    }

    /// Appends a block whose canonical text is `text`; `tag` (a role) is part of its identity.
    pub fn push(&mut self, chapter: Chapter, tag: &str, text: &str, breakpoint: Option<Ttl>) {
        self.push_block(chapter, tag, text, breakpoint, true);
    }

    /// Appends a block that cannot carry a breakpoint (thinking).
    pub fn push_uncacheable(&mut self, chapter: Chapter, tag: &str, text: &str) {
        self.push_block(chapter, tag, text, None, false);
    }

    fn push_block(
        &mut self,
        chapter: Chapter,
        tag: &str,
        text: &str,
        breakpoint: Option<Ttl>,
        cacheable: bool,
    ) {
        let content_hash = hash_str(text);
        let tokens = self.tokenizer.tokens_hashed(content_hash, text);
        let mut hasher = DefaultHasher::new();
        (chapter, tag, content_hash).hash(&mut hasher);
        self.prompt.blocks.push(Block {
            chapter,
            hash: hasher.finish(),
            tokens,
            breakpoint,
            cacheable,
        });
    }

    /// Sets a breakpoint on the last pushed block; false when there is none.
    pub fn mark_previous(&mut self, ttl: Ttl) -> bool {
        self.prompt.mark_previous(ttl)
    }

    /// The finished prompt.
    pub fn finish(self) -> Prompt {
        self.prompt
    }
}

/// The canonical text of a JSON value with one object key left out (the cache marker, which
/// is not part of the cached content).
pub fn canonical_without(value: &Value, skip: &str) -> String {
    match value {
        Value::Object(map) if map.contains_key(skip) => {
            let mut out = String::from("{");
            let mut first = true;
            for (key, item) in map {
                if key == skip {
                    continue;
                }
                if !first {
                    out.push(',');
                }
                first = false;
                out.push_str(&Value::String(key.clone()).to_string());
                out.push(':');
                out.push_str(&item.to_string());
            }
            out.push('}');
            out
        }
        Value::String(text) => text.clone(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cache_marker_is_not_part_of_the_content() {
        let with =
            serde_json::json!({"type":"text","text":"hi","cache_control":{"type":"ephemeral"}});
        let without = serde_json::json!({"type":"text","text":"hi"});
        assert_eq!(
            canonical_without(&with, "cache_control"),
            canonical_without(&without, "cache_control")
        );
        assert_eq!(
            canonical_without(&with, "cache_control"),
            r#"{"type":"text","text":"hi"}"#
        );
    }
}
