//! The adapter against strata-mock's ConverseStream route over real HTTP.

use std::time::{Duration, Instant};

use futures::StreamExt;
use pretty_assertions::assert_eq;
use serde_json::json;
use strata_bedrock::BedrockProvider;
use strata_bedrock::credentials::{AwsCredentials, BedrockAuth, ResolvedAws};
use strata_mock::{Fault, FaultKind, MockConfig, MockServer, Scenario};
use strata_provider::transport::{HttpClient, RetryPolicy, TransportConfig};
use strata_provider::{
    ApiKey, Breakpoint, BreakpointPosition, CacheTtl, Catalog, Event, EventStream, Message, Model,
    Provider, ProviderError, Request, StopReason, StreamOptions, SystemBlock, ThinkingLevel,
    ToolDefinition,
};

const MODEL: &str = "anthropic.claude-sonnet-4-5-20250929-v1:0";

fn provider(max_retries: u32) -> (BedrockProvider, Model) {
    let catalog = Catalog::builtin().unwrap();
    let row = catalog.provider("amazon-bedrock").unwrap().clone();
    let model = catalog.model("amazon-bedrock", MODEL).unwrap();
    let client = HttpClient::new(&TransportConfig {
        retry: RetryPolicy {
            max_retries,
            base_delay: Duration::from_millis(10),
            max_delay: Duration::from_secs(5),
        },
        ..TransportConfig::default()
    })
    .unwrap();
    let aws = ResolvedAws {
        auth: BedrockAuth::SigV4(AwsCredentials {
            access_key_id: "AKIDTEST".into(),
            secret_access_key: ApiKey::new("aws-secret-never-printed"),
            session_token: None,
        }),
        region: Some("us-west-2".into()),
    };
    (BedrockProvider::new(row, client, aws), model)
}

fn options(server: &MockServer) -> StreamOptions {
    StreamOptions {
        base_url: Some(server.base_url()),
        max_retries: 3,
        ..StreamOptions::default()
    }
}

