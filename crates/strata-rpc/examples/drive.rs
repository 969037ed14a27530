//! Serves Pi's RPC protocol over in-memory pipes against strata-mock: sends `get_state` and a
//! prompt, prints every line the server writes until the run ends.
//! `cargo run -p strata-rpc --example drive`

use serde_json::{Value, json};
use strata_agent::{Agent, AgentConfig, CacheSettings, RetryEvents};
use strata_mock::{MockConfig, MockServer, Scenario};
use strata_provider::transport::{HttpClient, RetryObserver, TransportConfig};
use strata_provider::{ApiKey, Catalog, Model, StreamOptions};
use strata_rpc::{Host, ServeOptions, serve};
use strata_runtime::{ModelRoute, SessionRouter};
use strata_session::{Session, WriteOptions};
use strata_tools::ToolSet;
use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _, BufReader};

/// Sends every model to the mock (a real host resolves keys and base URLs from its
/// configuration).
#[derive(Clone)]
struct MockHost {
    catalog: Catalog,
    base_url: String,
}

impl MockHost {
    fn route_to(&self, provider: &str, model_id: &str) -> Result<ModelRoute, String> {
        let row = self.catalog.provider(provider).ok_or("unknown provider")?;
        let model = self
            .catalog
            .model(provider, model_id)
            .ok_or("unknown model")?;
        let client = HttpClient::new(&TransportConfig::default()).map_err(|e| e.to_string())?;
        let stream = StreamOptions {
            base_url: Some(self.base_url.clone()),
            api_key: Some(ApiKey::new("mock-key")),
            ..StreamOptions::default()
        };
        ModelRoute::for_row(row, model, client, None, stream).map_err(|e| e.to_string())
    }
}

impl Host for MockHost {
    fn available_models(&self) -> Vec<Model> {
        self.catalog.models_of("anthropic").cloned().collect()
    }
    fn model(&self, provider: &str, model_id: &str) -> Option<Model> {
        self.catalog.model(provider, model_id)
    }
    fn endpoint(&self, _model: &Model) -> Option<(String, String)> {
        Some(("anthropic-messages".to_owned(), self.base_url.clone()))
    }
    fn route(
        &self,
        provider: &str,
        model_id: &str,
        _: RetryObserver,
    ) -> Result<ModelRoute, String> {
        self.route_to(provider, model_id)
    }
    fn session_router(&self, _: RetryObserver) -> SessionRouter {
        let host = self.clone();
        Box::new(move |provider, model_id| host.route_to(provider, model_id).ok())
    }
    fn set_max_retries(&mut self, _limit: u32) {}
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mock = MockServer::start(MockConfig::new()).await?;
    mock.load_scenario(Scenario::from_toml(
        "[[turn]]\ntext = \"Hello from the mock.\"\n",
        "drive",
    )?);
    let host = MockHost {
        catalog: Catalog::builtin()?,
        base_url: mock.base_url(),
    };
    let route = host.route_to("anthropic", "claude-sonnet-4-5")?;
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
    let options = ServeOptions {
        cwd: dir.path().to_path_buf(),
        ..ServeOptions::default()
    };

    let (mut commands, input) = tokio::io::duplex(1 << 16);
    let (output, written) = tokio::io::duplex(1 << 16);
    let serving = tokio::spawn(serve(
        input,
        output,
        agent,
        RetryEvents::default(),
        host,
        options,
    ));
    for command in [
        json!({"id": 1, "type": "get_state"}),
        json!({"id": 2, "type": "prompt", "message": "Say hello"}),
    ] {
        commands
            .write_all(format!("{command}\n").as_bytes())
            .await?;
    }
    let mut lines = BufReader::new(written).lines();
    while let Some(line) = lines.next_line().await? {
        println!("{line}");
        let record: Value = serde_json::from_str(&line)?;
        if record["type"] == "agent_end" {
            break;
        }
    }
    // The input ends: the server lets the runtime finish and hands the agent back.
    drop(commands);
    let agent = serving.await??;
    println!("session: {}", agent.session().path().display());
    Ok(())
}
