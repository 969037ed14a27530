//! The adapter against strata-mock's Gemini routes (AI Studio and Vertex) over real HTTP.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use futures::StreamExt;
use pretty_assertions::assert_eq;
use serde_json::json;
use strata_google::{GoogleCredentials, GoogleProvider};
use strata_mock::{Fault, FaultKind, MockConfig, MockServer, Scenario};
use strata_provider::transport::{HttpClient, RetryPolicy, TransportConfig};
use strata_provider::{
    ApiKey, Catalog, ContentBlock, Event, EventStream, Message, Model, Provider, ProviderError,
    Request, StopReason, StreamOptions, SystemBlock, ThinkingLevel, ToolDefinition,
};

fn client(max_retries: u32) -> HttpClient {
    HttpClient::new(&TransportConfig {
        retry: RetryPolicy {
            max_retries,
            base_delay: Duration::from_millis(10),
            max_delay: Duration::from_secs(5),
        },
        ..TransportConfig::default()
    })
    .unwrap()
}

fn studio(max_retries: u32) -> (GoogleProvider, Model) {
    let catalog = Catalog::builtin().unwrap();
    let row = catalog.provider("google").unwrap().clone();
    let model = catalog.model("google", "gemini-2.5-flash").unwrap();
    (GoogleProvider::new(row, client(max_retries)), model)
}

fn studio_options(server: &MockServer) -> StreamOptions {
    StreamOptions {
        api_key: Some(ApiKey::new("gemini-key-secret")),
        base_url: Some(format!("{}/v1beta", server.base_url())),
        max_retries: 3,
        ..StreamOptions::default()
    }
}

