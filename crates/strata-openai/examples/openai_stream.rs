//! Streams one prompt through the Chat Completions adapter and prints the events.
//!
//! ```text
//! cargo run -p strata-openai --example openai_stream -- http://127.0.0.1:PORT/v1 "Say hello" deepseek deepseek-v4-flash
//! ```
//! Any openai-chat row works; point the URL at `strata-mock` or at the provider itself
//! (the key comes from the row's environment variables, e.g. `DEEPSEEK_API_KEY`).

use futures::StreamExt;
use strata_openai::OpenAiChatProvider;
use strata_provider::transport::{HttpClient, TransportConfig};
use strata_provider::{ApiKey, Catalog, Event, Message, Provider, Request, StreamOptions};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let base_url = args
        .next()
        .ok_or("usage: stream BASE_URL [PROMPT] [PROVIDER] [MODEL]")?;
    let prompt = args
        .next()
        .unwrap_or_else(|| "Say hello in five words.".into());
    let provider = args.next().unwrap_or_else(|| "deepseek".into());
    let model_id = args.next().unwrap_or_else(|| "deepseek-v4-flash".into());

    let catalog = Catalog::builtin()?;
    let row = catalog
        .provider(&provider)
        .ok_or_else(|| format!("unknown provider {provider}"))?;
    let model = catalog
        .model(&provider, &model_id)
        .ok_or_else(|| format!("unknown model {provider}/{model_id}"))?;
    let adapter = OpenAiChatProvider::for_row(row, HttpClient::new(&TransportConfig::default())?);

    let mut request = Request::new(model.id.clone());
    request.messages.push(Message::user_text(prompt));
    let from_env = row
        .auth_env
        .iter()
        .find_map(|v| std::env::var(v).ok())
        .unwrap_or_else(|| "mock".into());
    let options = StreamOptions {
        base_url: Some(base_url),
        api_key: Some(ApiKey::new(from_env)),
        ..StreamOptions::default()
    };
    let mut stream = adapter.stream(&model, &request, &options).await?;
    while let Some(event) = stream.next().await {
        match event {
            Event::ThinkingDelta { text, .. } => eprint!("{text}"),
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
