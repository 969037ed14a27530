//! Canonical bytes of a rendered request, their FNV-1a hashes, and where two requests diverge.
//!
//! Each chapter's bytes are its elements as compact JSON (`serde_json`, fields in declaration
//! order), one element per line, each line ending in `\n`. A request that only appends
//! messages therefore byte-extends the previous one, as a prefix cache sees it.

use serde::{Deserialize, Serialize};

/// FNV-1a 64 offset basis.
const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
/// FNV-1a 64 prime.
const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;

/// A running FNV-1a 64 hash: stable across runs, platforms and versions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fnv1a(u64);

impl Default for Fnv1a {
    fn default() -> Self {
        Self(FNV_OFFSET)
    }
}

impl Fnv1a {
    /// Feeds bytes into the hash.
    pub fn update(&mut self, bytes: &[u8]) {
        let mut hash = self.0;
        for byte in bytes {
            hash ^= u64::from(*byte);
            hash = hash.wrapping_mul(FNV_PRIME);
        }
        self.0 = hash;
    }

    /// The hash of everything fed so far.
    pub fn value(self) -> u64 {
        self.0
    }

    /// The FNV-1a 64 hash of `bytes`.
    pub fn of(bytes: &[u8]) -> u64 {
        let mut hash = Self::default();
        hash.update(bytes);
        hash.value()
    }
}

/// The three chapters of a request, in the order a prefix cache reads them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Chapter {
    /// Tool definitions (those in the prompt prefix).
    Tools,
    /// The system prompt.
    System,
    /// The conversation.
    Messages,
}

/// Byte length and FNV-1a 64 hash of one chapter's canonical bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct ChapterDigest {
    /// Length of the canonical bytes.
    pub bytes: usize,
    /// FNV-1a 64 of the canonical bytes.
    pub hash: u64,
}

impl ChapterDigest {
    /// The digest of `bytes`.
    pub fn of(bytes: &[u8]) -> Self {
        Self {
            bytes: bytes.len(),
            hash: Fnv1a::of(bytes),
        }
    }
}

/// Where a request first differs from a previous one, over tools ‖ system ‖ messages.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Divergence {
    /// Byte for byte the same request.
    Identical,
    /// The previous request is a strict prefix of this one: everything it cached still hits.
    Extends {
        /// Length of the previous request's bytes, where the new bytes begin.
        at: usize,
    },
    /// The first byte that differs (or where this request ends early).
    At {
        /// Offset in tools ‖ system ‖ messages.
        offset: usize,
        /// The chapter that offset falls in.
        chapter: Chapter,
        /// Offset inside that chapter.
        chapter_offset: usize,
    },
}

impl Divergence {
    /// The first offset whose byte may differ (`None` when identical).
    pub fn offset(&self) -> Option<usize> {
        match self {
            Self::Identical => None,
            Self::Extends { at } => Some(*at),
            Self::At { offset, .. } => Some(*offset),
        }
    }
}

/// The canonical bytes of a rendered request, chapter by chapter, with line boundaries.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RequestBytes {
    /// Chapter 1 as the prefix cache sees it (deferred definitions left out).
    pub tools: Vec<u8>,
    /// Deferred tool definitions: sent, but outside the prompt prefix.
    pub deferred: Vec<u8>,
    /// Chapter 2.
    pub system: Vec<u8>,
    /// Chapter 3.
    pub messages: Vec<u8>,
}

impl RequestBytes {
    /// Chapter bytes by chapter.
    pub fn chapter(&self, chapter: Chapter) -> &[u8] {
        match chapter {
            Chapter::Tools => &self.tools,
            Chapter::System => &self.system,
            Chapter::Messages => &self.messages,
        }
    }

    /// Total length of tools ‖ system ‖ messages.
    pub fn len(&self) -> usize {
        self.tools.len() + self.system.len() + self.messages.len()
    }

    /// Whether all three chapters are empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// tools ‖ system ‖ messages as one buffer (what the divergence offsets index).
    pub fn concatenated(&self) -> Vec<u8> {
        let mut all = Vec::with_capacity(self.len());
        all.extend_from_slice(&self.tools);
        all.extend_from_slice(&self.system);
        all.extend_from_slice(&self.messages);
        all
    }

    /// Where `self` first differs from `previous`.
    pub fn divergence_from(&self, previous: &RequestBytes) -> Divergence {
        let mut base = 0;
        for chapter in [Chapter::Tools, Chapter::System, Chapter::Messages] {
            let (new, old) = (self.chapter(chapter), previous.chapter(chapter));
            let common = common_prefix(new, old);
            if common < new.len() || common < old.len() {
                // Only a last-chapter growth is an extension; anything else shifts later bytes.
                if chapter == Chapter::Messages && common == old.len() {
                    return Divergence::Extends { at: base + common };
                }
                return Divergence::At {
                    offset: base + common,
                    chapter,
                    chapter_offset: common,
                };
            }
            base += new.len();
        }
        Divergence::Identical
    }
}

/// Length of the longest common prefix of two byte strings.
pub(crate) fn common_prefix(a: &[u8], b: &[u8]) -> usize {
    const CHUNK: usize = 64;
    let limit = a.len().min(b.len());
    let mut at = 0;
    // Slice equality compiles to memcmp: skip equal chunks fast, then find the byte.
    while at + CHUNK <= limit && a[at..at + CHUNK] == b[at..at + CHUNK] {
        at += CHUNK;
    }
    while at < limit && a[at] == b[at] {
        at += 1;
    }
    at
}

/// Appends `value` as one line of compact JSON.
pub(crate) fn write_line<T: Serialize>(out: &mut Vec<u8>, value: &T) {
    let start = out.len();
    if serde_json::to_writer(&mut *out, value).is_err() {
        // The request types hold only strings and JSON values with string keys, which always
        // serialize; should that ever change, the line states it rather than vanishing.
        out.truncate(start);
        out.extend_from_slice(b"{\"unserializable\":true}");
    }
    out.push(b'\n');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fnv1a_matches_reference_vectors() {
        assert_eq!(Fnv1a::of(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(Fnv1a::of(b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(Fnv1a::of(b"foobar"), 0x8594_4171_f739_67e8);
    }

    #[test]
    fn common_prefix_finds_the_first_difference() {
        let a = vec![7u8; 200];
        let mut b = a.clone();
        b[130] = 8;
        assert_eq!(common_prefix(&a, &b), 130);
        assert_eq!(common_prefix(&a, &a[..50]), 50);
    }

    #[test]
    fn divergence_names_chapter_and_extension() {
        let old = RequestBytes {
            tools: b"t\n".to_vec(),
            system: b"s\n".to_vec(),
            messages: b"m\n".to_vec(),
            ..RequestBytes::default()
        };
        let mut longer = old.clone();
        longer.messages.extend_from_slice(b"n\n");
        assert_eq!(longer.divergence_from(&old), Divergence::Extends { at: 6 });
        assert_eq!(old.divergence_from(&old), Divergence::Identical);
        let mut tools = old.clone();
        tools.tools.extend_from_slice(b"u\n");
        assert_eq!(
            tools.divergence_from(&old),
            Divergence::At {
                offset: 2,
                chapter: Chapter::Tools,
                chapter_offset: 2
            }
        );
        assert_eq!(
            old.divergence_from(&longer),
            Divergence::At {
                offset: 6,
                chapter: Chapter::Messages,
                chapter_offset: 2
            }
        );
    }
}
