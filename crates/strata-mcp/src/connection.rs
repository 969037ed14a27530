//! One live connection to a server over the official SDK: connect, list tools, call a tool,
//! and hear `notifications/tools/list_changed`.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{CallToolRequestParams, ClientCapabilities, ClientConfig, Implementation};
use rmcp::service::{NotificationContext, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use serde_json::{Map, Value};
use tokio::io::AsyncBufReadExt;
use tokio::sync::mpsc::UnboundedSender;

use crate::catalog::ListedTool;
use crate::config::{ServerConfig, Transport};
use crate::stdio::ChildTransport;

/// The least time a server gets to start and answer the handshake (npx and Python servers
/// take seconds to load), whatever its per-request timeout.
pub const MIN_CONNECT_TIMEOUT: Duration = Duration::from_secs(30);

/// Lines of a stdio server's stderr kept for error reports.
const STDERR_TAIL_LINES: usize = 20;

/// Why connecting or calling failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConnectError {
    /// The server answered 401: it wants OAuth sign-in (or a token in `headers`).
    #[error(
        "the server requires authorization{}: sign in with `strata mcp login {server}` (in the TUI `/mcp login {server}`){}",
        challenge.as_deref().map(|c| format!(" ({c})")).unwrap_or_default(),
        note.as_deref().map(|n| format!("; {n}")).unwrap_or_default()
    )]
    AuthRequired {
        /// The server's name.
        server: String,
        /// The `WWW-Authenticate` challenge, when sent.
        challenge: Option<String>,
        /// Why stored tokens were not used (a torn token file, a failed refresh), if so.
        note: Option<String>,
    },
    /// Anything else: spawn failure, handshake failure, closed transport, timeout.
    #[error("{0}")]
    Failed(String),
}

/// Receives the notifications strata acts on.
#[derive(Clone)]
struct Handler {
    tools_changed: UnboundedSender<()>,
}

impl ClientHandler for Handler {
    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        let _ = self.tools_changed.send(());
    }

    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("strata", env!("CARGO_PKG_VERSION")),
        )
    }
}

/// A `tools/list` result (every page) and how long it may be reused.
#[derive(Debug, Clone, PartialEq)]
pub struct Listing {
    /// The tools, in the server's order.
    pub tools: Vec<ListedTool>,
    /// `ttlMs`: how long the listing is fresh after it arrived (zero when the server sent
    /// none, which the spec reads as stale at once).
    pub fresh_for: Duration,
    /// `cacheScope: "private"`: reusable only in the authorization context that listed it.
    pub private: bool,
}

/// A connected server.
pub struct Connection {
    service: tokio::sync::Mutex<Option<RunningService<RoleClient, Handler>>>,
    peer: rmcp::Peer<RoleClient>,
    /// The server's `instructions`, when it gave any.
    pub instructions: Option<String>,
    /// A stdio server's process group, guarded like the tools' (it dies with strata, SIGKILL
    /// included: `strata_tools::processes`).
    group: Option<i32>,
    /// The server's name, for errors that tell the user what to run.
    server: String,
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connection").finish_non_exhaustive()
    }
}

/// The last lines a stdio server wrote to stderr.
pub type StderrTail = Arc<Mutex<VecDeque<String>>>;

