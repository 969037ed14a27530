//! Streams one turn from strata-mock's Gemini route and prints each event.
//!
//! `cargo run -p strata-google --example gemini_stream`

use futures::StreamExt;
use strata_google::GoogleProvider;
use strata_mock::{MockConfig, MockServer};
use strata_provider::transport::{HttpClient, TransportConfig};
use strata_provider::{
    ApiKey, Catalog, Event, Message, Provider, Request, StreamOptions, SystemBlock,
};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let server = MockServer::start(MockConfig::new()).await?;
    let catalog = Catalog::builtin()?;
    let row = catalog.provider("google").ok_or("no google row")?.clone();
    let model = catalog
        .model("google", "gemini-2.5-flash")
        .ok_or("no gemini-2.5-flash")?;
    let provider = GoogleProvider::new(row, HttpClient::new(&TransportConfig::default())?);

    let mut request = Request::new(model.id.clone());
    request.system.push(SystemBlock::text("You are terse."));
    request.messages.push(Message::user_text("Say hello."));
    let options = StreamOptions {
        api_key: Some(ApiKey::new("local-key")),
        base_url: Some(format!("{}/v1beta", server.base_url())),
        ..StreamOptions::default()
    };
    let mut stream = provider.stream(&model, &request, &options).await?;
    while let Some(event) = stream.next().await {
        if let Event::Done { usage, .. } = &event {
            println!(
                "done: {usage:?}, cost ${:.6}",
                usage.cost(&model.prices).total()
            );
        } else {
            println!("{event:?}");
        }
    }
    Ok(())
}
