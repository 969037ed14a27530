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

    /// Revokes the server's tokens where the authorization server offers it, removes the
    /// token file and reconnects the server; answers (once the revocation is done, at most
    /// [`strata_mcp::auth::revoke::REVOCATION_TIMEOUT`]) with what happened and the tools the
    /// reconnect withdraws (said at the end, the tools array keeps them).
    pub(crate) fn mcp_logout(&mut self, server: Option<&str>, forget_client: bool, id: Id) {
        let kind = "mcp_logout";
        let (server, manager) = match self.known_server(kind, server) {
            Ok(known) => known,
            Err(error) => return self.out.send(&failure(&id, kind, error)),
        };
        let Some(config) = manager.server_config(&server) else {
            return self
                .out
                .send(&failure(&id, kind, format!("no MCP server \"{server}\"")));
        };
        let out = self.out.clone();
        tokio::spawn(async move {
            let report = match strata_mcp::auth::log_out(&config, forget_client).await {
                Ok(report) => report,
                Err(error) => return out.send(&failure(&id, kind, error)),
            };
            let removed = report.removed_tokens;
            let tools = if removed {
                manager.tools_of(&server)
            } else {
                Vec::new()
            };
            out.send(&success(
                &id,
                kind,
                Some(json!({
                    "removed": removed,
                    "tokenFile": report.token_file.display().to_string(),
                    "revocation": report.revocation_sentence(),
                    "tools": tools,
                    "effect": if removed { "tools withdrawn; the removal is said at the end, the tools array keeps them" } else { "no stored sign-in: nothing changes" },
                })),
            ));
            if removed {
                let _ = manager.reconnect(&server).await;
            }
        });
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
