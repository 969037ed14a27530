//! `/mcp`: the session's MCP servers — status, tools, reconnect, enable and disable (with
//! what the change costs said first, as `/tools` does), and OAuth sign-in and sign-out of
//! servers that ask for it.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use strata_mcp::{McpManager, ServerState};
use strata_tools::ToolSource as _;

use super::{App, Item, Level};
use crate::stats;

/// The manager and the runtime its reconnects run on.
#[derive(Debug, Clone)]
pub struct McpHandle {
    /// The session's servers.
    pub manager: McpManager,
    /// Where reconnects and enable/disable run.
    pub runtime: tokio::runtime::Handle,
    /// Sign-ins under way or finished in this session, by server: what `/mcp` says of them.
    pub sign_ins: Arc<Mutex<BTreeMap<String, String>>>,
}

const USAGE: &str = "/mcp [tools NAME | reconnect NAME | enable NAME | disable NAME | login NAME | logout NAME [--forget-client]]";

/// How long a sign-in started from the TUI waits for the browser.
const SIGN_IN_WAIT: Duration = Duration::from_secs(300);

/// How long the TUI waits for the server and its authorization server to hand out the
/// authorization URL (discovery and registration) before saying so.
const SIGN_IN_START_LIMIT: Duration = Duration::from_secs(20);

impl App {
    /// Sets the servers `/mcp` shows.
    pub fn set_mcp(&mut self, handle: McpHandle) {
        self.mcp = Some(handle);
    }

    pub(super) fn mcp_command(&mut self, args: Option<String>) {
        let Some(handle) = self.mcp.clone() else {
            self.notice(Level::Info, "no MCP servers in this session");
            return;
        };
        let words: Vec<String> = args
            .as_deref()
            .unwrap_or_default()
            .split_whitespace()
            .map(str::to_owned)
            .collect();
        match words.as_slice() {
            [] => self.mcp_list(&handle),
            [verb, name] if verb == "tools" => self.mcp_tools(&handle.manager, name),
            [verb, name] if verb == "reconnect" => {
                if !self.mcp_known(&handle.manager, name) {
                    return;
                }
                self.notice(
                    Level::Info,
                    format!("reconnecting MCP server {name}: the same tools change nothing; a difference is one patch at the end"),
                );
                let manager = handle.manager.clone();
                let name = name.clone();
                handle.runtime.spawn(async move {
                    let _ = manager.reconnect(&name).await;
                });
            }
            [verb, name] if verb == "enable" || verb == "disable" => {
                if !self.mcp_known(&handle.manager, name) {
                    return;
                }
                let enable = verb == "enable";
                let cost = self.mcp_toggle_cost(&handle.manager, name, enable);
                self.notice(
                    Level::Info,
                    format!("mcp {verb} {name}: {}", cost.describe()),
                );
                let manager = handle.manager.clone();
                let name = name.clone();
                handle.runtime.spawn(async move {
                    let _ = manager.set_enabled(&name, enable).await;
                });
            }
            [verb, name] if verb == "login" => self.mcp_login(&handle, name),
            [verb, name] if verb == "logout" => self.mcp_logout(&handle, name, false),
            [verb, name, flag] if verb == "logout" && flag == "--forget-client" => {
                self.mcp_logout(&handle, name, true);
            }
            _ => self.notice(Level::Error, format!("usage: {USAGE}")),
        }
    }