impl Connection {
    /// Starts the server (stdio) or opens the session (HTTP) and completes the handshake
    /// within `config.timeout` (at least [`MIN_CONNECT_TIMEOUT`]). `tools_changed` hears each `tools/list_changed`.
    pub async fn connect(
        config: &ServerConfig,
        tools_changed: UnboundedSender<()>,
        stderr_tail: StderrTail,
    ) -> Result<Self, ConnectError> {
        let handler = Handler { tools_changed };
        let connect_timeout = config.timeout.max(MIN_CONNECT_TIMEOUT);
        let mut group = None;
        let served = match &config.transport {
            Transport::Stdio {
                command,
                args,
                env,
                cwd,
            } => {
                let mut cmd = tokio::process::Command::new(command);
                cmd.args(args).envs(env);
                if let Some(cwd) = cwd {
                    cmd.current_dir(cwd);
                }
                let mut wrapped = process_wrap::tokio::CommandWrap::from(cmd);
                #[cfg(unix)]
                wrapped.wrap(process_wrap::tokio::ProcessGroup::leader());
                // strata's own transport, so an answer over the line limit fails its call
                // at once (`stdio`).
                let (transport, stderr) =
                    ChildTransport::spawn(wrapped, &config.name).map_err(|error| {
                        ConnectError::Failed(format!("cannot start {command}: {error}"))
                    })?;
                if let Some(stderr) = stderr {
                    tokio::spawn(keep_tail(stderr, stderr_tail));
                }
                // The child leads its own group, so its pid is the group's id.
                group = transport.id().and_then(|id| i32::try_from(id).ok());
                if let Some(pgid) = group {
                    strata_tools::processes::register_group(pgid);
                }
                tokio::time::timeout(connect_timeout, handler.serve(transport))
                    .await
                    .map_err(|_| timed_out(connect_timeout))?
                    .map_err(|error| initialize_error(&config.name, &error, None))?
            }
            Transport::Http { url, headers } => {
                let mut custom = std::collections::HashMap::new();
                for (name, value) in headers {
                    let name = reqwest_header_name(name)?;
                    let value = rmcp_header_value(value)?;
                    custom.insert(name, value);
                }
                let transport_config = StreamableHttpClientTransportConfig::with_uri(url.as_str())
                    .custom_headers(custom);
                let tokens = config.token_file();
                let authorized = match (&tokens, crate::auth::Confidential::of(config)) {
                    (Some(tokens), Ok(confidential)) => tokio::time::timeout(
                        connect_timeout,
                        crate::auth::authorized_client(url, tokens, confidential.as_ref()),
                    )
                    .await
                    .map_err(|_| timed_out(connect_timeout))?,
                    (Some(_), Err(error)) => Err(error),
                    (None, _) => Ok(None),
                };
                // Stored tokens that cannot be used are said with the 401 they lead to.
                let mut note = tokens.as_ref().and_then(crate::auth::TokenFile::problem);
                let served = match authorized {
                    Ok(Some(client)) => {
                        let transport =
                            StreamableHttpClientTransport::with_client(client, transport_config);
                        tokio::time::timeout(connect_timeout, handler.serve(transport)).await
                    }
                    unusable => {
                        if let Err(error) = unusable {
                            note = Some(error);
                        }
                        let transport =
                            StreamableHttpClientTransport::from_config(transport_config);
                        tokio::time::timeout(connect_timeout, handler.serve(transport)).await
                    }
                };
                served
                    .map_err(|_| timed_out(connect_timeout))?
                    .map_err(|error| initialize_error(&config.name, &error, note))?
            }
        };
        let peer = served.peer().clone();
        let instructions = served
            .peer_info()
            .and_then(|info| serde_json::to_value(&*info).ok())
            .and_then(|info| info.get("instructions")?.as_str().map(str::to_owned));
        Ok(Self {
            service: tokio::sync::Mutex::new(Some(served)),
            peer,
            instructions,
            group,
            server: config.name.clone(),
        })
    }

    /// Every tool the server lists now (all pages), in its order, with the result's
    /// freshness hint (MCP 2026-07-28, SEP-2549).
    pub async fn list_tools(&self, timeout: Duration) -> Result<Listing, ConnectError> {
        let merged = tokio::time::timeout(timeout, self.peer.list_all_tools_with_cache_hint())
            .await
            .map_err(|_| timed_out(timeout))?
            .map_err(|error| service_error(&self.server, &error))?;
        let tools = merged
            .items
            .iter()
            .filter_map(|tool| serde_json::to_value(tool).ok())
            .filter_map(|tool| ListedTool::from_json(&tool))
            .collect();
        Ok(Listing {
            tools,
            // An absent `ttlMs` is 0: stale at once.
            fresh_for: Duration::from_millis(merged.ttl_ms.unwrap_or(0)),
            private: merged.cache_scope == Some(rmcp::model::CacheScope::Private),
        })
    }

