//! Gemini explicit caches (`cachedContents`): the stable prefix of a request (system
//! instruction, tools, tool config and the conversation up to its last model turn) is created
//! once as a cache resource, and later requests name it in `cachedContent` and send only what
//! follows it.
//!
//! The plan is pure: [`ExplicitCaches::plan`] decides from the rendered body and the cache held
//! for the model whether to reuse it, create a new one, or send the full body; the provider
//! does the I/O. A cache is replaced only when the uncached suffix has grown past a step (half
//! the cached prefix, at least the model's minimum), because each create pays the whole prefix
//! at the input price again plus its storage: one per request would cost more than it saves.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde_json::{Map, Value, json};
use strata_provider::{ExplicitCache, Usage};

/// The fields a cache holds, which a request naming it may not send again.
pub const CACHED_FIELDS: [&str; 3] = ["systemInstruction", "tools", "toolConfig"];

/// One cache this provider created and still counts on.
#[derive(Debug, Clone)]
struct Held {
    /// The resource name the provider gave it (`cachedContents/…`).
    name: String,
    /// `systemInstruction`, `tools`, `toolConfig` as sent, serialized.
    head: String,
    /// The contents it holds.
    contents: Vec<Value>,
    /// Tokens the provider counted for it.
    tokens: u64,
    /// When strata stops using it (a margin before the provider's expiry).
    usable_until: Instant,
}

/// What to send for one request.
#[derive(Debug, Clone, PartialEq)]
pub enum Plan {
    /// The body as rendered.
    Full,
    /// Name the held cache `name`; `body` is the suffix only.
    Use {
        /// The request body naming the cache.
        body: Value,
        /// The cache's name.
        name: String,
    },
    /// Create a cache from `create` first, then send the suffix after `cached` contents.
    Create {
        /// The `cachedContents.create` body.
        create: Value,
        /// How many of the body's contents the cache holds.
        cached: usize,
    },
}

/// The explicit caches one provider holds, one per model (a new prefix replaces it).
#[derive(Debug, Default)]
pub struct ExplicitCaches {
    held: Mutex<HashMap<String, Held>>,
}

/// Rough token count of a JSON value (4 bytes a token): used only to decide whether a prefix
/// clears the minimum and whether the suffix has grown past a step; the provider's own count
/// is what is billed.
fn estimate(value: &Value) -> u64 {
    serde_json::to_string(value).map_or(0, |s| s.len() as u64 / 4)
}

fn head_of(body: &Map<String, Value>) -> Value {
    let mut head = Map::new();
    for field in CACHED_FIELDS {
        if let Some(v) = body.get(field) {
            head.insert(field.into(), v.clone());
        }
    }
    Value::Object(head)
}

/// The number of leading contents a cache may hold: everything up to the last model turn
/// before the final content. A boundary after a user turn could not hold, because the
/// adapter folds consecutive user turns into one and the next request would change it.
fn boundary(contents: &[Value]) -> usize {
    let before_last = contents.len().saturating_sub(1);
    contents[..before_last]
        .iter()
        .rposition(|c| c.get("role").and_then(Value::as_str) == Some("model"))
        .map_or(0, |i| i + 1)
}

/// `body` naming cache `name`, without the cached fields and the first `cached` contents.
pub fn suffix_body(body: &Value, name: &str, cached: usize) -> Value {
    let mut out = body.as_object().cloned().unwrap_or_default();
    for field in CACHED_FIELDS {
        out.remove(field);
    }
    let contents: Vec<Value> = out
        .get("contents")
        .and_then(Value::as_array)
        .map(|c| c.iter().skip(cached).cloned().collect())
        .unwrap_or_default();
    out.insert("contents".into(), Value::Array(contents));
    out.insert("cachedContent".into(), json!(name));
    Value::Object(out)
}