    /// Starts the sign-in of `name`: the authorization URL is shown (and opened with
    /// `$BROWSER`), the wait for the browser runs in the background, and the server
    /// reconnects when it ends, its tools arriving as additions.
    fn mcp_login(&mut self, handle: &McpHandle, name: &str) {
        if !self.mcp_known(&handle.manager, name) {
            return;
        }
        let started = handle.runtime.block_on(async {
            tokio::time::timeout(
                SIGN_IN_START_LIMIT,
                strata_mcp::auth::begin_sign_in(&handle.manager, name, SIGN_IN_WAIT),
            )
            .await
        });
        let begun = match started {
            Ok(Ok(begun)) => begun,
            Ok(Err(error)) => {
                self.notice(Level::Error, error);
                return;
            }
            Err(_) => {
                self.notice(
                    Level::Error,
                    format!(
                        "sign-in to {name} failed: no authorization URL within {} s",
                        SIGN_IN_START_LIMIT.as_secs()
                    ),
                );
                return;
            }
        };
        let browser = strata_host::browser::open(&begun.url);
        self.notice(
            Level::Info,
            format!(
                "sign in to {name}: open {} — {browser} Waiting up to {} s; its tools arrive as additions once it connects (/mcp shows progress).",
                begun.url,
                begun.wait.as_secs()
            ),
        );
        set_sign_in(&handle.sign_ins, name, "waiting for the browser");
        let sign_ins = handle.sign_ins.clone();
        let name = name.to_owned();
        handle.runtime.spawn(async move {
            let progress = match begun.done.await {
                Ok(Ok(())) => "signed in".to_owned(),
                Ok(Err(error)) => format!("sign-in failed: {error}"),
                Err(error) => format!("sign-in failed: {error}"),
            };
            set_sign_in(&sign_ins, &name, &progress);
        });
    }

    /// Signs out of `name`: revokes its tokens at the authorization server (bounded by a
    /// short timeout), deletes the token file whatever the outcome (with `forget_client`
    /// the stored client secret too), and reconnects it, which withdraws its tools; what
    /// happened and the cost are said.
    fn mcp_logout(&mut self, handle: &McpHandle, name: &str, forget_client: bool) {
        let Some(config) = handle.manager.server_config(name) else {
            self.notice(Level::Error, format!("no MCP server {name}"));
            return;
        };
        let report = match handle
            .runtime
            .block_on(strata_mcp::auth::log_out(&config, forget_client))
        {
            Ok(report) => report,
            Err(error) => {
                self.notice(Level::Error, error);
                return;
            }
        };
        if !report.removed_tokens {
            // Worded as `strata mcp logout` words it, the "nothing to forget" case included.
            self.notice(
                Level::Info,
                format!("no stored sign-in for {name}{}", report.client_sentence()),
            );
            return;
        }
        let cost = self.mcp_toggle_cost(&handle.manager, name, false);
        let level = match report.revocation {
            strata_mcp::auth::Revocation::Failed(_) => Level::Warning,
            _ => Level::Info,
        };
        self.notice(
            level,
            format!(
                "signed out of {name}: {}: {}",
                report.describe(),
                cost.describe()
            ),
        );
        set_sign_in(&handle.sign_ins, name, "signed out");
        let manager = handle.manager.clone();
        let name = name.to_owned();
        handle.runtime.spawn(async move {
            let _ = manager.reconnect(&name).await;
        });
    }

    fn mcp_known(&mut self, manager: &McpManager, name: &str) -> bool {
        let known = manager.status().iter().any(|s| s.name == name);
        if !known {
            self.notice(Level::Error, format!("no MCP server {name}"));
        }
        known
    }

    fn mcp_list(&mut self, handle: &McpHandle) {
        let manager = &handle.manager;
        let sign_ins = handle
            .sign_ins
            .lock()
            .map(|map| map.clone())
            .unwrap_or_default();
        let mut lines = Vec::new();
        let mut status = manager.status();
        // Servers that need attention first.
        status.sort_by_key(|s| matches!(s.state, ServerState::Connected | ServerState::Disabled));
        if status.is_empty() {
            lines.push(
                "no MCP servers configured (strata mcp add, .mcp.json, .pi/mcp.json)".to_owned(),
            );
        }
        for server in &status {
            lines.push(format!(
                "{}  {}  {} tools  {}  {}",
                server.name,
                server.state.label(),
                server.tools.len(),
                server.exposure,
                server.source
            ));
            if let ServerState::Failed { error } | ServerState::AuthRequired { error } =
                &server.state
            {
                lines.extend(error.lines().map(|line| format!("  ! {line}")));
            }
            if let Some(progress) = sign_ins.get(&server.name) {
                lines.push(format!("  sign-in: {progress}"));
            }
            if matches!(server.state, ServerState::AuthRequired { .. }) {
                lines.push(format!("  sign in: /mcp login {}", server.name));
            }
            lines.push(format!("  {}", server.exposure_note));
            if !server.withdrawn.is_empty() {
                lines.push(format!("  withdrawn: {}", server.withdrawn.join(", ")));
            }
        }
        lines.push(USAGE.to_owned());
        self.items.push(Item::Block {
            title: "MCP servers".into(),
            lines,
        });
    }

