//! OpenAI `prompt_cache_retention`: the lifetime of an automatic-prefix entry follows the
//! request, then the model's default.

use std::time::Duration;

use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use strata_mock::{MockConfig, ModelProfile, ModelRule, Protocol, Retention};

use crate::common::{Harness, filler, start, start_with};

const QUARTER_HOUR: Duration = Duration::from_secs(15 * 60);

#[derive(Clone, Copy, Debug)]
enum Route {
    Chat,
    Responses,
}

impl Route {
    fn body(self, model: &str, retention: Option<&str>) -> Value {
        let system = filler("policy", 1200);
        let mut body = match self {
            Self::Chat => json!({"model": model, "messages": [
                {"role": "system", "content": system},
                {"role": "user", "content": "hi"}]}),
            Self::Responses => json!({"model": model, "instructions": system, "store": false,
                "input": [{"role": "user", "content": [{"type": "input_text", "text": "hi"}]}]}),
        };
        if let Some(retention) = retention {
            body["prompt_cache_retention"] = json!(retention);
        }
        body
    }

    async fn cached(self, h: &Harness, model: &str, retention: Option<&str>) -> u64 {
        let (path, pointer) = match self {
            Self::Chat => (
                "/v1/chat/completions",
                "/usage/prompt_tokens_details/cached_tokens",
            ),
            Self::Responses => ("/v1/responses", "/usage/input_tokens_details/cached_tokens"),
        };
        let reply = h.post(path, &self.body(model, retention)).await;
        assert_eq!(reply.status, 200, "{}", reply.text);
        reply
            .json()
            .pointer(pointer)
            .and_then(Value::as_u64)
            .unwrap()
    }
}

/// A server whose `gpt-5.5*` models have the profile of a capability row offering only 24h.
async fn with_24h_only_model() -> Harness {
    let caps = strata_provider::Capabilities {
        cache_style: strata_provider::CacheStyle::AutomaticPrefix,
        ttl_options: vec![strata_provider::CacheTtl::TwentyFourHours],
        ..strata_provider::Capabilities::default()
    };
    let mut config = MockConfig::new();
    for protocol in [Protocol::Chat, Protocol::Responses] {
        let profile = ModelProfile::from_capabilities(protocol, "gpt-5.5", &caps);
        assert_eq!(profile.cache.default_retention, Retention::Extended);
        config = config.with_model(ModelRule {
            protocol: Some(protocol),
            pattern: "gpt-5.5*".into(),
            profile,
        });
    }
    start_with(config).await
}

/// Writes the prompt, waits a quarter of an hour, sends it again: the tokens read.
async fn read_after_a_quarter_hour(
    h: &Harness,
    route: Route,
    model: &str,
    retention: Option<&str>,
) -> u64 {
    h.server.reset();
    assert_eq!(route.cached(h, model, retention).await, 0);
    h.server.advance_clock(QUARTER_HOUR);
    route.cached(h, model, retention).await
}

#[tokio::test]
async fn the_requested_retention_sets_how_long_an_entry_outlives_idleness() {
    let h = with_24h_only_model().await;
    for route in [Route::Chat, Route::Responses] {
        let read = read_after_a_quarter_hour(&h, route, "gpt-4.1", Some("24h")).await;
        assert!(read >= 1024, "{route:?}: 24h entry read after 15 minutes");
        let read = read_after_a_quarter_hour(&h, route, "gpt-4.1", Some("in_memory")).await;
        assert_eq!(read, 0, "{route:?}: in-memory entry gone after 15 minutes");
        let read = read_after_a_quarter_hour(&h, route, "gpt-4.1", None).await;
        assert_eq!(read, 0, "{route:?}: gpt-4.1 defaults to in-memory");
        let read = read_after_a_quarter_hour(&h, route, "gpt-5.5", None).await;
        assert!(read >= 1024, "{route:?}: a 24h-only model keeps it a day");
        // Within the in-memory lifetime every retention hits.
        h.server.reset();
        route.cached(&h, "gpt-4.1", Some("in_memory")).await;
        h.server.advance_clock(Duration::from_secs(60));
        assert!(route.cached(&h, "gpt-4.1", Some("in_memory")).await >= 1024);
    }
}

#[tokio::test]
async fn a_24h_entry_expires_after_a_day_and_keeps_its_lifetime_when_read_in_memory() {
    let h = start().await;
    for route in [Route::Chat, Route::Responses] {
        h.server.reset();
        route.cached(&h, "gpt-4.1", Some("24h")).await;
        h.server.advance_clock(Duration::from_secs(60));
        // Read by an in-memory request: the entry stays a 24h one.
        assert!(route.cached(&h, "gpt-4.1", Some("in_memory")).await >= 1024);
        h.server.advance_clock(QUARTER_HOUR);
        assert!(
            route.cached(&h, "gpt-4.1", None).await >= 1024,
            "{route:?}: refreshed with its 24h lifetime"
        );
        h.server
            .advance_clock(Duration::from_secs(24 * 60 * 60 + 1));
        assert_eq!(
            route.cached(&h, "gpt-4.1", Some("24h")).await,
            0,
            "{route:?}"
        );
    }
}

#[tokio::test]
async fn an_unknown_retention_is_refused_in_openais_words() {
    let h = start().await;
    for (path, route) in [
        ("/v1/chat/completions", Route::Chat),
        ("/v1/responses", Route::Responses),
    ] {
        let reply = h.post(path, &route.body("gpt-4.1", Some("1h"))).await;
        assert_eq!(reply.status, 400, "{}", reply.text);
        let error = reply.json();
        assert_eq!(error["error"]["type"], "invalid_request_error");
        assert!(
            error["error"]["message"]
                .as_str()
                .unwrap()
                .contains("'in_memory' and '24h'"),
            "{error}"
        );
    }
}
