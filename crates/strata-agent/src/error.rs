//! Errors that end a run.

use strata_compaction::CompactionError;
use strata_context::ContextError;
use strata_provider::ProviderError;
use strata_session::SessionError;

/// Why the agent could not go on. Tool failures are not here: they go back to the model.
#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    /// Reading or appending the session failed.
    #[error(transparent)]
    Session(#[from] SessionError),
    /// The context could not be built from the session.
    #[error(transparent)]
    Context(#[from] ContextError),
    /// Compaction could not make a usable summary.
    #[error("compaction: {0}")]
    Compaction(#[from] CompactionError),
    /// The provider refused or failed (after its own retries).
    #[error("provider: {0}")]
    Provider(#[from] ProviderError),
    /// The rules layer failed (restoring files).
    #[error("{0}")]
    Rules(String),
}
