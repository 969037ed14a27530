//! Serves Pi's RPC protocol over in-memory pipes against strata-mock: sends `get_state` and a
//! prompt, prints every line the server writes until the run ends.
//! `cargo run -p strata-rpc --example drive`

use serde_json::{Value, json};
use strata_agent::{Agent, RetryEvents};
use strata_mock::{MockConfig, MockServer, Scenario};
use strata_provider::Catalog;
use strata_rpc::{EndpointHost, ServeOptions, serve};
use strata_session::{Session, WriteOptions};
use strata_tools::ToolSet;
use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _, BufReader};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mock = MockServer::start(MockConfig::new()).await?;
    mock.load_scenario(Scenario::from_toml(
        "[[turn]]\ntext = \"Hello from the mock.\"\n",
        "drive",
    )?);
    // Every Anthropic model goes to the mock (`strata --mode rpc` routes by its configuration).
    let host = EndpointHost::new(
        Catalog::builtin()?,
        "anthropic",
        mock.base_url(),
        "mock-key",
    );
    let route = host.route_to("anthropic", "claude-sonnet-4-5", None)?;
    let dir = tempfile::tempdir()?;
    let session = Session::create(dir.path().join("s.jsonl"), "/tmp", WriteOptions::default())?;
    let config = route.agent_config(dir.path());
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
