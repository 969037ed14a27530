//! What an extension asks of the session beyond its hook answers: operations, in the
//! session runtime's own types.

use serde_json::Value;
use tokio::sync::oneshot;

/// An operation an extension sent (`op`): one of the session runtime's own `Op`s as JSON
/// (`strata_runtime::Op`: `{"op": NAME, "args": …}`, snake_case), for the runtime to check and queue.
/// `reply` says whether it was taken (an `Err` is the extension's error answer).
#[derive(Debug)]
pub struct OpCall {
    /// The extension's name.
    pub extension: String,
    /// The operation, as the extension wrote it.
    pub op: Value,
    /// Taken (`Ok`) or refused with a reason; `None` for a notification.
    pub reply: Option<oneshot::Sender<Result<(), String>>>,
}