    fn mcp_tools(&mut self, manager: &McpManager, name: &str) {
        let Some(server) = manager.status().into_iter().find(|s| s.name == name) else {
            self.notice(Level::Error, format!("no MCP server {name}"));
            return;
        };
        let mut lines: Vec<String> = server
            .tools
            .iter()
            .map(|tool| {
                let description = manager
                    .resolve(tool)
                    .map(|t| {
                        t.description()
                            .lines()
                            .next()
                            .unwrap_or_default()
                            .to_owned()
                    })
                    .unwrap_or_default();
                format!("{tool}  {description}")
            })
            .collect();
        if lines.is_empty() {
            lines.push(format!("no tools ({})", server.state.label()));
        }
        self.items.push(Item::Block {
            title: format!("tools of {name}"),
            lines,
        });
    }

    /// What enabling or disabling the server's tools costs the next request (signing out
    /// costs what disabling does).
    fn mcp_toggle_cost(
        &self,
        manager: &McpManager,
        name: &str,
        enable: bool,
    ) -> stats::ToolChangeCost {
        let tools = manager.tools_of(name);
        let live: Vec<String> = manager
            .status()
            .into_iter()
            .find(|s| s.name == name)
            .map(|s| s.tools)
            .unwrap_or_default();
        if enable {
            let added: Vec<(String, u64)> = tools
                .iter()
                .filter(|tool| !live.contains(tool))
                .map(|tool| {
                    let tokens = manager
                        .resolve(tool)
                        .map(|t| {
                            serde_json::to_string(&t.definition()).map_or(0, |s| s.len() as u64 / 4)
                        })
                        .unwrap_or(0);
                    (tool.clone(), tokens)
                })
                .collect();
            stats::tool_change_cost(&self.cost_basis(), &added, &[])
        } else {
            stats::tool_change_cost(&self.cost_basis(), &[], &live)
        }
    }
}

fn set_sign_in(sign_ins: &Mutex<BTreeMap<String, String>>, name: &str, progress: &str) {
    if let Ok(mut map) = sign_ins.lock() {
        map.insert(name.to_owned(), progress.to_owned());
    }
}

#[cfg(test)]
mod tests {
    use std::time::Instant;

    use ratatui::crossterm::event::KeyCode;
    use strata_mcp::config::{Exposure, Source, SourceKind};
    use strata_mcp::{ServerConfig, ServerSpec, Transport};

    use super::super::super::testing::{app, key, type_text};
    use super::*;

    fn missing_server() -> ServerConfig {
        ServerConfig {
            name: "broken".into(),
            transport: Transport::Stdio {
                command: "/nonexistent/strata-test-mcp".into(),
                args: Vec::new(),
                env: Default::default(),
                cwd: None,
            },
            enabled: true,
            timeout: std::time::Duration::from_secs(5),
            allow_tools: Vec::new(),
            deny_tools: Vec::new(),
            exposure: Exposure::Direct,
            description: None,
            source: Source {
                kind: SourceKind::ClaudeProject,
                path: Some("/p/.mcp.json".into()),
            },
            spec: ServerSpec::default(),
            token_dir: None,
        }
    }

