//! Explicit caches (`cachedContents`) against strata-mock over real HTTP: created once for the
//! stable prefix, named by later requests that send only the suffix, billed (create, reads,
//! storage) exactly as the mock bills them, and dropped for a full request when refused.

use std::time::Duration;

use futures::StreamExt;
use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use strata_google::GoogleProvider;
use strata_mock::{MockConfig, MockServer, RequestRecord};
use strata_provider::transport::{HttpClient, RetryPolicy, TransportConfig};
use strata_provider::{
    ApiKey, Catalog, Event, Message, Model, Prices, Provider, Request, StreamOptions, SystemBlock,
    ToolDefinition, Usage,
};

fn gemini(row_id: &str, explicit: bool) -> (GoogleProvider, Model) {
    let catalog = Catalog::builtin().unwrap();
    let mut row = catalog.provider(row_id).unwrap().clone();
    row.features.explicit_cache = explicit;
    let model = catalog.model(row_id, "gemini-2.5-flash").unwrap();
    let client = HttpClient::new(&TransportConfig {
        retry: RetryPolicy {
            max_retries: 0,
            base_delay: Duration::from_millis(10),
            max_delay: Duration::from_secs(1),
        },
        ..TransportConfig::default()
    })
    .unwrap();
    (GoogleProvider::new(row, client), model)
}

fn options(server: &MockServer) -> StreamOptions {
    StreamOptions {
        api_key: Some(ApiKey::new("gemini-key-secret")),
        base_url: Some(format!("{}/v1beta", server.base_url())),
        ..StreamOptions::default()
    }
}

/// A conversation whose system prompt clears gemini-2.5-flash's 2,048-token minimum.
fn request(turns: &[(&str, &str)]) -> Request {
    let mut request = Request::new("gemini-2.5-flash");
    request.system.push(SystemBlock::text(
        std::iter::repeat_n(
            "You are a careful coding agent that reads before it edits.",
            300,
        )
        .collect::<Vec<_>>()
        .join(" "),
    ));
    request.tools.push(ToolDefinition {
        name: "read".into(),
        description: "Read a file".into(),
        parameters: json!({"type": "object", "properties": {"path": {"type": "string"}}}),
        defer_loading: false,
    });
    for (role, text) in turns {
        request.messages.push(match *role {
            "user" => Message::user_text(*text),
            _ => Message::assistant_text(*text),
        });
    }
    request
}

/// The usage of a completed turn (panics when the turn did not complete).
async fn turn(
    provider: &GoogleProvider,
    model: &Model,
    request: &Request,
    o: &StreamOptions,
) -> Usage {
    let mut stream = provider.stream(model, request, o).await.unwrap();
    let mut done = None;
    while let Some(event) = stream.next().await {
        if let Event::Done { usage, .. } = event {
            done = Some(usage);
        }
    }
    let Some(usage) = done else {
        panic!("the turn did not complete")
    };
    usage
}

/// What the mock billed: each answered request's uncached, cached and output tokens, every
/// cache created at the input price, and the storage of every cache for its lifetime.
fn mock_bill(server: &MockServer, records: &[RequestRecord], prices: &Prices) -> f64 {
    let per = |tokens: u64, price: f64| tokens as f64 * price / 1e6;
    let requests: f64 = records
        .iter()
        .filter_map(|r| r.cache.map(|c| (c, r.output_tokens)))
        .map(|(c, out)| {
            per(c.uncached, prices.input)
                + per(c.cache_read, prices.cache_read)
                + per(out, prices.output)
        })
        .sum();
    requests
        + per(server.cached_content_created_tokens(), prices.input)
        + server.cached_content_storage_token_hours() * prices.cache_storage / 1e6
}

fn sent(record: &RequestRecord) -> &Value {
    record
        .thread_body
        .as_ref()
        .or(record.body.as_ref())
        .unwrap()
}

