//! One MCP tool as a strata [`Tool`]: its calls go through the manager.

use async_trait::async_trait;
use serde_json::Value;
use strata_tools::{Tool, ToolCall, ToolContext, ToolDefinition, ToolOutput, UpdateSender};

use crate::manager::McpManager;

/// A server's tool under its model-facing name.
pub struct McpTool {
    manager: McpManager,
    definition: ToolDefinition,
    server: String,
    /// Declared with `defer_loading` (a deferred server on a row with tool search).
    deferred: bool,
}

impl McpTool {
    pub(crate) fn new(
        manager: McpManager,
        definition: ToolDefinition,
        server: String,
        deferred: bool,
    ) -> Self {
        Self {
            manager,
            definition,
            server,
            deferred,
        }
    }

    /// The server the tool belongs to.
    pub fn server(&self) -> &str {
        &self.server
    }
}

#[async_trait]
impl Tool for McpTool {
    fn name(&self) -> &str {
        &self.definition.name
    }

    fn description(&self) -> &str {
        &self.definition.description
    }

    fn parameters(&self) -> Value {
        self.definition.parameters.clone()
    }

    fn defer_loading(&self) -> bool {
        self.deferred
    }

    async fn execute(
        &self,
        call: ToolCall,
        ctx: &ToolContext,
        _updates: Option<UpdateSender>,
    ) -> ToolOutput {
        self.manager.call(&call.name, call.arguments, ctx).await
    }
}
