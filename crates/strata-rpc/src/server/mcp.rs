//! rpc commands for MCP servers (strata's own; Pi's protocol has none): `get_mcp_servers`,
//! `mcp_reconnect {server}`, `mcp_set_enabled {server, enabled}`, `mcp_login {server}`,
//! `mcp_logout {server}`.
//! Changes start at once and reach the tool set at the next prompt; `get_mcp_servers` shows
//! their progress.

use serde_json::{Value, json};
use strata_mcp::McpManager;

use super::{Host, Server};
use crate::protocol::{Id, failure, success};

/// How long an rpc sign-in waits for the browser.
const SIGN_IN_WAIT: std::time::Duration = std::time::Duration::from_secs(300);

impl<H: Host> Server<H> {
    pub(crate) fn mcp_servers(&self) -> Value {
        let servers = self.options.mcp.as_ref().map(McpManager::status);
        json!({"servers": servers.unwrap_or_default()})
    }

    fn known_server(
        &self,
        kind: &str,
        server: Option<&str>,
    ) -> Result<(String, McpManager), String> {
        let server = server.ok_or_else(|| format!("{kind} needs a string field `server`"))?;
        match &self.options.mcp {
            Some(manager) if manager.status().iter().any(|s| s.name == server) => {
                Ok((server.to_owned(), manager.clone()))
            }
            _ => Err(format!("no MCP server \"{server}\"")),
        }
    }

    pub(crate) fn mcp_reconnect(&mut self, server: Option<&str>) -> Result<Option<Value>, String> {
        let (server, manager) = self.known_server("mcp_reconnect", server)?;
        tokio::spawn(async move {
            let _ = manager.reconnect(&server).await;
        });
        Ok(None)
    }

    pub(crate) fn mcp_set_enabled(
        &mut self,
        server: Option<&str>,
        enabled: Option<bool>,
    ) -> Result<Option<Value>, String> {
        let kind = "mcp_set_enabled";
        let (server, manager) = self.known_server(kind, server)?;
        let enabled = enabled.ok_or_else(|| format!("{kind} needs a boolean field `enabled`"))?;
        let tools = manager.tools_of(&server);
        tokio::spawn(async move {
            let _ = manager.set_enabled(&server, enabled).await;
        });
        // What the change does to the tool set, said before it lands.
        Ok(Some(json!({
            "tools": tools,
            "effect": if enabled { "tools added at the end (tool_addition where the provider has it)" } else { "tools withdrawn; the removal is said at the end, the tools array keeps them" },
        })))
    }

    /// Removes the server's token file and reconnects it; answers with what was removed and
    /// the tools the reconnect withdraws (said at the end, the tools array keeps them).
    pub(crate) fn mcp_logout(&mut self, server: Option<&str>) -> Result<Option<Value>, String> {
        let (server, manager) = self.known_server("mcp_logout", server)?;
        let tokens = manager
            .server_config(&server)
            .and_then(|config| config.token_file())
            .ok_or_else(|| {
                format!(
                    "MCP server \"{server}\" has no sign-in (only streamable HTTP servers sign in)"
                )
            })?;
        let removed = tokens
            .remove()
            .map_err(|error| format!("cannot remove {}: {error}", tokens.path().display()))?;
        let tools = if removed {
            manager.tools_of(&server)
        } else {
            Vec::new()
        };
        if removed {
            tokio::spawn(async move {
                let _ = manager.reconnect(&server).await;
            });
        }
        Ok(Some(json!({
            "removed": removed,
            "tokenFile": tokens.path().display().to_string(),
            "tools": tools,
            "effect": if removed { "tools withdrawn; the removal is said at the end, the tools array keeps them" } else { "no stored sign-in: nothing changes" },
        })))
    }

    /// Answers with the authorization URL for the client to show or open (strata opens no
    /// browser here); the wait for the browser and the reconnect run in the background.
    pub(crate) fn mcp_login(&mut self, server: Option<&str>, id: Id) {
        let kind = "mcp_login";
        let (server, manager) = match self.known_server(kind, server) {
            Ok(known) => known,
            Err(error) => return self.out.send(&failure(&id, kind, error)),
        };
        let out = self.out.clone();
        tokio::spawn(async move {
            match strata_mcp::auth::begin_sign_in(&manager, &server, SIGN_IN_WAIT).await {
                Ok(begun) => out.send(&success(
                    &id,
                    kind,
                    Some(json!({
                        "authorizationUrl": begun.url,
                        "waitSeconds": begun.wait.as_secs(),
                    })),
                )),
                Err(error) => out.send(&failure(&id, kind, error)),
            }
        });
    }
}