    fn run(app: &mut App, text: &str) {
        type_text(app, text);
        app.on_key(key(KeyCode::Enter), Instant::now());
    }

    /// An app whose `/mcp` reaches `manager`, once its servers are up or failed.
    fn app_on(manager: McpManager, runtime: &tokio::runtime::Runtime) -> App {
        runtime.block_on(manager.wait_ready());
        let mut app = app();
        app.set_mcp(McpHandle {
            manager,
            runtime: runtime.handle().clone(),
            sign_ins: Default::default(),
        });
        app
    }

    fn last_block(app: &App) -> Vec<String> {
        app.items
            .iter()
            .rev()
            .find_map(|item| match item {
                Item::Block { lines, .. } => Some(lines.clone()),
                _ => None,
            })
            .unwrap_or_default()
    }

    #[test]
    fn mcp_lists_a_failed_server_with_its_error_and_source() {
        let runtime = tokio::runtime::Runtime::new().unwrap();
        let manager = McpManager::new(vec![missing_server()], std::time::Duration::from_secs(5));
        let mut app = app_on(manager, &runtime);
        run(&mut app, "/mcp");
        let lines = last_block(&app);
        assert!(
            lines[0].starts_with("broken  failed  0 tools  direct  /p/.mcp.json"),
            "{lines:?}"
        );
        assert!(lines[1].contains("cannot start"), "{lines:?}");
        assert_eq!(lines[2], "  direct: declared in every request", "{lines:?}");
        run(&mut app, "/mcp frobnicate broken");
        assert!(matches!(
            app.items.last(),
            Some(Item::Notice(notice)) if notice.text.starts_with("usage: /mcp")
        ));
        run(&mut app, "/mcp disable nosuch");
        assert!(matches!(
            app.items.last(),
            Some(Item::Notice(notice)) if notice.text == "no MCP server nosuch"
        ));
        // Disabling a server without live tools costs nothing, and says so first.
        run(&mut app, "/mcp disable broken");
        assert!(matches!(
            app.items.last(),
            Some(Item::Notice(notice)) if notice.text == "mcp disable broken: no change"
        ));
    }

    fn http_server(name: &str, url: String, token_dir: &std::path::Path) -> ServerConfig {
        let mut server = missing_server();
        server.name = name.into();
        server.transport = Transport::Http {
            url,
            headers: Default::default(),
        };
        server.token_dir = Some(token_dir.to_owned());
        server
    }

    fn last_notice(app: &App) -> String {
        app.items
            .iter()
            .rev()
            .find_map(|item| match item {
                Item::Notice(notice) => Some(notice.text.clone()),
                _ => None,
            })
            .unwrap_or_default()
    }

