//! Bench-only tools standing for what extensions and MCP servers add to a session: a
//! definition as large as real ones, a cheap deterministic answer.

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::{Value, json};
use strata_tools::{Tool, ToolCall, ToolContext, ToolOutput, ToolSet, UpdateSender};

/// Every bench tool, by name (the first eight mirror the tools the seed's session withdrew and
/// added: `compress` … `acp_rule` out, `recall` in).
pub const BENCH_TOOL_NAMES: [&str; 15] = [
    "web_search",
    "compress",
    "decompress",
    "search_context",
    "acp_status",
    "acp_cache",
    "absorb",
    "acp_rule",
    "recall",
    "db_query",
    "db_schema",
    "browser_open",
    "browser_click",
    "issue_list",
    "issue_view",
];

/// An MCP-like tool: answers any query with a short fixed-shape text.
#[derive(Debug, Clone)]
pub struct BenchTool {
    name: String,
    description: String,
}

impl BenchTool {
    /// The tool called `name`.
    pub fn new(name: &str) -> Self {
        let description = format!(
            "{name}: a tool provided by an external server (MCP). Send a query describing what you \
             need; the server answers with the matching records, each on its own line, most \
             relevant first. Use it when the built-in tools cannot answer; results may be \
             truncated to the first 50 records, and a query that matches nothing returns an empty \
             answer rather than an error."
        );
        Self {
            name: name.to_owned(),
            description,
        }
    }
}

#[async_trait]
impl Tool for BenchTool {
    fn name(&self) -> &str {
        &self.name
    }

    fn description(&self) -> &str {
        &self.description
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "What to look for."},
                "limit": {"type": "integer", "description": "Most records to return (default 50)."}
            },
            "required": ["query"]
        })
    }

    async fn execute(
        &self,
        call: ToolCall,
        _ctx: &ToolContext,
        _updates: Option<UpdateSender>,
    ) -> ToolOutput {
        let query = call
            .arguments
            .get("query")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let mut text = String::new();
        for record in 0..6 {
            text.push_str(&format!(
                "{}: record {record} for \"{query}\" — status ok, updated at step {record}\n",
                self.name
            ));
        }
        ToolOutput::text(text)
    }
}

/// The built-ins plus the named bench tools, in that order.
pub fn tool_set(builtins: &[&str], bench: &[String]) -> ToolSet {
    let mut set = ToolSet::builtins(builtins);
    for name in bench {
        set.insert(Arc::new(BenchTool::new(name)));
    }
    set
}
