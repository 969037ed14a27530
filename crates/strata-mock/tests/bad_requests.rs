//! Bad requests on every route: the provider's own error status and body, recorded, never a
//! panic (a 500) or a hang.

use std::time::Duration;

use pretty_assertions::assert_eq;
use serde_json::json;
use strata_mock::MockConfig;

use crate::common::{Harness, start, start_with};
use crate::fault_routes::{ROUTES, Route};

/// Bodies every route refuses: not JSON, not an object, or missing what the route needs.
const UNREADABLE: [&str; 6] = ["", "{not json", "[]", "\"text\"", "null", "{}"];

/// Bodies with a field of the wrong type or a required field missing, per route.
fn invalid(route: Route) -> Vec<serde_json::Value> {
    match route {
        Route::Anthropic => {
            let with = |messages: serde_json::Value| json!({"model": "claude-sonnet-4-5", "max_tokens": 8, "messages": messages});
            let user =
                |content: serde_json::Value| with(json!([{"role": "user", "content": content}]));
            let mut no_schema = user(json!("hi"));
            no_schema["tools"] = json!([{"name": "read"}]);
            let mut bad_system = user(json!("hi"));
            bad_system["system"] = json!([{"type": "text"}]);
            let mut system_number = user(json!("hi"));
            system_number["system"] = json!(5);
            let mut tools_string = user(json!("hi"));
            tools_string["tools"] = json!("read");
            vec![
                with(json!("hi")),
                with(json!([])),
                with(json!([5])),
                user(json!(5)),
                user(json!([5])),
                user(json!([{"type": "text"}])),
                user(json!([{"type": "text", "text": 5}])),
                with(
                    json!([{"role": "assistant", "content": [{"type": "tool_use", "name": "read", "input": {}}]}]),
                ),
                user(json!([{"type": "tool_result", "content": "x"}])),
                no_schema,
                bad_system,
                system_number,
                tools_string,
                json!({"max_tokens": 8, "messages": [{"role": "user", "content": "hi"}]}),
            ]
        }
        Route::Chat => {
            let with =
                |messages: serde_json::Value| json!({"model": "gpt-5", "messages": messages});
            vec![
                with(json!("hi")),
                with(json!([])),
                with(json!([5])),
                with(json!([{"role": "user"}])),
                with(json!([{"role": "robot", "content": "x"}])),
                with(
                    json!([{"role": "user", "content": "x"}, {"role": "tool", "content": "result"}]),
                ),
                json!({"model": "gpt-5", "tools": "x", "messages": [{"role": "user", "content": "x"}]}),
                json!({"model": "gpt-5", "tools": [{"type": "function"}], "messages": [{"role": "user", "content": "x"}]}),
                json!({"messages": [{"role": "user", "content": "x"}]}),
            ]
        }
        Route::Responses => vec![
            json!({"model": "gpt-5"}),
            json!({"model": "gpt-5", "input": 5}),
            json!({"model": "gpt-5", "input": [5]}),
            json!({"model": "gpt-5", "input": "x", "tools": "x"}),
            json!({"model": "gpt-5", "input": "x", "previous_response_id": "resp_unknown"}),
            json!({"input": "x"}),
        ],
        Route::Gemini => vec![
            json!({"contents": []}),
            json!({"contents": "x"}),
            json!({"contents": [{"role": "robot", "parts": [{"text": "x"}]}]}),
            json!({"contents": [{"role": "user", "parts": []}]}),
            json!({"contents": [{"role": "user", "parts": "x"}]}),
            json!({"contents": [{"role": "user", "parts": [5]}]}),
        ],
        Route::Bedrock => vec![
            json!({"messages": "x"}),
            json!({"messages": [{"role": "robot", "content": []}]}),
            json!({"messages": [{"role": "system", "content": [{"toolUse": {}}]}]}),
            json!({"messages": [{"role": "user"}]}),
            json!({"messages": [{"role": "user", "content": [5]}]}),
            json!({"messages": [{"role": "user", "content": [{"text": "x"}]}], "toolConfig": {"tools": [{"toolSpec": {}}]}}),
        ],
    }
}