    #[test]
    fn a_server_needing_sign_in_is_offered_it_and_the_wrong_kind_is_refused() {
        let runtime = tokio::runtime::Runtime::new().unwrap();
        // An endpoint answering every request with 401 and a bearer challenge.
        let listener = runtime
            .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
            .unwrap();
        let port = listener.local_addr().unwrap().port();
        runtime.spawn(async move {
            while let Ok((mut stream, _)) = listener.accept().await {
                use tokio::io::{AsyncReadExt, AsyncWriteExt};
                let mut buffer = [0u8; 4096];
                let _ = stream.read(&mut buffer).await;
                let _ = stream
                    .write_all(b"HTTP/1.1 401 Unauthorized\r\nWWW-Authenticate: Bearer\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
                    .await;
            }
        });
        let tokens = tempfile::tempdir().unwrap();
        let manager = McpManager::new(
            vec![
                http_server(
                    "locked",
                    format!("http://127.0.0.1:{port}/mcp"),
                    tokens.path(),
                ),
                missing_server(),
            ],
            std::time::Duration::from_secs(5),
        );
        let mut app = app_on(manager, &runtime);
        run(&mut app, "/mcp");
        let lines = last_block(&app);
        let locked = lines
            .iter()
            .position(|l| l.starts_with("locked  needs sign-in"))
            .unwrap();
        assert!(
            lines[locked + 1].contains("requires authorization"),
            "{lines:?}"
        );
        assert_eq!(
            lines[locked + 2],
            "  sign in: /mcp login locked",
            "{lines:?}"
        );
        run(&mut app, "/mcp login broken");
        assert!(
            last_notice(&app).contains("only streamable HTTP servers sign in"),
            "{}",
            last_notice(&app)
        );
        run(&mut app, "/mcp logout locked");
        assert_eq!(last_notice(&app), "no stored sign-in for locked");
        run(&mut app, "/mcp logout locked --forget-client");
        assert_eq!(
            last_notice(&app),
            "no stored sign-in for locked; no stored client secret to forget"
        );
        run(&mut app, "/mcp login nosuch");
        assert_eq!(last_notice(&app), "no MCP server nosuch");
    }

    #[test]
    fn login_shows_the_url_and_the_tools_arrive_after_the_browser_returns() {
        let python = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../.mcp-deps/venv/bin/python");
        if !python.exists() {
            eprintln!(
                "SKIPPED: the Python MCP SDK is not installed ({} missing); run .ci/install-mcp",
                python.display()
            );
            return;
        }
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let mut fixture = std::process::Command::new(&python)
            .arg(
                std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                    .join("../strata-mcp/tests/fixtures/auth_server.py"),
            )
            .arg(port.to_string())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        for _ in 0..150 {
            if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        let runtime = tokio::runtime::Runtime::new().unwrap();
        let tokens = tempfile::tempdir().unwrap();
        let manager = McpManager::new(
            vec![http_server(
                "docs",
                format!("http://127.0.0.1:{port}/mcp"),
                tokens.path(),
            )],
            std::time::Duration::from_secs(30),
        );
        runtime.block_on(manager.wait_ready());
        let mut app = app();
        let sign_ins: Arc<Mutex<BTreeMap<String, String>>> = Default::default();
        app.set_mcp(McpHandle {
            manager: manager.clone(),
            runtime: runtime.handle().clone(),
            sign_ins: sign_ins.clone(),
        });
        run(&mut app, "/mcp login docs");
        let notice = last_notice(&app);
        let url = notice
            .split_once(" open ")
            .and_then(|(_, rest)| rest.split_once(" — "))
            .map(|(url, _)| url.to_owned())
            .unwrap_or_else(|| panic!("no URL in {notice}"));
        assert!(url.contains("code_challenge_method=S256"), "{url}");
        // The user's browser: follows the approval's redirect back to strata.
        let page = std::process::Command::new(&python)
            .args([
                "-c",
                "import sys, urllib.request; print(urllib.request.urlopen(sys.argv[1]).read().decode())",
                &url,
            ])
            .output()
            .unwrap();
        let page = String::from_utf8_lossy(&page.stdout);
        assert!(page.contains("signed in"), "{page}");
        let mut signed_in = false;
        for _ in 0..100 {
            if sign_ins.lock().unwrap().get("docs").map(String::as_str) == Some("signed in") {
                signed_in = true;
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        assert!(signed_in, "{:?}", sign_ins.lock().unwrap());
        assert_eq!(manager.status()[0].state, ServerState::Connected);
        assert_eq!(manager.tools().len(), 4);
        run(&mut app, "/mcp");
        assert!(
            last_block(&app).iter().any(|l| l == "  sign-in: signed in"),
            "{:?}",
            last_block(&app)
        );
        run(&mut app, "/mcp logout docs");
        let notice = last_notice(&app);
        assert!(
            notice.starts_with(&format!(
                "signed out of docs: tokens revoked at http://127.0.0.1:{port}/revoke (removed "
            )),
            "{notice}"
        );
        runtime.block_on(manager.shutdown());
        let _ = fixture.kill();
        let _ = fixture.wait();
    }
}