impl ExplicitCaches {
    /// What to send for `body` (a rendered `generateContent` body) to `model_id`.
    pub fn plan(&self, model_id: &str, body: &Value, spec: &ExplicitCache) -> Plan {
        let Some(map) = body.as_object() else {
            return Plan::Full;
        };
        let contents: &[Value] = map
            .get("contents")
            .and_then(Value::as_array)
            .map_or(&[], Vec::as_slice);
        let head = head_of(map);
        let head_text = serde_json::to_string(&head).unwrap_or_default();
        let k = boundary(contents);
        let mut held = self.lock();
        let min = u64::from(spec.min_tokens);
        if let Some(h) = held.get(model_id) {
            let holds = h.head == head_text
                && h.contents.len() <= contents.len()
                && h.contents[..] == contents[..h.contents.len()]
                && Instant::now() < h.usable_until;
            if holds {
                let grown: u64 = contents[h.contents.len()..k.max(h.contents.len())]
                    .iter()
                    .map(estimate)
                    .sum();
                let step = min.max(h.tokens / 2);
                if grown < step {
                    return Plan::Use {
                        body: suffix_body(body, &h.name, h.contents.len()),
                        name: h.name.clone(),
                    };
                }
            } else {
                // Expired, or the prefix changed: it will never be read again.
                held.remove(model_id);
            }
        }
        let prefix = estimate(&head) + contents[..k].iter().map(estimate).sum::<u64>();
        if prefix < min {
            return match held.get(model_id) {
                Some(h) => Plan::Use {
                    body: suffix_body(body, &h.name, h.contents.len()),
                    name: h.name.clone(),
                },
                None => Plan::Full,
            };
        }
        let mut create = head.as_object().cloned().unwrap_or_default();
        create.insert("model".into(), json!(format!("models/{model_id}")));
        create.insert("contents".into(), Value::Array(contents[..k].to_vec()));
        create.insert("ttl".into(), json!(format!("{}s", spec.ttl_secs)));
        Plan::Create {
            create: Value::Object(create),
            cached: k,
        }
    }

    /// `body` naming the cache held for `model_id`, if it still holds `body`'s prefix and
    /// lives: what a turn sends when a replacement could not be created.
    pub fn reuse(&self, model_id: &str, body: &Value) -> Option<Value> {
        let map = body.as_object()?;
        let contents = map.get("contents").and_then(Value::as_array)?;
        let head = serde_json::to_string(&head_of(map)).unwrap_or_default();
        let held = self.lock();
        let h = held.get(model_id)?;
        let holds = h.head == head
            && h.contents.len() < contents.len()
            && h.contents[..] == contents[..h.contents.len()]
            && Instant::now() < h.usable_until;
        holds.then(|| suffix_body(body, &h.name, h.contents.len()))
    }

    /// Records a cache created from `create` (named `name`, `tokens` counted) for `model_id`,
    /// replacing any earlier one.
    pub fn created(
        &self,
        model_id: &str,
        create: &Value,
        name: &str,
        tokens: u64,
        spec: &ExplicitCache,
    ) {
        let ttl = Duration::from_secs(u64::from(spec.ttl_secs));
        // Stop using it a little early: a request in flight at expiry would be refused.
        let margin = (ttl / 10).min(Duration::from_secs(30));
        let map = create.as_object().cloned().unwrap_or_default();
        let head = serde_json::to_string(&head_of(&map)).unwrap_or_default();
        let contents = map
            .get("contents")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        self.lock().insert(
            model_id.to_owned(),
            Held {
                name: name.to_owned(),
                head,
                contents,
                tokens,
                usable_until: Instant::now() + ttl.saturating_sub(margin),
            },
        );
    }

