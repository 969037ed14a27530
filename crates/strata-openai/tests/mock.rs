//! strata-openai against strata-mock's Chat Completions route over real HTTP.

use std::time::Duration;

use futures::StreamExt;
use serde_json::json;
use strata_mock::{Fault, FaultKind, MockConfig, MockServer, Scenario};
use strata_openai::OpenAiChatProvider;
use strata_provider::transport::{HttpClient, RetryPolicy, TransportConfig};
use strata_provider::{
    ApiKey, Catalog, ContentBlock, Event, Message, Model, Provider, ProviderError, Request,
    StopReason, StreamOptions, SystemBlock, ThinkingLevel, ToolDefinition,
};

struct Setup {
    server: MockServer,
    adapter: OpenAiChatProvider,
    model: Model,
}

async fn setup(config: MockConfig, provider: &str, model: &str) -> Setup {
    let server = MockServer::start(config).await.unwrap();
    let catalog = Catalog::builtin().unwrap();
    let row = catalog.provider(provider).unwrap();
    let client = HttpClient::new(&TransportConfig {
        retry: RetryPolicy {
            max_retries: 3,
            base_delay: Duration::from_millis(10),
            max_delay: Duration::from_secs(5),
        },
        ..TransportConfig::default()
    })
    .unwrap();
    let model = catalog.model(provider, model).unwrap();
    Setup {
        adapter: OpenAiChatProvider::for_row(row, client),
        server,
        model,
    }
}

async fn deepseek(config: MockConfig) -> Setup {
    setup(config, "deepseek", "deepseek-v4-flash").await
}

impl Setup {
    fn options(&self) -> StreamOptions {
        StreamOptions {
            base_url: Some(format!("{}/v1", self.server.base_url())),
            api_key: Some(ApiKey::new("sk-test-key-123")),
            ..StreamOptions::default()
        }
    }

    async fn collect(&self, request: &Request, options: &StreamOptions) -> Vec<Event> {
        match self.adapter.stream(&self.model, request, options).await {
            Ok(stream) => stream.collect().await,
            Err(e) => vec![Event::error(e)],
        }
    }

    fn request(&self, question: &str) -> Request {
        let mut r = Request::new(self.model.id.clone());
        r.tools = vec![tool("read"), tool("bash")];
        r.system = vec![SystemBlock::text(
            "You are strata, a careful coding agent. ".repeat(200),
        )];
        r.messages = vec![Message::user_text(question)];
        r
    }
}

fn tool(name: &str) -> ToolDefinition {
    ToolDefinition {
        name: name.into(),
        description: format!("The {name} tool. ").repeat(40),
        parameters: json!({"type": "object", "properties": {"path": {"type": "string"}, "command": {"type": "string"}}}),
        defer_loading: false,
    }
}

fn done(events: &[Event]) -> (&StopReason, &Message, &strata_provider::Usage) {
    match events.last() {
        Some(Event::Done {
            stop_reason,
            message,
            usage,
        }) => (stop_reason, message, usage),
        other => panic!("expected done, got {other:?} in {events:?}"),
    }
}

#[tokio::test]
async fn streams_text_with_the_rows_field_names() {
    let s = deepseek(MockConfig::new()).await;
    let events = s
        .collect(&s.request("echo this please"), &s.options())
        .await;
    let (stop, message, _) = done(&events);
    assert_eq!(*stop, StopReason::EndTurn);
    assert!(
        message.text().contains("echo this please"),
        "{}",
        message.text()
    );
    let body = s.server.requests()[0].body.clone().unwrap();
    assert!(body.get("max_tokens").is_some(), "{body}");
    assert_eq!(body["stream_options"], json!({"include_usage": true}));
    assert_eq!(body["messages"][0]["role"], "system");
}

#[tokio::test]
async fn reasoning_and_parallel_tool_calls() {
    let scenario = Scenario::from_toml(
        r#"
name = "two-tools"
[[turn]]
thinking = "Read first, then list."
text = "Looking."
[[turn.tool_call]]
tool = "read"
args = { path = "src/main.rs" }
[[turn.tool_call]]
tool = "bash"
args = { command = "ls -la" }
"#,
        "test",
    )
    .unwrap();
    let s = deepseek(MockConfig::new().with_scenario(scenario)).await;
    let mut request = s.request("go");
    request.thinking = ThinkingLevel::High;
    let events = s.collect(&request, &s.options()).await;
    let (stop, message, _) = done(&events);
    assert_eq!(*stop, StopReason::ToolUse);
    assert!(
        matches!(&message.content[0], ContentBlock::Thinking { text, .. } if text == "Read first, then list.")
    );
    let calls: Vec<(String, serde_json::Value)> = message
        .tool_calls()
        .map(|(_, n, a)| (n.to_owned(), a.clone()))
        .collect();
    assert_eq!(
        calls,
        vec![
            ("read".into(), json!({"path": "src/main.rs"})),
            ("bash".into(), json!({"command": "ls -la"})),
        ]
    );
    let body = s.server.requests()[0].body.clone().unwrap();
    assert_eq!(body["thinking"], json!({"type": "enabled"}));
}

