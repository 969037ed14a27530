//! Connects to one stdio MCP server and prints its tools as strata names them.
//!
//! `cargo run -p strata-mcp --example list_tools -- COMMAND [ARGS…]`

use std::sync::Arc;

use strata_mcp::config::{Exposure, Source, SourceKind};
use strata_mcp::{McpManager, ServerConfig, ServerSpec, Transport};
use strata_tools::ToolSource;

#[tokio::main]
async fn main() {
    let mut args = std::env::args().skip(1);
    let Some(command) = args.next() else {
        eprintln!("usage: list_tools COMMAND [ARGS…]");
        std::process::exit(2);
    };
    let server = ServerConfig {
        name: "example".into(),
        transport: Transport::Stdio {
            command,
            args: args.collect(),
            env: Default::default(),
            cwd: None,
        },
        enabled: true,
        timeout: strata_mcp::config::DEFAULT_TIMEOUT,
        allow_tools: Vec::new(),
        deny_tools: Vec::new(),
        exposure: Exposure::Direct,
        description: None,
        source: Source {
            kind: SourceKind::Session,
            path: None,
        },
        spec: ServerSpec::default(),
        token_dir: None,
    };
    let manager = Arc::new(McpManager::new(
        vec![server],
        strata_mcp::DEFAULT_STARTUP_WAIT,
    ));
    manager.start();
    manager.settle().await;
    for status in manager.status() {
        println!("{}: {}", status.name, status.state.label());
        if let strata_mcp::ServerState::Failed { error } = &status.state {
            println!("  {error}");
        }
    }
    for tool in manager.tools() {
        println!("{}  {}", tool.name(), tool.description());
    }
    manager.shutdown().await;
}
