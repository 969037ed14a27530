//! Every configured server: connecting in the background, their tools in a stable order,
//! acting on `tools/list_changed`, calls with timeouts and abort, reconnect and enable/disable.
//! A listing is reused by a reconnect while its `ttlMs` lasts (MCP 2026-07-28 cache hints; a
//! private one only for the configuration that listed it); its tools keep their first order.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use async_trait::async_trait;
use serde::Serialize;
use serde_json::Value;
use strata_tools::{ABORTED_MESSAGE, Tool, ToolContext, ToolOutput, ToolSource};
use tokio::sync::watch;
use tokio::time::Instant;

use crate::catalog::{Catalog, Diff, ListedTool};
use crate::config::{Exposure, ServerConfig};
use crate::connection::{ConnectError, Connection, Listing, StderrTail};
use crate::content;
use crate::exposure::{self, Decision, TokenPrices};
use crate::naming;
use crate::search::{self, SearchTool};
use crate::tool::McpTool;

/// How long the first request waits for servers still connecting (Pi waits 10 s).
pub const DEFAULT_STARTUP_WAIT: Duration = Duration::from_secs(10);

/// A server's connection state.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum ServerState {
    /// `enabled = false`: not connected, no tools.
    Disabled,
    /// Starting or reconnecting.
    Connecting,
    /// Connected; its tools are live.
    Connected,
    /// Could not start or connect; retried on the next call or reconnect.
    Failed {
        /// What went wrong (with the tail of a stdio server's stderr).
        error: String,
    },
    /// The server wants authorization.
    AuthRequired {
        /// What it said.
        error: String,
    },
}

impl ServerState {
    /// A short word for lists.
    pub fn label(&self) -> &'static str {
        match self {
            Self::Disabled => "disabled",
            Self::Connecting => "connecting",
            Self::Connected => "connected",
            Self::Failed { .. } => "failed",
            Self::AuthRequired { .. } => "needs sign-in",
        }
    }
}

/// One server as `/mcp`, `strata mcp list` and rpc show it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ServerStatus {
    /// The server's name.
    pub name: String,
    /// Its state.
    #[serde(flatten)]
    pub state: ServerState,
    /// The command line or URL.
    pub target: String,
    /// The file the entry came from.
    pub source: String,
    /// Whether its tools are declared (`direct`) or reached through search (`deferred`).
    pub exposure: &'static str,
    /// How they are reached and, for `auto`, why (the cost rule of [`crate::exposure`]).
    pub exposure_note: String,
    /// Its deferred tools are found by the provider's own tool search (not `mcp_tool_search`).
    pub provider_search: bool,
    /// Model-facing names of its live tools, in declaration order.
    pub tools: Vec<String>,
    /// Tools it withdrew during this session.
    pub withdrawn: Vec<String>,
}

/// A change a server made to the tool set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolChange {
    /// The server.
    pub server: String,
    /// What changed.
    pub diff: Diff,
}

struct Slot {
    config: ServerConfig,
    state: ServerState,
    catalog: Catalog,
    connection: Option<Arc<Connection>>,
    /// Bumped by every connect and disable, so a stale connect attempt drops its result.
    attempt: u64,
    stderr: StderrTail,
    /// `auto` exposure, decided by the first listing and kept, so a server that grows past
    /// the threshold later does not move all its tools.
    auto_decision: Option<Decision>,
    /// The last listing while its `ttlMs` lasts: a reconnect inside it lists nothing.
    fresh: Option<FreshListing>,
}

/// How long the catalog's last listing stays fresh by its server's hint, and the
/// configuration that listed it (the catalog holds the tools).
#[derive(Debug, Clone)]
struct FreshListing {
    until: Instant,
    private: bool,
    listed_with: ServerConfig,
}

impl FreshListing {
    fn new(listing: &Listing, config: &ServerConfig) -> Option<Self> {
        Some(Self {
            until: Instant::now().checked_add(listing.fresh_for)?,
            private: listing.private,
            listed_with: config.clone(),
        })
        .filter(|_| !listing.fresh_for.is_zero())
    }

    /// Whether `config` may reuse it now: inside its lifetime and, for a private listing, in
    /// the context (the server's configuration: command, URL, headers, environment) that
    /// listed it.
    fn serves(&self, config: &ServerConfig) -> bool {
        Instant::now() < self.until && (!self.private || self.listed_with == *config)
    }
}

