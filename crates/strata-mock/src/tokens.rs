//! Token counting with a real BPE (`o200k_base`, embedded in the binary), memoized per block
//! content so a repeated prefix is never tokenized twice.

use std::collections::HashMap;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::{Arc, Mutex, OnceLock};

use tiktoken_rs::CoreBPE;

/// Distinct block contents kept before the memo is cleared (bounds memory on long runs).
const MEMO_LIMIT: usize = 200_000;

/// Counts tokens; shared by every request of a server.
#[derive(Debug, Default)]
pub struct Tokenizer {
    memo: Mutex<HashMap<u64, Arc<[u32]>>>,
}

fn bpe() -> Option<&'static CoreBPE> {
    static BPE: OnceLock<Option<CoreBPE>> = OnceLock::new();
    BPE.get_or_init(|| tiktoken_rs::o200k_base().ok()).as_ref()
}

/// A stable 64-bit hash of a string (SipHash with fixed keys, identical across runs).
pub fn hash_str(text: &str) -> u64 {
    let mut hasher = DefaultHasher::new();
    text.hash(&mut hasher);
    hasher.finish()
}

impl Tokenizer {
    /// A tokenizer with an empty memo.
    pub fn new() -> Self {
        Self::default()
    }

    /// Loads the BPE tables now rather than on the first request.
    pub fn warm_up() {
        let _ = bpe();
    }

    /// The tokens of `text`, whose hash the caller already knows.
    pub fn tokens_hashed(&self, hash: u64, text: &str) -> Arc<[u32]> {
        if let Some(found) = self
            .memo
            .lock()
            .ok()
            .and_then(|memo| memo.get(&hash).cloned())
        {
            return found;
        }
        let tokens: Arc<[u32]> = encode(text).into();
        if let Ok(mut memo) = self.memo.lock() {
            if memo.len() >= MEMO_LIMIT {
                memo.clear();
            }
            memo.insert(hash, tokens.clone());
        }
        tokens
    }

    /// The tokens of `text`.
    pub fn tokens(&self, text: &str) -> Arc<[u32]> {
        self.tokens_hashed(hash_str(text), text)
    }

    /// How many tokens `text` has.
    pub fn count(&self, text: &str) -> u64 {
        self.tokens(text).len() as u64
    }

    /// The longest leading part of `text` that counts at most `limit` tokens: what a model
    /// stopped by an output cap has sent.
    pub fn prefix(&self, text: &str, limit: u64) -> String {
        let tokens = self.tokens(text);
        let limit = usize::try_from(limit).unwrap_or(usize::MAX);
        if tokens.len() <= limit {
            return text.to_owned();
        }
        let mut keep = decoded_len(text, &tokens[..limit]);
        // Re-encoding a cut text may merge differently; shorten until it fits.
        while keep > 0 && self.count(&text[..keep]) > limit as u64 {
            keep = text[..keep]
                .char_indices()
                .next_back()
                .map_or(0, |(index, _)| index);
        }
        text[..keep].to_owned()
    }
}

/// How many bytes of `text` the leading `tokens` of its encoding spell, rounded down to a
/// character boundary (a token may end inside a multi-byte character).
fn decoded_len(text: &str, tokens: &[u32]) -> usize {
    let bytes = match bpe() {
        Some(bpe) => bpe.decode_bytes(tokens).map_or(0, |bytes| bytes.len()),
        None => tokens.len() * 4,
    };
    let mut end = bytes.min(text.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    end
}

/// Encodes with the BPE; if the tables failed to load (they are embedded, so only on a
/// corrupted build), falls back to one token per 4 bytes so the server still answers.
fn encode(text: &str) -> Vec<u32> {
    match bpe() {
        Some(bpe) => bpe.encode_ordinary(text),
        None => text
            .as_bytes()
            .chunks(4)
            .map(|chunk| chunk.iter().fold(0u32, |acc, b| acc * 31 + u32::from(*b)))
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_with_the_real_bpe_and_memoizes() {
        let tokenizer = Tokenizer::new();
        let tokens = tokenizer.tokens("hello world");
        assert_eq!(tokens.len(), 2);
        assert!(Arc::ptr_eq(&tokens, &tokenizer.tokens("hello world")));
        assert_eq!(tokenizer.count(""), 0);
    }

    #[test]
    fn a_prefix_fits_the_limit_and_never_splits_a_character() {
        let tokenizer = Tokenizer::new();
        let text = "héllo wörld, naïve café — 日本語のテキスト and more words here";
        let total = tokenizer.count(text);
        for limit in 0..=total + 1 {
            let prefix = tokenizer.prefix(text, limit);
            assert!(text.starts_with(&prefix));
            assert!(tokenizer.count(&prefix) <= limit, "{limit}: {prefix:?}");
        }
        assert_eq!(tokenizer.prefix(text, total), text);
        assert_eq!(tokenizer.prefix("hello world", 1), "hello");
    }
}