    /// Calls `tool` with `arguments`; the `CallToolResult` as JSON. Dropping the future
    /// (abort, timeout) sends `notifications/cancelled`.
    pub async fn call_tool(&self, tool: &str, arguments: Value) -> Result<Value, ConnectError> {
        let mut params = CallToolRequestParams::new(tool.to_owned());
        params.arguments = match arguments {
            Value::Object(map) => Some(map),
            Value::Null => Some(Map::new()),
            other => {
                return Err(ConnectError::Failed(format!(
                    "arguments must be a JSON object, not {other}"
                )));
            }
        };
        let result = self
            .peer
            .call_tool(params)
            .await
            .map_err(|error| service_error(&self.server, &error))?;
        serde_json::to_value(&result).map_err(|error| ConnectError::Failed(error.to_string()))
    }

    /// Whether the transport has closed (the process exited, the session ended).
    pub fn is_closed(&self) -> bool {
        self.peer.is_transport_closed()
    }

    /// Closes the session and stops a stdio server (its whole process group).
    pub async fn close(&self) {
        if let Some(mut service) = self.service.lock().await.take() {
            let _ = service.close_with_timeout(Duration::from_secs(3)).await;
        }
        if let Some(pgid) = self.group {
            strata_tools::processes::forget_group_if_gone(pgid);
        }
    }
}

fn timed_out(timeout: Duration) -> ConnectError {
    ConnectError::Failed(format!("no answer within {} s", timeout.as_secs_f64()))
}

fn initialize_error(
    server: &str,
    error: &rmcp::service::ClientInitializeError,
    note: Option<String>,
) -> ConnectError {
    if error.is_authorization_required() {
        return ConnectError::AuthRequired {
            server: server.to_owned(),
            challenge: error.auth_challenge().map(str::to_owned),
            note,
        };
    }
    let text = error.to_string();
    ConnectError::Failed(crate::auth::client_rejection(server, &text).unwrap_or(text))
}

fn service_error(server: &str, error: &rmcp::ServiceError) -> ConnectError {
    if let Some(challenge) = error.auth_challenge() {
        return ConnectError::AuthRequired {
            server: server.to_owned(),
            challenge: Some(challenge.to_owned()),
            note: None,
        };
    }
    match error {
        rmcp::ServiceError::McpError(data) => {
            ConnectError::Failed(match crate::stdio::oversized(data) {
                Some(message) => message,
                None => format!(
                    "the server answered with error {}: {}",
                    data.code.0, data.message
                ),
            })
        }
        other => {
            let text = other.to_string();
            ConnectError::Failed(crate::auth::client_rejection(server, &text).unwrap_or(text))
        }
    }
}

fn reqwest_header_name(name: &str) -> Result<http::HeaderName, ConnectError> {
    http::HeaderName::from_bytes(name.as_bytes())
        .map_err(|_| ConnectError::Failed(format!("invalid header name \"{name}\"")))
}

fn rmcp_header_value(value: &str) -> Result<http::HeaderValue, ConnectError> {
    http::HeaderValue::from_str(value).map_err(|_| {
        ConnectError::Failed("a header value holds characters HTTP does not allow".into())
    })
}

async fn keep_tail(stderr: tokio::process::ChildStderr, tail: StderrTail) {
    let mut lines = tokio::io::BufReader::new(stderr).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        if let Ok(mut tail) = tail.lock() {
            if tail.len() == STDERR_TAIL_LINES {
                tail.pop_front();
            }
            tail.push_back(line);
        }
    }
}
