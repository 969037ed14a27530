//! The session's MCP servers under the user's control: list, reconnect, enable or disable,
//! sign in and out. One implementation the views map their commands to (rpc's `mcp_*`); a
//! change starts at once and reaches the tool set at the next request.

use std::time::Duration;

use strata_mcp::auth::{self, BegunSignIn, LogoutReport};
use strata_mcp::{McpManager, ServerStatus};

/// Why a control command was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum McpControlError {
    /// No server of that name is configured for the session.
    #[error("no MCP server \"{0}\"")]
    Unknown(String),
    /// Signing in or out failed (the server has no sign-in, the browser flow broke …).
    #[error("{0}")]
    Auth(String),
}

/// A signing out's outcome.
#[derive(Debug)]
pub struct LoggedOut {
    /// What was revoked and removed.
    pub report: LogoutReport,
    /// The tools the reconnect withdraws (none when no sign-in was stored).
    pub withdrawn: Vec<String>,
}

/// Control over one session's MCP servers (cheap to clone: the manager is shared).
#[derive(Clone)]
pub struct McpControl {
    manager: McpManager,
}

impl std::fmt::Debug for McpControl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpControl").finish_non_exhaustive()
    }
}

impl McpControl {
    /// Control over `manager`'s servers.
    pub fn new(manager: McpManager) -> Self {
        Self { manager }
    }

    /// The manager controlled.
    pub fn manager(&self) -> &McpManager {
        &self.manager
    }

    /// Every server with its state and tools.
    pub fn servers(&self) -> Vec<ServerStatus> {
        self.manager.status()
    }

    fn known(&self, server: &str) -> Result<(), McpControlError> {
        if self.manager.status().iter().any(|s| s.name == server) {
            Ok(())
        } else {
            Err(McpControlError::Unknown(server.to_owned()))
        }
    }

    /// Starts reconnecting `server` in the background.
    pub fn reconnect(&self, server: &str) -> Result<(), McpControlError> {
        self.known(server)?;
        let (manager, server) = (self.manager.clone(), server.to_owned());
        tokio::spawn(async move {
            let _ = manager.reconnect(&server).await;
        });
        Ok(())
    }

    /// Starts enabling or disabling `server` in the background; the tools it adds or
    /// withdraws, as known now.
    pub fn set_enabled(&self, server: &str, enabled: bool) -> Result<Vec<String>, McpControlError> {
        self.known(server)?;
        let tools = self.manager.tools_of(server);
        let (manager, server) = (self.manager.clone(), server.to_owned());
        tokio::spawn(async move {
            let _ = manager.set_enabled(&server, enabled).await;
        });
        Ok(tools)
    }

    /// Revokes `server`'s tokens where its authorization server offers it (waiting at most
    /// [`auth::revoke::REVOCATION_TIMEOUT`]) and removes the token file; when one was
    /// removed, reconnects it in the background.
    pub async fn log_out(
        &self,
        server: &str,
        forget_client: bool,
    ) -> Result<LoggedOut, McpControlError> {
        self.known(server)?;
        let config = self
            .manager
            .server_config(server)
            .ok_or_else(|| McpControlError::Unknown(server.to_owned()))?;
        let report = auth::log_out(&config, forget_client)
            .await
            .map_err(McpControlError::Auth)?;
        let withdrawn = match report.removed_tokens {
            true => self.manager.tools_of(server),
            false => Vec::new(),
        };
        if report.removed_tokens {
            let (manager, server) = (self.manager.clone(), server.to_owned());
            tokio::spawn(async move {
                let _ = manager.reconnect(&server).await;
            });
        }
        Ok(LoggedOut { report, withdrawn })
    }

    /// Begins signing in to `server`: the authorization URL to show; the wait for the browser
    /// (at most `wait`) and the reconnect run in the background.
    pub async fn begin_sign_in(
        &self,
        server: &str,
        wait: Duration,
    ) -> Result<BegunSignIn, McpControlError> {
        self.known(server)?;
        auth::begin_sign_in(&self.manager, server, wait)
            .await
            .map_err(McpControlError::Auth)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stdio(name: &str) -> strata_mcp::ServerConfig {
        strata_mcp::ServerConfig {
            name: name.into(),
            transport: strata_mcp::Transport::Stdio {
                command: "sleep".into(),
                args: vec!["600".into()],
                env: Default::default(),
                cwd: None,
            },
            enabled: true,
            timeout: Duration::from_secs(30),
            allow_tools: Vec::new(),
            deny_tools: Vec::new(),
            exposure: strata_mcp::config::Exposure::Direct,
            description: None,
            source: strata_mcp::Source {
                kind: strata_mcp::SourceKind::Session,
                path: None,
            },
            spec: strata_mcp::ServerSpec::default(),
            token_dir: None,
        }
    }

    #[tokio::test]
    async fn unknown_servers_are_refused_and_a_stdio_server_has_no_sign_in() {
        let manager = McpManager::new(vec![stdio("local")], Duration::from_millis(50));
        let control = McpControl::new(manager.clone());
        let names: Vec<String> = control.servers().into_iter().map(|s| s.name).collect();
        assert_eq!(names, ["local"]);
        let unknown = McpControlError::Unknown("nope".into());
        assert_eq!(control.reconnect("nope"), Err(unknown.clone()));
        assert_eq!(control.set_enabled("nope", false), Err(unknown.clone()));
        assert_eq!(
            control.log_out("nope", false).await.err(),
            Some(unknown.clone())
        );
        assert_eq!(unknown.to_string(), "no MCP server \"nope\"");
        let Err(McpControlError::Auth(why)) = control.log_out("local", false).await else {
            panic!("a stdio server signed out");
        };
        assert!(why.contains("has no sign-in"), "{why}");
        manager.shutdown().await;
    }
}