#[tokio::test]
async fn deepseek_hit_and_miss_tokens_price_the_turn() {
    let s = deepseek(MockConfig::new()).await;
    let request = s.request("same question");
    let first = s
        .adapter
        .complete(&s.model, &request, &s.options())
        .await
        .unwrap();
    let second = s
        .adapter
        .complete(&s.model, &request, &s.options())
        .await
        .unwrap();
    assert_eq!(first.usage.cache_read, 0, "{:?}", first.usage);
    assert!(second.usage.cache_read > 0, "{:?}", second.usage);
    assert_eq!(second.usage.prompt_tokens(), first.usage.prompt_tokens());
    let record = &s.server.requests()[1];
    assert_eq!(
        record.cache.as_ref().unwrap().cache_read,
        second.usage.cache_read
    );
    let p = s.model.prices;
    let expected = (second.usage.input as f64 * p.input
        + second.usage.cache_read as f64 * p.cache_read
        + second.usage.output as f64 * p.output)
        / 1e6;
    assert!((second.cost.total() - expected).abs() < 1e-12);
    assert!(second.cost.total() < first.cost.total());
}

#[tokio::test]
async fn openai_cached_tokens_are_subtracted_from_input() {
    let s = setup(MockConfig::new(), "groq", "llama-3.1-8b-instant").await;
    let request = s.request("same question");
    let first = s
        .adapter
        .complete(&s.model, &request, &s.options())
        .await
        .unwrap();
    let second = s
        .adapter
        .complete(&s.model, &request, &s.options())
        .await
        .unwrap();
    assert!(second.usage.cache_read >= 1024, "{:?}", second.usage);
    assert_eq!(second.usage.prompt_tokens(), first.usage.prompt_tokens());
    assert_eq!(
        second.usage.input + second.usage.cache_read,
        first.usage.input
    );
}