#[tokio::test]
async fn later_requests_name_the_cache_send_the_suffix_and_bill_what_the_mock_bills() {
    let server = MockServer::start(MockConfig::new()).await.unwrap();
    let (provider, model) = gemini("google", true);
    let o = options(&server);
    assert!(model.prices.cache_storage > 0.0, "{:?}", model.prices);

    let first = turn(
        &provider,
        &model,
        &request(&[("user", "Look at a.txt.")]),
        &o,
    )
    .await;
    let second_request = request(&[
        ("user", "Look at a.txt."),
        ("assistant", "It is short."),
        ("user", "And b.txt?"),
    ]);
    let second = turn(&provider, &model, &second_request, &o).await;
    let records = server.requests();
    assert_eq!(records.len(), 2, "no request beyond the two turns");
    let name = records[0]
        .cached_content
        .clone()
        .expect("the first turn creates and names a cache");
    assert_eq!(
        records[1].cached_content.as_ref(),
        Some(&name),
        "the cache is reused"
    );

    // The cache holds system and tools; the second request sends only the conversation.
    let body = sent(&records[1]);
    assert_eq!(body["cachedContent"], json!(name));
    for field in ["systemInstruction", "tools", "toolConfig"] {
        assert!(
            body.get(field).is_none(),
            "{field} sent with a cache: {body}"
        );
    }
    assert_eq!(body["contents"].as_array().unwrap().len(), 3);

    // Create and storage are billed on the turn that created the cache, reads on both.
    let created = server.cached_content_created_tokens();
    assert!(created > 2_048, "{created}");
    assert_eq!((first.cache_create, first.cache_read), (created, created));
    assert_eq!(first.cache_write(), 0);
    assert_eq!(first.cache_storage, created * 600);
    assert_eq!(
        (second.cache_create, second.cache_storage, second.cache_read),
        (0, 0, created)
    );

    // A long answer moves the cache forward: the new one ends after it, and the request after
    // it sends the last user turn only.
    let long = "The file defines the parser and its tests. ".repeat(400);
    let third_request = request(&[
        ("user", "Look at a.txt."),
        ("assistant", "It is short."),
        ("user", "And b.txt?"),
        ("assistant", &long),
        ("user", "Fix it."),
    ]);
    let third = turn(&provider, &model, &third_request, &o).await;
    let records = server.requests();
    let body = sent(&records[2]);
    assert_ne!(
        records[2].cached_content.as_ref(),
        Some(&name),
        "a new cache"
    );
    assert_eq!(
        body["contents"],
        json!([{"role": "user", "parts": [{"text": "Fix it."}]}])
    );
    assert!(third.cache_create > created, "{third:?}");

    let strata: f64 = [first, second, third]
        .iter()
        .map(|u| u.cost(&model.prices).total())
        .sum();
    let mock = mock_bill(&server, &records, &model.prices);
    assert!(
        (strata - mock).abs() < 1e-9,
        "strata {strata} vs mock {mock}"
    );
}

#[tokio::test]
async fn an_expired_cache_falls_back_to_a_full_request_and_is_dropped() {
    let server = MockServer::start(MockConfig::new()).await.unwrap();
    let (provider, model) = gemini("google", true);
    let o = options(&server);
    turn(
        &provider,
        &model,
        &request(&[("user", "Look at a.txt.")]),
        &o,
    )
    .await;
    server.advance_clock(Duration::from_secs(601));
    let next = request(&[
        ("user", "Look at a.txt."),
        ("assistant", "It is short."),
        ("user", "And b.txt?"),
    ]);
    let usage = turn(&provider, &model, &next, &o).await;
    let records = server.requests();
    assert_eq!(records.len(), 3, "{records:?}");
    assert_eq!(records[1].status, 404, "the expired cache is refused");
    assert_eq!(records[2].status, 200);
    assert_eq!(
        records[2].cached_content, None,
        "the retry is a full request"
    );
    assert!(sent(&records[2]).get("systemInstruction").is_some());
    assert_eq!(
        (usage.cache_create, usage.cache_storage),
        (0, 0),
        "nothing created for this turn"
    );

    // The dropped cache is not named again: the next turn creates a fresh one.
    turn(&provider, &model, &next, &o).await;
    let records = server.requests();
    let last = records.last().unwrap();
    assert_eq!(last.status, 200);
    assert!(last.cached_content.is_some());
    assert_ne!(last.cached_content, records[0].cached_content);
}

#[tokio::test]
async fn a_forgotten_cache_falls_back_and_a_refused_create_sends_in_full() {
    let server = MockServer::start(MockConfig::new()).await.unwrap();
    let (provider, model) = gemini("google", true);
    let o = options(&server);
    turn(
        &provider,
        &model,
        &request(&[("user", "Look at a.txt.")]),
        &o,
    )
    .await;
    server.reset();
    let usage = turn(
        &provider,
        &model,
        &request(&[("user", "Look at a.txt.")]),
        &o,
    )
    .await;
    let records = server.requests();
    assert_eq!(
        records.iter().map(|r| r.status).collect::<Vec<_>>(),
        [404, 200]
    );
    assert!(usage.input > 2_048, "{usage:?}");

    // Vertex paths: strata-mock serves no `cachedContents` there, so every create is refused
    // and every turn goes out in full, billing nothing for a cache.
    server.reset();
    let (vertex, model) = gemini("google-vertex", true);
    let vertex = vertex.vertex("proj", "us-central1");
    let o = StreamOptions {
        base_url: Some(server.base_url()),
        ..options(&server)
    };
    let usage = turn(&vertex, &model, &request(&[("user", "Look at a.txt.")]), &o).await;
    let records = server.requests();
    assert_eq!(records.len(), 1);
    assert!(
        records[0].path.contains("/publishers/google/models/"),
        "{}",
        records[0].path
    );
    assert_eq!(records[0].cached_content, None);
    assert_eq!((usage.cache_create, usage.cache_storage), (0, 0));
}

#[tokio::test]
async fn without_the_flag_nothing_is_created() {
    let server = MockServer::start(MockConfig::new()).await.unwrap();
    let (provider, model) = gemini("google", false);
    let o = options(&server);
    turn(
        &provider,
        &model,
        &request(&[("user", "Look at a.txt.")]),
        &o,
    )
    .await;
    assert_eq!(server.cached_content_created_tokens(), 0);
    assert!(
        sent(&server.requests()[0])
            .get("systemInstruction")
            .is_some()
    );
}