impl Slot {
    fn deferred(&self) -> bool {
        match self.config.exposure {
            Exposure::Direct => false,
            Exposure::Deferred => true,
            Exposure::Auto => self.auto_decision.is_some_and(|d| d.search),
        }
    }

    /// Declared with `defer_loading` for the provider's tool search, on a row that has it: a
    /// server configured `deferred`, or an `auto` one whose prices chose it. The search's
    /// items are kept in the session and replayed unchanged (`ContentBlock::ProviderItem`).
    fn provider_search(&self, native: bool) -> bool {
        native
            && match self.config.exposure {
                Exposure::Direct => false,
                Exposure::Deferred => true,
                Exposure::Auto => self
                    .auto_decision
                    .is_some_and(|d| d.route == exposure::Route::ProviderSearch),
            }
    }

    /// Reached through `mcp_tool_search` / `mcp_tool_call`.
    fn client_search(&self, native: bool) -> bool {
        self.deferred() && !self.provider_search(native)
    }

    fn exposure_note(&self, native: bool) -> String {
        match self.config.exposure {
            Exposure::Direct => "direct: declared in every request".to_owned(),
            Exposure::Deferred if self.provider_search(native) => {
                "deferred: declared with defer_loading, found with the provider's tool search"
                    .to_owned()
            }
            Exposure::Deferred => "deferred: reached through mcp_tool_search".to_owned(),
            Exposure::Auto => match &self.auto_decision {
                Some(decision) => decision.explain(),
                None => "auto: decided from its first tool listing".to_owned(),
            },
        }
    }
}

pub(crate) struct Inner {
    slots: Mutex<Vec<Slot>>,
    /// Bumped on every change of state or tools.
    generation: watch::Sender<u64>,
    /// Each change of tools, for front ends that report them.
    changes: Mutex<Vec<ToolChange>>,
    /// When [`McpManager::start`] first ran.
    started: Mutex<Option<Instant>>,
    startup_wait: Duration,
    /// The row declares tools with `defer_loading` and has the provider's tool search: a
    /// deferred server's tools are declared deferred instead of behind `mcp_tool_search`.
    native_deferral: std::sync::atomic::AtomicBool,
    /// The session model's prices, for the `auto` exposure rule.
    prices: Mutex<TokenPrices>,
    /// What the row's own tool search shows of a deferred tool, for the same rule.
    searchable: Mutex<exposure::Searchable>,
}

/// The MCP servers of a session; cheap to clone (one shared state).
#[derive(Clone)]
pub struct McpManager {
    pub(crate) inner: Arc<Inner>,
}

impl std::fmt::Debug for McpManager {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.status().iter().map(|s| (&s.name, s.state.label())))
            .finish()
    }
}

impl McpManager {
    /// A manager for `servers` (nothing connects until [`McpManager::start`], or the first
    /// [`McpManager::wait_ready`]); the first request waits at most `startup_wait` from the
    /// start for servers still connecting.
    pub fn new(servers: Vec<ServerConfig>, startup_wait: Duration) -> Self {
        let slots = servers
            .into_iter()
            .map(|config| Slot {
                state: if config.enabled {
                    ServerState::Connecting
                } else {
                    ServerState::Disabled
                },
                config,
                catalog: Catalog::new(),
                connection: None,
                attempt: 0,
                stderr: Arc::new(Mutex::new(VecDeque::new())),
                auto_decision: None,
                fresh: None,
            })
            .collect();
        Self {
            inner: Arc::new(Inner {
                slots: Mutex::new(slots),
                generation: watch::channel(0).0,
                changes: Mutex::new(Vec::new()),
                started: Mutex::new(None),
                startup_wait,
                native_deferral: std::sync::atomic::AtomicBool::new(false),
                prices: Mutex::new(TokenPrices::default()),
                searchable: Mutex::new(exposure::Searchable::default()),
            }),
        }
    }

    fn slots(&self) -> MutexGuard<'_, Vec<Slot>> {
        self.inner
            .slots
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn bump(&self) {
        self.inner.generation.send_modify(|g| *g += 1);
    }