#[tokio::test]
async fn faults_are_retried_or_reported_by_kind() {
    for kind in [
        FaultKind::ServerError,
        FaultKind::Overloaded,
        FaultKind::RateLimit {
            retry_after_secs: 1,
        },
    ] {
        let s = deepseek(MockConfig::new()).await;
        s.server.push_fault(Fault::next(kind.clone()));
        let events = s.collect(&s.request("hi"), &s.options()).await;
        done(&events);
        assert_eq!(s.server.requests().len(), 2, "{kind:?}");
    }
    let s = deepseek(MockConfig::new()).await;
    s.server.push_fault(Fault::next(FaultKind::ContextLength));
    let events = s.collect(&s.request("hi"), &s.options()).await;
    match events.as_slice() {
        [
            Event::Error {
                error: e @ ProviderError::ContextOverflow { .. },
                ..
            },
        ] => {
            assert!(!e.to_string().contains("sk-test-key-123"));
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(s.server.requests().len(), 1);

    s.server
        .push_fault(Fault::next(FaultKind::CutAfter { events: 3 }));
    let events = s
        .collect(
            &s.request("a long echo with several deltas in it"),
            &s.options(),
        )
        .await;
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

    s.server
        .push_fault(Fault::next(FaultKind::Malformed { at_event: 2 }));
    let events = s.collect(&s.request("hi there"), &s.options()).await;
    assert!(
        matches!(
            events.last(),
            Some(Event::Error {
                error: ProviderError::Decode { .. },
                ..
            })
        ),
        "{events:?}"
    );

    s.server
        .push_fault(Fault::next(FaultKind::StreamError { after_events: 2 }));
    let events = s.collect(&s.request("hi there"), &s.options()).await;
    assert!(
        matches!(events.last(), Some(Event::Error { .. })),
        "{events:?}"
    );
    assert!(!events.iter().any(|e| matches!(e, Event::Done { .. })));
}

#[tokio::test]
async fn cancellation_mid_stream_stops_at_once() {
    let s = deepseek(MockConfig::new()).await;
    s.server
        .push_fault(Fault::next(FaultKind::Slow { delay_ms: 300 }));
    let options = s.options();
    let mut stream = s
        .adapter
        .stream(&s.model, &s.request("slow echo of many words"), &options)
        .await
        .unwrap();
    assert!(matches!(stream.next().await, Some(Event::Start { .. })));
    options.cancel.cancel();
    let started = std::time::Instant::now();
    assert!(matches!(
        stream.next().await,
        Some(Event::Error {
            error: ProviderError::Cancelled,
            ..
        })
    ));
    assert!(stream.next().await.is_none());
    assert!(started.elapsed() < Duration::from_millis(250));
}

#[tokio::test]
async fn a_connection_dropped_before_the_first_byte_is_retried() {
    let s = deepseek(MockConfig::new()).await;
    s.server
        .push_fault(Fault::next(FaultKind::CutAfter { events: 0 }));
    let events = s.collect(&s.request("hello"), &s.options()).await;
    let (stop, message, _) = done(&events);
    assert_eq!(*stop, StopReason::EndTurn);
    assert!(message.text().contains("hello"), "{}", message.text());
    let records = s.server.requests();
    assert_eq!(records.len(), 2, "the empty answer was re-sent once");
    assert_eq!(records[0].fault, Some(FaultKind::CutAfter { events: 0 }));
}

#[tokio::test]
async fn auth_and_bad_request_errors_keep_the_providers_message_but_not_the_key() {
    let s = deepseek(MockConfig::new()).await;
    let cases = [
        (
            "401 Unauthorized",
            r#"{"error":{"message":"Authentication Fails, Your api key: sk-test-key-123 is invalid","type":"authentication_error","param":null,"code":"invalid_request_error"}}"#,
            "Authentication Fails",
        ),
        (
            "400 Bad Request",
            r#"{"error":{"message":"Invalid 'messages[1].content': expected a string (key sk-test-key-123)","type":"invalid_request_error","param":"messages","code":null}}"#,
            "expected a string",
        ),
    ];
    for (status, body, wording) in cases {
        let (url, count) = strata_provider::testing::refusing_server(status, body.to_owned())
            .await
            .unwrap();
        let mut options = s.options();
        options.base_url = Some(url);
        let events = s.collect(&s.request("hi"), &options).await;
        let [Event::Error { error, .. }] = events.as_slice() else {
            panic!("{events:?}")
        };
        strata_provider::testing::check_refusal(error, status, wording, "sk-test-key-123", &count);
        assert_eq!(error.request_id(), Some("req_refused"));
    }
}

#[tokio::test]
async fn retries_stop_at_the_limit_with_the_classified_error() {
    let s = deepseek(MockConfig::new()).await;
    s.server
        .push_fault(Fault::next(FaultKind::ServerError).times(10));
    let mut options = s.options();
    options.max_retries = 2;
    let events = s.collect(&s.request("hi"), &options).await;
    assert!(
        matches!(
            events.as_slice(),
            [Event::Error {
                error: ProviderError::Server { status: 500, .. },
                ..
            }]
        ),
        "{events:?}"
    );
    assert_eq!(s.server.requests().len(), 3, "one send and two re-sends");
}

/// Cuts the stream after 1, 2, 3, … frames until the cut falls past the end and the turn
/// completes; every cut must end with the partial message of exactly what arrived.
#[tokio::test]
async fn a_stream_cut_anywhere_ends_with_the_partial_message_of_what_arrived() {
    let scenario = Scenario::from_toml("[[turn]]\nthinking = \"Read first, then list the directory.\"\ntext = \"Looking at the file and the directory now.\"\n[[turn.tool_call]]\ntool = \"read\"\nargs = { path = \"src/main.rs\" }\n[[turn.tool_call]]\ntool = \"read\"\nargs = { path = \"src/lib.rs\" }\n", "test").unwrap();
    let s = deepseek(MockConfig::new().with_scenario(scenario)).await;
    let server = &s.server;
    let mut request = s.request("go");
    request.thinking = ThinkingLevel::High;
    let (seen, cuts) = strata_provider::testing::cut_after_every_event(async |events_before_cut| {
        server.push_fault(Fault::next(FaultKind::CutAfter {
            events: events_before_cut,
        }));
        s.collect(&request, &s.options()).await
    })
    .await;
    assert!((4..499).contains(&cuts), "{cuts} cut points");
    // Chat closes tool calls only with the finish reason, which ends the turn: every cut
    // before it leaves the calls open, with their arguments so far.
    assert!(seen.text && seen.thinking && seen.open_call, "{seen:?}");
}
