//! A local LLM provider server speaking the major wire protocols (Anthropic Messages, OpenAI
//! Chat Completions and Responses — over HTTP and the Responses WebSocket mode — Gemini,
//! Bedrock Converse), with a prefix-cache simulator, a latency model, a scripted model and fault
//! injection.
//!
//! ```no_run
//! # async fn demo() -> Result<(), strata_mock::MockError> {
//! let server = strata_mock::MockServer::start(strata_mock::MockConfig::new()).await?;
//! println!("point a client at {}/v1/messages", server.base_url());
//! # Ok(()) }
//! ```

pub mod cache;
pub mod cached_contents;
pub mod clock;
pub mod config;
pub mod deferred;
pub mod diagnosis;
pub mod fault;
pub mod latency;
pub mod output;
pub mod playback;
pub mod prompt;
pub mod protocol;
pub mod record;
pub mod scenario;
pub mod served;
mod server;
pub mod summary;
pub mod thread;
pub mod tokens;
pub mod tool_search;
pub mod websocket;

pub use cache::{CacheAccounting, CacheSimulator};
pub use config::{
    CacheConfig, CacheStyle, ExcessBreakpoints, MockConfig, ModelProfile, ModelRule, Protocol,
    Retention, UsageDialect,
};
pub use fault::{Fault, FaultKind};
pub use playback::{Pick, Player};
pub use protocol::anthropic::signature as anthropic_signature;
pub use protocol::responses::encrypted_reasoning;
pub use record::{Accounting, Change, RequestRecord, Split};
pub use scenario::{Playback, Scenario, ScenarioError, SummarySpec, TurnSpec};
pub use server::{MockServer, ServeOptions};
pub use summary::SummaryKind;

/// Errors starting or configuring a server.
#[derive(Debug, thiserror::Error)]
pub enum MockError {
    /// The listening socket (or runtime) could not be set up.
    #[error("cannot bind the mock server: {0}")]
    Bind(#[source] std::io::Error),
    /// The record file could not be opened.
    #[error("cannot open record file {path}: {source}")]
    RecordFile {
        /// The file.
        path: std::path::PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The scenario is invalid.
    #[error(transparent)]
    Scenario(#[from] ScenarioError),
}
