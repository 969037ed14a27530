//! Converse `TokenUsage` → normalized [`Usage`].

use serde_json::Value;
use strata_provider::Usage;

/// Normalizes a Converse `usage` object.
///
/// `inputTokens` excludes cache reads and writes (the Anthropic convention, as Pi assumes).
/// Writes are split by TTL from `cacheDetails` when present; otherwise all count as the
/// default (5-minute) lifetime.
pub fn normalize_usage(usage: &Value) -> Usage {
    let count = |v: Option<&Value>| v.and_then(Value::as_u64).unwrap_or(0);
    let cache_write = count(usage.get("cacheWriteInputTokens"));
    let mut write_1h = 0;
    let mut write_5m = 0;
    let details = usage.get("cacheDetails").and_then(Value::as_array);
    for detail in details.into_iter().flatten() {
        let tokens = count(detail.get("inputTokens"));
        match detail.get("ttl").and_then(Value::as_str) {
            Some("1h") => write_1h += tokens,
            _ => write_5m += tokens,
        }
    }
    if write_1h + write_5m < cache_write {
        write_5m += cache_write - write_1h - write_5m;
    }
    Usage {
        input: count(usage.get("inputTokens")),
        output: count(usage.get("outputTokens")),
        cache_read: count(usage.get("cacheReadInputTokens")),
        cache_write_5m: write_5m,
        cache_write_1h: write_1h,
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
    fn writes_split_by_ttl() {
        let usage = normalize_usage(&json!({
            "inputTokens": 12, "outputTokens": 40, "totalTokens": 5052,
            "cacheReadInputTokens": 3000, "cacheWriteInputTokens": 2000,
            "cacheDetails": [{"ttl": "1h", "inputTokens": 1500}, {"ttl": "5m", "inputTokens": 500}]
        }));
        assert_eq!(
            usage,
            Usage {
                input: 12,
                output: 40,
                cache_read: 3000,
                cache_write_5m: 500,
                cache_write_1h: 1500,
                cache_storage: 0,
                cache_create: 0
            }
        );
        let plain = normalize_usage(
            &json!({"inputTokens": 1, "outputTokens": 2, "cacheWriteInputTokens": 7}),
        );
        assert_eq!(plain.cache_write_5m, 7);
    }
}
