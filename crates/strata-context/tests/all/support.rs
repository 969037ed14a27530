//! Session files written line by line for tests, opened as trees.

use std::path::Path;

use serde_json::{Value, json};
use strata_session::Tree;

/// JSONL lines of a session, header first.
pub struct Lines {
    lines: Vec<Value>,
    clock: u64,
}

impl Lines {
    pub fn new() -> Self {
        let header = json!({"type": "session", "version": 3, "id": "test-session", "timestamp": "2026-01-01T00:00:00.000Z", "cwd": "/w"});
        Self {
            lines: vec![header],
            clock: 0,
        }
    }

    fn timestamp(&mut self) -> String {
        self.clock += 1;
        format!(
            "2026-01-01T00:{:02}:{:02}.000Z",
            self.clock / 60,
            self.clock % 60
        )
    }

    /// Appends an entry of `entry_type` with the given extra fields.
    pub fn entry(
        &mut self,
        entry_type: &str,
        id: &str,
        parent: Option<&str>,
        fields: Value,
    ) -> &mut Self {
        let mut entry = json!({"type": entry_type, "id": id, "parentId": parent, "timestamp": self.timestamp()});
        if let (Value::Object(entry), Value::Object(fields)) = (&mut entry, fields) {
            entry.extend(fields);
        }
        self.lines.push(entry);
        self
    }

    pub fn user(&mut self, id: &str, parent: Option<&str>, text: &str) -> &mut Self {
        let ms = self.clock * 1000;
        self.entry(
            "message",
            id,
            parent,
            json!({"message": {"role": "user", "content": text, "timestamp": ms}}),
        )
    }

    pub fn assistant(&mut self, id: &str, parent: Option<&str>, text: &str) -> &mut Self {
        let ms = self.clock * 1000;
        self.entry(
            "message",
            id,
            parent,
            json!({"message": {
                "role": "assistant", "content": [{"type": "text", "text": text}],
                "api": "anthropic-messages", "provider": "anthropic", "model": "claude-sonnet-4-5",
                "usage": {"input": 1, "output": 1, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 2,
                          "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}},
                "stopReason": "stop", "timestamp": ms}}),
        )
    }

    pub fn system(
        &mut self,
        id: &str,
        parent: Option<&str>,
        sections: Value,
        added: &[&str],
        removed: &[&str],
    ) -> &mut Self {
        let added: Vec<Value> = added.iter().map(|name| tool(name)).collect();
        self.entry(
            "system",
            id,
            parent,
            json!({"sections": sections, "toolsAdded": added, "toolsRemoved": removed}),
        )
    }

    pub fn exclude(&mut self, id: &str, parent: Option<&str>, targets: &[&str]) -> &mut Self {
        self.entry(
            "context_edit",
            id,
            parent,
            json!({"targets": targets, "action": "exclude"}),
        )
    }

    pub fn text(&self) -> String {
        self.lines.iter().map(|line| format!("{line}\n")).collect()
    }

    pub fn tree(&self) -> Tree {
        let (tree, diagnostics) = Tree::parse(Path::new("test.jsonl"), self.text().into_bytes())
            .expect("test session parses");
        assert!(diagnostics.is_empty(), "{diagnostics:?}");
        tree
    }
}

/// A tool definition named `name`.
pub fn tool(name: &str) -> Value {
    json!({
        "name": name,
        "description": format!("the {name} tool"),
        "parameters": {"type": "object", "properties": {}},
    })
}
