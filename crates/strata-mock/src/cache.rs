//! The prefix-cache simulator: explicit breakpoints with lookback and TTL (Anthropic,
//! Bedrock) and automatic prefix caches in token increments (OpenAI, DeepSeek, Gemini).

use std::collections::HashMap;
use std::hash::{DefaultHasher, Hash, Hasher};

use serde::Serialize;

use crate::config::{CacheConfig, CacheStyle, ExcessBreakpoints};
use crate::prompt::{Chapter, Prompt, Ttl};

/// Tokens of one chapter, split by how the cache treated them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct ChapterTokens {
    /// Read from the cache.
    pub read: u64,
    /// Written to the cache.
    pub written: u64,
    /// Neither read nor written.
    pub uncached: u64,
}

/// Per-chapter accounting.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Chapters {
    /// The tool definitions.
    pub tools: ChapterTokens,
    /// The system prompt.
    pub system: ChapterTokens,
    /// The conversation.
    pub messages: ChapterTokens,
}

impl Chapters {
    fn get_mut(&mut self, chapter: Chapter) -> &mut ChapterTokens {
        match chapter {
            Chapter::Tools => &mut self.tools,
            Chapter::System => &mut self.system,
            Chapter::Messages => &mut self.messages,
        }
    }
}

/// What the cache did with one request.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct CacheAccounting {
    /// All prompt tokens.
    pub input_tokens: u64,
    /// Tokens read from the cache.
    pub cache_read: u64,
    /// Tokens written to the cache (all lifetimes).
    pub cache_write: u64,
    /// Of the written tokens, those written with the short (5m) lifetime.
    pub cache_write_5m: u64,
    /// Of the written tokens, those written with the long (1h) lifetime.
    pub cache_write_1h: u64,
    /// Tokens neither read nor written.
    pub uncached: u64,
    /// The same split per chapter.
    pub chapters: Chapters,
    /// Breakpoints honoured (explicit style).
    pub breakpoints: usize,
}

/// A request the cache rules refuse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CacheError {
    /// More breakpoints than allowed.
    #[error("A maximum of {max} blocks with cache_control may be provided. Found {found}.")]
    TooManyBreakpoints {
        /// The limit.
        max: usize,
        /// How many the request had.
        found: usize,
    },
}

#[derive(Debug, Clone, Copy)]
struct Entry {
    expires_ms: u64,
    ttl_ms: u64,
}

/// The cache state of one server: entries keyed by namespace and prefix hash.
#[derive(Debug, Default)]
pub struct CacheSimulator {
    entries: HashMap<u64, Entry>,
    requests: u64,
}

/// Requests between sweeps of expired entries.
const SWEEP_EVERY: u64 = 1024;

fn mix(seed: u64, value: u64) -> u64 {
    // A multiply-rotate step: fast, and collisions between distinct prefixes are negligible
    // for a simulator.
    (seed.rotate_left(23) ^ value)
        .wrapping_mul(0x9E37_79B9_7F4A_7C15)
        .wrapping_add(0x2545_F491_4F6C_DD1D)
}

impl CacheSimulator {
    /// An empty cache.
    pub fn new() -> Self {
        Self::default()
    }

    /// Forgets every entry.
    pub fn clear(&mut self) {
        self.entries.clear();
    }

    /// Number of live entries (for diagnostics).
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether no entry is stored.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Accounts one request at virtual time `now_ms` in cache namespace `namespace`, updating
    /// the entries as the provider would.
    pub fn account(
        &mut self,
        namespace: &str,
        config: &CacheConfig,
        prompt: &Prompt,
        now_ms: u64,
    ) -> Result<CacheAccounting, CacheError> {
        self.requests += 1;
        if self.requests.is_multiple_of(SWEEP_EVERY) {
            self.entries.retain(|_, entry| entry.expires_ms > now_ms);
        }
        let mut hasher = DefaultHasher::new();
        (namespace, config.style as u8).hash(&mut hasher);
        let seed = hasher.finish();
        match config.style {
            CacheStyle::Explicit => self.explicit(seed, config, prompt, now_ms),
            CacheStyle::Automatic | CacheStyle::DeepseekDisk | CacheStyle::GeminiImplicit => {
                Ok(self.automatic(seed, config, prompt, now_ms))
            }
            CacheStyle::None => Ok(split(prompt, 0, &[])),
        }
    }

    fn live(&self, key: u64, now_ms: u64) -> bool {
        self.entries
            .get(&key)
            .is_some_and(|e| e.expires_ms > now_ms)
    }

