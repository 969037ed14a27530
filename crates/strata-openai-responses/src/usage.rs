//! `ResponseUsage` → normalized [`Usage`].

use serde_json::Value;
use strata_provider::Usage;

/// Normalizes a Responses `usage` object.
///
/// `input_tokens` includes cached reads and cache writes (the three rates partition the
/// prompt), so the uncached part is what remains after subtracting both.
pub fn normalize_usage(usage: &Value) -> Usage {
    let count = |v: Option<&Value>| v.and_then(Value::as_u64).unwrap_or(0);
    let details = usage.get("input_tokens_details");
    let input = count(usage.get("input_tokens"));
    let cache_read = count(details.and_then(|d| d.get("cached_tokens")));
    let cache_write = count(details.and_then(|d| d.get("cache_write_tokens")));
    Usage {
        input: input.saturating_sub(cache_read).saturating_sub(cache_write),
        output: count(usage.get("output_tokens")),
        cache_read,
        cache_write_5m: cache_write,
        cache_write_1h: 0,
        cache_storage: 0,
        cache_create: 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    #[test]
    fn cached_and_written_tokens_leave_the_uncached_remainder() {
        let usage = normalize_usage(&json!({
            "input_tokens": 5000,
            "input_tokens_details": {"cached_tokens": 3968, "cache_write_tokens": 512},
            "output_tokens": 120,
            "output_tokens_details": {"reasoning_tokens": 64},
            "total_tokens": 5120
        }));
        assert_eq!(
            usage,
            Usage {
                input: 520,
                output: 120,
                cache_read: 3968,
                cache_write_5m: 512,
                cache_write_1h: 0,
                cache_storage: 0,
                cache_create: 0
            }
        );
        assert_eq!(usage.prompt_tokens(), 5000);
    }

    #[test]
    fn missing_details_mean_no_cache() {
        let usage = normalize_usage(&json!({"input_tokens": 10, "output_tokens": 2}));
        assert_eq!(usage.input, 10);
        assert_eq!(usage.cache_read, 0);
    }
}
