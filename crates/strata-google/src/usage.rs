//! Gemini `usageMetadata` → normalized [`Usage`].

use serde::Deserialize;
use serde_json::Value;
use strata_provider::Usage;

/// The counts of a `usageMetadata` object that strata reads.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UsageMetadata {
    /// The whole prompt, cached tokens included.
    #[serde(default)]
    pub prompt_token_count: u64,
    /// Prompt tokens read from the cache.
    #[serde(default)]
    pub cached_content_token_count: u64,
    /// Answer tokens.
    #[serde(default)]
    pub candidates_token_count: u64,
    /// Reasoning tokens.
    #[serde(default)]
    pub thoughts_token_count: u64,
    /// Tokens of tool-use prompts (input).
    #[serde(default)]
    pub tool_use_prompt_token_count: u64,
}

impl UsageMetadata {
    /// Normalized usage.
    ///
    /// `promptTokenCount` already includes `cachedContentTokenCount`, so the cached part is
    /// subtracted from input (Pi's `google.ts` does not, and bills cached tokens twice).
    /// Reasoning (`thoughtsTokenCount`) is output; tool-use prompt tokens are input.
    pub fn usage(&self) -> Usage {
        let cached = self.cached_content_token_count;
        let prompt = self.prompt_token_count + self.tool_use_prompt_token_count;
        Usage {
            input: prompt.saturating_sub(cached),
            output: self.candidates_token_count + self.thoughts_token_count,
            cache_read: cached,
            cache_write_5m: 0,
            cache_write_1h: 0,
            cache_storage: 0,
            cache_create: 0,
        }
    }
}

/// Normalizes a `usageMetadata` object (see [`UsageMetadata::usage`]).
pub fn normalize_usage(meta: &Value) -> Usage {
    let count = |k: &str| meta.get(k).and_then(Value::as_u64).unwrap_or(0);
    UsageMetadata {
        prompt_token_count: count("promptTokenCount"),
        cached_content_token_count: count("cachedContentTokenCount"),
        candidates_token_count: count("candidatesTokenCount"),
        thoughts_token_count: count("thoughtsTokenCount"),
        tool_use_prompt_token_count: count("toolUsePromptTokenCount"),
    }
    .usage()
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    #[test]
    fn cached_tokens_are_not_counted_twice() {
        let usage = normalize_usage(&json!({
            "promptTokenCount": 10_000,
            "cachedContentTokenCount": 8_192,
            "candidatesTokenCount": 50,
            "thoughtsTokenCount": 200,
            "totalTokenCount": 10_250
        }));
        assert_eq!(
            usage,
            Usage {
                input: 1_808,
                output: 250,
                cache_read: 8_192,
                cache_write_5m: 0,
                cache_write_1h: 0,
                cache_storage: 0,
                cache_create: 0
            }
        );
        assert_eq!(usage.total_tokens(), 10_250);
    }
}
