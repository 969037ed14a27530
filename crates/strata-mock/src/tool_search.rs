//! The providers' own tool search, played by the scripted model: when a reply calls a deferred
//! tool that no earlier search loaded, and the request declares the provider's search tool, the
//! reply searches for it first, in the same response, as the providers do (no extra request):
//!
//! - OpenAI Responses (`tool_search` guide; openai-python 3.57.0 `ResponseToolSearchCall`,
//!   `ResponseToolSearchOutputItem`): a `tool_search_call` item and a `tool_search_output` item
//!   carrying the found function's full definition, both executed by the server, before the
//!   `function_call`.
//! - Anthropic (tool search tool; anthropic-sdk-python 2.15.0 `ServerToolUseBlock`,
//!   `ToolSearchToolResultBlock`): a `server_tool_use` block of the declared search tool and a
//!   `tool_search_tool_result` whose `tool_reference` names the tool, before the `tool_use`.
//!
//! Billing ([`bill`]): what the search brings in is "injected at the end of the context window"
//! (OpenAI) / "appended inline as a tool_reference block" (Anthropic), so the response bills
//! it as input after the request's prompt — the search's items and the loaded definition — in
//! the same blocks the next request, which carries them back, bills; that request then reads
//! them from the cache like any other part of the conversation.

use serde_json::{Value, json};

use crate::prompt::{Chapter, PromptBuilder, canonical_without};
use crate::protocol::Parsed;
use crate::scenario::{Reply, ToolCall};
use crate::tokens::Tokenizer;

/// Which provider's search a request declares.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Flavor {
    /// OpenAI Responses hosted `tool_search`.
    #[default]
    Responses,
    /// Anthropic's tool search tool.
    Anthropic,
}

/// A deferred tool no search of the conversation has loaded yet.
#[derive(Debug, Clone, PartialEq)]
pub struct Unloaded {
    /// Its name.
    pub name: String,
    /// Its definition as declared.
    pub definition: Value,
    /// Its definition as billed once loaded (Anthropic: the canonical declaration).
    pub billed: String,
}

/// The provider search a request offers the model.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ToolSearch {
    /// Whose.
    pub flavor: Flavor,
    /// The search tool's name (Anthropic `tool_search_tool_regex` / `_bm25`).
    pub tool: String,
    /// Deferred tools not loaded yet, in declaration order.
    pub unloaded: Vec<Unloaded>,
}

impl ToolSearch {
    /// The calls of `reply` whose tool must be found first, each tool once, in call order.
    pub fn found<'a>(&'a self, reply: &'a Reply) -> Vec<(&'a ToolCall, &'a Unloaded)> {
        let mut found: Vec<(&ToolCall, &Unloaded)> = Vec::new();
        for call in &reply.tool_calls {
            if found.iter().any(|(_, tool)| tool.name == call.name) {
                continue;
            }
            if let Some(tool) = self.unloaded.iter().find(|t| t.name == call.name) {
                found.push((call, tool));
            }
        }
        found
    }
}

/// The query a search for `name` uses: its words.
fn query(name: &str) -> String {
    name.rsplit("__").next().unwrap_or(name).replace('_', " ")
}

/// The two Responses output items of the hosted search that finds `tool` for `call`.
pub fn responses_items(call: &ToolCall, tool: &Unloaded) -> [Value; 2] {
    [
        json!({"type": "tool_search_call", "id": format!("tsc_{}", call.id), "call_id": null,
            "execution": "server", "status": "completed",
            "arguments": {"query": query(&call.name)}}),
        json!({"type": "tool_search_output", "id": format!("tso_{}", call.id), "call_id": null,
            "execution": "server", "status": "completed", "tools": [tool.definition]}),
    ]
}

/// The two Anthropic content blocks of the search (with `search_tool`) that finds `call`'s tool.
pub fn anthropic_blocks(search_tool: &str, call: &ToolCall) -> [Value; 2] {
    let id = format!("srvtoolu_{}", call.id);
    [
        json!({"type": "server_tool_use", "id": id, "name": search_tool,
            "input": {"query": query(&call.name)}}),
        json!({"type": "tool_search_tool_result", "tool_use_id": id, "content": {
            "type": "tool_search_tool_search_result",
            "tool_references": [{"type": "tool_reference", "tool_name": call.name}]}}),
    ]
}

/// Appends to `parsed`'s prompt what the searches `reply` makes bring in, billed as this
/// request's input (see the module docs); returns how many tokens that is.
pub fn bill(parsed: &mut Parsed, reply: &Reply, tokenizer: &Tokenizer) -> u64 {
    let Some(search) = &parsed.tool_search else {
        return 0;
    };
    let found = search.found(reply);
    if found.is_empty() {
        return 0;
    }
    let mut builder = PromptBuilder::new(tokenizer);
    for (call, tool) in found {
        match search.flavor {
            Flavor::Responses => {
                for item in responses_items(call, tool) {
                    builder.push(Chapter::Messages, "item", &item.to_string(), None);
                }
            }
            Flavor::Anthropic => {
                for block in anthropic_blocks(&search.tool, call) {
                    let text = canonical_without(&block, "cache_control");
                    builder.push(Chapter::Messages, "assistant", &text, None);
                }
                builder.push(Chapter::Messages, "tool", &tool.billed, None);
            }
        }
    }
    let loaded = builder.finish();
    let tokens = loaded.total_tokens();
    parsed.prompt.blocks.extend(loaded.blocks);
    tokens
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::Stop;

    fn reply(names: &[&str]) -> Reply {
        Reply {
            thinking: None,
            text: None,
            tool_calls: names
                .iter()
                .enumerate()
                .map(|(i, name)| ToolCall {
                    id: format!("c{i}"),
                    name: (*name).to_owned(),
                    arguments: json!({}),
                })
                .collect(),
            stop: Stop::ToolUse,
            turn: Some(0),
        }
    }

    #[test]
    fn only_unloaded_deferred_tools_are_searched_and_each_once() {
        let search = ToolSearch {
            flavor: Flavor::Responses,
            tool: "tool_search".into(),
            unloaded: vec![Unloaded {
                name: "mcp__a__echo".into(),
                definition: json!({"type": "function", "name": "mcp__a__echo"}),
                billed: String::new(),
            }],
        };
        let reply = reply(&["read", "mcp__a__echo", "mcp__a__echo"]);
        let found = search.found(&reply);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].0.id, "c1");
        let [call, output] = responses_items(found[0].0, found[0].1);
        assert_eq!(call["arguments"]["query"], json!("echo"));
        assert_eq!(output["tools"][0]["name"], json!("mcp__a__echo"));
    }
}