fn request(system_repeats: usize) -> Request {
    let mut request = Request::new("gemini-2.5-flash");
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
    request.thinking = ThinkingLevel::Medium;
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
async fn streams_thinking_text_and_parallel_calls_from_ai_studio() {
    let server = MockServer::start(MockConfig::new()).await.unwrap();
    server.load_scenario(
        Scenario::from_toml(
            "[[turn]]\nthinking = \"Two reads.\"\ntext = \"Reading.\"\n[[turn.tool_call]]\ntool = \"read\"\nargs = { path = \"a.txt\" }\n[[turn.tool_call]]\ntool = \"read\"\nargs = { path = \"b.txt\" }\n",
            "inline",
        )
        .unwrap(),
    );
    let (provider, model) = studio(0);
    let events = collect(
        provider
            .stream(&model, &request(5), &studio_options(&server))
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
    assert!(
        matches!(&message.content[0], ContentBlock::Thinking { text, .. } if text == "Two reads.")
    );
    let args: Vec<serde_json::Value> = message.tool_calls().map(|(_, _, a)| a.clone()).collect();
    assert_eq!(
        args,
        vec![json!({"path": "a.txt"}), json!({"path": "b.txt"})]
    );
    let record = &server.requests()[0];
    assert_eq!(
        record.path,
        "/v1beta/models/gemini-2.5-flash:streamGenerateContent"
    );
    let body = record.body.as_ref().unwrap();
    assert_eq!(
        body["systemInstruction"]["parts"][0]["text"]
            .as_str()
            .map(|s| s.len() > 10),
        Some(true)
    );
    assert_eq!(
        body["generationConfig"]["thinkingConfig"],
        json!({"thinkingBudget": 8192, "includeThoughts": true})
    );
}

#[tokio::test]
async fn implicit_cache_reads_are_not_billed_as_input() {
    let server = MockServer::start(MockConfig::new()).await.unwrap();
    let (provider, model) = studio(0);
    let request = request(500);
    let first = provider
        .complete(&model, &request, &studio_options(&server))
        .await
        .unwrap();
    let second = provider
        .complete(&model, &request, &studio_options(&server))
        .await
        .unwrap();
    assert_eq!(first.usage.cache_read, 0);
    assert!(second.usage.cache_read > 1000, "{:?}", second.usage);
    assert_eq!(second.usage.prompt_tokens(), first.usage.prompt_tokens());
    let record = &server.requests()[1];
    assert_eq!(second.usage.cache_read, record.cache.unwrap().cache_read);
    assert_eq!(
        second.usage.input + second.usage.cache_read,
        record.cache.unwrap().input_tokens
    );
    let expected = (second.usage.input as f64 * model.prices.input
        + second.usage.cache_read as f64 * model.prices.cache_read
        + second.usage.output as f64 * model.prices.output)
        / 1e6;
    assert!((second.cost.total() - expected).abs() < 1e-12);
}

#[tokio::test]
async fn vertex_route_with_a_bearer_token() {
    let server = MockServer::start(MockConfig::new()).await.unwrap();
    let catalog = Catalog::builtin().unwrap();
    let row = catalog.provider("google-vertex").unwrap().clone();
    let model = catalog.models_of("google-vertex").next().unwrap().clone();
    let provider = GoogleProvider::new(row, client(0))
        .vertex("my-project", "us-central1")
        .with_credentials(GoogleCredentials::Bearer(ApiKey::new("ya29.token")));
    let options = StreamOptions {
        base_url: Some(server.base_url()),
        ..StreamOptions::default()
    };
    let mut req = request(5);
    req.model = model.id.clone();
    let done = provider.complete(&model, &req, &options).await.unwrap();
    assert_eq!(done.stop_reason, StopReason::EndTurn);
    assert_eq!(
        server.requests()[0].path,
        format!(
            "/v1/projects/my-project/locations/us-central1/publishers/google/models/{}:streamGenerateContent",
            model.id
        )
    );
}

#[tokio::test]
async fn faults_are_retried_classified_or_reported() {
    let server = MockServer::start(MockConfig::new()).await.unwrap();
    server.load_scenario(
        Scenario::from_toml(
            "[[turn]]\ntext = \"A fairly long answer, streamed in many small pieces.\"\n",
            "inline",
        )
        .unwrap(),
    );
    let (provider, model) = studio(3);
    server.push_fault(Fault::next(FaultKind::RateLimit {
        retry_after_secs: 1,
    }));
    let started = Instant::now();
    provider
        .complete(&model, &request(5), &studio_options(&server))
        .await
        .unwrap();
    assert!(started.elapsed() >= Duration::from_millis(950));
    for kind in [FaultKind::ServerError, FaultKind::Overloaded] {
        server.push_fault(Fault::next(kind.clone()));
        provider
            .complete(&model, &request(5), &studio_options(&server))
            .await
            .unwrap_or_else(|e| panic!("{kind:?}: {e}"));
    }
    assert_eq!(server.requests().len(), 6);

    server.push_fault(Fault::next(FaultKind::ContextLength));
    let err = provider
        .stream(&model, &request(5), &studio_options(&server))
        .await
        .err()
        .unwrap();
    assert!(
        matches!(err, ProviderError::ContextOverflow { .. }),
        "{err:?}"
    );
    assert!(!format!("{err:?}").contains("gemini-key-secret"));

    for (fault, what) in [
        (FaultKind::CutAfter { events: 3 }, "truncated"),
        (FaultKind::Malformed { at_event: 2 }, "decode"),
        (FaultKind::StreamError { after_events: 2 }, "error"),
    ] {
        let before = server.requests().len();
        server.push_fault(Fault::next(fault));
        let events = collect(
            provider
                .stream(&model, &request(5), &studio_options(&server))
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
    server.load_scenario(
        Scenario::from_toml(
            "[[turn]]\ntext = \"one two three four five six seven eight\"\n",
            "inline",
        )
        .unwrap(),
    );
    server.push_fault(Fault::next(FaultKind::Slow { delay_ms: 300 }));
    let (provider, model) = studio(0);
    let opts = studio_options(&server);
    let mut stream = provider.stream(&model, &request(5), &opts).await.unwrap();
    assert!(matches!(stream.next().await, Some(Event::Start { .. })));
    let started = Instant::now();
    opts.cancel.cancel();
    let mut last = None;
    while let Some(event) = stream.next().await {
        last = Some(event);
    }
    assert!(
        matches!(
            last,
            Some(Event::Error {
                error: ProviderError::Cancelled,
                ..
            })
        ),
        "{last:?}"
    );
    assert!(started.elapsed() < Duration::from_millis(250));
}

#[tokio::test]
async fn bad_request_keeps_the_providers_message_and_not_the_key() {
    let server = MockServer::start(MockConfig::new()).await.unwrap();
    let (provider, model) = studio(3);
    let empty = Request::new("gemini-2.5-flash");
    let err = provider
        .stream(&model, &empty, &studio_options(&server))
        .await
        .err()
        .unwrap();
    let ProviderError::InvalidRequest { status, body, .. } = &err else {
        panic!("{err:?}")
    };
    assert_eq!(*status, 400);
    assert!(body.contains("contents is not specified"), "{body}");
    assert!(!format!("{err:?}").contains("gemini-key-secret"));
    assert_eq!(server.requests().len(), 1, "a bad request is not retried");
}

#[tokio::test]
async fn non_streaming_generate_content_is_normalized_the_same_way() {
    let server = MockServer::start(MockConfig::new()).await.unwrap();
    server.load_scenario(
        Scenario::from_toml(
            "[[turn]]\nthinking = \"hm\"\ntext = \"Reading.\"\n[[turn.tool_call]]\ntool = \"read\"\nargs = { path = \"a.txt\" }\n",
            "inline",
        )
        .unwrap(),
    );
    let (provider, model) = studio(0);
    let done = provider
        .generate(&model, &request(5), &studio_options(&server))
        .await
        .unwrap();
    assert_eq!(done.stop_reason, StopReason::ToolUse);
    assert_eq!(done.message.text(), "Reading.");
    assert_eq!(done.message.tool_calls().count(), 1);
    assert!(done.usage.input > 0);
    assert_eq!(
        server.requests()[0].path,
        "/v1beta/models/gemini-2.5-flash:generateContent"
    );
    assert!(!server.requests()[0].stream);
}

/// A provider for the Vertex row that reads only `vars` as its environment.
fn vertex_from_env(vars: &[(&str, String)]) -> (GoogleProvider, Model) {
    let catalog = Catalog::builtin().unwrap();
    let row = catalog.provider("google-vertex").unwrap().clone();
    let model = catalog.models_of("google-vertex").next().unwrap().clone();
    let env: HashMap<String, String> = vars
        .iter()
        .map(|(k, v)| ((*k).to_owned(), v.clone()))
        .collect();
    let provider =
        GoogleProvider::new(row, client(0)).with_env(Arc::new(move |k: &str| env.get(k).cloned()));
    (provider, model)
}

#[tokio::test]
async fn a_vertex_row_takes_project_region_and_adc_credentials_from_the_environment() {
    let server = MockServer::start(MockConfig::new()).await.unwrap();
    let (token_url, refreshes, form) = crate::auth::token_server().await;
    let dir = std::env::temp_dir().join(format!("strata-google-adc-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let adc = dir.join("application_default_credentials.json");
    std::fs::write(
        &adc,
        format!(
            r#"{{"type":"authorized_user","client_id":"cid","client_secret":"adc-secret","refresh_token":"rt-secret","token_uri":"{token_url}"}}"#
        ),
    )
    .unwrap();
    let (provider, model) = vertex_from_env(&[
        ("GOOGLE_CLOUD_PROJECT", "proj-7".into()),
        ("GOOGLE_CLOUD_LOCATION", "europe-west4".into()),
        ("GOOGLE_APPLICATION_CREDENTIALS", adc.display().to_string()),
    ]);
    let options = StreamOptions {
        base_url: Some(server.base_url()),
        ..StreamOptions::default()
    };
    let mut req = request(5);
    req.model = model.id.clone();
    for _ in 0..2 {
        let done = provider.complete(&model, &req, &options).await.unwrap();
        assert_eq!(done.stop_reason, StopReason::EndTurn);
    }
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(
        server.requests()[0].path,
        format!(
            "/v1/projects/proj-7/locations/europe-west4/publishers/google/models/{}:streamGenerateContent",
            model.id
        )
    );
    assert_eq!(server.requests().len(), 2);
    assert_eq!(refreshes.load(Ordering::SeqCst), 1, "the token is reused");
    assert!(form.lock().await.contains("refresh_token=rt-secret"));
    let token = provider.bearer(&model, &options).await.unwrap().unwrap();
    assert_eq!(token.expose(), "ya29.token-1");
    // Without a base-URL override the region fills the row's host.
    let url = provider
        .url(&model, "streamGenerateContent", &StreamOptions::default())
        .unwrap();
    assert!(
        url.starts_with("https://europe-west4-aiplatform.googleapis.com/v1/projects/proj-7/"),
        "{url}"
    );
}

#[tokio::test]
async fn a_vertex_row_names_what_is_missing() {
    let (provider, model) = vertex_from_env(&[("GOOGLE_CLOUD_LOCATION", "us-central1".into())]);
    let err = provider
        .stream(&model, &request(5), &StreamOptions::default())
        .await
        .err()
        .unwrap();
    assert!(
        matches!(&err, ProviderError::InvalidRequest { body, .. } if body.contains("GOOGLE_CLOUD_PROJECT")),
        "{err:?}"
    );

    let (provider, model) = vertex_from_env(&[
        ("GOOGLE_CLOUD_PROJECT", "p".into()),
        ("GOOGLE_CLOUD_LOCATION", "us-central1".into()),
        (
            "GOOGLE_APPLICATION_CREDENTIALS",
            "/nonexistent/adc.json".into(),
        ),
    ]);
    let err = provider
        .stream(&model, &request(5), &StreamOptions::default())
        .await
        .err()
        .unwrap();
    assert!(
        matches!(&err, ProviderError::Auth { body, .. } if body.contains("/nonexistent/adc.json") && body.contains("gcloud auth application-default login")),
        "{err:?}"
    );

    // A key from the row's variable wins over ADC and goes in the row's header.
    let (provider, model) = vertex_from_env(&[
        ("GOOGLE_CLOUD_PROJECT", "p".into()),
        ("GOOGLE_CLOUD_LOCATION", "us-central1".into()),
        ("GOOGLE_CLOUD_API_KEY", "vertex-key".into()),
    ]);
    let options = StreamOptions::default();
    assert_eq!(provider.bearer(&model, &options).await.unwrap(), None);
    let http = provider
        .prepare(&model, &request(5), &options, None)
        .unwrap();
    assert_eq!(http.header_value("x-goog-api-key"), Some("vertex-key"));
}

#[tokio::test]
async fn a_connection_dropped_before_the_first_byte_is_retried() {
    let server = MockServer::start(MockConfig::new()).await.unwrap();
    server.push_fault(Fault::next(FaultKind::CutAfter { events: 0 }));
    let (provider, model) = studio(3);
    let done = provider
        .complete(&model, &request(5), &studio_options(&server))
        .await
        .unwrap();
    assert_eq!(done.stop_reason, StopReason::EndTurn);
    let records = server.requests();
    assert_eq!(records.len(), 2, "the empty answer was re-sent once");
    assert_eq!(records[0].fault, Some(FaultKind::CutAfter { events: 0 }));
}

#[tokio::test]
async fn auth_errors_keep_the_providers_message_but_not_the_key() {
    let (provider, model) = studio(3);
    for status in ["401 Unauthorized", "403 Forbidden"] {
        let body = r#"{"error":{"code":403,"message":"API key not valid: gemini-key-secret. Please pass a valid API key.","status":"PERMISSION_DENIED"}}"#;
        let (url, count) = strata_provider::testing::refusing_server(status, body.to_owned())
            .await
            .unwrap();
        let options = StreamOptions {
            base_url: Some(format!("{url}/v1beta")),
            ..studio_options_without_server()
        };
        let error = provider
            .stream(&model, &request(5), &options)
            .await
            .err()
            .unwrap();
        assert!(matches!(error, ProviderError::Auth { .. }), "{error:?}");
        let text = format!("{error} {error:?}");
        assert!(text.contains("API key not valid"), "{text}");
        assert!(!text.contains("gemini-key-secret"), "{text}");
        assert_eq!(error.request_id(), Some("req_refused"));
        assert_eq!(
            count.load(std::sync::atomic::Ordering::SeqCst),
            1,
            "{status} is not retried"
        );
    }
}

fn studio_options_without_server() -> StreamOptions {
    StreamOptions {
        api_key: Some(ApiKey::new("gemini-key-secret")),
        max_retries: 3,
        ..StreamOptions::default()
    }
}

#[tokio::test]
async fn retries_stop_at_the_limit_with_the_classified_error() {
    let server = MockServer::start(MockConfig::new()).await.unwrap();
    server.push_fault(Fault::next(FaultKind::Overloaded).times(10));
    let (provider, model) = studio(3);
    let options = StreamOptions {
        max_retries: 2,
        ..studio_options(&server)
    };
    let err = provider
        .stream(&model, &request(5), &options)
        .await
        .err()
        .unwrap();
    assert!(
        matches!(err, ProviderError::Overloaded { status: 503, .. }),
        "{err:?}"
    );
    assert_eq!(server.requests().len(), 3, "one send and two re-sends");
}

/// Cuts the stream after 1, 2, 3, … frames until the cut falls past the end and the turn
/// completes; every cut must end with the partial message of exactly what arrived.
#[tokio::test]
async fn a_stream_cut_anywhere_ends_with_the_partial_message_of_what_arrived() {
    let server = MockServer::start(MockConfig::new()).await.unwrap();
    server.load_scenario(Scenario::from_toml("[[turn]]\nthinking = \"Read first, then list the directory.\"\ntext = \"Looking at the file and the directory now.\"\n[[turn.tool_call]]\ntool = \"read\"\nargs = { path = \"src/main.rs\" }\n[[turn.tool_call]]\ntool = \"read\"\nargs = { path = \"src/lib.rs\" }\n", "inline").unwrap());
    let (provider, model) = studio(3);
    let (seen, cuts) = strata_provider::testing::cut_after_every_event(async |events_before_cut| {
        server.push_fault(Fault::next(FaultKind::CutAfter {
            events: events_before_cut,
        }));
        collect(
            provider
                .stream(&model, &request(5), &studio_options(&server))
                .await
                .unwrap(),
        )
        .await
    })
    .await;
    assert!((4..499).contains(&cuts), "{cuts} cut points");
    // Gemini sends function calls whole, in the chunk that ends the turn: no cut keeps one.
    assert!(seen.text && seen.thinking, "{seen:?}");
}

/// `thoughtSignature` is bytes (base64 on the wire): the mock's must decode, and replaying it
/// on the call's part is accepted.
#[tokio::test]
async fn a_thought_signature_is_base64_and_its_replay_is_accepted() {
    use base64::Engine as _;
    let server = MockServer::start(MockConfig::new()).await.unwrap();
    server.load_scenario(
        Scenario::from_toml(
            "[[turn]]\nthinking = \"Read it first.\"\n[[turn.tool_call]]\ntool = \"read\"\nargs = { path = \"a.txt\" }\n[[turn]]\ntext = \"Done reading.\"\n",
            "inline",
        )
        .unwrap(),
    );
    let (provider, model) = studio(0);
    let options = studio_options(&server);
    let mut request = request(5);
    let first = provider.complete(&model, &request, &options).await.unwrap();
    let signature = first
        .message
        .content
        .iter()
        .find_map(|block| match block {
            ContentBlock::Thinking { signature, .. } => signature.clone(),
            _ => None,
        })
        .expect("a signed thinking block");
    base64::engine::general_purpose::STANDARD
        .decode(&signature)
        .unwrap_or_else(|e| panic!("thoughtSignature {signature:?} is not base64: {e}"));
    let (id, name, _) = first.message.tool_calls().next().unwrap();
    let result = Message {
        role: strata_provider::Role::User,
        content: vec![ContentBlock::ToolResult {
            tool_call_id: id.to_owned(),
            content: vec![strata_provider::ToolResultContent::Text {
                text: format!("{name}: contents of a.txt"),
            }],
            is_error: false,
        }],
    };
    request.messages.push(first.message.clone());
    request.messages.push(result);
    let second = provider.complete(&model, &request, &options).await.unwrap();
    assert_eq!(second.message.text(), "Done reading.");
    let replayed = server.requests()[1].body.clone().unwrap();
    assert!(
        replayed.to_string().contains(&signature),
        "the signature rides back: {replayed}"
    );
}