fn request(system_repeats: usize) -> Request {
    let mut request = Request::new(MODEL);
    request.system.push(SystemBlock::text(
        std::iter::repeat_n("You are a careful coding agent.", system_repeats)
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
    request.breakpoints = vec![
        Breakpoint {
            position: BreakpointPosition::System,
            ttl: CacheTtl::OneHour,
        },
        Breakpoint {
            position: BreakpointPosition::Message { index: 0 },
            ttl: CacheTtl::FiveMinutes,
        },
    ];
    request.thinking = ThinkingLevel::Low;
    request
}

async fn collect(mut stream: EventStream) -> Vec<Event> {
    let mut events = Vec::new();
    while let Some(event) = stream.next().await {
        events.push(event);
    }
    events
}

#[tokio::test]
async fn streams_thinking_text_and_parallel_tool_calls_signed_with_sigv4() {
    let server = MockServer::start(MockConfig::new()).await.unwrap();
    server.load_scenario(
        Scenario::from_toml(
            "[[turn]]\nthinking = \"Two reads.\"\ntext = \"Reading.\"\n[[turn.tool_call]]\ntool = \"read\"\nargs = { path = \"a.txt\" }\n[[turn.tool_call]]\ntool = \"read\"\nargs = { path = \"b.txt\" }\n",
            "inline",
        )
        .unwrap(),
    );
    let (provider, model) = provider(0);
    let events = collect(
        provider
            .stream(&model, &request(5), &options(&server))
            .await
            .unwrap(),
    )
    .await;
    let Some(Event::Done {
        stop_reason,
        message,
        ..
    }) = events.last()
    else {
        panic!("{events:?}")
    };
    assert_eq!(*stop_reason, StopReason::ToolUse);
    assert_eq!(message.text(), "Reading.");
    let args: Vec<serde_json::Value> = message.tool_calls().map(|(_, _, a)| a.clone()).collect();
    assert_eq!(
        args,
        vec![json!({"path": "a.txt"}), json!({"path": "b.txt"})]
    );
    assert!(
        matches!(&message.content[0], strata_provider::ContentBlock::Thinking { text, signature: Some(_), .. } if text == "Two reads.")
    );

    let records = server.requests();
    assert_eq!(
        records[0].path,
        "/model/anthropic.claude-sonnet-4-5-20250929-v1%3A0/converse-stream"
    );
    let body = records[0].body.as_ref().unwrap();
    assert_eq!(
        body["system"][1],
        json!({"cachePoint": {"type": "default", "ttl": "1h"}})
    );
    assert_eq!(
        body["messages"][0]["content"][1],
        json!({"cachePoint": {"type": "default"}})
    );
    assert_eq!(
        body["additionalModelRequestFields"]["thinking"]["type"],
        "enabled"
    );
}

#[tokio::test]
async fn cache_writes_then_reads_are_reported_and_priced() {
    let server = MockServer::start(MockConfig::new()).await.unwrap();
    let (provider, model) = provider(0);
    let request = request(400);
    let first = provider
        .complete(&model, &request, &options(&server))
        .await
        .unwrap();
    assert!(first.usage.cache_write() > 1000, "{:?}", first.usage);
    assert!(first.usage.cache_write_1h > 0, "{:?}", first.usage);
    let second = provider
        .complete(&model, &request, &options(&server))
        .await
        .unwrap();
    assert!(second.usage.cache_read > 1000, "{:?}", second.usage);
    assert_eq!(second.usage.prompt_tokens(), first.usage.prompt_tokens());
    let p = model.prices;
    let expected = (second.usage.input as f64 * p.input
        + second.usage.output as f64 * p.output
        + second.usage.cache_read as f64 * p.cache_read
        + second.usage.cache_write_5m as f64 * p.cache_write_5m
        + second.usage.cache_write_1h as f64 * p.cache_write_1h)
        / 1e6;
    assert!((second.cost.total() - expected).abs() < 1e-12);
    assert!(second.cost.total() < first.cost.total());
}

#[tokio::test]
async fn retryable_faults_are_retried_and_overflow_is_not() {
    let server = MockServer::start(MockConfig::new()).await.unwrap();
    let (provider, model) = provider(3);
    server.push_fault(Fault::next(FaultKind::RateLimit {
        retry_after_secs: 1,
    }));
    let started = Instant::now();
    provider
        .complete(&model, &request(5), &options(&server))
        .await
        .unwrap();
    assert!(started.elapsed() >= Duration::from_millis(950));
    for kind in [FaultKind::ServerError, FaultKind::Overloaded] {
        server.push_fault(Fault::next(kind.clone()));
        provider
            .complete(&model, &request(5), &options(&server))
            .await
            .unwrap_or_else(|e| panic!("{kind:?}: {e}"));
    }
    let statuses: Vec<u16> = server.requests().iter().map(|r| r.status).collect();
    assert_eq!(statuses[..2], [429, 200]);
    assert_eq!(statuses.len(), 6, "{statuses:?}");

    server.push_fault(Fault::next(FaultKind::ContextLength));
    let err = provider
        .stream(&model, &request(5), &options(&server))
        .await
        .err()
        .unwrap();
    assert!(
        matches!(err, ProviderError::ContextOverflow { .. }),
        "{err:?}"
    );
    assert!(!format!("{err:?}").contains("aws-secret-never-printed"));
}

#[tokio::test]
async fn cut_malformed_and_error_streams_end_with_an_error() {
    let server = MockServer::start(MockConfig::new()).await.unwrap();
    server.load_scenario(
        Scenario::from_toml(
            "[[turn]]\ntext = \"A fairly long answer, streamed in many small pieces.\"\n",
            "inline",
        )
        .unwrap(),
    );
    let (provider, model) = provider(3);
    let cases = [
        (FaultKind::CutAfter { events: 4 }, "truncated"),
        (FaultKind::Malformed { at_event: 3 }, "decode"),
        (FaultKind::StreamError { after_events: 3 }, "stream error"),
    ];
    for (fault, what) in cases {
        let before = server.requests().len();
        server.push_fault(Fault::next(fault));
        let events = collect(
            provider
                .stream(&model, &request(5), &options(&server))
                .await
                .unwrap(),
        )
        .await;
        let last = events.last().unwrap();
        let ok = match what {
            "truncated" => matches!(
                last,
                Event::Error {
                    error: ProviderError::Truncated { .. },
                    ..
                }
            ),
            "decode" => matches!(
                last,
                Event::Error {
                    error: ProviderError::Decode { .. },
                    ..
                }
            ),
            _ => matches!(last, Event::Error { error: e, .. } if e.is_retryable()),
        };
        assert!(ok, "{what}: {events:?}");
        assert!(
            !events.iter().any(|e| matches!(e, Event::Done { .. })),
            "{what}"
        );
        assert_eq!(server.requests().len(), before + 1, "{what}: never re-sent");
    }
}

#[tokio::test]
async fn cancellation_stops_the_stream_at_once() {
    let server = MockServer::start(MockConfig::new()).await.unwrap();
    server.push_fault(Fault::next(FaultKind::Slow { delay_ms: 300 }));
    let (provider, model) = provider(0);
    let opts = options(&server);
    let mut stream = provider.stream(&model, &request(5), &opts).await.unwrap();
    assert!(matches!(stream.next().await, Some(Event::Start { .. })));
    let started = Instant::now();
    opts.cancel.cancel();
    assert!(matches!(
        stream.next().await,
        Some(Event::Error {
            error: ProviderError::Cancelled,
            ..
        })
    ));
    assert!(started.elapsed() < Duration::from_millis(250));
    assert!(stream.next().await.is_none());
}

#[tokio::test]
async fn a_connection_dropped_before_the_first_byte_is_retried() {
    let server = MockServer::start(MockConfig::new()).await.unwrap();
    server.push_fault(Fault::next(FaultKind::CutAfter { events: 0 }));
    let (provider, model) = provider(3);
    let done = provider
        .complete(&model, &request(5), &options(&server))
        .await
        .unwrap();
    assert_eq!(done.stop_reason, StopReason::EndTurn);
    let records = server.requests();
    assert_eq!(records.len(), 2, "the empty answer was re-sent once");
    assert_eq!(records[0].fault, Some(FaultKind::CutAfter { events: 0 }));
}

#[tokio::test]
async fn auth_and_validation_errors_keep_the_providers_message_but_not_the_secret() {
    let (provider, model) = provider(3);
    let cases = [
        (
            "403 Forbidden",
            r#"{"message":"The request signature we calculated does not match (secret aws-secret-never-printed)"}"#,
            "signature we calculated",
        ),
        (
            "400 Bad Request",
            r#"{"message":"Malformed input request: #: extraneous key [foo] is not permitted (aws-secret-never-printed)"}"#,
            "extraneous key",
        ),
    ];
    for (status, body, wording) in cases {
        let (url, count) = strata_provider::testing::refusing_server(status, body.to_owned())
            .await
            .unwrap();
        let options = StreamOptions {
            base_url: Some(url),
            max_retries: 3,
            ..StreamOptions::default()
        };
        let error = provider
            .stream(&model, &request(5), &options)
            .await
            .err()
            .unwrap();
        strata_provider::testing::check_refusal(
            &error,
            status,
            wording,
            "aws-secret-never-printed",
            &count,
        );
    }
}

#[tokio::test]
async fn retries_stop_at_the_limit_with_the_classified_error() {
    let server = MockServer::start(MockConfig::new()).await.unwrap();
    server.push_fault(Fault::next(FaultKind::ServerError).times(10));
    let (provider, model) = provider(3);
    let options = StreamOptions {
        max_retries: 2,
        ..options(&server)
    };
    let err = provider
        .stream(&model, &request(5), &options)
        .await
        .err()
        .unwrap();
    assert!(matches!(err, ProviderError::Server { .. }), "{err:?}");
    assert_eq!(server.requests().len(), 3, "one send and two re-sends");
}

/// Cuts the stream after 1, 2, 3, … frames until the cut falls past the end and the turn
/// completes; every cut must end with the partial message of exactly what arrived.
#[tokio::test]
async fn a_stream_cut_anywhere_ends_with_the_partial_message_of_what_arrived() {
    let server = MockServer::start(MockConfig::new()).await.unwrap();
    server.load_scenario(Scenario::from_toml("[[turn]]\nthinking = \"Read first, then list the directory.\"\ntext = \"Looking at the file and the directory now.\"\n[[turn.tool_call]]\ntool = \"read\"\nargs = { path = \"src/main.rs\" }\n[[turn.tool_call]]\ntool = \"read\"\nargs = { path = \"src/lib.rs\" }\n", "inline").unwrap());
    let (provider, model) = provider(3);
    let (seen, cuts) = strata_provider::testing::cut_after_every_event(async |events_before_cut| {
        server.push_fault(Fault::next(FaultKind::CutAfter {
            events: events_before_cut,
        }));
        collect(
            provider
                .stream(&model, &request(5), &options(&server))
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
