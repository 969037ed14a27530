//! Where `.ci/install-mcp` put the servers, and building managers for them.

use std::path::PathBuf;
use std::time::Duration;

use strata_mcp::config::{Exposure, Source, SourceKind};
use strata_mcp::{McpManager, ServerConfig, ServerSpec, Transport};

/// The folder `.ci/install-mcp` installs into (`STRATA_MCP_DEPS` overrides it).
pub fn deps_dir() -> PathBuf {
    std::env::var_os("STRATA_MCP_DEPS")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../.mcp-deps"))
}

/// `node` and server-everything's entry point, or `None` after printing why the test skips.
pub fn everything() -> Option<(PathBuf, PathBuf)> {
    let script =
        deps_dir().join("node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    let node = which("node");
    match (node, script.exists()) {
        (Some(node), true) => Some((node, script)),
        (node, _) => {
            eprintln!(
                "SKIPPED: server-everything not installed ({} missing{}); run .ci/install-mcp",
                script.display(),
                if node.is_none() {
                    ", no node on PATH"
                } else {
                    ""
                }
            );
            None
        }
    }
}

/// The venv's Python with the `mcp` SDK, or `None` after printing why the test skips.
pub fn python() -> Option<PathBuf> {
    let python = deps_dir().join("venv/bin/python");
    if python.exists() {
        Some(python)
    } else {
        eprintln!(
            "SKIPPED: the Python MCP SDK is not installed ({} missing); run .ci/install-mcp",
            python.display()
        );
        None
    }
}

/// The churn server's script.
pub fn churn_script() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/churn_server.py")
}

fn which(program: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(program))
        .find(|candidate| candidate.is_file())
}

/// A session-only server entry.
pub fn server(name: &str, transport: Transport) -> ServerConfig {
    ServerConfig {
        name: name.into(),
        transport,
        enabled: true,
        timeout: Duration::from_secs(30),
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
    }
}

/// A stdio transport.
pub fn stdio(command: &std::path::Path, args: &[&str]) -> Transport {
    Transport::Stdio {
        command: command.display().to_string(),
        args: args.iter().map(|a| (*a).to_owned()).collect(),
        env: Default::default(),
        cwd: None,
    }
}

/// A manager for `servers`, started, settled.
pub async fn started(servers: Vec<ServerConfig>) -> McpManager {
    let manager = McpManager::new(servers, Duration::from_secs(60));
    manager.start();
    manager.wait_ready().await;
    manager
}

/// A free port on 127.0.0.1 (bound and released), for a listener the test must name before
/// it exists (a pre-registered redirect URI). It is taken below Linux's ephemeral range
/// (32768 up): a port there is handed to any outgoing connection, and one of a test running
/// beside this one took such a port before the sign-in could bind it again.
pub fn free_port() -> u16 {
    static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    const FIRST: u32 = 20_000;
    const COUNT: u32 = 12_000;
    let start = std::process::id().wrapping_mul(7919);
    for _ in 0..COUNT {
        let step = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let port = (FIRST + start.wrapping_add(step) % COUNT) as u16;
        if std::net::TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return port;
        }
    }
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A local endpoint answering every request with `response` (a whole HTTP/1.1 response);
/// returns its port on 127.0.0.1.
pub async fn canned_http_endpoint(response: &'static [u8]) -> u16 {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            use tokio::io::{AsyncReadExt, AsyncWriteExt};
            let mut buffer = [0u8; 4096];
            let _ = stream.read(&mut buffer).await;
            let _ = stream.write_all(response).await;
        }
    });
    port
}

/// Waits until `manager`'s state changes or 20 s pass.
pub async fn changed(generation: &mut tokio::sync::watch::Receiver<u64>) {
    let _ = tokio::time::timeout(Duration::from_secs(20), generation.changed()).await;
}

/// `python3` on PATH (the standard library only), or `None` after printing why the test skips.
pub fn system_python() -> Option<PathBuf> {
    let found = which("python3");
    if found.is_none() {
        eprintln!("SKIPPED: no python3 on PATH");
    }
    found
}

/// A fixture script's path.
pub fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}
