//! Streams one prompt through the Anthropic adapter and prints the events.
//!
//! ```text
//! cargo run -p strata-anthropic --example anthropic_stream -- http://127.0.0.1:PORT "Say hello"
//! ```
//! Point it at `strata-mock` (which prints its base URL) or at the real API with
//! `ANTHROPIC_API_KEY` set and `https://api.anthropic.com` as the URL.

use futures::StreamExt;
use strata_anthropic::AnthropicProvider;
use strata_provider::transport::{HttpClient, TransportConfig, process_env};
use strata_provider::{ApiKey, Catalog, Event, Message, Provider, Request, StreamOptions};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let base_url = args
        .next()
        .ok_or("usage: stream BASE_URL [PROMPT] [MODEL]")?;
    let prompt = args
        .next()
        .unwrap_or_else(|| "Say hello in five words.".into());
    let model_id = args.next().unwrap_or_else(|| "claude-sonnet-4-5".into());

    let catalog = Catalog::builtin()?;
    let row = catalog.provider("anthropic").ok_or("no anthropic row")?;
    let model = catalog
        .model("anthropic", &model_id)
        .ok_or_else(|| format!("unknown model {model_id}"))?;
    let adapter = AnthropicProvider::for_row(row, HttpClient::new(&TransportConfig::default())?);

    let mut request = Request::new(model.id.clone());
    request.messages.push(Message::user_text(prompt));
    let options = StreamOptions {
        base_url: Some(base_url),
        api_key: Some(ApiKey::new(
            process_env("ANTHROPIC_API_KEY").unwrap_or_else(|| "mock".into()),
        )),
        ..StreamOptions::default()
    };
    let mut stream = adapter.stream(&model, &request, &options).await?;
    while let Some(event) = stream.next().await {
        match event {
            Event::TextDelta { text, .. } => print!("{text}"),
            Event::Done {
                stop_reason, usage, ..
            } => {
                let cost = usage.cost(&model.prices);
                println!("\n[{stop_reason:?}] {usage:?} ${:.6}", cost.total());
            }
            Event::Error { error: e, .. } => return Err(e.into()),
            _ => {}
        }
    }
    Ok(())
}
