//! strata-anthropic against strata-mock over real HTTP.

use std::time::Duration;

use futures::StreamExt;
use serde_json::json;
use strata_anthropic::AnthropicProvider;
use strata_mock::{Fault, FaultKind, MockConfig, MockServer, Scenario};
use strata_provider::transport::{HttpClient, RetryPolicy, TransportConfig};
use strata_provider::{
    ApiKey, Breakpoint, BreakpointPosition, CacheTtl, Catalog, ContentBlock, Event, Message, Model,
    Provider, ProviderError, Request, StopReason, StreamOptions, SystemBlock, ThinkingLevel,
    ToolDefinition,
};

const MODEL: &str = "claude-sonnet-4-5";

struct Setup {
    server: MockServer,
    adapter: AnthropicProvider,
    model: Model,
}

async fn setup(config: MockConfig) -> Setup {
    let catalog = Catalog::builtin().unwrap();
    setup_row(config, catalog.provider("anthropic").unwrap()).await
}

/// The Anthropic row with message threads off: every request goes in full, for tests that
/// read whole bodies.
async fn setup_without_threads(config: MockConfig) -> Setup {
    let catalog = Catalog::builtin().unwrap();
    let mut row = catalog.provider("anthropic").unwrap().clone();
    row.features.message_threads = false;
    setup_row(config, &row).await
}

async fn setup_row(config: MockConfig, row: &strata_provider::ProviderRow) -> Setup {
    let server = MockServer::start(config).await.unwrap();
    let catalog = Catalog::builtin().unwrap();
    let client = HttpClient::new(&TransportConfig {
        retry: RetryPolicy {
            max_retries: 3,
            base_delay: Duration::from_millis(10),
            max_delay: Duration::from_secs(5),
        },
        ..TransportConfig::default()
    })
    .unwrap();
    let model = catalog.model("anthropic", MODEL).unwrap();
    Setup {
        adapter: AnthropicProvider::for_row(row, client),
        server,
        model,
    }
}

impl Setup {
    fn options(&self) -> StreamOptions {
        StreamOptions {
            base_url: Some(self.server.base_url()),
            api_key: Some(ApiKey::new("sk-ant-test-key")),
            ..StreamOptions::default()
        }
    }

    async fn collect(&self, request: &Request, options: &StreamOptions) -> Vec<Event> {
        match self.adapter.stream(&self.model, request, options).await {
            Ok(stream) => stream.collect().await,
            Err(e) => vec![Event::error(e)],
        }
    }
}

fn tool(name: &str) -> ToolDefinition {
    ToolDefinition {
        name: name.into(),
        description: format!("The {name} tool. ").repeat(60),
        parameters: json!({"type": "object", "properties": {"path": {"type": "string"}, "command": {"type": "string"}}}),
        defer_loading: false,
    }
}

