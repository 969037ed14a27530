//! Starts a mock server, sends one Anthropic request twice, and prints the cache accounting.

use strata_mock::{MockConfig, MockServer};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let server = MockServer::start(MockConfig::new()).await?;
    let system: String = (0..800).map(|i| format!("rule{i} ")).collect();
    let body = serde_json::json!({
        "model": "claude-sonnet-4-5",
        "max_tokens": 256,
        "system": [{"type": "text", "text": system, "cache_control": {"type": "ephemeral"}}],
        "messages": [{"role": "user", "content": "hello"}],
    });
    let client = reqwest::Client::new();
    for _ in 0..2 {
        let reply: serde_json::Value = client
            .post(format!("{}/v1/messages", server.base_url()))
            .json(&body)
            .send()
            .await?
            .json()
            .await?;
        println!("{}", reply["usage"]);
    }
    for record in server.requests() {
        println!("request {}: {:?}", record.seq, record.cache);
    }
    Ok(())
}
