//! Tools that come from elsewhere (MCP servers) and change while a session runs.

use std::sync::Arc;

use async_trait::async_trait;

use crate::tool::Tool;

/// A changing set of tools beside the built-ins: the agent asks it for the live tools before
/// each prompt (a change becomes one ledger patch) and for the tool of each call.
#[async_trait]
pub trait ToolSource: Send + Sync {
    /// Waits, bounded, for tools still starting, so the first request declares what the
    /// configuration promised instead of racing it; later arrivals are additions.
    async fn settle(&self);

    /// The live tools, in a stable order (first declared first).
    fn tools(&self) -> Vec<Arc<dyn Tool>>;

    /// The tool a call names, including one withdrawn since it was declared (it answers with
    /// an error saying so); `None` when the source never had it.
    fn resolve(&self, name: &str) -> Option<Arc<dyn Tool>>;

    /// Who provides the tool `name` when its cost is attributed to someone (`extension
    /// NAME`); `None` by default.
    fn origin(&self, name: &str) -> Option<String> {
        let _ = name;
        None
    }
}
