//! Gemini explicit caches (`cachedContents`), written from the Gemini API reference and
//! google-genai's `CachedContent` / `CreateCachedContentConfig` types: a cache holds a model,
//! `contents`, `systemInstruction`, `tools` and `toolConfig`, lives for `ttl` (a duration like
//! `"300s"`) or until `expireTime` (RFC 3339), one hour when neither is set, and is named
//! `cachedContents/{id}`. A `generateContent` naming it in `cachedContent` is served as if its
//! parts came first, all of them read from the cache, and may not set `systemInstruction`,
//! `tools` or `toolConfig` itself. Storage is billed per token-hour for the lifetime asked.
//!
//! Times are the mock's virtual clock; `expireTime` is read against the wall clock at creation.

use std::collections::HashMap;

use serde_json::{Map, Value, json};

/// The lifetime of a cache that names none ("If not set, the TTL defaults to 1 hour").
pub const DEFAULT_TTL_MS: u64 = 3_600_000;

/// The fields a cache holds and a request naming it may not set again.
const CACHED_FIELDS: [&str; 3] = ["systemInstruction", "tools", "toolConfig"];

/// One explicit cache.
#[derive(Debug, Clone)]
struct Entry {
    model: String,
    body: Map<String, Value>,
    tokens: u64,
    created_ms: u64,
    expire_ms: u64,
    /// The wall clock at creation, so every read of the resource prints the same instants
    /// (converting the virtual clock afresh on each read drifted by a millisecond).
    wall_created_ms: u64,
}

/// Every explicit cache the server holds, and the storage they were billed.
#[derive(Debug, Default)]
pub struct CachedContents {
    entries: HashMap<String, Entry>,
    next: u64,
    storage_token_hours: f64,
    created_tokens: u64,
}

/// What a `generateContent` naming a cache becomes.
#[derive(Debug, Clone, PartialEq)]
pub struct Resolved {
    /// The request with the cache's parts first and `cachedContent` gone.
    pub body: Value,
    /// Tokens of the cache, read from it.
    pub cached_tokens: u64,
}

/// Why a request naming a cache is refused: not found (404) or malformed (400).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CacheRefusal {
    /// No such cache, or it expired.
    NotFound(String),
    /// The request is not valid with a cache.
    BadRequest(String),
}

impl CachedContents {
    /// Creates a cache from a `cachedContents.create` body at `now_ms`; `count` gives the
    /// tokens of a `generateContent` body holding the same parts. The created resource.
    pub fn create(
        &mut self,
        body: &Value,
        now_ms: u64,
        count: impl Fn(&Value) -> Result<u64, String>,
    ) -> Result<Value, String> {
        let model = body
            .get("model")
            .and_then(Value::as_str)
            .ok_or("CachedContent.model is required")?;
        let model = model.strip_prefix("models/").unwrap_or(model).to_owned();
        let ttl_ms = lifetime_ms(body)?;
        let mut parts = Map::new();
        for field in ["contents", "systemInstruction", "tools", "toolConfig"] {
            if let Some(value) = body.get(field) {
                parts.insert(field.to_owned(), value.clone());
            }
        }
        let mut counted = parts.clone();
        counted
            .entry("contents")
            .or_insert_with(|| Value::Array(Vec::new()));
        let tokens = count(&Value::Object(counted))?;
        self.next += 1;
        let name = format!("cachedContents/mock{:012}", self.next);
        self.storage_token_hours += tokens as f64 * ttl_ms as f64 / 3_600_000.0;
        self.created_tokens += tokens;
        let entry = Entry {
            model,
            body: parts,
            tokens,
            created_ms: now_ms,
            expire_ms: now_ms.saturating_add(ttl_ms),
            wall_created_ms: wall_now_ms(),
        };
        let resource = resource(&name, &entry);
        self.entries.insert(name, entry);
        Ok(resource)
    }

    /// The resource `name` at `now_ms`, `None` when unknown or expired.
    pub fn get(&self, name: &str, now_ms: u64) -> Option<Value> {
        let entry = self.live(name, now_ms)?;
        Some(resource(name, entry))
    }

    fn live(&self, name: &str, now_ms: u64) -> Option<&Entry> {
        self.entries.get(name).filter(|e| now_ms < e.expire_ms)
    }

    /// `request` (a `generateContent` body naming `cachedContent`) for `model`, with the
    /// cache's parts put first.
    pub fn resolve(
        &self,
        request: &Value,
        model: &str,
        now_ms: u64,
    ) -> Result<Option<Resolved>, CacheRefusal> {
        let Some(name) = request.get("cachedContent") else {
            return Ok(None);
        };
        let name = name.as_str().unwrap_or_default();
        let entry = self.live(name, now_ms).ok_or_else(|| {
            CacheRefusal::NotFound(format!(
                "CachedContent not found (or permission denied): {name}"
            ))
        })?;
        if CACHED_FIELDS.iter().any(|f| request.get(f).is_some()) {
            return Err(CacheRefusal::BadRequest(
                "CachedContent can not be used with GenerateContent request setting system_instruction, tools or tool_config.\n\nProposed fix: move those values to CachedContent from GenerateContent request.".into(),
            ));
        }
        let model = model.strip_prefix("models/").unwrap_or(model);
        if model != entry.model {
            return Err(CacheRefusal::BadRequest(format!(
                "Model used by GenerateContent request ({model}) and CachedContent ({}) has to be the same.",
                entry.model
            )));
        }
        let mut body = request.clone();
        let Some(map) = body.as_object_mut() else {
            return Err(CacheRefusal::BadRequest(
                "the request is not an object".into(),
            ));
        };
        map.remove("cachedContent");
        let mut contents: Vec<Value> = entry
            .body
            .get("contents")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        contents.extend(
            map.get("contents")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default(),
        );
        map.insert("contents".into(), Value::Array(contents));
        for field in CACHED_FIELDS {
            if let Some(value) = entry.body.get(field) {
                map.insert(field.into(), value.clone());
            }
        }
        Ok(Some(Resolved {
            body,
            cached_tokens: entry.tokens,
        }))
    }

