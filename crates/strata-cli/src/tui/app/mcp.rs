//! `/mcp`: the session's MCP servers — status, tools, reconnect, enable and disable (with
//! what the change costs said first, as `/tools` does).

use strata_mcp::{McpManager, ServerState};
use strata_tools::ToolSource as _;

use super::{App, Item, Level};
use crate::tui::stats;

/// The manager and the runtime its reconnects run on.
#[derive(Debug, Clone)]
pub struct McpHandle {
    /// The session's servers.
    pub manager: McpManager,
    /// Where reconnects and enable/disable run.
    pub runtime: tokio::runtime::Handle,
}

const USAGE: &str = "/mcp [tools NAME | reconnect NAME | enable NAME | disable NAME]";

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
            [] => self.mcp_list(&handle.manager),
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
            _ => self.notice(Level::Error, format!("usage: {USAGE}")),
        }
    }

    fn mcp_known(&mut self, manager: &McpManager, name: &str) -> bool {
        let known = manager.status().iter().any(|s| s.name == name);
        if !known {
            self.notice(Level::Error, format!("no MCP server {name}"));
        }
        known
    }

    fn mcp_list(&mut self, manager: &McpManager) {
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

    /// What enabling or disabling the server's tools costs the next request.
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
        }
    }

    fn run(app: &mut App, text: &str) {
        type_text(app, text);
        app.on_key(key(KeyCode::Enter), Instant::now());
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
        runtime.block_on(manager.wait_ready());
        let mut app = app();
        app.set_mcp(McpHandle {
            manager,
            runtime: runtime.handle().clone(),
        });
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
}
