//! What can go wrong in a runtime operation.

use std::path::PathBuf;

/// An operation's failure (reported as [`crate::RuntimeEvent::Failed`]; the runtime goes on).
#[derive(Debug, thiserror::Error)]
pub enum RuntimeError {
    /// Reading or writing a session file.
    #[error(transparent)]
    Session(#[from] strata_session::SessionError),
    /// The agent loop.
    #[error(transparent)]
    Agent(#[from] strata_agent::AgentError),
    /// A label was asked for before the session had an entry to carry it.
    #[error("nothing to label yet")]
    NothingToLabel,
    /// A permission mode was set on an agent without a permission gate.
    #[error(
        "no permission gate: this session runs every tool call (start it with a permission mode)"
    )]
    NoGate,
    /// An answer came for a question nobody is waiting on.
    #[error("no permission question {0} is waiting for an answer")]
    NoQuestion(String),
    /// [`crate::Op::SetTools`] named a tool that is neither held nor built in.
    #[error("unknown tool `{0}`")]
    UnknownTool(String),
    /// [`crate::Op::ForkBefore`] named no user message (Pi's words).
    #[error("{0}")]
    ForkPoint(String),
    /// [`crate::Op::Clone`] before the session had an entry (Pi's words).
    #[error("Cannot clone session: no current entry selected")]
    NothingToClone,
    /// The router reached no route to the model an operation named.
    #[error("{0}")]
    Route(String),
    /// Moving a forked file into place.
    #[error("moving the forked session to {path}: {source}")]
    Rename {
        /// The destination.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
}
