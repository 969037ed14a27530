//! Shared helpers: a fast-retrying client, a provider pointed at a mock, event collection.

use std::time::Duration;

use futures::StreamExt;
use strata_openai_responses::ResponsesProvider;
use strata_provider::transport::{HttpClient, RetryPolicy, TransportConfig};
use strata_provider::{ApiKey, Catalog, Event, EventStream, Model, StreamOptions};

pub fn client(max_retries: u32) -> HttpClient {
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

pub fn catalog() -> Catalog {
    Catalog::builtin().unwrap()
}

pub fn openai(max_retries: u32) -> (ResponsesProvider, Model) {
    let catalog = catalog();
    let row = catalog.provider("openai").unwrap().clone();
    let model = catalog.model("openai", "gpt-5.2").unwrap();
    (ResponsesProvider::new(row, client(max_retries)), model)
}

pub fn options(base_url: &str) -> StreamOptions {
    StreamOptions {
        api_key: Some(ApiKey::new("sk-test-secret")),
        base_url: Some(format!("{base_url}/v1")),
        cache_key: Some("session-1".into()),
        max_retries: 3,
        ..StreamOptions::default()
    }
}

pub async fn collect(mut stream: EventStream) -> Vec<Event> {
    let mut events = Vec::new();
    while let Some(event) = stream.next().await {
        events.push(event);
    }
    events
}
