//! Client-side tool search for servers whose tools are not declared: `mcp_tool_search` finds
//! tools by words of their name and description, `mcp_tool_call` calls one by name.
//!
//! Both are declared once, so a large server's forty tools never sit in every request and
//! its tools coming and going changes no byte of any request — on every provider row,
//! whether or not it has deferred tools.

use async_trait::async_trait;
use serde_json::{Value, json};
use strata_tools::{Tool, ToolCall, ToolContext, ToolDefinition, ToolOutput, UpdateSender};

use crate::manager::McpManager;

/// Name of the search tool.
pub const SEARCH_TOOL: &str = "mcp_tool_search";
/// Name of the tool that calls a found tool.
pub const CALL_TOOL: &str = "mcp_tool_call";
/// Most tools one search returns.
pub const SEARCH_LIMIT: usize = 8;

/// The search tool or the call tool.
pub struct SearchTool {
    manager: McpManager,
    search: bool,
}

impl SearchTool {
    /// `mcp_tool_search`.
    pub fn search(manager: McpManager) -> Self {
        Self {
            manager,
            search: true,
        }
    }

    /// `mcp_tool_call`.
    pub fn call(manager: McpManager) -> Self {
        Self {
            manager,
            search: false,
        }
    }
}

#[async_trait]
impl Tool for SearchTool {
    fn name(&self) -> &str {
        if self.search { SEARCH_TOOL } else { CALL_TOOL }
    }

    fn description(&self) -> &str {
        if self.search {
            "Search the tools of MCP servers that are not declared directly. Give words of what you need; returns matching tool names with their descriptions and input schemas, to call with mcp_tool_call."
        } else {
            "Call an MCP tool found with mcp_tool_search: give its name and its arguments object."
        }
    }

    fn parameters(&self) -> Value {
        if self.search {
            json!({"type": "object", "properties": {"query": {"type": "string", "description": "Words describing the tool you need"}}, "required": ["query"]})
        } else {
            json!({"type": "object", "properties": {"name": {"type": "string", "description": "The tool's name, as mcp_tool_search gave it"}, "arguments": {"type": "object", "description": "The tool's arguments"}}, "required": ["name"]})
        }
    }

    async fn execute(
        &self,
        call: ToolCall,
        ctx: &ToolContext,
        _updates: Option<UpdateSender>,
    ) -> ToolOutput {
        let string = |field: &str| call.arguments.get(field).and_then(Value::as_str);
        if self.search {
            let Some(query) = string("query") else {
                return ToolOutput::error("mcp_tool_search needs a \"query\" string");
            };
            self.manager.wait_ready().await;
            let found = self.manager.search(query, SEARCH_LIMIT);
            if found.is_empty() {
                return ToolOutput::text(format!("No MCP tool matches \"{query}\"."));
            }
            ToolOutput::text(serde_json::to_string_pretty(&found).unwrap_or_default())
        } else {
            let Some(name) = string("name") else {
                return ToolOutput::error("mcp_tool_call needs the tool's \"name\"");
            };
            if name == SEARCH_TOOL || name == CALL_TOOL {
                return ToolOutput::error(format!("{name} cannot be called through mcp_tool_call"));
            }
            let arguments = call
                .arguments
                .get("arguments")
                .cloned()
                .unwrap_or_else(|| json!({}));
            self.manager.call(name, arguments, ctx).await
        }
    }
}

/// The `limit` best matches for `query` among `(server, definition)` pairs: a tool scores one
/// point per query word found in its name (three) or description or server name (one).
pub(crate) fn rank(
    query: &str,
    candidates: &[(&str, &ToolDefinition)],
    limit: usize,
) -> Vec<Value> {
    let words: Vec<String> = query
        .split(|c: char| !c.is_alphanumeric())
        .filter(|word| !word.is_empty())
        .map(str::to_lowercase)
        .collect();
    let mut scored: Vec<(usize, usize, Value)> = candidates
        .iter()
        .enumerate()
        .filter_map(|(index, (server, definition))| {
            let name = definition.name.to_lowercase();
            let description = definition.description.to_lowercase();
            let server = server.to_lowercase();
            let score: usize = words
                .iter()
                .map(|word| {
                    if name.contains(word.as_str()) {
                        3
                    } else if description.contains(word.as_str()) || server.contains(word.as_str())
                    {
                        1
                    } else {
                        0
                    }
                })
                .sum();
            (score > 0).then(|| {
                (
                    score,
                    index,
                    json!({
                        "name": definition.name,
                        "description": definition.description,
                        "inputSchema": definition.parameters,
                    }),
                )
            })
        })
        .collect();
    scored.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    scored.into_iter().take(limit).map(|(_, _, v)| v).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tool(name: &str, description: &str) -> ToolDefinition {
        ToolDefinition {
            name: name.into(),
            description: description.into(),
            parameters: json!({"type": "object"}),
        }
    }

    #[test]
    fn names_outrank_descriptions_and_ties_keep_order() {
        let a = tool("mcp__s__get_weather", "Forecast for a city");
        let b = tool("mcp__s__echo", "Echo back; mentions weather");
        let c = tool("mcp__s__add", "Adds numbers");
        let found = rank("weather", &[("s", &b), ("s", &a), ("s", &c)], 8);
        let names: Vec<&str> = found.iter().map(|v| v["name"].as_str().unwrap()).collect();
        assert_eq!(names, ["mcp__s__get_weather", "mcp__s__echo"]);
        assert!(rank("nothing", &[("s", &a)], 8).is_empty());
    }
}