    /// Tokens of every cache created so far (billed at the input price when created).
    pub fn created_tokens(&self) -> u64 {
        self.created_tokens
    }

    /// Storage billed so far, in token-hours (each cache's tokens times its lifetime).
    pub fn storage_token_hours(&self) -> f64 {
        self.storage_token_hours
    }
}

fn resource(name: &str, entry: &Entry) -> Value {
    let wall = |at_ms: u64| rfc3339(entry.wall_created_ms + at_ms.saturating_sub(entry.created_ms));
    json!({
        "name": name,
        "model": format!("models/{}", entry.model),
        "createTime": wall(entry.created_ms),
        "updateTime": wall(entry.created_ms),
        "expireTime": wall(entry.expire_ms),
        "usageMetadata": {"totalTokenCount": entry.tokens},
    })
}

/// The wall clock, in milliseconds since the epoch.
fn wall_now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// `ttl` (`"300s"`, `"1.5s"`) or `expireTime` (RFC 3339, UTC) in milliseconds from now.
fn lifetime_ms(body: &Value) -> Result<u64, String> {
    match (body.get("ttl"), body.get("expireTime")) {
        (Some(_), Some(_)) => Err("Only one of ttl or expire_time may be set".into()),
        (Some(ttl), None) => {
            let text = ttl.as_str().unwrap_or_default();
            let secs: f64 = text
                .strip_suffix('s')
                .and_then(|s| s.parse().ok())
                .filter(|s: &f64| *s > 0.0)
                .ok_or_else(|| format!("Invalid value at 'cached_content.ttl' ({text})"))?;
            Ok((secs * 1000.0) as u64)
        }
        (None, Some(at)) => {
            let text = at.as_str().unwrap_or_default();
            let at = parse_rfc3339(text)
                .ok_or_else(|| format!("Invalid value at 'cached_content.expire_time' ({text})"))?;
            let now = wall_now_ms();
            at.checked_sub(now)
                .filter(|ms| *ms > 0)
                .ok_or_else(|| "expire_time must be in the future".to_owned())
        }
        (None, None) => Ok(DEFAULT_TTL_MS),
    }
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// `2026-12-06T01:00:00Z` or with fractional seconds, UTC only; milliseconds since the epoch.
fn parse_rfc3339(text: &str) -> Option<u64> {
    let text = text.strip_suffix('Z')?;
    let (date, time) = text.split_once('T')?;
    let mut d = date.split('-').map(|p| p.parse::<i64>().ok());
    let (y, m, day) = (d.next()??, d.next()??, d.next()??);
    let mut t = time.split(':');
    let (h, min) = (
        t.next()?.parse::<i64>().ok()?,
        t.next()?.parse::<i64>().ok()?,
    );
    let secs: f64 = t.next()?.parse().ok()?;
    let whole = days_from_civil(y, m, day) * 86_400 + h * 3600 + min * 60;
    u64::try_from(whole * 1000 + (secs * 1000.0) as i64).ok()
}

/// Milliseconds since the epoch as RFC 3339 with milliseconds, UTC.
fn rfc3339(ms: u64) -> String {
    let secs = (ms / 1000) as i64;
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    // Inverse of days_from_civil.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{:03}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60,
        ms % 1000
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_read_and_write_rfc3339() {
        let ms = parse_rfc3339("2026-12-06T01:25:00.5Z").unwrap();
        assert_eq!(rfc3339(ms), "2026-12-06T01:25:00.500Z");
        assert_eq!(parse_rfc3339("1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(parse_rfc3339("2026-12-06T01:25:00+01:00"), None);
    }

    #[test]
    fn lifetimes_default_to_an_hour() {
        assert_eq!(lifetime_ms(&json!({})), Ok(DEFAULT_TTL_MS));
        assert_eq!(lifetime_ms(&json!({"ttl": "300s"})), Ok(300_000));
        assert!(lifetime_ms(&json!({"ttl": "5m"})).is_err());
        assert!(lifetime_ms(&json!({"ttl": "1s", "expireTime": "2030-01-01T00:00:00Z"})).is_err());
        let in_a_minute = rfc3339(wall_now_ms() + 60_000);
        let ms = lifetime_ms(&json!({"expireTime": in_a_minute})).unwrap();
        assert!((58_000..=60_000).contains(&ms), "{ms}");
    }

    #[test]
    fn a_cache_reads_back_with_the_times_it_was_created_with() {
        let mut caches = CachedContents::default();
        let created = caches
            .create(&json!({"model": "models/m", "ttl": "300s"}), 1_000, |_| {
                Ok(10)
            })
            .unwrap();
        let name = created["name"].as_str().unwrap();
        std::thread::sleep(std::time::Duration::from_millis(3));
        let read = caches.get(name, 2_500).unwrap();
        for field in ["createTime", "expireTime"] {
            assert_eq!(read[field], created[field], "{field}");
        }
        let created_ms = parse_rfc3339(created["createTime"].as_str().unwrap()).unwrap();
        let expire_ms = parse_rfc3339(created["expireTime"].as_str().unwrap()).unwrap();
        assert_eq!(expire_ms - created_ms, 300_000);
    }
}
