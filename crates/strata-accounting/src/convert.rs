//! Between the provider's usage (writes split by lifetime) and the session's (one bucket).

use serde_json::Value;
use strata_provider::{CacheDiagnosis, Cost, Usage};
use strata_session::Extra;

/// Field of a session usage holding the tokens written for an hour (Pi has one `cacheWrite`
/// bucket and ignores it).
pub const CACHE_WRITE_1H_FIELD: &str = "cacheWrite1h";

/// Field of a session usage holding explicit-cache storage in token-seconds (Gemini
/// `cachedContents`); Pi has no such bucket.
pub const CACHE_STORAGE_FIELD: &str = "cacheStorage";

/// Field of a session usage holding the tokens of explicit caches created for the request (a
/// create request of their own, not in the prompt); Pi has no such bucket.
pub const CACHE_CREATE_FIELD: &str = "cacheCreate";

/// Field of a session cost holding what explicit caches cost (creates and storage, dollars);
/// the cost's `total` includes it.
pub const EXPLICIT_CACHE_COST_FIELD: &str = "explicitCache";

/// Field of a session usage holding the provider's cache diagnosis of the request
/// (`{reason, missedTokens}`; Pi ignores it).
pub const CACHE_DIAGNOSIS_FIELD: &str = "cacheDiagnosis";

/// Keeps the provider's cache diagnosis with the usage it explains.
pub fn record_diagnosis(usage: &mut strata_session::Usage, diagnosis: &CacheDiagnosis) {
    if let Ok(value) = serde_json::to_value(diagnosis) {
        usage.extra.insert(CACHE_DIAGNOSIS_FIELD.into(), value);
    }
}

/// The provider's cache diagnosis a session usage recorded, if any.
pub fn stored_diagnosis(stored: &strata_session::Usage) -> Option<CacheDiagnosis> {
    serde_json::from_value(stored.extra.get(CACHE_DIAGNOSIS_FIELD)?.clone()).ok()
}

/// The usage in Pi's session shape (`input`, `output`, `cacheRead`, `cacheWrite`,
/// `totalTokens`, `cost`); the 1-hour share of the writes is kept in `cacheWrite1h`.
pub fn session_usage(usage: &Usage, cost: &Cost) -> strata_session::Usage {
    let mut extra = Extra::new();
    if usage.cache_write_1h > 0 {
        extra.insert(
            CACHE_WRITE_1H_FIELD.into(),
            Value::from(usage.cache_write_1h),
        );
    }
    let mut cost_extra = Extra::new();
    for (field, value) in [
        (CACHE_STORAGE_FIELD, usage.cache_storage),
        (CACHE_CREATE_FIELD, usage.cache_create),
    ] {
        if value > 0 {
            extra.insert(field.into(), Value::from(value));
        }
    }
    if cost.explicit_cache > 0.0 {
        cost_extra.insert(
            EXPLICIT_CACHE_COST_FIELD.into(),
            Value::from(cost.explicit_cache),
        );
    }
    strata_session::Usage {
        input: usage.input,
        output: usage.output,
        cache_read: usage.cache_read,
        cache_write: usage.cache_write(),
        total_tokens: usage.total_tokens(),
        cost: strata_session::Cost {
            input: cost.input,
            output: cost.output,
            cache_read: cost.cache_read,
            cache_write: cost.cache_write(),
            total: cost.total(),
            extra: cost_extra,
        },
        extra,
    }
}

/// The usage a session stored, with its writes split back by lifetime (`cacheWrite1h`, when
/// recorded, is the hour's share; the rest are 5-minute writes).
pub fn provider_usage(stored: &strata_session::Usage) -> Usage {
    let one_hour = stored
        .extra
        .get(CACHE_WRITE_1H_FIELD)
        .and_then(Value::as_u64)
        .unwrap_or(0)
        .min(stored.cache_write);
    let count = |field: &str| stored.extra.get(field).and_then(Value::as_u64).unwrap_or(0);
    Usage {
        input: stored.input,
        output: stored.output,
        cache_read: stored.cache_read,
        cache_write_5m: stored.cache_write - one_hour,
        cache_write_1h: one_hour,
        cache_storage: count(CACHE_STORAGE_FIELD),
        cache_create: count(CACHE_CREATE_FIELD),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use strata_provider::Prices;

    #[test]
    fn an_hour_write_survives_the_round_trip_through_the_session_shape() {
        let usage = Usage {
            input: 10,
            output: 1,
            cache_read: 2000,
            cache_write_5m: 100,
            cache_write_1h: 5000,
            cache_storage: 0,
            cache_create: 0,
        };
        let prices = Prices {
            input: 5.0,
            output: 25.0,
            cache_read: 0.5,
            cache_write_5m: 6.25,
            cache_write_1h: 10.0,
            cache_storage: 0.0,
        };
        let stored = session_usage(&usage, &usage.cost(&prices));
        assert_eq!(stored.cache_write, 5100);
        let json = serde_json::to_value(&stored).unwrap();
        assert_eq!(json["cacheWrite1h"], 5000);
        let read: strata_session::Usage = serde_json::from_value(json).unwrap();
        assert_eq!(provider_usage(&read), usage);
    }

    #[test]
    fn explicit_cache_creates_and_storage_survive_the_round_trip_and_are_in_the_total() {
        let usage = Usage {
            input: 100,
            cache_read: 8_000,
            cache_create: 8_000,
            cache_storage: 8_000 * 300,
            ..Usage::default()
        };
        let prices = Prices {
            input: 0.3,
            cache_read: 0.03,
            cache_write_5m: 0.3,
            cache_storage: 1.0,
            ..Prices::default()
        };
        let cost = usage.cost(&prices);
        let stored = session_usage(&usage, &cost);
        let json = serde_json::to_value(&stored).unwrap();
        assert_eq!(json["cacheStorage"], 2_400_000);
        assert_eq!(json["cacheCreate"], 8_000);
        assert_eq!(
            json["cacheWrite"], 0,
            "a create is not a write of this prompt"
        );
        let explicit = json["cost"]["explicitCache"].as_f64().unwrap();
        let expected = 8_000.0 * 0.3 / 1e6 + 8_000.0 * 300.0 / 3600.0 / 1e6;
        assert!((explicit - expected).abs() < 1e-15, "{explicit}");
        let total = json["cost"]["total"].as_f64().unwrap();
        assert!((total - cost.total()).abs() < 1e-15 && total > explicit);
        let read: strata_session::Usage = serde_json::from_value(json).unwrap();
        assert_eq!(provider_usage(&read), usage);
    }

    #[test]
    fn a_provider_diagnosis_is_kept_beside_the_usage() {
        let mut stored = session_usage(&Usage::default(), &Cost::default());
        assert_eq!(stored_diagnosis(&stored), None);
        let diagnosis = CacheDiagnosis {
            reason: "system_changed".into(),
            missed_tokens: Some(4200),
        };
        record_diagnosis(&mut stored, &diagnosis);
        let json = serde_json::to_value(&stored).unwrap();
        assert_eq!(json["cacheDiagnosis"]["reason"], "system_changed");
        let read: strata_session::Usage = serde_json::from_value(json).unwrap();
        assert_eq!(stored_diagnosis(&read), Some(diagnosis));
    }

    #[test]
    fn a_pi_usage_without_the_field_is_all_five_minute_writes() {
        let stored: strata_session::Usage =
            serde_json::from_str(r#"{"input":1,"output":2,"cacheRead":3,"cacheWrite":4}"#).unwrap();
        let usage = provider_usage(&stored);
        assert_eq!((usage.cache_write_5m, usage.cache_write_1h), (4, 0));
    }
}
