//! Drives a session runtime against strata-mock: a prompt, a thinking change, the events.
//! `cargo run -p strata-runtime --example drive`

use strata_agent::Agent;
use strata_mock::{MockConfig, MockServer, Scenario};
use strata_provider::{Catalog, ThinkingLevel};
use strata_runtime::{ModelRoute, Op, Routing as _, RuntimeEvent, spawn};
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
    // Every request of this route goes to the mock (a real front end reads keys and base URLs
    // from its configuration and uses `ModelRoute::for_row`).
    let route = ModelRoute::to_base_url(
        &catalog,
        "anthropic",
        "claude-sonnet-4-5",
        &server.base_url(),
        "mock-key",
    )?;
    let dir = tempfile::tempdir()?;
    let session = Session::create(dir.path().join("s.jsonl"), "/tmp", WriteOptions::default())?;
    let config = route.agent_config(dir.path());
    let agent = Agent::new(
        session,
        route.provider.clone(),
        ToolSet::default_set(),
        config,
    );
    let (handle, mut events, task) = spawn(agent, std::sync::Arc::new(strata_runtime::NoRoutes));
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
