//! Extensions' tools as a `ToolSource`: they enter the tool ledger the way an MCP server's do
//! (added by a patch at the end; a stopped extension's tools are withdrawn at the end and a
//! late call answers with an error).

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::Value;
use strata_extension_client::ToolSpec;
use strata_tools::{Tool, ToolCall, ToolContext, ToolOutput, ToolSource, UpdateSender};

use crate::host::Extension;

/// The live tools of running extensions, after another source's (MCP) when given.
pub struct ExtensionTools {
    extensions: Vec<Arc<Extension>>,
    inner: Option<Arc<dyn ToolSource>>,
}

impl ExtensionTools {
    /// The tools of `extensions`, declared after `inner`'s.
    pub fn new(extensions: Vec<Arc<Extension>>, inner: Option<Arc<dyn ToolSource>>) -> Self {
        Self { extensions, inner }
    }

    fn tool(extension: &Arc<Extension>, spec: &ToolSpec) -> Arc<dyn Tool> {
        Arc::new(ExtensionTool {
            extension: Arc::clone(extension),
            spec: spec.clone(),
        })
    }
}

#[async_trait]
impl ToolSource for ExtensionTools {
    async fn settle(&self) {
        if let Some(inner) = &self.inner {
            inner.settle().await;
        }
    }

    fn tools(&self) -> Vec<Arc<dyn Tool>> {
        let mut tools = self.inner.as_ref().map(|s| s.tools()).unwrap_or_default();
        for extension in self.extensions.iter().filter(|e| e.is_alive()) {
            for spec in &extension.manifest().tools {
                if tools.iter().all(|t| t.name() != spec.name) {
                    tools.push(Self::tool(extension, spec));
                }
            }
        }
        tools
    }

    fn resolve(&self, name: &str) -> Option<Arc<dyn Tool>> {
        if let Some(tool) = self.inner.as_ref().and_then(|s| s.resolve(name)) {
            return Some(tool);
        }
        self.extensions.iter().find_map(|extension| {
            extension
                .manifest()
                .tools
                .iter()
                .find(|spec| spec.name == name)
                .map(|spec| Self::tool(extension, spec))
        })
    }
}

/// One tool of one extension.
struct ExtensionTool {
    extension: Arc<Extension>,
    spec: ToolSpec,
}

#[async_trait]
impl Tool for ExtensionTool {
    fn name(&self) -> &str {
        &self.spec.name
    }

    fn description(&self) -> &str {
        &self.spec.description
    }

    fn parameters(&self) -> Value {
        self.spec.parameters.clone()
    }

    async fn execute(
        &self,
        call: ToolCall,
        _ctx: &ToolContext,
        _updates: Option<UpdateSender>,
    ) -> ToolOutput {
        let result = self
            .extension
            .call_tool(&self.spec.name, &call.arguments)
            .await;
        if result.is_error {
            ToolOutput::error(result.text)
        } else {
            ToolOutput::text(result.text)
        }
    }
}
