//! The server over in-memory pipes, against strata-mock: Pi's responses and events come out in
//! Pi's shapes and order, and the agent comes back when the input ends.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test helpers outside #[test] fail loudly"
)]

use std::path::Path;
use std::time::Duration;

use serde_json::{Value, json};
use strata_agent::{Agent, AgentConfig, RetryEvents};
use strata_mock::{MockConfig, MockServer, Scenario};
use strata_provider::Catalog;
use strata_rpc::{EndpointHost, ServeOptions, serve};
use strata_runtime::ModelRoute;
use strata_session::{Session, WriteOptions};
use strata_tools::ToolSet;
use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _, BufReader};

fn agent(route: &ModelRoute, dir: &Path) -> Agent {
    let session = Session::create(
        dir.join("first.jsonl"),
        &dir.display().to_string(),
        WriteOptions::default(),
    )
    .unwrap();
    let config = AgentConfig {
        max_tokens: Some(4096),
        ..route.agent_config(dir)
    };
    Agent::new(
        session,
        route.provider.clone(),
        ToolSet::default_set(),
        config,
    )
}

#[tokio::test]
async fn commands_in_events_and_responses_out_in_pi_shapes_then_the_agent_back() {
    let server = MockServer::start(MockConfig::new()).await.unwrap();
    server.load_scenario(
        Scenario::from_toml("[[turn]]\ntext = \"Hello from the mock.\"\n", "t").unwrap(),
    );
    let host = EndpointHost::new(
        Catalog::builtin().unwrap(),
        "anthropic",
        server.base_url(),
        "test-key",
    );
    let dir = tempfile::tempdir().unwrap();
    let sonnet = host
        .route_to("anthropic", "claude-sonnet-4-5", None)
        .unwrap();
    let options = ServeOptions {
        cwd: dir.path().to_path_buf(),
        ..ServeOptions::default()
    };
    let (mut commands, server_input) = tokio::io::duplex(1 << 16);
    let (server_output, client_output) = tokio::io::duplex(1 << 16);
    let serving = tokio::spawn(serve(
        server_input,
        server_output,
        agent(&sonnet, dir.path()),
        RetryEvents::default(),
        host,
        options,
    ));
    let mut lines = BufReader::new(client_output).lines();
    let mut next = async || -> Value {
        let line = tokio::time::timeout(Duration::from_secs(10), lines.next_line())
            .await
            .expect("a line within ten seconds")
            .unwrap()
            .expect("the server still writing");
        serde_json::from_str(&line).unwrap()
    };
    let mut send = async |command: Value| {
        let line = format!("{command}\n");
        commands.write_all(line.as_bytes()).await.unwrap();
    };

    send(json!({"id": 1, "type": "get_state"})).await;
    let state = next().await;
    assert_eq!(state["id"], 1);
    assert_eq!(state["command"], "get_state");
    assert_eq!(state["data"]["model"]["id"], "claude-sonnet-4-5");
    assert_eq!(state["data"]["isStreaming"], false);

    send(json!({"type": "prompt", "message": "hi"})).await;
    let mut seen = vec![next().await];
    while seen.last().unwrap()["type"] != "agent_end" {
        seen.push(next().await);
    }
    assert_eq!(
        seen[0],
        json!({"type": "response", "command": "prompt", "success": true, "data": {"disposition": "started"}})
    );
    let kinds: Vec<&str> = seen.iter().filter_map(|e| e["type"].as_str()).collect();
    let position = |kind: &str| kinds.iter().position(|k| *k == kind).unwrap_or(usize::MAX);
    assert!(
        position("agent_start") < position("turn_start"),
        "{kinds:?}"
    );
    assert!(
        position("turn_start") < position("message_end"),
        "{kinds:?}"
    );
    assert!(position("turn_end") < position("agent_end"), "{kinds:?}");
    let assistant = seen
        .iter()
        .rev()
        .find(|e| e["type"] == "message_end")
        .unwrap();
    assert_eq!(
        assistant["message"]["content"][0]["text"],
        "Hello from the mock."
    );

    send(json!({"id": "x", "type": "no_such_command"})).await;
    // Events of the run may still follow its end (agent_settled).
    let mut refused = next().await;
    while refused["type"] != "response" {
        refused = next().await;
    }
    assert_eq!(refused["success"], false);
    assert_eq!(refused["error"], "Unknown command: no_such_command");
    assert_eq!(refused["command"], "no_such_command");

    send(json!({"id": 2, "type": "set_model", "provider": "anthropic", "modelId": "claude-3-5-haiku-latest"})).await;
    let mut switched = next().await;
    while switched["type"] != "response" {
        switched = next().await;
    }
    assert_eq!(switched["id"], 2);
    assert_eq!(switched["data"]["id"], "claude-3-5-haiku-latest");

    drop(commands);
    let agent = serving.await.unwrap().unwrap();
    assert_eq!(agent.config().model.id, "claude-3-5-haiku-latest");
    let texts: Vec<String> = Session::open(agent.session().path())
        .unwrap()
        .session
        .tree()
        .iter()
        .filter_map(|e| match e.entry() {
            Ok(strata_session::Entry::Message(m)) => match &*m.message {
                strata_session::AgentMessage::User(u) => Some(format!("{:?}", u.content)),
                _ => None,
            },
            _ => None,
        })
        .collect();
    assert_eq!(texts.len(), 1, "the prompt was recorded once: {texts:?}");
}
