//! Gemini `usageMetadata` → normalized [`Usage`].

use serde_json::Value;
use strata_provider::Usage;

/// Normalizes a `usageMetadata` object.
///
/// `promptTokenCount` already includes `cachedContentTokenCount`, so the cached part is
/// subtracted from input (Pi's `google.ts` does not, and bills cached tokens twice).
/// Reasoning (`thoughtsTokenCount`) is output; tool-use prompt tokens are input.
pub fn normalize_usage(meta: &Value) -> Usage {
    let count = |k: &str| meta.get(k).and_then(Value::as_u64).unwrap_or(0);
    let cached = count("cachedContentTokenCount");
    let prompt = count("promptTokenCount") + count("toolUsePromptTokenCount");
    Usage {
        input: prompt.saturating_sub(cached),
        output: count("candidatesTokenCount") + count("thoughtsTokenCount"),
        cache_read: cached,
        cache_write_5m: 0,
        cache_write_1h: 0,
    }
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
                cache_write_1h: 0
            }
        );
        assert_eq!(usage.total_tokens(), 10_250);
    }
}