/// The provider's name for a malformed request.
fn bad_request_name(route: Route) -> &'static str {
    match route {
        Route::Anthropic | Route::Chat | Route::Responses => "invalid_request_error",
        Route::Gemini => "INVALID_ARGUMENT",
        Route::Bedrock => "ValidationException",
    }
}

async fn post_raw(h: &Harness, path: &str, body: &str) -> crate::common::Reply {
    tokio::time::timeout(Duration::from_secs(20), h.post_raw(path, body))
        .await
        .unwrap_or_else(|_| panic!("{path}: no answer to {body}"))
}

#[tokio::test]
async fn bad_requests_get_the_providers_400_and_are_recorded_on_every_route() {
    let h = start().await;
    for route in ROUTES {
        let bodies: Vec<String> = UNREADABLE
            .iter()
            .map(|body| (*body).to_owned())
            .chain(invalid(route).iter().map(ToString::to_string))
            .collect();
        for streamed in [false, true] {
            for body in &bodies {
                let reply = post_raw(&h, route.path(streamed), body).await;
                assert_eq!(
                    (reply.status, route.error_name(&reply).as_str()),
                    (400, bad_request_name(route)),
                    "{route:?} stream={streamed}: {body} → {}",
                    reply.text
                );
                let record = h.last_record();
                assert_eq!(record.status, 400, "{route:?}: {body}");
                assert_eq!(record.error.as_deref(), Some(reply.text.as_str()));
                assert!(record.cache.is_none());
            }
        }
    }
    // Every refusal was recorded, and none took a turn or touched the cache.
    let records = h.server.requests();
    assert!(records.iter().all(|r| r.status == 400 && r.turn.is_none()));
}

#[tokio::test]
async fn a_body_over_the_limit_gets_the_providers_too_large_error_on_every_route() {
    let h = start_with(MockConfig {
        max_body_bytes: 4096,
        ..MockConfig::new()
    })
    .await;
    for route in ROUTES {
        let mut body = route.body(false);
        let long = "x".repeat(8192);
        match route {
            Route::Gemini => body["contents"][0]["parts"][0]["text"] = json!(long),
            Route::Bedrock => body["messages"][0]["content"][0]["text"] = json!(long),
            Route::Responses => body["input"] = json!(long),
            Route::Anthropic | Route::Chat => body["messages"][0]["content"] = json!(long),
        }
        let reply = post_raw(&h, route.path(false), &body.to_string()).await;
        let expected = match route {
            Route::Anthropic => (413, "request_too_large"),
            Route::Chat | Route::Responses => (413, "request_too_large"),
            Route::Gemini => (400, "INVALID_ARGUMENT"),
            Route::Bedrock => (413, "ValidationException"),
        };
        assert_eq!(
            (reply.status, route.error_name(&reply).as_str()),
            expected,
            "{route:?}: {}",
            reply.text
        );
        assert_eq!(h.last_record().status, expected.0, "{route:?}: recorded");
        // A body within the limit is served.
        let small = post_raw(&h, route.path(false), &route.body(false).to_string()).await;
        assert_eq!(small.status, 200, "{route:?}: {}", small.text);
    }
}

#[tokio::test]
async fn an_unknown_gemini_method_is_googles_404_and_recorded() {
    let h = start().await;
    let reply = post_raw(
        &h,
        "/v1beta/models/gemini-2.5-flash:countTokens",
        &Route::Gemini.body(false).to_string(),
    )
    .await;
    assert_eq!(
        (reply.status, Route::Gemini.error_name(&reply).as_str()),
        (404, "NOT_FOUND")
    );
    let record = h.last_record();
    assert_eq!(
        (record.status, record.model.as_str()),
        (404, "gemini-2.5-flash")
    );
}
