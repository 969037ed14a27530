//! The adapter against strata-mock over real HTTP: streaming, usage and cost, every fault
//! kind, cancellation.

use std::time::{Duration, Instant};

use futures::StreamExt;
use pretty_assertions::assert_eq;
use serde_json::json;
use strata_mock::{Fault, FaultKind, MockConfig, MockServer, Scenario};
use strata_provider::{
    ContentBlock, Event, Message, Provider, ProviderError, Request, StopReason, SystemBlock,
    ThinkingLevel, ToolDefinition,
};

use crate::support::{collect, openai, options};

fn scenario(text: &str) -> Scenario {
    Scenario::from_toml(text, "inline").unwrap()
}

fn request(system_words: usize) -> Request {
    let mut request = Request::new("gpt-5.2");
    request.system.push(SystemBlock::text(
        std::iter::repeat_n("You are a careful coding agent.", system_words)
            .collect::<Vec<_>>()
            .join(" "),
    ));
    request.tools.push(ToolDefinition {
        name: "read".into(),
        description: "Read a file".into(),
        parameters: json!({"type": "object", "properties": {"path": {"type": "string"}}}),
        defer_loading: false,
    });
    request
        .messages
        .push(Message::user_text("Look at both files."));
    request.thinking = ThinkingLevel::Medium;
    request
}

#[tokio::test]
async fn streams_thinking_text_and_parallel_tool_calls() {
    let server = MockServer::start(MockConfig::new()).await.unwrap();
    server.load_scenario(scenario(
        "[[turn]]\nthinking = \"Two files, two reads.\"\ntext = \"Reading them now.\"\n[[turn.tool_call]]\ntool = \"read\"\nargs = { path = \"a.txt\" }\n[[turn.tool_call]]\ntool = \"read\"\nargs = { path = \"b.txt\" }\n",
    ));
    let (provider, model) = openai(0);
    let events = collect(
        provider
            .stream(&model, &request(5), &options(&server.base_url()))
            .await
            .unwrap(),
    )
    .await;
    assert!(matches!(events[0], Event::Start { .. }));
    assert!(
        events
            .iter()
            .any(|e| matches!(e, Event::ThinkingDelta { .. }))
    );
    assert!(
        events
            .iter()
            .any(|e| matches!(e, Event::ToolCallDelta { .. }))
    );
    let Some(Event::Done {
        stop_reason,
        message,
        ..
    }) = events.last()
    else {
        panic!("{events:?}")
    };
    assert_eq!(*stop_reason, StopReason::ToolUse);
    assert_eq!(message.text(), "Reading them now.");
    let calls: Vec<(&str, serde_json::Value)> = message
        .tool_calls()
        .map(|(_, name, args)| (name, args.clone()))
        .collect();
    assert_eq!(
        calls,
        vec![
            ("read", json!({"path": "a.txt"})),
            ("read", json!({"path": "b.txt"}))
        ]
    );
    assert!(
        matches!(&message.content[0], ContentBlock::Thinking { text, .. } if text == "Two files, two reads.")
    );

    let records = server.requests();
    assert_eq!(records.len(), 1);
    assert_eq!(records[0].path, "/v1/responses");
    assert_eq!(records[0].cache_key.as_deref(), Some("session-1"));
    let body = records[0].body.as_ref().unwrap();
    assert_eq!(body["store"], json!(false));
    assert_eq!(body["stream"], json!(true));
    assert_eq!(
        body["reasoning"],
        json!({"effort": "medium", "summary": "auto"})
    );
    assert_eq!(body["include"], json!(["reasoning.encrypted_content"]));
    assert_eq!(body["input"][0]["role"], json!("developer"));
}

#[tokio::test]
async fn second_identical_request_reads_the_cache_and_is_priced() {
    let server = MockServer::start(MockConfig::new()).await.unwrap();
    let (provider, model) = openai(0);
    let request = request(400);
    let opts = options(&server.base_url());
    let first = provider.complete(&model, &request, &opts).await.unwrap();
    assert_eq!(first.usage.cache_read, 0);
    let second = provider.complete(&model, &request, &opts).await.unwrap();
    assert!(second.usage.cache_read >= 1024, "{:?}", second.usage);
    assert_eq!(second.usage.cache_read % 128, 0);
    assert_eq!(second.usage.prompt_tokens(), first.usage.prompt_tokens());
    let expected = second.usage.input as f64 * model.prices.input / 1e6
        + second.usage.cache_read as f64 * model.prices.cache_read / 1e6
        + second.usage.output as f64 * model.prices.output / 1e6;
    assert!((second.cost.total() - expected).abs() < 1e-12);
    assert!(second.cost.total() < first.cost.total());
    let records = server.requests();
    assert_eq!(
        records[1].cache.unwrap().cache_read,
        second.usage.cache_read
    );
}