    fn refresh(&mut self, key: u64, now_ms: u64) {
        if let Some(entry) = self.entries.get_mut(&key) {
            entry.expires_ms = now_ms + entry.ttl_ms;
        }
    }

    fn explicit(
        &mut self,
        seed: u64,
        config: &CacheConfig,
        prompt: &Prompt,
        now_ms: u64,
    ) -> Result<CacheAccounting, CacheError> {
        let mut breakpoints: Vec<usize> = prompt
            .blocks
            .iter()
            .enumerate()
            .filter(|(_, b)| b.breakpoint.is_some())
            .map(|(i, _)| i)
            .collect();
        if breakpoints.len() > config.max_breakpoints {
            match config.excess_breakpoints {
                ExcessBreakpoints::Reject => {
                    return Err(CacheError::TooManyBreakpoints {
                        max: config.max_breakpoints,
                        found: breakpoints.len(),
                    });
                }
                ExcessBreakpoints::KeepLast => {
                    breakpoints.drain(..breakpoints.len() - config.max_breakpoints);
                }
            }
        }
        // Prefix hash and end position (in tokens) of every block.
        let mut keys = Vec::with_capacity(prompt.blocks.len());
        let mut ends = Vec::with_capacity(prompt.blocks.len());
        let (mut key, mut end) = (seed, 0u64);
        for block in &prompt.blocks {
            key = mix(key, block.hash);
            end += block.tokens.len() as u64;
            keys.push(key);
            ends.push(end);
        }
        // Each breakpoint reads the longest live entry among itself and the blocks it looks back over.
        let mut hit: Option<usize> = None;
        for &bp in &breakpoints {
            let lowest = bp.saturating_sub(config.lookback_blocks);
            if let Some(found) = (lowest..=bp).rev().find(|&j| self.live(keys[j], now_ms)) {
                hit = hit.max(Some(found));
            }
        }
        let read = hit.map_or(0, |j| ends[j]);
        if let Some(j) = hit {
            self.refresh(keys[j], now_ms);
        }
        // Each breakpoint long enough writes (or refreshes) the entry for its prefix; the tokens
        // from the end of the read to it are charged at its lifetime.
        let mut segments = Vec::new();
        let mut written_to = read;
        for &bp in &breakpoints {
            if ends[bp] < config.min_tokens {
                continue;
            }
            let ttl = prompt.blocks[bp].breakpoint.unwrap_or(Ttl::Short);
            let ttl_ms = duration_ms(match ttl {
                Ttl::Short => config.ttl_short,
                Ttl::Long => config.ttl_long,
            });
            let entry = self.entries.entry(keys[bp]).or_insert(Entry {
                expires_ms: 0,
                ttl_ms,
            });
            entry.ttl_ms = entry.ttl_ms.max(ttl_ms);
            entry.expires_ms = entry.expires_ms.max(now_ms + ttl_ms);
            if ends[bp] > written_to {
                segments.push((written_to, ends[bp], ttl));
                written_to = ends[bp];
            }
        }
        let mut accounting = split(prompt, read, &segments);
        accounting.breakpoints = breakpoints.len();
        Ok(accounting)
    }

    fn automatic(
        &mut self,
        seed: u64,
        config: &CacheConfig,
        prompt: &Prompt,
        now_ms: u64,
    ) -> CacheAccounting {
        let unit = config.increment.max(1);
        let total = prompt.total_tokens();
        // Hash of the prefix at every multiple of `unit`.
        let mut boundaries = Vec::with_capacity((total / unit) as usize);
        let (mut key, mut count) = (seed, 0u64);
        for block in &prompt.blocks {
            for &token in block.tokens.iter() {
                key = mix(key, u64::from(token));
                count += 1;
                if count.is_multiple_of(unit) {
                    boundaries.push(key);
                }
            }
        }
        let hit_units = boundaries
            .iter()
            .rposition(|&k| self.live(k, now_ms))
            .map_or(0, |i| i + 1);
        let mut read = hit_units as u64 * unit;
        if read < config.min_tokens {
            read = 0;
        }
        let ttl_ms = duration_ms(config.ttl_automatic);
        let mut segments = Vec::new();
        if total >= config.min_tokens {
            for (i, &k) in boundaries.iter().enumerate() {
                if (i as u64 + 1) * unit < config.min_tokens {
                    continue;
                }
                // A live entry keeps the longer of its lifetime and this request's (a 24h
                // entry read by an in-memory request stays a 24h entry).
                let entry = self.entries.entry(k).or_insert(Entry {
                    expires_ms: 0,
                    ttl_ms,
                });
                if entry.expires_ms <= now_ms {
                    entry.ttl_ms = ttl_ms;
                }
                entry.ttl_ms = entry.ttl_ms.max(ttl_ms);
                entry.expires_ms = entry.expires_ms.max(now_ms + entry.ttl_ms);
            }
            let stored = boundaries.len() as u64 * unit;
            if stored > read {
                segments.push((read, stored, Ttl::Short));
            }
        }
        split(prompt, read, &segments)
    }
}

