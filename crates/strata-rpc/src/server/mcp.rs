//! rpc commands for MCP servers (strata's own; Pi's protocol has none): `get_mcp_servers`,
//! `mcp_reconnect {server}`, `mcp_set_enabled {server, enabled}`, `mcp_login {server}`,
//! `mcp_logout {server}`, mapped onto the host's [`McpControl`].
//! Changes start at once and reach the tool set at the next prompt; `get_mcp_servers` shows
//! their progress.

use serde_json::{Value, json};
use strata_host::mcp::McpControl;

use super::{Host, Server};
use crate::protocol::{Id, failure, success};

/// How long an rpc sign-in waits for the browser.
const SIGN_IN_WAIT: std::time::Duration = std::time::Duration::from_secs(300);

/// What withdrawn tools do to the request, said before it lands.
const WITHDRAWN: &str =
    "tools withdrawn; the removal is said at the end, the tools array keeps them";

impl<H: Host> Server<H> {
    pub(crate) fn mcp_servers(&self) -> Value {
        let servers = self.mcp().map(|control| control.servers());
        json!({"servers": servers.unwrap_or_default()})
    }

    fn mcp(&self) -> Option<McpControl> {
        self.options.mcp.clone().map(McpControl::new)
    }

    /// The control and the `server` field, or the command's error.
    fn mcp_for(&self, kind: &str, server: Option<&str>) -> Result<(McpControl, String), String> {
        let server = server.ok_or_else(|| format!("{kind} needs a string field `server`"))?;
        match self.mcp() {
            Some(control) => Ok((control, server.to_owned())),
            None => Err(format!("no MCP server \"{server}\"")),
        }
    }

    pub(crate) fn mcp_reconnect(&mut self, server: Option<&str>) -> Result<Option<Value>, String> {
        let (control, server) = self.mcp_for("mcp_reconnect", server)?;
        control.reconnect(&server).map_err(|e| e.to_string())?;
        Ok(None)
    }

    pub(crate) fn mcp_set_enabled(
        &mut self,
        server: Option<&str>,
        enabled: Option<bool>,
    ) -> Result<Option<Value>, String> {
        let kind = "mcp_set_enabled";
        let (control, server) = self.mcp_for(kind, server)?;
        let enabled = enabled.ok_or_else(|| format!("{kind} needs a boolean field `enabled`"))?;
        let tools = control
            .set_enabled(&server, enabled)
            .map_err(|e| e.to_string())?;
        Ok(Some(json!({
            "tools": tools,
            "effect": if enabled { "tools added at the end (tool_addition where the provider has it)" } else { WITHDRAWN },
        })))
    }

    /// Answers once the revocation is done with what happened and the tools the reconnect
    /// withdraws.
    pub(crate) fn mcp_logout(&mut self, server: Option<&str>, forget_client: bool, id: Id) {
        let kind = "mcp_logout";
        let (control, server) = match self.mcp_for(kind, server) {
            Ok(found) => found,
            Err(error) => return self.out.send(&failure(&id, kind, error)),
        };
        let out = self.out.clone();
        tokio::spawn(async move {
            let out_of = match control.log_out(&server, forget_client).await {
                Ok(done) => done,
                Err(error) => return out.send(&failure(&id, kind, error.to_string())),
            };
            let removed = out_of.report.removed_tokens;
            out.send(&success(
                &id,
                kind,
                Some(json!({
                    "removed": removed,
                    "tokenFile": out_of.report.token_file.display().to_string(),
                    "revocation": out_of.report.revocation_sentence(),
                    "tools": out_of.withdrawn,
                    "effect": if removed { WITHDRAWN } else { "no stored sign-in: nothing changes" },
                })),
            ));
        });
    }

    /// Answers with the authorization URL for the client to show or open (strata opens no
    /// browser here); the wait for the browser and the reconnect run in the background.
    pub(crate) fn mcp_login(&mut self, server: Option<&str>, id: Id) {
        let kind = "mcp_login";
        let (control, server) = match self.mcp_for(kind, server) {
            Ok(found) => found,
            Err(error) => return self.out.send(&failure(&id, kind, error)),
        };
        let out = self.out.clone();
        tokio::spawn(async move {
            match control.begin_sign_in(&server, SIGN_IN_WAIT).await {
                Ok(begun) => out.send(&success(
                    &id,
                    kind,
                    Some(json!({
                        "authorizationUrl": begun.url,
                        "waitSeconds": begun.wait.as_secs(),
                    })),
                )),
                Err(error) => out.send(&failure(&id, kind, error.to_string())),
            }
        });
    }
}