    /// Forgets the cache held for `model_id` (the provider refused it).
    pub fn drop_cache(&self, model_id: &str) {
        self.lock().remove(model_id);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Held>> {
        // A panic while holding the map leaves it consistent (every write is one insert).
        self.held
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// What creating a cache of `tokens` for `spec`'s lifetime costs in usage: the tokens created
/// (billed at the input price, by a request of their own, so not in the prompt) and their
/// storage for the whole lifetime asked.
pub fn create_usage(tokens: u64, spec: &ExplicitCache) -> Usage {
    Usage {
        cache_create: tokens,
        cache_storage: tokens * u64::from(spec.ttl_secs),
        ..Usage::default()
    }
}

/// Whether a refused request was refused because of the cache it named (expired, unknown,
/// another model's, or not allowed with its fields): then the turn is re-sent in full.
pub fn refused_for_cache(status: Option<u16>, body: Option<&str>) -> bool {
    matches!(status, Some(400 | 403 | 404))
        && body.is_some_and(|b| {
            let b = b.to_ascii_lowercase();
            b.contains("cachedcontent")
                || b.contains("cached_content")
                || b.contains("cached content")
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn spec() -> ExplicitCache {
        ExplicitCache {
            min_tokens: 100,
            ttl_secs: 300,
            storage_price: 1.0,
        }
    }

    fn turn(role: &str, text: &str) -> Value {
        json!({"role": role, "parts": [{"text": text}]})
    }

    fn body(turns: &[Value]) -> Value {
        json!({
            "contents": turns,
            "systemInstruction": {"parts": [{"text": "s".repeat(800)}]},
            "generationConfig": {"maxOutputTokens": 10},
        })
    }

    #[test]
    fn a_cache_is_created_reused_and_replaced_after_a_step() {
        let caches = ExplicitCaches::default();
        let first = body(&[turn("user", "hi")]);
        let Plan::Create { create, cached } = caches.plan("m", &first, &spec()) else {
            panic!("a large enough prefix is cached");
        };
        assert_eq!(cached, 0);
        assert_eq!(create["model"], "models/m");
        assert_eq!(create["ttl"], "300s");
        assert!(create.get("generationConfig").is_none());
        caches.created("m", &create, "cachedContents/a", 210, &spec());

        let second = body(&[turn("user", "hi"), turn("model", "yo"), turn("user", "ok")]);
        let Plan::Use { body: sent, name } = caches.plan("m", &second, &spec()) else {
            panic!("a small growth reuses the cache");
        };
        assert_eq!(name, "cachedContents/a");
        assert_eq!(
            sent,
            json!({
                "cachedContent": "cachedContents/a",
                "contents": second["contents"],
                "generationConfig": {"maxOutputTokens": 10},
            })
        );

        let long = "x".repeat(2_000);
        let third = body(&[turn("user", "hi"), turn("model", &long), turn("user", "ok")]);
        let Plan::Create { cached, .. } = caches.plan("m", &third, &spec()) else {
            panic!("a suffix past the step gets a new cache");
        };
        assert_eq!(cached, 2, "the cache ends after the last model turn");
    }

    #[test]
    fn a_live_cache_is_reused_when_its_replacement_cannot_be_made() {
        let caches = ExplicitCaches::default();
        let first = body(&[turn("user", "hi")]);
        let Plan::Create { create, .. } = caches.plan("m", &first, &spec()) else {
            panic!("cached");
        };
        assert_eq!(caches.reuse("m", &first), None, "nothing held yet");
        caches.created("m", &create, "cachedContents/a", 210, &spec());
        let later = body(&[
            turn("user", "hi"),
            turn("model", &"x".repeat(2_000)),
            turn("user", "ok"),
        ]);
        assert!(matches!(
            caches.plan("m", &later, &spec()),
            Plan::Create { .. }
        ));
        let sent = caches.reuse("m", &later).unwrap();
        assert_eq!(sent["cachedContent"], "cachedContents/a");
        assert_eq!(sent["contents"], later["contents"]);
        let mut other = later.clone();
        other["systemInstruction"] = json!({"parts": [{"text": "other"}]});
        assert_eq!(caches.reuse("m", &other), None, "another prefix");
    }

    #[test]
    fn a_changed_system_drops_the_cache_and_a_small_prefix_sends_in_full() {
        let caches = ExplicitCaches::default();
        let first = body(&[turn("user", "hi")]);
        let Plan::Create { create, .. } = caches.plan("m", &first, &spec()) else {
            panic!("cached");
        };
        caches.created("m", &create, "cachedContents/a", 210, &spec());
        let mut changed = first.clone();
        changed["systemInstruction"] = json!({"parts": [{"text": "short"}]});
        assert_eq!(caches.plan("m", &changed, &spec()), Plan::Full);
        assert!(matches!(
            caches.plan("m", &first, &spec()),
            Plan::Create { .. }
        ));
    }

    #[test]
    fn creating_bills_the_tokens_and_their_storage_for_the_lifetime() {
        let usage = create_usage(4_096, &spec());
        assert_eq!(usage.cache_create, 4_096);
        assert_eq!(usage.cache_storage, 4_096 * 300);
        assert_eq!(
            usage.prompt_tokens(),
            0,
            "the create is not this request's prompt"
        );
    }

    #[test]
    fn only_refusals_about_the_cache_fall_back() {
        let gone = r#"{"error":{"code":404,"message":"CachedContent not found (or permission denied): cachedContents/x"}}"#;
        assert!(refused_for_cache(Some(404), Some(gone)));
        assert!(refused_for_cache(
            Some(400),
            Some(
                "CachedContent can not be used with GenerateContent request setting system_instruction"
            )
        ));
        assert!(!refused_for_cache(Some(400), Some("Invalid JSON payload")));
        assert!(!refused_for_cache(Some(429), Some(gone)));
        assert!(!refused_for_cache(None, None));
    }
}
