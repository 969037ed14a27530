//! What the providers bill for a tool declared with `defer_loading` (tool search).
//!
//! The rules, from the providers' own documentation (see `/work/shared/research/PROVIDERS.md`
//! §1.8 and §1.9):
//!
//! - Anthropic (tool search tool; tool use with prompt caching): "Deferred tools are not
//!   included in the system-prompt prefix. When the model discovers a deferred tool through
//!   tool search, the definition is appended inline as a tool_reference block in the
//!   conversation history. The prefix is untouched, so prompt caching is preserved." The SDK's
//!   `defer_loading`: "tool will not be included in initial system prompt. Only loaded when
//!   returned via tool_reference from tool search." So a deferred tool is neither billed nor
//!   part of the cached prefix; its definition is billed where the first `tool_reference` to
//!   it stands (a `tool_search_tool_result`, a `tool_result`, or the reference of a
//!   `tool_addition`), once: a later reference finds it already loaded. The reference of a
//!   `tool_removal` loads nothing: it withdraws the tool ("no longer offered to the model from
//!   this point onward"), and a definition is "only loaded when returned via tool_reference
//!   from tool search" or surfaced by an addition.
//! - OpenAI Responses (`tool_search` guide): deferred functions are not loaded "into the
//!   model's context up front"; "When new tools are discovered by the model, they are injected
//!   at the end of the context window" (the `tool_search_output` items, billed as the input
//!   items they are), and "At the start of a request, the model still sees the name and
//!   description of whatever is searchable". So a deferred function is billed as its name and
//!   description where it stands; its parameters only come with a `tool_search_output`.

use std::collections::HashSet;

use serde_json::{Value, json};

use crate::prompt::{Chapter, PromptBuilder};

/// Whether a tool entry asks for deferred loading.
pub fn is_deferred(tool: &Value) -> bool {
    tool.get("defer_loading") == Some(&Value::Bool(true))
}

/// What an OpenAI deferred function shows before it is loaded: its type, name and description.
pub fn searchable_part(tool: &Value) -> Value {
    let mut shown = serde_json::Map::new();
    for key in ["type", "name", "description"] {
        if let Some(value) = tool.get(key) {
            shown.insert(key.to_owned(), value.clone());
        }
    }
    json!(shown)
}

/// The deferred tools of one Anthropic request, and those a `tool_reference` loaded so far.
#[derive(Debug, Default)]
pub struct DeferredTools {
    /// `(name, canonical definition)` in declaration order.
    definitions: Vec<(String, String)>,
    loaded: HashSet<String>,
}

impl DeferredTools {
    /// Records a deferred tool's definition (its canonical text, as it would be billed).
    pub fn declare(&mut self, name: &str, text: String) {
        self.definitions.push((name.to_owned(), text));
    }

    /// Whether the request defers any tool.
    pub fn is_empty(&self) -> bool {
        self.definitions.is_empty()
    }

    /// `(name, billed definition)` of the deferred tools no reference has loaded yet.
    pub fn unloaded(&self) -> impl Iterator<Item = (&str, &str)> {
        self.definitions
            .iter()
            .filter(|(name, _)| !self.loaded.contains(name))
            .map(|(name, text)| (name.as_str(), text.as_str()))
    }

    /// Bills, right after the block `value` that references them, the definitions of the
    /// deferred tools it references for the first time.
    pub fn load_referenced(&mut self, builder: &mut PromptBuilder<'_>, value: &Value) {
        if self.definitions.is_empty() {
            return;
        }
        let mut names = Vec::new();
        references(value, &mut names);
        for name in names {
            if self.loaded.contains(&name) {
                continue;
            }
            if let Some((_, text)) = self.definitions.iter().find(|(n, _)| *n == name) {
                builder.push(Chapter::Messages, "tool", text, None);
                self.loaded.insert(name);
            }
        }
    }
}

/// The tool names of every `tool_reference` inside `value` (`tool_name` in a search result or
/// tool result, `name` in a `tool_addition`'s reference), in document order; those inside a
/// `tool_removal` are left out (a withdrawal loads nothing).
fn references(value: &Value, out: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            if map.get("type").and_then(Value::as_str) == Some("tool_removal") {
                return;
            }
            if map.get("type").and_then(Value::as_str) == Some("tool_reference")
                && let Some(name) = map
                    .get("tool_name")
                    .or_else(|| map.get("name"))
                    .and_then(Value::as_str)
            {
                out.push(name.to_owned());
            }
            for item in map.values() {
                references(item, out);
            }
        }
        Value::Array(items) => {
            for item in items {
                references(item, out);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references_are_found_in_results_and_additions() {
        let block = json!({"type": "tool_search_tool_result", "tool_use_id": "s", "content": {
            "type": "tool_search_tool_search_result",
            "tool_references": [{"type": "tool_reference", "tool_name": "a"}, {"type": "tool_reference", "tool_name": "b"}]}});
        let addition =
            json!({"type": "tool_addition", "tool": {"type": "tool_reference", "name": "c"}});
        let removal = json!({"type": "mid_conv_system", "content": [
            {"type": "tool_removal", "tool": {"type": "tool_reference", "name": "d"}}]});
        let mut names = Vec::new();
        references(&block, &mut names);
        references(&addition, &mut names);
        references(&removal, &mut names);
        assert_eq!(names, ["a", "b", "c"]);
    }

    #[test]
    fn a_searchable_function_shows_its_name_and_description_only() {
        let tool = json!({"type": "function", "name": "f", "description": "does f",
            "parameters": {"type": "object"}, "defer_loading": true});
        assert_eq!(
            searchable_part(&tool),
            json!({"type": "function", "name": "f", "description": "does f"})
        );
    }
}
