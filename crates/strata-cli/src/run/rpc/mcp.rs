//! rpc commands for MCP servers (strata's own; Pi's protocol has none): `get_mcp_servers`,
//! `mcp_reconnect {server}`, `mcp_set_enabled {server, enabled}`. Changes start at once and
//! reach the tool set at the next prompt; `get_mcp_servers` shows their progress.

use serde_json::{Value, json};

use super::Server;

impl Server {
    pub(super) fn mcp(&mut self, kind: &str, command: &Value) -> Result<Option<Value>, String> {
        let manager = self.setup.mcp_manager();
        if kind == "get_mcp_servers" {
            return Ok(Some(json!({"servers": manager.status()})));
        }
        let server = command
            .get("server")
            .and_then(Value::as_str)
            .ok_or_else(|| format!("{kind} needs a string field `server`"))?
            .to_owned();
        if !manager.status().iter().any(|s| s.name == server) {
            return Err(format!("no MCP server \"{server}\""));
        }
        match kind {
            "mcp_reconnect" => {
                tokio::spawn(async move {
                    let _ = manager.reconnect(&server).await;
                });
            }
            _ => {
                let enabled = command
                    .get("enabled")
                    .and_then(Value::as_bool)
                    .ok_or_else(|| format!("{kind} needs a boolean field `enabled`"))?;
                let tools = manager.tools_of(&server);
                tokio::spawn(async move {
                    let _ = manager.set_enabled(&server, enabled).await;
                });
                // What the change does to the tool set, said before it lands.
                return Ok(Some(json!({
                    "tools": tools,
                    "effect": if enabled { "tools added at the end (tool_addition where the provider has it)" } else { "tools withdrawn; the removal is said at the end, the tools array keeps them" },
                })));
            }
        }
        Ok(None)
    }
}
