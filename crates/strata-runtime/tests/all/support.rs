//! A mock, a route to it, an agent on a fresh session, and a runtime driving it.

use std::path::{Path, PathBuf};
use std::time::Duration;

use std::sync::{Arc, Mutex};
use strata_agent::{Agent, AgentConfig, AgentEvent, CacheSettings};
use strata_mock::{MockConfig, MockServer, Scenario};
use strata_provider::Catalog;

use strata_runtime::{
    Answer, ModelRef, ModelRoute, Op, Query, Router, Routing as _, RunEnd, RuntimeEvent,
    RuntimeHandle, spawn,
};
use strata_session::{Session, WriteOptions};
use strata_tools::ToolSet;
use tempfile::TempDir;
use tokio::sync::mpsc::UnboundedReceiver;
use tokio::task::JoinHandle;

/// A runtime on a fresh session in a temporary directory, sending to a mock that plays a
/// scenario through the Anthropic adapter.
pub struct Running {
    pub server: MockServer,
    _dir: TempDir,
    /// The route the agent started on (`anthropic/claude-sonnet-4-5`).
    pub sonnet: ModelRoute,
    pub handle: RuntimeHandle,
    pub events: UnboundedReceiver<RuntimeEvent>,
    task: JoinHandle<Agent>,
    /// Queries sent so far.
    queries: u64,
    /// The runtime's router.
    pub router: Arc<MockRouter>,
}

/// Routes every `anthropic` model to the mock, noting each model asked for.
pub struct MockRouter {
    base_url: String,
    pub asked: Mutex<Vec<ModelRef>>,
}

impl Router for MockRouter {
    fn route(&self, model: &ModelRef) -> Result<ModelRoute, String> {
        self.asked.lock().unwrap().push(model.clone());
        let catalog = Catalog::builtin().map_err(|e| e.to_string())?;
        ModelRoute::to_base_url(
            &catalog,
            &model.provider,
            &model.model,
            &self.base_url,
            "test-key",
        )
        .map_err(|e| e.to_string())
    }
}

/// [`start_with`] the default cache settings.
pub async fn start(scenario: &str) -> Running {
    start_with(scenario, CacheSettings::default()).await
}

pub async fn start_with(scenario: &str, cache: CacheSettings) -> Running {
    start_agent(scenario, |sonnet, dir| agent(sonnet, dir, cache)).await
}

/// A runtime on the agent `make` builds for the route and the temporary directory.
pub async fn start_agent(
    scenario: &str,
    make: impl FnOnce(&ModelRoute, &Path) -> Agent,
) -> Running {
    let server = MockServer::start(MockConfig::new()).await.unwrap();
    server.load_scenario(Scenario::from_toml(scenario, "test").unwrap());
    let dir = tempfile::tempdir().unwrap();
    let sonnet = route(&server, "claude-sonnet-4-5");
    let router = Arc::new(MockRouter {
        base_url: server.base_url(),
        asked: Mutex::default(),
    });
    let (handle, events, task) = spawn(make(&sonnet, dir.path()), router.clone());
    Running {
        server,
        _dir: dir,
        sonnet,
        handle,
        events,
        task,
        queries: 0,
        router,
    }
}

impl Running {
    pub fn send(&self, op: Op) {
        self.handle.send(op).unwrap();
    }

    /// Events until (and including) the first that `stop` accepts; fails after ten seconds.
    pub async fn until(&mut self, stop: impl Fn(&RuntimeEvent) -> bool) -> Vec<RuntimeEvent> {
        let mut seen = Vec::new();
        loop {
            let event = tokio::time::timeout(Duration::from_secs(10), self.events.recv())
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
    pub async fn settled(&mut self) -> Vec<RuntimeEvent> {
        self.until(|e| matches!(e, RuntimeEvent::Settled)).await
    }

    /// Waits until a tool call has started.
    pub async fn tool_started(&mut self) {
        self.until(|e| {
            matches!(
                e,
                RuntimeEvent::Agent {
                    event: AgentEvent::ToolStart { .. }
                }
            )
        })
        .await;
    }

    /// Waits for the next session change and returns the file now open.
    pub async fn session_changed(&mut self) -> (PathBuf, Vec<RuntimeEvent>) {
        let seen = self
            .until(|e| matches!(e, RuntimeEvent::SessionChanged { .. }))
            .await;
        let Some(RuntimeEvent::SessionChanged { path, .. }) = seen.last() else {
            unreachable!()
        };
        (path.clone(), seen)
    }

    /// Asks `query` and returns its answer (the events before it are dropped).
    pub async fn query(&mut self, query: Query) -> Answer {
        self.queries += 1;
        let id = self.queries;
        self.send(Op::Query { id, query });
        let seen = self
            .until(|e| matches!(e, RuntimeEvent::Answered { id: got, .. } if *got == id))
            .await;
        match seen.into_iter().last() {
            Some(RuntimeEvent::Answered { answer, .. }) => answer,
            _ => unreachable!(),
        }
    }

    /// Shuts the runtime down and takes the agent back; the directory stays until `self` drops.
    pub async fn stop(&mut self) -> Agent {
        self.send(Op::Shutdown);
        (&mut self.task).await.unwrap()
    }
}

/// The route to `anthropic/<model>` on the mock, built by the library's registry.
pub fn route(server: &MockServer, model: &str) -> ModelRoute {
    let catalog = Catalog::builtin().unwrap();
    ModelRoute::to_base_url(&catalog, "anthropic", model, &server.base_url(), "test-key").unwrap()
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
    agent_in(route, dir, dir, cache)
}

/// [`agent`] working in `project`, its session kept in `sessions`.
pub fn agent_in(
    route: &ModelRoute,
    sessions: &Path,
    project: &Path,
    cache: CacheSettings,
) -> Agent {
    let config = AgentConfig {
        max_tokens: Some(4096),
        compaction: strata_compaction::CompactionSettings {
            keep_recent_tokens: 200,
            ..strata_compaction::CompactionSettings::default()
        },
        cache,
        ..route.agent_config(project)
    };
    Agent::new(
        session(sessions),
        route.provider.clone(),
        ToolSet::default_set(),
        config,
    )
}

/// The run end among `events`.
pub fn run_end(events: &[RuntimeEvent]) -> RunEnd {
    events
        .iter()
        .find_map(|e| match e {
            RuntimeEvent::RunEnded { end, .. } => Some(*end),
            _ => None,
        })
        .expect("a run end")
}

/// The final texts of the runs that ended among `events`.
pub fn final_texts(events: &[RuntimeEvent]) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| match e {
            RuntimeEvent::RunEnded { final_text, .. } => Some(final_text.clone()),
            _ => None,
        })
        .collect()
}
