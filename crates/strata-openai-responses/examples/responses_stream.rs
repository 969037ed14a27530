//! Streams one turn from strata-mock's Responses route and prints each event.
//!
//! `cargo run -p strata-openai-responses --example responses_stream`

use futures::StreamExt;
use strata_mock::{MockConfig, MockServer};
use strata_openai_responses::ResponsesProvider;
use strata_provider::transport::{HttpClient, TransportConfig};
use strata_provider::{
    ApiKey, Catalog, Event, Message, Provider, Request, StreamOptions, SystemBlock,
};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let server = MockServer::start(MockConfig::new()).await?;
    let catalog = Catalog::builtin()?;
    let row = catalog.provider("openai").ok_or("no openai row")?.clone();
    let model = catalog.model("openai", "gpt-5.2").ok_or("no gpt-5.2")?;
    let provider = ResponsesProvider::new(row, HttpClient::new(&TransportConfig::default())?);

    let mut request = Request::new(model.id.clone());
    request
        .system
        .push(SystemBlock::text("You are a terse assistant."));
    request.messages.push(Message::user_text("Say hello."));
    let options = StreamOptions {
        api_key: Some(ApiKey::new("sk-local")),
        base_url: Some(format!("{}/v1", server.base_url())),
        cache_key: Some("example-session".into()),
        ..StreamOptions::default()
    };
    let mut stream = provider.stream(&model, &request, &options).await?;
    while let Some(event) = stream.next().await {
        match &event {
            Event::Done { usage, .. } => {
                println!(
                    "done: {usage:?}, cost ${:.6}",
                    usage.cost(&model.prices).total()
                );
            }
            other => println!("{other:?}"),
        }
    }
    Ok(())
}
