//! Tools too large to declare: a definition that would take more than a share of the window
//! is kept out of the ledger, so that one bad MCP server cannot make every later request
//! exceed the window.

use std::fmt;

use strata_session::ToolDefinition;

/// The share of the context window one tool definition may take by default
/// (`compaction.max_tool_share`).
pub const DEFAULT_TOOL_SHARE: f64 = strata_compaction::DEFAULT_MAX_TOOL_SHARE;

/// A tool kept out of the ledger, with why.
#[derive(Debug, Clone, PartialEq)]
pub struct RefusedTool {
    /// The tool's model-facing name.
    pub name: String,
    /// The MCP server it comes from (`mcp__<server>__<tool>`), if it is one's.
    pub server: Option<String>,
    /// Its definition's estimated tokens.
    pub tokens: u64,
    /// The most one definition may take.
    pub limit: u64,
}

impl fmt::Display for RefusedTool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.server {
            Some(server) => write!(f, "MCP server \"{server}\": tool \"{}\"", self.name)?,
            None => write!(f, "tool \"{}\"", self.name)?,
        }
        write!(
            f,
            " not declared: its definition is about {} tokens, over the {} one tool may take \
             (compaction.max_tool_share of the window)",
            self.tokens, self.limit
        )?;
        // The server's own name for the tool, for the one setting that stops offering it.
        let tool = self.server.as_ref().and_then(|server| {
            self.name
                .strip_prefix("mcp__")?
                .strip_prefix(server.as_str())?
                .strip_prefix("__")
        });
        match (&self.server, tool) {
            (Some(server), Some(tool)) => write!(
                f,
                "; to stop offering it, add \"{tool}\" to deny_tools in [mcp.servers.{server}]"
            ),
            _ => Ok(()),
        }
    }
}

/// The server of an MCP tool name (`mcp__<server>__<tool>`, Pi 1.x's naming).
fn server_of(name: &str) -> Option<String> {
    let rest = name.strip_prefix("mcp__")?;
    let (server, _) = rest.split_once("__")?;
    Some(server.to_owned())
}

/// Splits `tools` into those that fit `share` of `window` tokens and those refused (none
/// when `share` is outside (0, 1] or the window is unknown). A
/// definition's size is estimated as its JSON's length over four, as the compaction
/// estimates messages.
pub fn split(
    tools: Vec<ToolDefinition>,
    window: u64,
    share: f64,
) -> (Vec<ToolDefinition>, Vec<RefusedTool>) {
    // A share outside (0, 1] (or an unknown window) sets no limit.
    if window == 0 || !(share > 0.0 && share <= 1.0) {
        return (tools, Vec::new());
    }
    let limit = (window as f64 * share) as u64;
    let mut kept = Vec::with_capacity(tools.len());
    let mut refused = Vec::new();
    for tool in tools {
        let bytes = serde_json::to_string(&tool).map_or(0, |json| json.len() as u64);
        let tokens = bytes.div_ceil(4);
        if tokens > limit {
            refused.push(RefusedTool {
                server: server_of(&tool.name),
                name: tool.name,
                tokens,
                limit,
            });
        } else {
            kept.push(tool);
        }
    }
    (kept, refused)
}