/// A request long enough to pass the model's cache minimum, with strata's three breakpoints.
fn long_request(question: &str) -> Request {
    let mut r = Request::new(MODEL);
    r.tools = vec![tool("read"), tool("bash")];
    r.system = vec![SystemBlock::text(
        "You are strata, a careful coding agent. ".repeat(200),
    )];
    r.messages = vec![Message::user_text(question)];
    r.breakpoints = vec![
        Breakpoint {
            position: BreakpointPosition::Tools,
            ttl: CacheTtl::OneHour,
        },
        Breakpoint {
            position: BreakpointPosition::System,
            ttl: CacheTtl::OneHour,
        },
        Breakpoint {
            position: BreakpointPosition::Message { index: 0 },
            ttl: CacheTtl::FiveMinutes,
        },
    ];
    r
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
async fn streams_text_and_sends_cache_control_in_the_rows_form() {
    let s = setup(MockConfig::new()).await;
    let events = s
        .collect(&long_request("echo this please"), &s.options())
        .await;
    assert!(matches!(events[0], Event::Start { .. }));
    let (stop, message, _) = done(&events);
    assert_eq!(*stop, StopReason::EndTurn);
    let streamed = strata_provider::testing::streamed_text(&events);
    assert_eq!(message.text(), streamed);
    assert!(streamed.contains("echo this please"), "{streamed}");
    let body = s.server.requests()[0].body.clone().unwrap();
    assert_eq!(
        body["tools"][1]["cache_control"],
        json!({"type": "ephemeral", "ttl": "1h"})
    );
    assert_eq!(
        body["system"][0]["cache_control"],
        json!({"type": "ephemeral", "ttl": "1h"})
    );
    assert_eq!(
        body["messages"][0]["content"][0]["cache_control"],
        json!({"type": "ephemeral", "ttl": "5m"})
    );
}

#[tokio::test]
async fn thinking_and_parallel_tool_calls() {
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
    let s = setup(MockConfig::new().with_scenario(scenario)).await;
    let mut request = long_request("go");
    request.thinking = ThinkingLevel::Low;
    let events = s.collect(&request, &s.options()).await;
    let (stop, message, _) = done(&events);
    assert_eq!(*stop, StopReason::ToolUse);
    let thinking = message.content.iter().find_map(|b| match b {
        ContentBlock::Thinking {
            text, signature, ..
        } => Some((text.clone(), signature.clone())),
        _ => None,
    });
    let (text, signature) = thinking.expect("a thinking block");
    assert_eq!(text, "Read first, then list.");
    assert!(signature.is_some(), "the signature rides along");
    let calls: Vec<(String, serde_json::Value)> = message
        .tool_calls()
        .map(|(_, name, args)| (name.to_owned(), args.clone()))
        .collect();
    assert_eq!(
        calls,
        vec![
            ("read".into(), json!({"path": "src/main.rs"})),
            ("bash".into(), json!({"command": "ls -la"})),
        ]
    );
    let body = s.server.requests()[0].body.clone().unwrap();
    assert_eq!(body["thinking"]["type"], "enabled");
    assert_eq!(body["thinking"]["budget_tokens"], 2048);
}

#[tokio::test]
async fn usage_and_cost_count_cache_writes_by_ttl_then_reads() {
    let s = setup(MockConfig::new()).await;
    let request = long_request("first question");
    let first = s
        .adapter
        .complete(&s.model, &request, &s.options())
        .await
        .unwrap();
    assert_eq!(first.usage.cache_read, 0);
    assert!(first.usage.cache_write_1h > 1000, "{:?}", first.usage);
    let second = s
        .adapter
        .complete(&s.model, &request, &s.options())
        .await
        .unwrap();
    assert!(
        second.usage.cache_read >= first.usage.cache_write_1h,
        "{:?}",
        second.usage
    );
    assert_eq!(second.usage.cache_write(), 0, "{:?}", second.usage);
    let p = s.model.prices;
    let expected = first.usage.input as f64 * p.input
        + first.usage.output as f64 * p.output
        + first.usage.cache_write_5m as f64 * p.cache_write_5m
        + first.usage.cache_write_1h as f64 * p.cache_write_1h;
    assert!((first.cost.total() - expected / 1e6).abs() < 1e-12);
    assert!(second.cost.total() < first.cost.total());
    // The mock's own accounting agrees with what the adapter reported.
    let record = &s.server.requests()[1];
    assert_eq!(
        record.cache.as_ref().unwrap().cache_read,
        second.usage.cache_read
    );
}

#[tokio::test]
async fn retryable_faults_are_retried_before_the_first_byte() {
    for kind in [
        FaultKind::ServerError,
        FaultKind::Overloaded,
        FaultKind::RateLimit {
            retry_after_secs: 1,
        },
    ] {
        let s = setup(MockConfig::new()).await;
        s.server.push_fault(Fault::next(kind.clone()));
        let events = s.collect(&long_request("hello"), &s.options()).await;
        done(&events);
        let records = s.server.requests();
        assert_eq!(records.len(), 2, "{kind:?}");
        assert_eq!(records[1].status, 200);
    }
}

#[tokio::test]
async fn retries_stop_at_the_limit_with_the_classified_error() {
    let s = setup(MockConfig::new()).await;
    s.server
        .push_fault(Fault::next(FaultKind::Overloaded).times(10));
    let mut options = s.options();
    options.max_retries = 1;
    let events = s.collect(&long_request("hello"), &options).await;
    assert!(
        matches!(
            events.as_slice(),
            [Event::Error {
                error: ProviderError::Overloaded { status: 529, .. },
                ..
            }]
        ),
        "{events:?}"
    );
    assert_eq!(s.server.requests().len(), 2);
}

#[tokio::test]
async fn context_overflow_is_recognised_and_not_retried() {
    let s = setup(MockConfig::new()).await;
    s.server.push_fault(Fault::next(FaultKind::ContextLength));
    let events = s.collect(&long_request("hello"), &s.options()).await;
    match events.as_slice() {
        [
            Event::Error {
                error: e @ ProviderError::ContextOverflow { .. },
                ..
            },
        ] => {
            assert!(!e.to_string().contains("sk-ant-test-key"));
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(s.server.requests().len(), 1);
}

#[tokio::test]
async fn a_stream_cut_after_tokens_ends_truncated_with_the_partial_text() {
    let s = setup(MockConfig::new()).await;
    s.server
        .push_fault(Fault::next(FaultKind::CutAfter { events: 5 }));
    let events = s
        .collect(
            &long_request("a long enough echo to stream several deltas"),
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
    assert!(!events.iter().any(|e| matches!(e, Event::Done { .. })));
    assert_eq!(
        s.server.requests().len(),
        1,
        "no re-send after the first byte"
    );
    // The partial message can be rebuilt from the deltas.
    let mut assembler = strata_provider::MessageAssembler::new();
    events.iter().for_each(|e| assembler.push(e));
    assert!(!assembler.message().text().is_empty());
}

#[tokio::test]
async fn a_stream_cut_anywhere_ends_with_the_partial_message_of_what_arrived() {
    let scenario = Scenario::from_toml(
        r#"
name = "two-tools"
[[turn]]
thinking = "Read first, then list the directory."
text = "Looking at the file and the directory now."
[[turn.tool_call]]
tool = "read"
args = { path = "src/main.rs" }
[[turn.tool_call]]
tool = "bash"
args = { command = "ls -la src" }
"#,
        "test",
    )
    .unwrap();
    let s = setup(MockConfig::new().with_scenario(scenario)).await;
    let mut request = long_request("go");
    request.thinking = ThinkingLevel::Low;
    // Cut after 1, 2, 3, … frames until the cut falls past the end and the turn completes.
    let (seen, cuts) = strata_provider::testing::cut_after_every_event(async |events_before_cut| {
        s.server.push_fault(Fault::next(FaultKind::CutAfter {
            events: events_before_cut,
        }));
        s.collect(&request, &s.options()).await
    })
    .await;
    assert!((6..499).contains(&cuts), "{cuts} cut points");
    assert!(
        seen.text && seen.thinking && seen.finished_call && seen.open_call,
        "{seen:?}"
    );
}

/// Before any of the reply streamed, a malformed event or an in-stream `overloaded_error` is
/// re-sent (announced as a retry) and the caller sees one clean stream; after content, it ends
/// the stream with the partial message and the error's real type.
#[tokio::test]
async fn malformed_and_in_stream_errors_are_resent_before_content_and_end_the_stream_after() {
    let s = setup(MockConfig::new()).await;
    // Events: message_start, ping, content_block_start, the text delta, content_block_stop, …
    s.server
        .push_fault(Fault::next(FaultKind::Malformed { at_event: 2 }));
    let events = s.collect(&long_request("hello there"), &s.options()).await;
    let (_, message, _) = done(&events);
    assert_eq!(message.text(), "hello there");
    let starts = events
        .iter()
        .filter(|e| matches!(e, Event::Start { .. }))
        .count();
    assert_eq!(starts, 1, "{events:?}");
    assert_eq!(s.server.requests().len(), 2, "re-sent once");

    s.server
        .push_fault(Fault::next(FaultKind::StreamError { after_events: 1 }));
    let events = s.collect(&long_request("hello there"), &s.options()).await;
    assert_eq!(done(&events).1.text(), "hello there");
    assert_eq!(s.server.requests().len(), 4);

    s.server
        .push_fault(Fault::next(FaultKind::Malformed { at_event: 5 }));
    let events = s.collect(&long_request("hello there"), &s.options()).await;
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

    s.server
        .push_fault(Fault::next(FaultKind::StreamError { after_events: 4 }));
    let events = s.collect(&long_request("hello there"), &s.options()).await;
    match events.last() {
        Some(Event::Error {
            error: e,
            partial: Some(partial),
        }) => {
            assert!(
                matches!(e, ProviderError::Overloaded { status: 0, .. }),
                "{e:?}"
            );
            assert_eq!(partial.text(), "hello there");
            let shown = e.to_string();
            assert!(
                shown.contains("overloaded_error") && !shown.contains("status 0"),
                "{shown}"
            );
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(
        s.server.requests().len(),
        6,
        "nothing re-sent after content"
    );
}

#[tokio::test]
async fn cancellation_mid_stream_stops_at_once() {
    let s = setup(MockConfig::new()).await;
    s.server
        .push_fault(Fault::next(FaultKind::Slow { delay_ms: 300 }));
    let options = s.options();
    let mut stream = s
        .adapter
        .stream(
            &s.model,
            &long_request("slow echo of many words here"),
            &options,
        )
        .await
        .unwrap();
    let first = stream.next().await;
    assert!(matches!(first, Some(Event::Start { .. })), "{first:?}");
    options.cancel.cancel();
    let started = std::time::Instant::now();
    let next = stream.next().await;
    assert!(
        matches!(
            next,
            Some(Event::Error {
                error: ProviderError::Cancelled,
                ..
            })
        ),
        "{next:?}"
    );
    assert!(stream.next().await.is_none());
    assert!(started.elapsed() < Duration::from_millis(250));
}

#[tokio::test]
async fn a_connection_dropped_before_the_first_byte_is_retried() {
    let s = setup(MockConfig::new()).await;
    s.server
        .push_fault(Fault::next(FaultKind::CutAfter { events: 0 }));
    let events = s.collect(&long_request("hello"), &s.options()).await;
    let (stop, message, _) = done(&events);
    assert_eq!(*stop, StopReason::EndTurn);
    assert!(message.text().contains("hello"), "{}", message.text());
    let records = s.server.requests();
    assert_eq!(records.len(), 2, "the empty answer was re-sent once");
    assert_eq!(
        records[0].fault,
        Some(FaultKind::CutAfter { events: 0 }),
        "the first send met the drop"
    );
}

#[tokio::test]
async fn auth_and_bad_request_errors_keep_the_providers_message_but_not_the_key() {
    let s = setup(MockConfig::new()).await;
    let cases = [
        (
            "401 Unauthorized",
            r#"{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key sk-ant-test-key"}}"#,
            "invalid x-api-key",
        ),
        (
            "400 Bad Request",
            r#"{"type":"error","error":{"type":"invalid_request_error","message":"messages.0.content: Field required (sent with sk-ant-test-key)"}}"#,
            "Field required",
        ),
    ];
    for (status, body, wording) in cases {
        let (url, count) = strata_provider::testing::refusing_server(status, body.to_owned())
            .await
            .unwrap();
        let mut options = s.options();
        options.base_url = Some(url);
        let events = s.collect(&long_request("hi"), &options).await;
        let [Event::Error { error, .. }] = events.as_slice() else {
            panic!("{events:?}")
        };
        strata_provider::testing::check_refusal(error, status, wording, "sk-ant-test-key", &count);
        assert_eq!(error.request_id(), Some("req_refused"));
    }
}

#[tokio::test]
async fn mid_conversation_patches_and_tool_changes_are_accepted_in_the_sdks_shape() {
    let mut s = setup(MockConfig::new()).await;
    s.model = Catalog::builtin()
        .unwrap()
        .model("anthropic", "claude-opus-4-8")
        .unwrap();
    let mut request = long_request("first question");
    request.model = "claude-opus-4-8".into();
    request.tools.push(tool("grep"));
    request.messages.push(Message {
        role: strata_provider::Role::System,
        content: vec![
            ContentBlock::text("Tool update: grep is available."),
            ContentBlock::ToolAddition {
                tools: vec![tool("grep")],
            },
            ContentBlock::ToolRemoval {
                names: vec!["bash".into()],
            },
        ],
    });
    let events = s.collect(&request, &s.options()).await;
    let (stop, _, _) = done(&events);
    assert_eq!(*stop, StopReason::EndTurn, "{events:?}");
    let body = s.server.requests()[0].body.clone().unwrap();
    let system = &body["messages"][1];
    assert_eq!(system["role"], "system");
    let kinds: Vec<&str> = system["content"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["type"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["text", "tool_addition", "tool_removal"]);
}

/// An adapter whose client gives up quickly on silence and reports every retry.
fn impatient(
    s: &Setup,
    max_retries: u32,
) -> (
    AnthropicProvider,
    std::sync::Arc<std::sync::Mutex<Vec<strata_provider::transport::RetryNotice>>>,
) {
    let heard = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let sink = std::sync::Arc::clone(&heard);
    let client = HttpClient::new(&TransportConfig {
        retry: RetryPolicy {
            max_retries,
            base_delay: Duration::from_millis(10),
            max_delay: Duration::from_secs(5),
        },
        first_byte_timeout: Duration::from_millis(400),
        read_timeout: Duration::from_millis(400),
        ..TransportConfig::default()
    })
    .unwrap()
    .with_retry_observer(std::sync::Arc::new(move |notice| {
        sink.lock().unwrap().push(notice.clone());
    }));
    let catalog = Catalog::builtin().unwrap();
    let _ = s;
    (
        AnthropicProvider::for_row(catalog.provider("anthropic").unwrap(), client),
        heard,
    )
}

#[tokio::test]
async fn a_server_that_never_answers_times_out_at_the_first_byte_and_is_retried_visibly() {
    let s = setup(MockConfig::new()).await;
    let (adapter, heard) = impatient(&s, 3);
    s.server.push_fault(Fault::next(FaultKind::Hang));
    let options = StreamOptions {
        max_retries: 3,
        ..s.options()
    };
    let events: Vec<Event> = adapter
        .stream(&s.model, &long_request("hello there"), &options)
        .await
        .unwrap()
        .collect()
        .await;
    assert_eq!(done(&events).1.text(), "hello there");
    let heard = heard.lock().unwrap().clone();
    assert_eq!(heard.len(), 1, "{heard:?}");
    assert!(heard[0].error.contains("first-byte timeout"), "{heard:?}");

    // Never answering at all: every try times out and the run ends, in bounded time.
    s.server.push_fault(Fault {
        times: 10,
        ..Fault::next(FaultKind::Hang)
    });
    let started = std::time::Instant::now();
    let options = StreamOptions {
        max_retries: 1,
        ..s.options()
    };
    let error = match adapter
        .stream(&s.model, &long_request("hello there"), &options)
        .await
    {
        Err(error) => error,
        Ok(stream) => panic!("{:?}", stream.collect::<Vec<_>>().await),
    };
    assert!(
        matches!(&error, ProviderError::Transport { message } if message.contains("first-byte timeout")),
        "{error:?}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn a_stalled_stream_times_out_and_is_resent_only_while_nothing_was_shown() {
    let s = setup(MockConfig::new()).await;
    let (adapter, heard) = impatient(&s, 3);
    let options = s.options();
    // Silent after message_start: nothing shown yet, so the request is sent again.
    s.server
        .push_fault(Fault::next(FaultKind::StallAfter { events: 1 }));
    let events: Vec<Event> = adapter
        .stream(&s.model, &long_request("hello there"), &options)
        .await
        .unwrap()
        .collect()
        .await;
    assert_eq!(done(&events).1.text(), "hello there");
    assert_eq!(s.server.requests().len(), 2);
    assert!(
        heard.lock().unwrap()[0]
            .error
            .contains("idle-stream timeout"),
        "{:?}",
        heard.lock().unwrap()
    );

    // Silent after the text streamed: the stream ends with the partial reply, not re-sent.
    s.server
        .push_fault(Fault::next(FaultKind::StallAfter { events: 4 }));
    let events: Vec<Event> = adapter
        .stream(&s.model, &long_request("hello there"), &options)
        .await
        .unwrap()
        .collect()
        .await;
    match events.last() {
        Some(Event::Error {
            error: ProviderError::Truncated { reason },
            partial: Some(partial),
        }) => {
            assert!(reason.contains("idle-stream timeout"), "{reason}");
            assert_eq!(partial.text(), "hello there");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(s.server.requests().len(), 3);
}

fn diagnosis(events: &[Event]) -> Option<&strata_provider::CacheDiagnosis> {
    events.iter().find_map(|e| match e {
        Event::CacheDiagnosis(d) => Some(d),
        _ => None,
    })
}

/// A forced break (a changed system section) is reported with the provider's own reason: the
/// row asks for the diagnosis (`diagnostics.previous_message_id` naming the session's previous
/// response, beta `cache-diagnosis-2026-04-07`) and strata-mock answers from its own prefix
/// cache.
#[tokio::test]
async fn a_changed_system_section_is_reported_with_the_providers_miss_reason() {
    let s = setup(MockConfig::new()).await;
    let options = StreamOptions {
        session_id: Some("session-a".into()),
        ..s.options()
    };
    let first = s.collect(&long_request("first question"), &options).await;
    done(&first);
    // The first request opts in with nothing to compare, and nothing diverged.
    assert_eq!(diagnosis(&first), None);
    let records = s.server.requests();
    let first_id = match &first[0] {
        Event::Start { response_id, .. } => response_id.clone().unwrap(),
        other => panic!("{other:?}"),
    };
    assert_eq!(
        records[0].body.as_ref().unwrap()["diagnostics"],
        json!({"previous_message_id": null})
    );

    // The same conversation extended: the provider finds no divergence.
    let mut extended = long_request("first question");
    extended.messages.push(Message::assistant_text("an answer"));
    extended
        .messages
        .push(Message::user_text("and a follow-up"));
    let events = s.collect(&extended, &options).await;
    assert_eq!(diagnosis(&events), None, "{events:?}");
    let second_id = match &events[0] {
        Event::Start { response_id, .. } => response_id.clone().unwrap(),
        other => panic!("{other:?}"),
    };
    assert_eq!(
        s.server.requests()[1].body.as_ref().unwrap()["diagnostics"]["previous_message_id"],
        json!(first_id)
    );

    // One system section rewritten in place: the cache breaks from the system chapter on.
    let mut changed = extended.clone();
    changed.system = vec![SystemBlock::text(
        "You are strata, a terse coding agent. ".repeat(200),
    )];
    let http = s
        .adapter
        .http_request(&s.model, &changed, &options)
        .unwrap();
    let betas: Vec<&str> = http
        .headers
        .iter()
        .filter(|(name, _)| name == "anthropic-beta")
        .flat_map(|(_, value)| value.split(','))
        .collect();
    assert!(betas.contains(&"cache-diagnosis-2026-04-07"), "{betas:?}");
    let events = s.collect(&changed, &options).await;
    let (_, _, usage) = done(&events);
    let found = diagnosis(&events).expect("a diagnosis");
    assert_eq!(found.reason, "system_changed");
    let records = s.server.requests();
    assert_eq!(
        records[2].body.as_ref().unwrap()["diagnostics"]["previous_message_id"],
        json!(second_id)
    );
    // What the previous request held from the system chapter on is what was missed.
    let before = records[1].cache.unwrap();
    let held = |c: strata_mock::Split| c.read + c.written + c.uncached;
    assert_eq!(
        found.missed_tokens,
        Some(held(before.system) + held(before.messages))
    );
    // The break is real: the previous request read its whole prefix, this one at most the
    // tools chapter (here under the model's cache minimum, so nothing).
    assert!(before.cache_read > held(before.tools), "{before:?}");
    assert!(usage.cache_read <= held(before.tools), "{usage:?}");
}

/// An effort change mid-conversation: on a row with per-message effort (Opus 4.8) the request
/// keeps the session's first effort and says the change in a system message after the last
/// message, so the next request reads at least 99% of the previous prompt; on a row without
/// (Opus 4.7) the request-level effort changes and the mock drops the cached messages, as
/// Anthropic documents for thinking parameters.
#[tokio::test]
async fn an_effort_change_reads_the_previous_prompt_where_the_row_allows_it() {
    for (model_id, keeps) in [("claude-opus-4-8", true), ("claude-opus-4-7", false)] {
        let mut s = setup_without_threads(MockConfig::new()).await;
        s.model = Catalog::builtin()
            .unwrap()
            .model("anthropic", model_id)
            .unwrap();
        let options = StreamOptions {
            session_id: Some("effort".into()),
            ..s.options()
        };
        let question = "Walk through the parser and name each odd corner case. ".repeat(250);
        let mut first = long_request(&question);
        first.model = model_id.into();
        first.thinking = ThinkingLevel::High;
        done(&s.collect(&first, &options).await);

        let mut second = first.clone();
        second
            .messages
            .push(Message::assistant_text("Three corner cases."));
        second
            .messages
            .push(Message::user_text("Now briefly: which matters most?"));
        second.thinking = ThinkingLevel::Low;
        second.breakpoints[2].position = BreakpointPosition::Message { index: 2 };
        let http = s.adapter.http_request(&s.model, &second, &options).unwrap();
        let betas = http
            .header_value("anthropic-beta")
            .unwrap_or_default()
            .to_owned();
        done(&s.collect(&second, &options).await);

        let records = s.server.requests();
        let previous = records[0].cache.unwrap().input_tokens;
        let read = records[1].cache.unwrap().cache_read;
        let body = records[1].body.clone().unwrap();
        eprintln!(
            "{model_id}: effort high -> low, read {read} of the previous {previous} tokens ({:.1}%)",
            100.0 * read as f64 / previous as f64
        );
        if keeps {
            assert!(
                read as f64 >= 0.99 * previous as f64,
                "{model_id}: read {read} of {previous}"
            );
            assert_eq!(
                body["output_config"]["effort"], "high",
                "the session's first"
            );
            assert_eq!(
                body["messages"][3],
                json!({"role": "system", "output_config": {"effort": "low"}})
            );
            assert!(
                betas.contains("mid-conversation-output-config-2026-07-01"),
                "{betas}"
            );
            // The next turn keeps the change where it was said and reads this prompt.
            let mut third = second.clone();
            third.messages.push(Message::assistant_text("The second."));
            third.messages.push(Message::user_text("Thanks."));
            third.breakpoints[2].position = BreakpointPosition::Message { index: 4 };
            done(&s.collect(&third, &options).await);
            let records = s.server.requests();
            let body = records[2].body.clone().unwrap();
            assert_eq!(body["messages"][3]["output_config"]["effort"], "low");
            assert_eq!(body["messages"].as_array().unwrap().len(), 6);
            let read = records[2].cache.unwrap().cache_read;
            let previous = records[1].cache.unwrap().input_tokens;
            assert!(
                read as f64 >= 0.99 * previous as f64,
                "read {read} of {previous}"
            );
        } else {
            assert!(
                (read as f64) < 0.5 * previous as f64,
                "{model_id}: read {read} of {previous}"
            );
            assert_eq!(
                body["output_config"]["effort"],
                "low",
                "{}",
                body.to_string().chars().take(300).collect::<String>()
            );
            assert!(!betas.contains("mid-conversation-output-config"), "{betas}");
        }
    }
}

/// The mock's model refuses the provider cache diagnosis the row claims (a 400 naming
/// `diagnostics`): the turn completes through the fallback (the same request without it, the
/// scripted answer intact), the lesson is saved with its date and error, and the next session
/// — a new adapter reading the same file — starts without the feature: no second 400.
#[tokio::test]
async fn a_refused_feature_is_learned_and_the_turn_completes_without_it() {
    let profile = strata_mock::ModelProfile {
        rejects: vec!["diagnostics".into()],
        ..MockConfig::new().profile(strata_mock::Protocol::Anthropic, MODEL)
    };
    let config = MockConfig::new().with_model(strata_mock::ModelRule {
        protocol: Some(strata_mock::Protocol::Anthropic),
        pattern: MODEL.into(),
        profile,
    });
    let s = setup(config).await;
    s.server.load_scenario(
        Scenario::from_toml(
            "[[turn]]\ntext = \"The answer.\"\n[[turn]]\ntext = \"Again.\"\n",
            "t",
        )
        .unwrap(),
    );
    let dir = std::env::temp_dir().join(format!("strata-learned-anthropic-{}", std::process::id()));
    let path = dir.join("learned-capabilities.json");
    let _ = std::fs::remove_file(&path);
    let learned = std::sync::Arc::new(strata_provider::LearnedCapabilities::open(&path).unwrap());
    let adapter = s.adapter.clone().with_learned(learned);
    let options = StreamOptions {
        session_id: Some("first-session".into()),
        ..s.options()
    };
    let events: Vec<Event> = adapter
        .stream(&s.model, &long_request("one"), &options)
        .await
        .unwrap()
        .collect()
        .await;
    let (stop, message, _) = done(&events);
    assert_eq!(
        (*stop, message.text()),
        (StopReason::EndTurn, "The answer.".to_owned())
    );
    let records = s.server.requests();
    let statuses: Vec<u16> = records.iter().map(|r| r.status).collect();
    assert_eq!(statuses, [400, 200]);
    assert!(records[0].error.as_deref().unwrap().contains("diagnostics"));
    assert!(
        records[1]
            .body
            .as_ref()
            .unwrap()
            .get("diagnostics")
            .is_none()
    );

    let saved = strata_provider::LearnedCapabilities::open(&path).unwrap();
    let lessons = saved.lessons();
    assert_eq!(lessons.len(), 1);
    let lesson = &lessons[0];
    assert_eq!(
        (
            lesson.provider.as_str(),
            lesson.model.as_str(),
            lesson.feature
        ),
        (
            "anthropic",
            MODEL,
            strata_provider::Learnable::CacheDiagnostics
        )
    );
    assert!(
        lesson.error.contains("Extra inputs are not permitted"),
        "{}",
        lesson.error
    );
    assert!(lesson.learned_at.ends_with("GMT"), "{}", lesson.learned_at);

    // The next session starts on what was learned.
    let next = s.adapter.clone().with_learned(std::sync::Arc::new(saved));
    let options = StreamOptions {
        session_id: Some("second-session".into()),
        ..s.options()
    };
    let events: Vec<Event> = next
        .stream(&s.model, &long_request("two"), &options)
        .await
        .unwrap()
        .collect()
        .await;
    // A new conversation: the script's first turn again.
    assert_eq!(done(&events).1.text(), "The answer.");
    let records = s.server.requests();
    assert_eq!(records.len(), 3, "no second refusal");
    assert_eq!(records[2].status, 200);
    assert!(
        records[2]
            .body
            .as_ref()
            .unwrap()
            .get("diagnostics")
            .is_none()
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// A tool added mid-session that the tools chapter does not declare (Opus 4.8: tool changes
/// and inline definitions): its `tool_addition` carries the definition, the beta header says
/// so, the mock accepts it and the scripted model can call the tool.
#[tokio::test]
async fn a_tool_added_mid_session_is_defined_inline_and_the_model_can_call_it() {
    let mut s = setup(MockConfig::new()).await;
    s.model = Catalog::builtin()
        .unwrap()
        .model("anthropic", "claude-opus-4-8")
        .unwrap();
    s.server.load_scenario(
        Scenario::from_toml(
            "[[turn]]\n[[turn.tool_call]]\ntool = \"grep\"\nargs = { path = \"a\" }\n",
            "t",
        )
        .unwrap(),
    );
    let mut request = long_request("find it");
    request.model = "claude-opus-4-8".into();
    let mut grep = tool("grep");
    // The render layer defers a later tool where it can; defined inline, it is offered at once.
    grep.defer_loading = true;
    request.messages.push(Message {
        role: strata_provider::Role::System,
        content: vec![ContentBlock::ToolAddition { tools: vec![grep] }],
    });
    let http = s
        .adapter
        .http_request(&s.model, &request, &s.options())
        .unwrap();
    let betas = http.header_value("anthropic-beta").unwrap_or_default();
    assert!(betas.contains("inline-tools-2026-09-15"), "{betas}");
    assert!(
        betas.contains("mid-conversation-tool-changes-2026-07-01"),
        "{betas}"
    );
    let events = s.collect(&request, &s.options()).await;
    let (stop, message, _) = done(&events);
    assert_eq!(*stop, StopReason::ToolUse, "{events:?}");
    assert!(
        matches!(&message.content[0], ContentBlock::ToolCall { name, .. } if name == "grep"),
        "{message:?}"
    );
    let record = &s.server.requests()[0];
    assert_eq!(record.status, 200);
    let body = record.body.clone().unwrap();
    assert!(
        body["tools"]
            .as_array()
            .unwrap()
            .iter()
            .all(|t| t["name"] != "grep")
    );
    let addition = &body["messages"][1]["content"][0];
    assert_eq!(addition["type"], "tool_addition");
    assert_eq!(addition["tool"]["type"], "tool_definition");
    assert_eq!(addition["tool"]["definition"]["name"], "grep");
    assert_eq!(addition["tool"]["definition"].get("defer_loading"), None);
    // A tool the chapter declares is still named by reference.
    request.tools.push(tool("grep"));
    let body: serde_json::Value = serde_json::from_slice(
        &s.adapter
            .http_request(&s.model, &request, &s.options())
            .unwrap()
            .body,
    )
    .unwrap();
    assert_eq!(
        body["messages"][1]["content"][0]["tool"],
        json!({"type": "tool_reference", "name": "grep"})
    );
}

/// A tool defined inline, withdrawn and added again: a request declares a name once, so the
/// second addition refers to the first definition and the mock accepts the request.
#[tokio::test]
async fn a_tool_added_again_after_its_removal_is_referenced_not_defined_twice() {
    let mut s = setup(MockConfig::new()).await;
    s.model = Catalog::builtin()
        .unwrap()
        .model("anthropic", "claude-opus-4-8")
        .unwrap();
    s.server
        .load_scenario(Scenario::from_toml("[[turn]]\ntext = \"ok\"\n", "t").unwrap());
    let mut request = long_request("find it");
    request.model = "claude-opus-4-8".into();
    let system = |block: ContentBlock| Message {
        role: strata_provider::Role::System,
        content: vec![block],
    };
    request.messages.push(system(ContentBlock::ToolAddition {
        tools: vec![tool("grep")],
    }));
    request.messages.push(system(ContentBlock::ToolRemoval {
        names: vec!["grep".into()],
    }));
    request.messages.push(system(ContentBlock::ToolAddition {
        tools: vec![tool("grep")],
    }));
    let events = s.collect(&request, &s.options()).await;
    let (stop, _, _) = done(&events);
    assert_eq!(*stop, StopReason::EndTurn, "{events:?}");
    let record = &s.server.requests()[0];
    assert_eq!(record.status, 200, "{record:?}");
    let body = record.body.clone().unwrap();
    let tools: Vec<&serde_json::Value> = body["messages"][1]["content"]
        .as_array()
        .unwrap()
        .iter()
        .map(|block| &block["tool"])
        .collect();
    assert_eq!(tools.len(), 3, "{body}");
    assert_eq!(tools[0]["type"], "tool_definition");
    assert_eq!(tools[2], &json!({"type": "tool_reference", "name": "grep"}));
}

/// A tool loop on a message thread: after the first request each sends only what follows the
/// last answer, uploads a fraction of the full request's bytes, and the mock bills it exactly
/// as the full request (the cache is the conversation's, not the upload's).
#[tokio::test]
async fn a_threaded_tool_loop_uploads_less_and_reads_the_cache_as_full_requests_do() {
    let scenario = "[[turn]]\n[[turn.tool_call]]\ntool = \"read\"\nargs = { path = \"a\" }\n\
                    [[turn]]\n[[turn.tool_call]]\ntool = \"read\"\nargs = { path = \"b\" }\n\
                    [[turn]]\ntext = \"Done.\"\n";
    let mut runs = Vec::new();
    for threads in [false, true] {
        let s = if threads {
            setup(MockConfig::new()).await
        } else {
            setup_without_threads(MockConfig::new()).await
        };
        s.server
            .load_scenario(Scenario::from_toml(scenario, "t").unwrap());
        let options = StreamOptions {
            session_id: Some("loop".into()),
            ..s.options()
        };
        let mut request = long_request("read a then b");
        for step in 0..3 {
            let events = s.collect(&request, &options).await;
            let (_, message, _) = done(&events);
            let Some(ContentBlock::ToolCall { id, .. }) = message.content.last().cloned() else {
                assert_eq!(step, 2, "{message:?}");
                break;
            };
            request.messages.push(message.clone());
            request.messages.push(Message {
                role: strata_provider::Role::User,
                content: vec![ContentBlock::ToolResult {
                    tool_call_id: id,
                    content: vec![strata_provider::ToolResultContent::Text {
                        text: "file contents. ".repeat(200),
                    }],
                    is_error: false,
                }],
            });
            let last = request.messages.len() - 1;
            request.breakpoints[2].position = BreakpointPosition::Message { index: last };
        }
        runs.push(s.server.requests());
    }
    let (full, threaded) = (&runs[0], &runs[1]);
    assert_eq!(full.len(), 3);
    assert_eq!(threaded.len(), 3);
    assert_eq!(threaded[0].continued, None);
    for i in 1..3 {
        assert!(threaded[i].continued.is_some(), "{:?}", threaded[i]);
        assert!(
            threaded[i].body_bytes * 2 < full[i].body_bytes,
            "request {i}: {} against {}",
            threaded[i].body_bytes,
            full[i].body_bytes
        );
        let (a, b) = (full[i].cache.unwrap(), threaded[i].cache.unwrap());
        assert_eq!(
            (a.input_tokens, a.cache_read, a.cache_write, a.uncached),
            (b.input_tokens, b.cache_read, b.cache_write, b.uncached),
            "request {i}"
        );
        assert!(b.cache_read > 0, "request {i}: {b:?}");
    }
}

/// A model that refuses threads (a 400 naming `thread`): the turn completes through the full
/// request without one, and the adapter sends no thread from then on.
#[tokio::test]
async fn a_refused_thread_is_learned_and_the_turn_goes_in_full() {
    let profile = strata_mock::ModelProfile {
        rejects: vec!["message-threads".into()],
        ..MockConfig::new().profile(strata_mock::Protocol::Anthropic, MODEL)
    };
    let config = MockConfig::new().with_model(strata_mock::ModelRule {
        protocol: Some(strata_mock::Protocol::Anthropic),
        pattern: MODEL.into(),
        profile,
    });
    let s = setup(config).await;
    s.server.load_scenario(
        Scenario::from_toml(
            "[[turn]]\ntext = \"One.\"\n[[turn]]\ntext = \"Two.\"\n",
            "t",
        )
        .unwrap(),
    );
    let options = StreamOptions {
        session_id: Some("refused".into()),
        ..s.options()
    };
    let mut request = long_request("q");
    let events = s.collect(&request, &options).await;
    let (_, message, _) = done(&events);
    assert_eq!(message.content, vec![ContentBlock::text("One.")]);
    request.messages.push(message.clone());
    request.messages.push(Message::user_text("again"));
    let events = s.collect(&request, &options).await;
    let (_, message, _) = done(&events);
    assert_eq!(message.content, vec![ContentBlock::text("Two.")]);
    let statuses: Vec<(u16, bool)> = s
        .server
        .requests()
        .iter()
        .map(|r| (r.status, r.body.as_ref().unwrap().get("thread").is_some()))
        .collect();
    assert_eq!(statuses, [(400, true), (200, false), (200, false)]);
}

/// A one-turn reminder on a row with `clear_at` (Opus 4.8): sent with `clear_at:
/// "next_user_message"` and its beta header, kept in the next request unchanged, which reads
/// the whole previous prompt from the cache; a user message cannot carry it.
#[tokio::test]
async fn a_one_turn_reminder_is_cleared_after_the_next_user_message_and_stays_cached() {
    let mut s = setup_without_threads(MockConfig::new()).await;
    s.model = Catalog::builtin()
        .unwrap()
        .model("anthropic", "claude-opus-4-8")
        .unwrap();
    let mut first = long_request(&"Look at the parser. ".repeat(100));
    first.model = "claude-opus-4-8".into();
    first.messages.push(Message {
        role: strata_provider::Role::System,
        content: vec![ContentBlock::text(
            "Reminder: the tests are failing right now.",
        )],
    });
    first.transient = vec![1];
    first.breakpoints[2].position = BreakpointPosition::Message { index: 1 };
    let http = s
        .adapter
        .http_request(&s.model, &first, &s.options())
        .unwrap();
    let betas = http.header_value("anthropic-beta").unwrap_or_default();
    assert!(
        betas.contains("mid-conversation-system-clear-at-2026-08-21"),
        "{betas}"
    );
    let events = s.collect(&first, &s.options()).await;
    let (_, answer, _) = done(&events);
    let mut second = first.clone();
    second.messages.push(answer.clone());
    second.messages.push(Message::user_text("And now?"));
    second.breakpoints[2].position = BreakpointPosition::Message { index: 3 };
    done(&s.collect(&second, &s.options()).await);
    let records = s.server.requests();
    assert_eq!(records.len(), 2);
    let body = records[1].body.clone().unwrap();
    assert_eq!(
        body["messages"][1],
        json!({"role": "system", "clear_at": "next_user_message",
            "content": [{"type": "text", "text": "Reminder: the tests are failing right now."}]})
    );
    let previous = records[0].cache.unwrap().input_tokens;
    let read = records[1].cache.unwrap().cache_read;
    assert!(read >= previous, "read {read} of {previous}");

    // Where the row has no clear_at the reminder goes as a plain system message.
    let mut row = Catalog::builtin()
        .unwrap()
        .provider("anthropic")
        .unwrap()
        .clone();
    row.features.message_threads = false;
    let plain = strata_provider::Capabilities {
        system_clear_at: false,
        ..row.capabilities("claude-opus-4-8")
    };
    let body = strata_anthropic::build_body(&first, &s.model, &plain);
    assert_eq!(body["messages"][1].get("clear_at"), None);
}
