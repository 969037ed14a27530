//! Runs the agent on a throwaway project against strata-mock's scripted model: the model reads
//! a file, fixes a typo with `edit`, runs a check with `bash` and answers. Every event is
//! printed as it happens, then the session file.
//!
//! ```sh
//! cargo run -p strata-agent --example mock_run
//! ```

use std::sync::Arc;

use strata_agent::{Agent, AgentConfig, AgentEvent};
use strata_anthropic::AnthropicProvider;
use strata_mock::{MockConfig, MockServer, Scenario};
use strata_provider::transport::{HttpClient, TransportConfig};
use strata_provider::{ApiKey, Catalog, StreamOptions};
use strata_session::{Session, WriteOptions};
use strata_tools::ToolSet;

const SCENARIO: &str = r#"
name = "fix-the-greeting"
[[turn]]
text = "Let me read the file."
[[turn.tool_call]]
tool = "read"
args = { path = "src/greeting.rs" }
[[turn]]
[[turn.tool_call]]
tool = "edit"
args = { path = "src/greeting.rs", oldText = "Helo", newText = "Hello" }
[[turn]]
[[turn.tool_call]]
tool = "bash"
args = { command = "grep -c Hello src/greeting.rs" }
[[turn]]
text = "Fixed the typo (Helo → Hello)."
"#;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let server = MockServer::start(MockConfig::new()).await?;
    server.load_scenario(Scenario::from_toml(SCENARIO, "example")?);

    let project = tempfile::tempdir()?;
    std::fs::create_dir(project.path().join("src"))?;
    std::fs::write(
        project.path().join("src/greeting.rs"),
        "pub const GREETING: &str = \"Helo\";\n",
    )?;

    let catalog = Catalog::builtin()?;
    let row = catalog
        .provider("anthropic")
        .ok_or("no anthropic row")?
        .clone();
    let model = catalog
        .model("anthropic", "claude-sonnet-4-5")
        .ok_or("no model")?;
    let provider = AnthropicProvider::for_row(&row, HttpClient::new(&TransportConfig::default())?);
    let session = Session::create(
        project.path().join("session.jsonl"),
        &project.path().display().to_string(),
        WriteOptions::default(),
    )?;
    let config = AgentConfig {
        cwd: project.path().to_path_buf(),
        capabilities: row.capabilities(&model.id),
        api: row.protocol.as_str().to_owned(),
        model,
        max_tokens: Some(4096),
        global_dir: None,
        custom_intro: None,
        append_system_prompt: None,
        stream: StreamOptions {
            base_url: Some(server.base_url()),
            api_key: Some(ApiKey::new("mock")),
            ..StreamOptions::default()
        },
        render_policy: strata_context::RenderPolicy::Strata,
        compaction: strata_compaction::CompactionSettings::default(),
        summary_model: None,
        cache: strata_agent::CacheSettings::default(),
        tool_settings: strata_tools::ToolSettings::default(),
    };
    let mut agent = Agent::new(session, Arc::new(provider), ToolSet::default_set(), config);
    let mut events = agent.subscribe();
    let printer = tokio::spawn(async move {
        while let Some(event) = events.recv().await {
            match event {
                AgentEvent::TextDelta { text } => print!("{text}"),
                AgentEvent::ToolStart {
                    name, arguments, ..
                } => println!("\n→ {name} {arguments}"),
                AgentEvent::Usage { usage, .. } => println!(
                    "  [uncached {} · cache read {} · cache write {} · out {}]",
                    usage.input,
                    usage.cache_read,
                    usage.cache_write(),
                    usage.output
                ),
                _ => {}
            }
        }
    });
    let summary = agent.prompt("Fix the greeting.").await?;
    drop(agent);
    printer.await?;
    println!("\n{} turns, ended by {}", summary.turns, summary.reason);
    println!(
        "{}",
        std::fs::read_to_string(project.path().join("src/greeting.rs"))?
    );
    Ok(())
}