#[tokio::test]
async fn rate_limit_is_retried_after_the_servers_delay() {
    let server = MockServer::start(MockConfig::new()).await.unwrap();
    server.push_fault(Fault::next(FaultKind::RateLimit {
        retry_after_secs: 1,
    }));
    let (provider, model) = openai(2);
    let started = Instant::now();
    let done = provider
        .complete(&model, &request(5), &options(&server.base_url()))
        .await
        .unwrap();
    assert!(started.elapsed() >= Duration::from_millis(950));
    assert_eq!(done.stop_reason, StopReason::EndTurn);
    let statuses: Vec<u16> = server.requests().iter().map(|r| r.status).collect();
    assert_eq!(statuses, vec![429, 200]);
}

#[tokio::test]
async fn server_errors_and_overload_are_retried_with_backoff() {
    for kind in [FaultKind::ServerError, FaultKind::Overloaded] {
        let server = MockServer::start(MockConfig::new()).await.unwrap();
        server.push_fault(Fault::next(kind.clone()).times(2));
        let (provider, model) = openai(3);
        provider
            .complete(&model, &request(5), &options(&server.base_url()))
            .await
            .unwrap_or_else(|e| panic!("{kind:?}: {e}"));
        assert_eq!(server.requests().len(), 3, "{kind:?}");
    }
}

