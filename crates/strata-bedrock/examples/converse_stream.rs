//! Streams one SigV4-signed ConverseStream turn from strata-mock and prints each event.
//!
//! `cargo run -p strata-bedrock --example converse_stream`

use futures::StreamExt;
use strata_bedrock::BedrockProvider;
use strata_bedrock::credentials::{AwsCredentials, BedrockAuth, ResolvedAws};
use strata_mock::{MockConfig, MockServer};
use strata_provider::transport::{HttpClient, TransportConfig};
use strata_provider::{
    ApiKey, Catalog, Event, Message, Provider, Request, StreamOptions, SystemBlock,
};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let server = MockServer::start(MockConfig::new()).await?;
    let catalog = Catalog::builtin()?;
    let row = catalog
        .provider("amazon-bedrock")
        .ok_or("no bedrock row")?
        .clone();
    let model = catalog
        .model(
            "amazon-bedrock",
            "anthropic.claude-sonnet-4-5-20250929-v1:0",
        )
        .ok_or("no model")?;
    // A real caller uses `strata_bedrock::credentials::resolve_from_process()`.
    let aws = ResolvedAws {
        auth: BedrockAuth::SigV4(AwsCredentials {
            access_key_id: "AKIDEXAMPLE".into(),
            secret_access_key: ApiKey::new("local-secret"),
            session_token: None,
        }),
        region: Some("us-east-1".into()),
    };
    let provider = BedrockProvider::new(row, HttpClient::new(&TransportConfig::default())?, aws);

    let mut request = Request::new(model.id.clone());
    request.system.push(SystemBlock::text("You are terse."));
    request.messages.push(Message::user_text("Say hello."));
    let options = StreamOptions {
        base_url: Some(server.base_url()),
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
