//! MCP tool servers for strata.
//!
//! Servers come from strata's `[mcp.servers.NAME]` and from the `mcpServers` files other
//! clients keep ([`config`]); a [`McpManager`] connects them in the background over the
//! official SDK (stdio child processes, streamable HTTP), keeps each server's tools in the
//! order first declared ([`catalog`]), names them `mcp__<server>__<tool>` ([`naming`]), acts
//! on `tools/list_changed`, and hands the live set to the agent as a
//! [`strata_tools::ToolSource`]. The agent turns each change into one ledger patch, so
//! tools come and go without rewriting what the provider cached.
//!
//! This crate knows nothing about sessions, providers or rendering.

pub mod auth;
pub mod catalog;
pub mod config;
pub mod connection;
pub mod content;
pub mod exposure;
pub mod manager;
pub mod naming;
pub mod search;
pub mod stdio;
pub mod tool;

pub use catalog::{Catalog, Diff, ListedTool};
pub use config::{Discovered, Discovery, ServerConfig, ServerSpec, Source, SourceKind, Transport};
pub use connection::ConnectError;
pub use exposure::{Searchable, TokenPrices};
pub use manager::{DEFAULT_STARTUP_WAIT, McpManager, ServerState, ServerStatus, ToolChange};
pub use tool::McpTool;