    /// Connects every enabled server in the background; runs once, and only inside a tokio
    /// runtime (outside one it waits for the first [`McpManager::wait_ready`]).
    pub fn start(&self) {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        {
            let mut started = self
                .inner
                .started
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner());
            if started.is_some() {
                return;
            }
            *started = Some(Instant::now());
        }
        let names: Vec<String> = self
            .slots()
            .iter()
            .filter(|slot| slot.config.enabled)
            .map(|slot| slot.config.name.clone())
            .collect();
        for name in names {
            let manager = self.clone();
            runtime.spawn(async move {
                let _ = manager.connect(&name).await;
            });
        }
    }

    /// A receiver that changes on every change of a server's state or tools.
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.inner.generation.subscribe()
    }

    /// The tool changes since the last call (for reporting them once).
    pub fn take_changes(&self) -> Vec<ToolChange> {
        std::mem::take(
            &mut *self
                .inner
                .changes
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner()),
        )
    }

    /// Every server's status, in configuration order.
    pub fn status(&self) -> Vec<ServerStatus> {
        let native = self.native_deferral();
        self.slots()
            .iter()
            .map(|slot| ServerStatus {
                name: slot.config.name.clone(),
                state: slot.state.clone(),
                target: slot.config.target(),
                source: slot.config.source.to_string(),
                exposure: if slot.deferred() {
                    "deferred"
                } else {
                    "direct"
                },
                exposure_note: slot.exposure_note(native),
                provider_search: slot.provider_search(native),
                tools: slot.catalog.live().map(|tool| tool.name.clone()).collect(),
                withdrawn: slot
                    .catalog
                    .all()
                    .iter()
                    .filter(|tool| !tool.live)
                    .map(|tool| tool.name.clone())
                    .collect(),
            })
            .collect()
    }

    /// (Re)connects `server` and lists its tools; a reconnect whose tools are byte-identical
    /// changes nothing.
    pub async fn connect(&self, server: &str) -> Result<(), ConnectError> {
        let (config, attempt, stderr, old, fresh) = {
            let mut slots = self.slots();
            let Some(slot) = slots.iter_mut().find(|slot| slot.config.name == server) else {
                return Err(ConnectError::Failed(format!("no MCP server \"{server}\"")));
            };
            slot.attempt += 1;
            slot.state = ServerState::Connecting;
            if let Ok(mut tail) = slot.stderr.lock() {
                tail.clear();
            }
            (
                slot.config.clone(),
                slot.attempt,
                slot.stderr.clone(),
                slot.connection.take(),
                slot.fresh
                    .clone()
                    .filter(|fresh| fresh.serves(&slot.config)),
            )
        };
        self.bump();
        if let Some(old) = old {
            old.close().await;
        }
        let (changed_tx, mut changed_rx) = tokio::sync::mpsc::unbounded_channel();
        let connected = async {
            let connection = Connection::connect(&config, changed_tx, stderr.clone()).await?;
            // Inside the last listing's `ttlMs` the server said it stays as it was.
            let listing = match fresh {
                Some(_) => None,
                None => Some(connection.list_tools(config.timeout).await?),
            };
            Ok::<_, ConnectError>((connection, listing))
        }
        .await;
        let (connection, listing) = match connected {
            Ok(pair) => pair,
            Err(error) => {
                let state = match &error {
                    ConnectError::AuthRequired { .. } => ServerState::AuthRequired {
                        error: error.to_string(),
                    },
                    ConnectError::Failed(message) => ServerState::Failed {
                        error: with_stderr(message, &stderr),
                    },
                };
                tracing::warn!(server, %error, "MCP server did not connect");
                self.set_state_if(server, attempt, state);
                return Err(error);
            }
        };
        let connection = Arc::new(connection);
        let current = {
            let mut slots = self.slots();
            match slots
                .iter_mut()
                .find(|slot| slot.config.name == server && slot.attempt == attempt)
            {
                Some(slot) => {
                    slot.connection = Some(connection.clone());
                    slot.state = ServerState::Connected;
                    if let Some(listing) = &listing {
                        slot.fresh = FreshListing::new(listing, &config);
                    }
                    true
                }
                None => false,
            }
        };
        if !current {
            // A later connect or a disable overtook this one.
            connection.close().await;
            return Ok(());
        }
        // A reused listing is what the catalog already holds: nothing to apply.
        if let Some(listing) = &listing {
            self.apply_listing(server, &listing.tools);
        }
        self.bump();
        // Acts on `tools/list_changed` while this connection lives: the notification says the
        // listing changed, whatever its `ttlMs` promised.
        let manager = self.clone();
        let server = server.to_owned();
        let weak = Arc::downgrade(&connection);
        tokio::spawn(async move {
            while changed_rx.recv().await.is_some() {
                let Some(connection) = weak.upgrade() else {
                    break;
                };
                if !manager.is_current(&server, &connection) {
                    break;
                }
                match connection.list_tools(config.timeout).await {
                    Ok(listing) => {
                        manager.remember(&server, &listing, &config);
                        manager.apply_listing(&server, &listing.tools);
                        manager.bump();
                    }
                    Err(error) => {
                        tracing::warn!(server, %error, "listing tools after list_changed failed")
                    }
                }
            }
        });
        Ok(())
    }

    /// Keeps `listing` for reconnects inside its lifetime.
    fn remember(&self, server: &str, listing: &Listing, config: &ServerConfig) {
        if let Some(slot) = self.slots().iter_mut().find(|s| s.config.name == server) {
            slot.fresh = FreshListing::new(listing, config);
        }
    }

    fn is_current(&self, server: &str, connection: &Arc<Connection>) -> bool {
        self.slots().iter().any(|slot| {
            slot.config.name == server
                && slot
                    .connection
                    .as_ref()
                    .is_some_and(|current| Arc::ptr_eq(current, connection))
        })
    }

    fn set_state_if(&self, server: &str, attempt: u64, state: ServerState) {
        let mut slots = self.slots();
        if let Some(slot) = slots
            .iter_mut()
            .find(|slot| slot.config.name == server && slot.attempt == attempt)
        {
            slot.state = state;
        }
        drop(slots);
        self.bump();
    }

    /// Takes a listing into the server's catalog (allow/deny applied), naming new tools.
    fn apply_listing(&self, server: &str, tools: &[ListedTool]) {
        let mut slots = self.slots();
        let taken: Vec<String> = slots
            .iter()
            .flat_map(|slot| {
                slot.catalog
                    .all()
                    .iter()
                    .map(|tool| tool.name.clone())
                    .collect::<Vec<_>>()
            })
            .collect();
        let Some(slot) = slots.iter_mut().find(|slot| slot.config.name == server) else {
            return;
        };
        let allowed: Vec<ListedTool> = tools
            .iter()
            .filter(|tool| slot.config.allows(&tool.name))
            .cloned()
            .collect();
        if slot.auto_decision.is_none() {
            let prices = *self
                .inner
                .prices
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner());
            let shown = self.native_deferral().then(|| self.searchable());
            slot.auto_decision = Some(exposure::decide(&allowed, &prices, shown));
        }
        let plain: Vec<String> = allowed
            .iter()
            .map(|tool| naming::plain_name(server, &tool.name))
            .collect();
        let mut assigned: Vec<String> = Vec::new();
        let diff = slot.catalog.apply(&allowed, |tool| {
            let own_plain = naming::plain_name(server, tool);
            let collides = plain.iter().filter(|p| **p == own_plain).count() > 1;
            let name = naming::tool_name(server, tool, |candidate| {
                collides
                    || taken.iter().any(|t| t == candidate)
                    || assigned.iter().any(|t| t == candidate)
            });
            assigned.push(name.clone());
            name
        });
        drop(slots);
        if !diff.is_empty() {
            tracing::info!(server, ?diff, "MCP tools changed");
            self.inner
                .changes
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner())
                .push(ToolChange {
                    server: server.to_owned(),
                    diff,
                });
        }
    }

    /// Reconnects a server now (the `/mcp` reconnect).
    pub async fn reconnect(&self, server: &str) -> Result<(), ConnectError> {
        self.connect(server).await
    }

    /// Enables (and connects) or disables (disconnects; its tools are withdrawn) a server.
    pub async fn set_enabled(&self, server: &str, enabled: bool) -> Result<(), ConnectError> {
        let old = {
            let mut slots = self.slots();
            let Some(slot) = slots.iter_mut().find(|slot| slot.config.name == server) else {
                return Err(ConnectError::Failed(format!("no MCP server \"{server}\"")));
            };
            slot.config.enabled = enabled;
            if enabled {
                None
            } else {
                slot.attempt += 1;
                slot.state = ServerState::Disabled;
                let removed = slot.catalog.withdraw_all();
                if !removed.is_empty() {
                    self.inner
                        .changes
                        .lock()
                        .unwrap_or_else(|poisoned| poisoned.into_inner())
                        .push(ToolChange {
                            server: server.to_owned(),
                            diff: Diff {
                                removed,
                                ..Diff::default()
                            },
                        });
                }
                slot.connection.take()
            }
        };
        self.bump();
        if let Some(old) = old {
            old.close().await;
        }
        if enabled {
            self.connect(server).await?;
        }
        Ok(())
    }

    /// What enabling or disabling `server` would change in the tool set: the live tool names
    /// it adds or withdraws (the cost is stated before the change is made).
    pub fn tools_of(&self, server: &str) -> Vec<String> {
        self.slots()
            .iter()
            .find(|slot| slot.config.name == server)
            .map(|slot| slot.catalog.all().iter().map(|t| t.name.clone()).collect())
            .unwrap_or_default()
    }

    /// The entry of `server` (for a sign-in, which needs its URL and token file).
    pub fn server_config(&self, server: &str) -> Option<ServerConfig> {
        self.slots()
            .iter()
            .find(|slot| slot.config.name == server)
            .map(|slot| slot.config.clone())
    }

    /// Starts the servers if not yet started, then waits until no enabled server is still
    /// connecting, at most until the startup wait (counted from the start) has passed.
    pub async fn wait_ready(&self) {
        self.start();
        let started = *self
            .inner
            .started
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let deadline = started.unwrap_or_else(Instant::now) + self.inner.startup_wait;
        let mut generation = self.subscribe();
        loop {
            let connecting = self
                .slots()
                .iter()
                .any(|slot| slot.state == ServerState::Connecting);
            if !connecting {
                return;
            }
            if tokio::time::timeout_at(deadline, generation.changed())
                .await
                .is_err()
            {
                return;
            }
        }
    }

    /// Stops every server.
    pub async fn shutdown(&self) {
        let connections: Vec<Arc<Connection>> = self
            .slots()
            .iter_mut()
            .filter_map(|slot| {
                slot.attempt += 1;
                slot.connection.take()
            })
            .collect();
        for connection in connections {
            connection.close().await;
        }
    }

    /// Tools of deferred servers matching `query`, best first (for the search tool).
    pub(crate) fn search(&self, query: &str, limit: usize) -> Vec<Value> {
        let slots = self.slots();
        let candidates: Vec<(&str, &strata_tools::ToolDefinition)> = slots
            .iter()
            .filter(|slot| slot.deferred())
            .flat_map(|slot| {
                slot.catalog
                    .live()
                    .map(|tool| (slot.config.name.as_str(), &tool.definition))
            })
            .collect();
        search::rank(query, &candidates, limit)
    }

    /// Whether some server's tools are reached through search.
    /// Tells the manager whether the session's row can defer tools itself (`defer_loading`
    /// with the provider's tool search: Anthropic's, OpenAI's `tool_search`). Then a deferred
    /// server's tools are declared deferred from the first request on; otherwise they stay
    /// behind the client-side `mcp_tool_search` / `mcp_tool_call`. Set it before the first
    /// prompt: switching it later moves tools between the two and costs a ledger patch.
    pub fn set_native_deferral(&self, native: bool) {
        self.inner
            .native_deferral
            .store(native, std::sync::atomic::Ordering::Relaxed);
        self.bump();
    }

    /// Sets what the row's own tool search shows of a deferred tool before it is found, for
    /// the `auto` rule (default: name and description, as OpenAI's; Anthropic's shows nothing).
    pub fn set_searchable(&self, searchable: exposure::Searchable) {
        *self
            .inner
            .searchable
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner()) = searchable;
    }

    fn searchable(&self) -> exposure::Searchable {
        *self
            .inner
            .searchable
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Sets the session model's prices, which decide whether an `auto` server is declared or
    /// searched ([`crate::exposure`]); set it before servers connect (a server's decision is
    /// taken at its first listing and kept). Without it the common ratios are assumed.
    pub fn set_prices(&self, prices: TokenPrices) {
        // A model without prices (all zero) gets the common ratios, not "never search".
        let unknown = prices.cache_read <= 0.0 && prices.cache_write <= 0.0 && prices.output <= 0.0;
        let prices = if unknown {
            TokenPrices::default()
        } else {
            prices
        };
        *self
            .inner
            .prices
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner()) = prices;
    }

    fn native_deferral(&self) -> bool {
        self.inner
            .native_deferral
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    fn any_client_search(&self, native: bool) -> bool {
        self.slots()
            .iter()
            .any(|slot| slot.client_search(native) && slot.config.enabled)
    }

    /// Runs a call of the tool the model calls `name`.
    pub async fn call(&self, name: &str, arguments: Value, ctx: &ToolContext) -> ToolOutput {
        let found = {
            let slots = self.slots();
            slots.iter().find_map(|slot| {
                slot.catalog.get(name).map(|tool| {
                    (
                        slot.config.clone(),
                        tool.server_name.clone(),
                        tool.live,
                        slot.state.clone(),
                        slot.connection.clone(),
                    )
                })
            })
        };
        let Some((config, server_tool, live, state, connection)) = found else {
            let unavailable: Vec<String> = self
                .status()
                .into_iter()
                .filter(|s| s.state != ServerState::Connected)
                .map(|s| format!("{} ({})", s.name, s.state.label()))
                .collect();
            return ToolOutput::error(if unavailable.is_empty() {
                format!("Tool {name} is not offered by any MCP server")
            } else {
                format!(
                    "Tool {name} is not offered by any connected MCP server; not connected: {}",
                    unavailable.join(", ")
                )
            });
        };
        let server = config.name.clone();
        if state == ServerState::Disabled {
            return ToolOutput::error(format!(
                "MCP server \"{server}\" is disabled; its tool {name} cannot be called"
            ));
        }
        if !live {
            return ToolOutput::error(format!(
                "MCP tool {name} is no longer available: server \"{server}\" withdrew \"{server_tool}\" (tools/list_changed)"
            ));
        }
        // A dropped connection or a failed start is retried on demand.
        let connection = match connection.filter(|c| !c.is_closed()) {
            Some(connection) => connection,
            None => {
                if let Err(error) = self.connect(&server).await {
                    return ToolOutput::error(format!(
                        "MCP server \"{server}\" is not connected: {error}"
                    ));
                }
                let current = self
                    .slots()
                    .iter()
                    .find(|slot| slot.config.name == server)
                    .and_then(|slot| slot.connection.clone());
                match current {
                    Some(connection) => connection,
                    None => {
                        return ToolOutput::error(format!(
                            "MCP server \"{server}\" is not connected"
                        ));
                    }
                }
            }
        };
        let call = connection.call_tool(&server_tool, arguments);
        let result = tokio::select! {
            result = tokio::time::timeout(config.timeout, call) => result,
            () = ctx.cancel.cancelled() => return ToolOutput::error(ABORTED_MESSAGE),
        };
        match result {
            Err(_) => ToolOutput::error(format!(
                "MCP tool {name} did not answer within {} s (the call was cancelled)",
                config.timeout.as_secs_f64()
            )),
            Ok(Err(error)) => ToolOutput::error(format!(
                "MCP tool {name} ({server}/{server_tool}) failed: {error}"
            )),
            Ok(Ok(result)) => {
                content::to_output(&server, &server_tool, &result, &ctx.limits, &ctx.temp_dir)
            }
        }
    }

    fn tool_for(&self, name: &str) -> Option<Arc<dyn Tool>> {
        let slots = self.slots();
        slots.iter().find_map(|slot| {
            slot.catalog.get(name).map(|tool| {
                Arc::new(McpTool::new(
                    self.clone(),
                    tool.definition.clone(),
                    slot.config.name.clone(),
                    slot.provider_search(self.native_deferral()),
                )) as Arc<dyn Tool>
            })
        })
    }
}