fn duration_ms(duration: std::time::Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

/// Splits the prompt's tokens into read `[0, read)`, written segments, and the rest.
fn split(prompt: &Prompt, read: u64, segments: &[(u64, u64, Ttl)]) -> CacheAccounting {
    let mut acc = CacheAccounting {
        input_tokens: prompt.total_tokens(),
        cache_read: read,
        ..CacheAccounting::default()
    };
    for &(from, to, ttl) in segments {
        let len = to - from;
        acc.cache_write += len;
        match ttl {
            Ttl::Short => acc.cache_write_5m += len,
            Ttl::Long => acc.cache_write_1h += len,
        }
    }
    acc.uncached = acc.input_tokens - acc.cache_read - acc.cache_write;
    let overlap = |a: u64, b: u64, from: u64, to: u64| b.min(to).saturating_sub(a.max(from));
    let mut start = 0u64;
    for block in &prompt.blocks {
        let end = start + block.tokens.len() as u64;
        let chapter = acc.chapters.get_mut(block.chapter);
        let r = overlap(start, end, 0, read);
        let w: u64 = segments
            .iter()
            .map(|&(f, t, _)| overlap(start, end, f, t))
            .sum();
        chapter.read += r;
        chapter.written += w;
        chapter.uncached += (end - start) - r - w;
        start = end;
    }
    acc
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::prompt::PromptBuilder;
    use crate::tokens::Tokenizer;

    fn prompt(tokenizer: &Tokenizer, blocks: &[(Chapter, &str, bool)]) -> Prompt {
        let mut builder = PromptBuilder::new(tokenizer);
        for (chapter, text, bp) in blocks {
            builder.push(*chapter, "x", text, bp.then_some(Ttl::Short));
        }
        builder.finish()
    }

    #[test]
    fn explicit_rereads_up_to_the_last_breakpoint() {
        let tokenizer = Tokenizer::new();
        let big = "word ".repeat(1500);
        let p = prompt(
            &tokenizer,
            &[
                (Chapter::System, &big, true),
                (Chapter::Messages, "hello there", false),
            ],
        );
        let mut sim = CacheSimulator::new();
        let config = CacheConfig::anthropic(1024);
        let first = sim.account("m", &config, &p, 0).unwrap();
        assert_eq!(first.cache_read, 0);
        assert_eq!(first.cache_write, p.blocks[0].tokens.len() as u64);
        let second = sim.account("m", &config, &p, 1000).unwrap();
        assert_eq!(second.cache_read, first.cache_write);
        assert_eq!(second.cache_write, 0);
        assert_eq!(second.uncached, p.blocks[1].tokens.len() as u64);
        assert_eq!(second.chapters.system.read, second.cache_read);
    }

    #[test]
    fn explicit_below_minimum_caches_nothing() {
        let tokenizer = Tokenizer::new();
        let p = prompt(&tokenizer, &[(Chapter::System, "short", true)]);
        let mut sim = CacheSimulator::new();
        let config = CacheConfig::anthropic(1024);
        sim.account("m", &config, &p, 0).unwrap();
        let again = sim.account("m", &config, &p, 0).unwrap();
        assert_eq!((again.cache_read, again.cache_write), (0, 0));
    }

    #[test]
    fn automatic_counts_in_increments() {
        let tokenizer = Tokenizer::new();
        let text = "alpha ".repeat(1500);
        let p = prompt(&tokenizer, &[(Chapter::Messages, &text, false)]);
        let total = p.total_tokens();
        let mut sim = CacheSimulator::new();
        let config = CacheConfig::openai();
        sim.account("k", &config, &p, 0).unwrap();
        let again = sim.account("k", &config, &p, 0).unwrap();
        assert_eq!(again.cache_read, total / 128 * 128);
        assert_eq!(again.cache_read % 128, 0);
    }
}
