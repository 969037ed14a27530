//! Sessions written entry by entry for render tests, and provider capability presets.

use std::path::Path;

use serde_json::{Value, json};
use strata_context::{Context, build};
use strata_provider::{CacheStyle, CacheTtl, Capabilities};
use strata_session::{EntryId, Tree};

/// A session written as JSONL lines, each entry a child of the one before unless told.
#[derive(Clone)]
pub struct Script {
    lines: Vec<Value>,
    ids: Vec<String>,
    counter: u64,
}

impl Script {
    pub fn new() -> Self {
        let header = json!({"type": "session", "version": 3, "id": "render-session",
            "timestamp": "2026-01-01T00:00:00.000Z", "cwd": "/w"});
        Self {
            lines: vec![header],
            ids: Vec::new(),
            counter: 0,
        }
    }

    /// The id of the last entry written.
    pub fn last(&self) -> &str {
        self.ids.last().map_or("", String::as_str)
    }

    /// Ids of every entry, in order written.
    pub fn ids(&self) -> &[String] {
        &self.ids
    }

    fn next_id(&mut self) -> String {
        self.counter += 1;
        format!("{:08x}", self.counter)
    }

    /// Appends an entry of `entry_type` with `fields` after `parent` (the last entry if `None`).
    pub fn entry_after(&mut self, parent: Option<&str>, entry_type: &str, fields: Value) -> String {
        let id = self.next_id();
        let parent = match parent {
            Some(parent) => Some(parent.to_owned()),
            None => self.ids.last().cloned(),
        };
        let seconds = self.counter;
        let mut entry = json!({"type": entry_type, "id": id, "parentId": parent,
            "timestamp": format!("2026-01-01T{:02}:{:02}:{:02}.000Z", seconds / 3600, seconds / 60 % 60, seconds % 60)});
        if let (Value::Object(entry), Value::Object(fields)) = (&mut entry, fields) {
            entry.extend(fields);
        }
        self.lines.push(entry);
        self.ids.push(id.clone());
        id
    }

    pub fn entry(&mut self, entry_type: &str, fields: Value) -> String {
        self.entry_after(None, entry_type, fields)
    }

    fn message(&mut self, message: Value) -> String {
        self.entry("message", json!({ "message": message }))
    }

    pub fn user(&mut self, text: &str) -> String {
        let ms = self.counter * 1000;
        self.message(json!({"role": "user", "content": text, "timestamp": ms}))
    }

    /// An assistant answer with signed thinking before its text.
    pub fn assistant(&mut self, text: &str) -> String {
        self.assistant_blocks(
            vec![
                json!({"type": "thinking", "thinking": format!("thinking about {text}"), "thinkingSignature": "sig"}),
                json!({"type": "text", "text": text}),
            ],
            "stop",
        )
    }

    /// An assistant turn that calls `calls` (`(id, tool)` pairs).
    pub fn calls(&mut self, calls: &[(&str, &str)]) -> String {
        let blocks = calls
            .iter()
            .map(|(id, name)| json!({"type": "toolCall", "id": id, "name": name, "arguments": {"path": "src/lib.rs"}}))
            .collect();
        self.assistant_blocks(blocks, "toolUse")
    }

    pub fn assistant_blocks(&mut self, content: Vec<Value>, stop_reason: &str) -> String {
        let ms = self.counter * 1000;
        self.message(json!({
            "role": "assistant", "content": content, "api": "anthropic-messages",
            "provider": "anthropic", "model": "claude-opus-4-8",
            "usage": {"input": 10, "output": 5, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 15,
                      "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}},
            "stopReason": stop_reason, "timestamp": ms}))
    }

    pub fn result(&mut self, call_id: &str, tool: &str, text: &str) -> String {
        let ms = self.counter * 1000;
        self.message(
            json!({"role": "toolResult", "toolCallId": call_id, "toolName": tool,
            "content": [{"type": "text", "text": text}], "isError": false, "timestamp": ms}),
        )
    }

    /// A `system` entry: the snapshot if it is the chain's first, a patch otherwise.
    pub fn system(&mut self, sections: Value, added: &[Value], removed: &[&str]) -> String {
        self.entry(
            "system",
            json!({"sections": sections, "toolsAdded": added, "toolsRemoved": removed}),
        )
    }

    /// A compaction carrying the folded snapshot and the live tools.
    pub fn compaction(
        &mut self,
        summary: &str,
        first_kept: &str,
        system: Value,
        tools: &[Value],
    ) -> String {
        self.entry(
            "compaction",
            json!({"summary": summary, "firstKeptEntryId": first_kept,
            "tokensBefore": 12345, "system": system, "tools": tools}),
        )
    }

    pub fn tree(&self) -> Tree {
        let text: String = self.lines.iter().map(|line| format!("{line}\n")).collect();
        let (tree, diagnostics) = match Tree::parse(Path::new("render.jsonl"), text.into_bytes()) {
            Ok(parsed) => parsed,
            Err(error) => panic!("test session does not parse: {error}"),
        };
        assert!(diagnostics.is_empty(), "{diagnostics:?}");
        tree
    }

    /// The context at `leaf`.
    pub fn context_at(&self, tree: &Tree, leaf: &str) -> Context {
        match build(tree, Some(&EntryId::new(leaf))) {
            Ok(context) => context,
            Err(error) => panic!("context at {leaf} does not build: {error}"),
        }
    }

    /// The context at the last entry.
    pub fn context(&self) -> Context {
        self.context_at(&self.tree(), self.last())
    }
}

/// A tool definition named `name`.
pub fn tool(name: &str) -> Value {
    json!({
        "name": name,
        "description": format!("The {name} tool."),
        "parameters": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
    })
}

/// Tool definitions for `names`.
pub fn tools(names: &[&str]) -> Vec<Value> {
    names.iter().map(|name| tool(name)).collect()
}

/// The six sections, each a short text naming itself.
pub fn sections() -> Value {
    json!({
        "intro": "You are strata, a coding agent.",
        "tools": "<tools>\n- read: read a file\n- bash: run a command\n</tools>",
        "rules": "Be brief.",
        "docs": "See AGENTS.md.",
        "skills": "<skills>\n- pdf: read PDFs\n</skills>",
        "cwd": "Working directory: /w",
    })
}

/// A provider with mid-conversation system messages, tool changes and deferred tools with a
/// placeholder (Anthropic's newest models).
pub fn full() -> Capabilities {
    Capabilities {
        cache_style: CacheStyle::ExplicitBreakpoints,
        max_breakpoints: 4,
        ttl_options: vec![CacheTtl::FiveMinutes, CacheTtl::OneHour],
        mid_conversation_system: true,
        tool_addition: true,
        tool_removal: true,
        deferred_tools: true,
        deferred_tool_placeholder: true,
        ..Capabilities::default()
    }
}

/// Mid-conversation system messages, but no tool changes and no deferred tools.
pub fn mid_only() -> Capabilities {
    Capabilities {
        cache_style: CacheStyle::AutomaticPrefix,
        mid_conversation_system: true,
        ..Capabilities::default()
    }
}

/// No mid-conversation system messages (Bedrock, Google, most others).
pub fn no_mid() -> Capabilities {
    Capabilities {
        cache_style: CacheStyle::ExplicitBreakpoints,
        max_breakpoints: 4,
        ..Capabilities::default()
    }
}
