//! Pi 1.x's RPC protocol over a strata session runtime, so Pi's RPC clients drive strata
//! unchanged.
//!
//! - [`commands`]: the commands as one serde-tagged enum, parsed as Pi parses them (an
//!   unknown `type` is Pi's `Unknown command` error).
//! - [`protocol`]: responses shaped as Pi's, and the line writer.
//! - [`events`]: the runtime's agent events serialised as Pi's event stream.
//! - [`json_mode`]: the same events as Pi's `--mode json` stream, after the session header.
//! - [`state`]: `get_state` / `get_session_stats` answers from a snapshot of the agent.
//! - [`serve`]: the server loop over any [`tokio::io::AsyncRead`] / [`tokio::io::AsyncWrite`]
//!   pair (stdin and stdout in `strata --mode rpc`), driving a [`strata_runtime`] task; the
//!   embedding program supplies models and routes through [`Host`] ([`EndpointHost`] sends
//!   every model of one provider to one base URL); [`serve_setup`] serves a session started
//!   by [`strata_host::Setup`], so the user's trust and key policy hold for an embedding
//!   program as for `strata --mode rpc`.
//!
//! ```no_run
//! # async fn run(agent: strata_runtime::Agent, host: impl strata_rpc::Host) -> Result<(), strata_rpc::ServeError> {
//! let retries = strata_runtime::RetryEvents::default();
//! let options = strata_rpc::ServeOptions::default();
//! let agent = strata_rpc::serve(tokio::io::stdin(), tokio::io::stdout(), agent, retries, host, options).await?;
//! println!("session: {}", agent.session().path().display());
//! # Ok(()) }
//! ```

pub mod commands;
mod endpoint_host;
pub mod events;
mod hosted;
pub mod json_mode;
pub mod protocol;
mod server;
pub mod skills;
pub mod state;

pub use endpoint_host::EndpointHost;
pub use hosted::{HtmlExport, SetupHost, serve_setup};
pub use server::{Host, ServeError, ServeOptions, serve};