#[tokio::test]
async fn retries_stop_at_the_configured_limit() {
    let server = MockServer::start(MockConfig::new()).await.unwrap();
    server.push_fault(Fault::next(FaultKind::ServerError).times(5));
    let (provider, model) = openai(3);
    let mut opts = options(&server.base_url());
    opts.max_retries = 1;
    let err = provider
        .complete(&model, &request(5), &opts)
        .await
        .unwrap_err();
    assert!(
        matches!(err, ProviderError::Server { status: 500, .. }),
        "{err:?}"
    );
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn context_length_error_is_context_overflow_and_not_retried() {
    let server = MockServer::start(MockConfig::new()).await.unwrap();
    server.push_fault(Fault::next(FaultKind::ContextLength));
    let (provider, model) = openai(3);
    let err = provider
        .stream(&model, &request(5), &options(&server.base_url()))
        .await
        .err()
        .unwrap();
    assert!(
        matches!(err, ProviderError::ContextOverflow { status: 400, .. }),
        "{err:?}"
    );
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn a_cut_stream_ends_truncated_with_the_partial_text_and_is_not_resent() {
    let server = MockServer::start(MockConfig::new()).await.unwrap();
    server.load_scenario(scenario(
        "[[turn]]\ntext = \"A fairly long answer that will be cut in the middle.\"\n",
    ));
    server.push_fault(Fault::next(FaultKind::CutAfter { events: 6 }));
    let (provider, model) = openai(3);
    let events = collect(
        provider
            .stream(&model, &request(5), &options(&server.base_url()))
            .await
            .unwrap(),
    )
    .await;
    assert!(
        events.iter().any(|e| matches!(e, Event::TextDelta { .. })),
        "{events:?}"
    );
    assert!(
        matches!(
            events.last(),
            Some(Event::Error {
                error: ProviderError::Truncated { .. },
                ..
            })
        ),
        "{events:?}"
    );
    assert!(!events.iter().any(|e| matches!(e, Event::Done { .. })));
    assert_eq!(server.requests().len(), 1);
}

/// A malformed event before any of the reply streamed is re-sent and the caller sees one
/// clean stream; after content, a malformed event or an in-stream error ends the stream with
/// the partial message.
#[tokio::test]
async fn malformed_event_and_in_stream_error_are_resent_before_content_and_end_the_stream_after() {
    let server = MockServer::start(MockConfig::new()).await.unwrap();
    let (provider, model) = openai(0);
    let run = async || {
        collect(
            provider
                .stream(&model, &request(5), &options(&server.base_url()))
                .await
                .unwrap(),
        )
        .await
    };
    // Events: created, in_progress, output_item.added, content_part.added, the text delta, …
    server.push_fault(Fault::next(FaultKind::Malformed { at_event: 3 }));
    let events = run().await;
    assert!(
        matches!(events.last(), Some(Event::Done { .. })),
        "{events:?}"
    );
    assert_eq!(server.requests().len(), 2, "re-sent once");

    server.push_fault(Fault::next(FaultKind::Malformed { at_event: 5 }));
    let events = run().await;
    assert!(
        matches!(
            events.last(),
            Some(Event::Error {
                error: ProviderError::Decode { .. },
                partial: Some(_),
            })
        ),
        "{events:?}"
    );

    server.push_fault(Fault::next(FaultKind::StreamError { after_events: 5 }));
    let events = run().await;
    assert!(
        matches!(
            events.last(),
            Some(Event::Error {
                error: ProviderError::Server { status: 0, .. },
                partial: Some(_),
            })
        ),
        "{events:?}"
    );
    assert_eq!(server.requests().len(), 4, "nothing re-sent after content");
}

#[tokio::test]
async fn cancellation_stops_the_stream_at_once() {
    let server = MockServer::start(MockConfig::new()).await.unwrap();
    server.load_scenario(scenario(
        "[[turn]]\ntext = \"one two three four five six seven eight nine ten\"\n",
    ));
    server.push_fault(Fault::next(FaultKind::Slow { delay_ms: 300 }));
    let (provider, model) = openai(0);
    let opts = options(&server.base_url());
    let mut stream = provider.stream(&model, &request(5), &opts).await.unwrap();
    let first = stream.next().await.unwrap();
    assert!(matches!(first, Event::Start { .. }), "{first:?}");
    let started = Instant::now();
    opts.cancel.cancel();
    let next = stream.next().await.unwrap();
    assert!(
        matches!(
            next,
            Event::Error {
                error: ProviderError::Cancelled,
                ..
            }
        ),
        "{next:?}"
    );
    assert!(started.elapsed() < Duration::from_millis(250));
    assert!(stream.next().await.is_none());
}

#[tokio::test]
async fn missing_key_is_an_auth_error_and_keys_never_appear_in_errors() {
    let server = MockServer::start(MockConfig::new()).await.unwrap();
    let (provider, model) = openai(0);
    let provider = provider.with_env(std::sync::Arc::new(|_: &str| None));
    let mut opts = options(&server.base_url());
    opts.api_key = None;
    let err = provider
        .stream(&model, &request(5), &opts)
        .await
        .err()
        .unwrap();
    assert!(
        matches!(err, ProviderError::Auth { status: 0, .. }),
        "{err:?}"
    );
    assert!(err.to_string().contains("OPENAI_API_KEY"), "{err}");

    server.push_fault(Fault::next(FaultKind::ContextLength));
    let err = provider
        .stream(&model, &request(5), &options(&server.base_url()))
        .await
        .err()
        .unwrap();
    assert!(!format!("{err:?}").contains("sk-test-secret"));
}

#[tokio::test]
async fn a_connection_dropped_before_the_first_byte_is_retried() {
    let server = MockServer::start(MockConfig::new()).await.unwrap();
    server.push_fault(Fault::next(FaultKind::CutAfter { events: 0 }));
    let (provider, model) = openai(3);
    let done = provider
        .complete(&model, &request(5), &options(&server.base_url()))
        .await
        .unwrap();
    assert_eq!(done.stop_reason, StopReason::EndTurn);
    let records = server.requests();
    assert_eq!(records.len(), 2, "the empty answer was re-sent once");
    assert_eq!(records[0].fault, Some(FaultKind::CutAfter { events: 0 }));
}

#[tokio::test]
async fn auth_and_bad_request_errors_keep_the_providers_message_but_not_the_key() {
    let (provider, model) = openai(3);
    let cases = [
        (
            "401 Unauthorized",
            r#"{"error":{"message":"Incorrect API key provided: sk-test-secret.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}"#,
            "Incorrect API key provided",
        ),
        (
            "400 Bad Request",
            r#"{"error":{"message":"Invalid value for 'input[0].role' (sent with sk-test-secret)","type":"invalid_request_error","param":"input","code":null}}"#,
            "Invalid value for",
        ),
    ];
    for (status, body, wording) in cases {
        let (url, count) = strata_provider::testing::refusing_server(status, body.to_owned())
            .await
            .unwrap();
        let error = provider
            .stream(&model, &request(5), &options(&url))
            .await
            .err()
            .unwrap();
        strata_provider::testing::check_refusal(&error, status, wording, "sk-test-secret", &count);
        assert_eq!(error.request_id(), Some("req_refused"));
    }
}

/// Cuts the stream after 1, 2, 3, … frames until the cut falls past the end and the turn
/// completes; every cut must end with the partial message of exactly what arrived.
#[tokio::test]
async fn a_stream_cut_anywhere_ends_with_the_partial_message_of_what_arrived() {
    let server = MockServer::start(MockConfig::new()).await.unwrap();
    server.load_scenario(scenario("[[turn]]\nthinking = \"Read first, then list the directory.\"\ntext = \"Looking at the file and the directory now.\"\n[[turn.tool_call]]\ntool = \"read\"\nargs = { path = \"src/main.rs\" }\n[[turn.tool_call]]\ntool = \"read\"\nargs = { path = \"src/lib.rs\" }\n"));
    let (provider, model) = openai(3);
    let (seen, cuts) = strata_provider::testing::cut_after_every_event(async |events_before_cut| {
        server.push_fault(Fault::next(FaultKind::CutAfter {
            events: events_before_cut,
        }));
        collect(
            provider
                .stream(&model, &request(5), &options(&server.base_url()))
                .await
                .unwrap(),
        )
        .await
    })
    .await;
    assert!((4..499).contains(&cuts), "{cuts} cut points");
    assert!(
        seen.text && seen.thinking && seen.finished_call && seen.open_call,
        "{seen:?}"
    );
}

/// With `store: false` the reasoning comes back encrypted (strata asks for it) and the next
/// turn replays it whole; the mock refuses an unstored reasoning item without it.
#[tokio::test]
async fn encrypted_reasoning_is_replayed_on_the_next_turn() {
    let server = MockServer::start(MockConfig::new()).await.unwrap();
    server.load_scenario(scenario(
        "[[turn]]\nthinking = \"Read it first.\"\n[[turn.tool_call]]\ntool = \"read\"\nargs = { path = \"a.txt\" }\n[[turn]]\ntext = \"Done.\"\n",
    ));
    let (provider, model) = openai(0);
    let options = options(&server.base_url());
    let mut request = request(5);
    let first = provider.complete(&model, &request, &options).await.unwrap();
    let (id, _, _) = first.message.tool_calls().next().unwrap();
    let result = Message {
        role: strata_provider::Role::User,
        content: vec![ContentBlock::ToolResult {
            tool_call_id: id.to_owned(),
            content: vec![strata_provider::ToolResultContent::Text {
                text: "contents".into(),
            }],
            is_error: false,
        }],
    };
    request.messages.push(first.message.clone());
    request.messages.push(result);
    let second = provider.complete(&model, &request, &options).await.unwrap();
    assert_eq!(second.message.text(), "Done.");
    let body = server.requests()[1].body.clone().unwrap();
    let reasoning = body["input"]
        .as_array()
        .unwrap()
        .iter()
        .find(|item| item["type"] == "reasoning")
        .unwrap_or_else(|| panic!("no reasoning item replayed: {body}"));
    assert_eq!(
        reasoning["encrypted_content"],
        json!(strata_mock::encrypted_reasoning("Read it first."))
    );
}

fn diagnosis(events: &[Event]) -> Option<&strata_provider::CacheDiagnosis> {
    events.iter().find_map(|e| match e {
        Event::CacheDiagnosis(d) => Some(d),
        _ => None,
    })
}

/// On a row with cache diagnostics (GPT-5.6 and later), each request names the session's
/// previous response in `prompt_cache_options.comparison_response_id`, and a changed
/// instruction comes back as the provider's `input_changed` miss with the tokens missed.
#[tokio::test]
async fn a_changed_system_prompt_is_reported_with_the_providers_miss_reason() {
    let server = MockServer::start(MockConfig::new()).await.unwrap();
    let (provider, mut model) = openai(0);
    model.id = "gpt-6".into();
    let options = strata_provider::StreamOptions {
        session_id: Some("session-b".into()),
        ..options(&server.base_url())
    };
    let mut first = request(400);
    first.model = "gpt-6".into();
    let events = collect(provider.stream(&model, &first, &options).await.unwrap()).await;
    assert_eq!(diagnosis(&events), None);
    let Event::Start {
        response_id: Some(first_id),
        ..
    } = &events[0]
    else {
        panic!("{events:?}")
    };
    let body = server.requests()[0].body.clone().unwrap();
    assert!(
        body.pointer("/prompt_cache_options/comparison_response_id")
            .is_none(),
        "{body}"
    );

    let mut extended = first.clone();
    extended.messages.push(Message::assistant_text("Done."));
    extended.messages.push(Message::user_text("Now the third."));
    let events = collect(provider.stream(&model, &extended, &options).await.unwrap()).await;
    assert_eq!(
        diagnosis(&events).map(|d| d.reason.as_str()),
        Some("cache_hit")
    );
    let body = server.requests()[1].body.clone().unwrap();
    assert_eq!(
        body["prompt_cache_options"]["comparison_response_id"],
        json!(first_id)
    );

    let mut changed = extended.clone();
    changed.system = vec![SystemBlock::text(
        "You are a terse coding agent. ".repeat(400),
    )];
    let events = collect(provider.stream(&model, &changed, &options).await.unwrap()).await;
    let found = diagnosis(&events).expect("a diagnosis");
    assert_eq!(found.reason, "input_changed");
    let before = server.requests()[1].cache.unwrap();
    let held = |c: strata_mock::Split| c.read + c.written + c.uncached;
    assert_eq!(
        found.missed_tokens,
        Some(held(before.system) + held(before.messages))
    );
    // A row without diagnostics (gpt-5.2) sends no comparison.
    let (plain, plain_model) = openai(0);
    let http = plain
        .http_request(&plain_model, &request(5), &options)
        .unwrap();
    let body: serde_json::Value = serde_json::from_slice(&http.body).unwrap();
    assert!(
        body.pointer("/prompt_cache_options/comparison_response_id")
            .is_none()
    );
}

/// A zero output cap is a pre-warm: on GPT-5.6+ rows `prompt_cache_options.prewarm` fills the
/// cache and generates nothing (no output tokens, the script's turn kept); older rows send the
/// API's minimum cap instead.
#[tokio::test]
async fn a_pre_warm_fills_the_cache_and_generates_nothing() {
    let server = MockServer::start(MockConfig::new()).await.unwrap();
    server.load_scenario(scenario("[[turn]]\ntext = \"The answer.\"\n"));
    let (provider, mut model) = openai(0);
    model.id = "gpt-6".into();
    let mut warm = request(400);
    warm.model = "gpt-6".into();
    warm.max_tokens = Some(0);
    let events = collect(
        provider
            .stream(&model, &warm, &options(&server.base_url()))
            .await
            .unwrap(),
    )
    .await;
    let Some(Event::Done {
        stop_reason,
        message,
        usage,
    }) = events.last()
    else {
        panic!("{events:?}")
    };
    assert_eq!(*stop_reason, StopReason::EndTurn);
    assert!(message.content.is_empty(), "{message:?}");
    assert_eq!(usage.output, 0);
    let records = server.requests();
    let body = records[0].body.clone().unwrap();
    assert_eq!(body["prompt_cache_options"]["prewarm"], json!(true));
    assert!(body.get("max_output_tokens").is_none(), "{body}");
    assert_eq!(records[0].output_tokens, 0);

    // The real request reads what the pre-warm stored and gets the scripted turn.
    let mut real = warm.clone();
    real.max_tokens = None;
    let events = collect(
        provider
            .stream(&model, &real, &options(&server.base_url()))
            .await
            .unwrap(),
    )
    .await;
    let Some(Event::Done { message, usage, .. }) = events.last() else {
        panic!("{events:?}")
    };
    assert_eq!(message.text(), "The answer.");
    assert!(usage.cache_read > 1024, "{usage:?}");

    // gpt-5.2 has no pre-warm: the cap is raised to the API's minimum.
    let (plain, plain_model) = openai(0);
    let mut capped = request(5);
    capped.max_tokens = Some(0);
    let http = plain
        .http_request(&plain_model, &capped, &options(&server.base_url()))
        .unwrap();
    let body: serde_json::Value = serde_json::from_slice(&http.body).unwrap();
    assert_eq!(body["max_output_tokens"], json!(16));
    assert!(body.get("prompt_cache_options").is_none(), "{body}");
}

/// An effort change mid-conversation on GPT-6 (a `configuration_update` item where the change
/// happened, the request keeping the session's first effort) reads at least 99% of the
/// previous prompt; on gpt-5.4, which has no such item, the request-level effort changes and
/// the mock, for which effort is part of the cache's identity, reads nothing.
#[tokio::test]
async fn an_effort_change_reads_the_previous_prompt_where_the_row_allows_it() {
    for (model_id, keeps) in [("gpt-6", true), ("gpt-5.4", false)] {
        let server = MockServer::start(MockConfig::new()).await.unwrap();
        let (provider, mut model) = openai(0);
        model.id = model_id.into();
        let options = strata_provider::StreamOptions {
            session_id: Some("effort".into()),
            ..options(&server.base_url())
        };
        // Long enough that the 128-token rounding of the automatic cache stays under 1%.
        let mut first = request(2000);
        first.model = model_id.into();
        first.thinking = ThinkingLevel::High;
        collect(provider.stream(&model, &first, &options).await.unwrap()).await;
        let mut second = first.clone();
        second.messages.push(Message::assistant_text("Read both."));
        second.messages.push(Message::user_text("Now briefly."));
        second.thinking = ThinkingLevel::Low;
        collect(provider.stream(&model, &second, &options).await.unwrap()).await;
        let records = server.requests();
        let previous = records[0].cache.unwrap().input_tokens;
        let read = records[1].cache.unwrap().cache_read;
        eprintln!(
            "{model_id}: effort high -> low, read {read} of the previous {previous} tokens ({:.1}%)",
            100.0 * read as f64 / previous as f64
        );
        let body = records[1].body.clone().unwrap();
        let input = body["input"].as_array().unwrap();
        if keeps {
            assert!(
                read as f64 >= 0.99 * previous as f64,
                "read {read} of {previous}"
            );
            assert_eq!(body["reasoning"]["effort"], "high");
            assert_eq!(
                input.last().unwrap(),
                &json!({"type": "configuration_update", "reasoning": {"effort": "low"}})
            );
        } else {
            assert_eq!(read, 0, "{model_id}");
            assert_eq!(body["reasoning"]["effort"], "low");
            assert!(!input.iter().any(|i| i["type"] == "configuration_update"));
        }
    }
}

/// The mock's GPT-6 refuses `configuration_update` items although the row claims them: the
/// turn completes at the request level (the fallback), the lesson is kept, and the adapter
/// does not send the item again.
#[tokio::test]
async fn a_refused_effort_item_is_learned_and_the_turn_completes_without_it() {
    let profile = strata_mock::ModelProfile {
        rejects: vec!["configuration-update".into()],
        ..MockConfig::new().profile(strata_mock::Protocol::Responses, "gpt-6")
    };
    let server = MockServer::start(MockConfig::new().with_model(strata_mock::ModelRule {
        protocol: Some(strata_mock::Protocol::Responses),
        pattern: "gpt-6".into(),
        profile,
    }))
    .await
    .unwrap();
    let (provider, mut model) = openai(0);
    model.id = "gpt-6".into();
    let learned = std::sync::Arc::new(strata_provider::LearnedCapabilities::in_memory());
    let provider = provider.with_learned(learned.clone());
    let options = strata_provider::StreamOptions {
        session_id: Some("refused".into()),
        ..options(&server.base_url())
    };
    let mut first = request(50);
    first.model = "gpt-6".into();
    first.thinking = ThinkingLevel::High;
    collect(provider.stream(&model, &first, &options).await.unwrap()).await;
    let mut second = first.clone();
    second.messages.push(Message::assistant_text("Read both."));
    second.messages.push(Message::user_text("Now briefly."));
    second.thinking = ThinkingLevel::Low;
    let events = collect(provider.stream(&model, &second, &options).await.unwrap()).await;
    assert!(
        matches!(events.last(), Some(Event::Done { .. })),
        "{events:?}"
    );
    let records = server.requests();
    let statuses: Vec<u16> = records.iter().map(|r| r.status).collect();
    assert_eq!(statuses, [200, 400, 200]);
    let retried = records[2].body.clone().unwrap();
    assert_eq!(retried["reasoning"]["effort"], "low");
    let lessons = learned.lessons();
    assert_eq!(
        lessons.iter().map(|l| l.feature).collect::<Vec<_>>(),
        [strata_provider::Learnable::MidConversationEffort]
    );
    assert!(
        lessons[0].error.contains("configuration_update"),
        "{}",
        lessons[0].error
    );
}
