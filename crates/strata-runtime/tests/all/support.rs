//! A mock, a route to it, an agent on a fresh session, and a way to wait for events.

use std::path::Path;
use std::time::Duration;

use strata_agent::{Agent, AgentConfig, CacheSettings};
use strata_mock::{MockConfig, MockServer, Scenario};
use strata_provider::transport::{HttpClient, TransportConfig};
use strata_provider::{ApiKey, Catalog, StreamOptions};
use strata_runtime::{ModelRoute, RuntimeEvent};
use strata_session::{Session, WriteOptions};
use strata_tools::ToolSet;
use tokio::sync::mpsc::UnboundedReceiver;

pub async fn mock(scenario: &str) -> MockServer {
    let server = MockServer::start(MockConfig::new()).await.unwrap();
    server.load_scenario(Scenario::from_toml(scenario, "test").unwrap());
    server
}

/// The route to `anthropic/<model>` on the mock, built by the library's registry.
pub fn route(server: &MockServer, model: &str) -> ModelRoute {
    let catalog = Catalog::builtin().unwrap();
    let row = catalog.provider("anthropic").unwrap();
    let model = catalog.model("anthropic", model).unwrap();
    let client = HttpClient::new(&TransportConfig::default()).unwrap();
    let stream = StreamOptions {
        base_url: Some(server.base_url()),
        api_key: Some(ApiKey::new("test-key")),
        ..StreamOptions::default()
    };
    ModelRoute::for_row(row, model, client, None, stream).unwrap()
}

pub fn session(dir: &Path) -> Session {
    Session::create(
        dir.join("first.jsonl"),
        &dir.display().to_string(),
        WriteOptions::default(),
    )
    .unwrap()
}

/// An agent on `route` with the default tools in `dir`.
pub fn agent(route: &ModelRoute, dir: &Path, cache: CacheSettings) -> Agent {
    let config = AgentConfig {
        cwd: dir.to_path_buf(),
        model: route.model.clone(),
        capabilities: route.capabilities.clone(),
        api: route.protocol.as_str().to_owned(),
        max_tokens: Some(4096),
        global_dir: None,
        custom_intro: None,
        append_system_prompt: None,
        stream: route.stream.clone(),
        render_policy: strata_context::RenderPolicy::Strata,
        compaction: strata_compaction::CompactionSettings {
            keep_recent_tokens: 200,
            ..strata_compaction::CompactionSettings::default()
        },
        summary_model: None,
        cache,
        tool_settings: Default::default(),
    };
    Agent::new(
        session(dir),
        route.provider.clone(),
        ToolSet::default_set(),
        config,
    )
}

/// Events until (and including) the first that `stop` accepts; fails after ten seconds.
pub async fn until(
    events: &mut UnboundedReceiver<RuntimeEvent>,
    stop: impl Fn(&RuntimeEvent) -> bool,
) -> Vec<RuntimeEvent> {
    let mut seen = Vec::new();
    loop {
        let event = tokio::time::timeout(Duration::from_secs(10), events.recv())
            .await
            .unwrap_or_else(|_| panic!("no matching event; saw {seen:#?}"))
            .expect("the runtime ended");
        let done = stop(&event);
        seen.push(event);
        if done {
            return seen;
        }
    }
}

/// Events until the runtime settles after a run.
pub async fn settled(events: &mut UnboundedReceiver<RuntimeEvent>) -> Vec<RuntimeEvent> {
    until(events, |e| matches!(e, RuntimeEvent::Settled)).await
}

/// The run end among `events`.
pub fn run_end(events: &[RuntimeEvent]) -> strata_runtime::RunEnd {
    events
        .iter()
        .find_map(|e| match e {
            RuntimeEvent::RunEnded { end, .. } => Some(*end),
            _ => None,
        })
        .expect("a run end")
}
