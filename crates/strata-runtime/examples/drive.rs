//! Drives a session runtime against strata-mock: a prompt, a thinking change, the events.
//! `cargo run -p strata-runtime --example drive`

use strata_agent::{Agent, AgentConfig, CacheSettings};
use strata_mock::{MockConfig, MockServer, Scenario};
use strata_provider::transport::{HttpClient, TransportConfig};
use strata_provider::{ApiKey, Catalog, StreamOptions, ThinkingLevel};
use strata_runtime::{ModelRoute, Op, RuntimeEvent, spawn};
use strata_session::{Session, WriteOptions};
use strata_tools::ToolSet;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let server = MockServer::start(MockConfig::new()).await?;
    server.load_scenario(Scenario::from_toml(
        "[[turn]]\ntext = \"Hello from the mock.\"\n",
        "drive",
    )?);
    let catalog = Catalog::builtin()?;
    let row = catalog.provider("anthropic").ok_or("no anthropic row")?;
    let model = catalog
        .model("anthropic", "claude-sonnet-4-5")
        .ok_or("no model")?;
    let stream = StreamOptions {
        base_url: Some(server.base_url()),
        api_key: Some(ApiKey::new("mock-key")),
        ..StreamOptions::default()
    };
    let client = HttpClient::new(&TransportConfig::default())?;
    let route = ModelRoute::for_row(row, model, client, None, stream)?;
    let dir = tempfile::tempdir()?;
    let session = Session::create(dir.path().join("s.jsonl"), "/tmp", WriteOptions::default())?;
    let config = AgentConfig {
        cwd: dir.path().to_path_buf(),
        model: route.model.clone(),
        capabilities: route.capabilities.clone(),
        api: route.protocol.as_str().to_owned(),
        max_tokens: None,
        global_dir: None,
        custom_intro: None,
        append_system_prompt: None,
        stream: route.stream.clone(),
        render_policy: strata_context::RenderPolicy::Strata,
        compaction: strata_compaction::CompactionSettings::default(),
        summary_model: None,
        cache: CacheSettings::default(),
        tool_settings: Default::default(),
    };
    let agent = Agent::new(
        session,
        route.provider.clone(),
        ToolSet::default_set(),
        config,
    );
    let (handle, mut events, task) = spawn(agent);
    handle.send(Op::SetThinking(ThinkingLevel::Low))?;
    handle.send(Op::Prompt("Say hello".into()))?;
    while let Some(event) = events.recv().await {
        println!("{}", serde_json::to_string(&event)?);
        if matches!(event, RuntimeEvent::Settled) {
            break;
        }
    }
    handle.send(Op::Shutdown)?;
    let agent = task.await?;
    println!("session: {}", agent.session().path().display());
    Ok(())
}