fn with_stderr(message: &str, stderr: &StderrTail) -> String {
    let tail: Vec<String> = stderr
        .lock()
        .map(|tail| tail.iter().cloned().collect())
        .unwrap_or_default();
    if tail.is_empty() {
        message.to_owned()
    } else {
        format!("{message}\nstderr:\n{}", tail.join("\n"))
    }
}

#[async_trait]
impl ToolSource for McpManager {
    async fn settle(&self) {
        self.wait_ready().await;
    }

    fn tools(&self) -> Vec<Arc<dyn Tool>> {
        let mut tools: Vec<Arc<dyn Tool>> = Vec::new();
        let native = self.native_deferral();
        {
            let slots = self.slots();
            for slot in slots.iter().filter(|slot| !slot.client_search(native)) {
                for tool in slot.catalog.live() {
                    tools.push(Arc::new(McpTool::new(
                        self.clone(),
                        tool.definition.clone(),
                        slot.config.name.clone(),
                        slot.provider_search(native),
                    )));
                }
            }
        }
        if self.any_client_search(native) {
            tools.push(Arc::new(SearchTool::search(self.clone())));
            tools.push(Arc::new(SearchTool::call(self.clone())));
        }
        tools
    }

    fn resolve(&self, name: &str) -> Option<Arc<dyn Tool>> {
        match name {
            search::SEARCH_TOOL => Some(Arc::new(SearchTool::search(self.clone()))),
            search::CALL_TOOL => Some(Arc::new(SearchTool::call(self.clone()))),
            _ => self.tool_for(name),
        }
    }
}
