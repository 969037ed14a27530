//! strata's tools under the names Claude Code's hooks expect, so that a `settings.json` whose
//! matcher says `Bash` or `Edit|Write` and whose script reads `tool_input.file_path` works
//! unchanged.

use serde_json::Value;

/// strata's tool name → Claude Code's.
const NAMES: &[(&str, &str)] = &[
    ("bash", "Bash"),
    ("read", "Read"),
    ("edit", "Edit"),
    ("write", "Write"),
    ("grep", "Grep"),
    ("find", "Glob"),
    ("ls", "LS"),
];

/// Tools whose `path` argument Claude Code calls `file_path`.
const FILE_PATH_TOOLS: &[&str] = &["read", "edit", "write"];

/// The mapping between strata's tools and Claude Code's names and fields.
#[derive(Debug, Clone, Copy, Default)]
pub struct ToolNames;

impl ToolNames {
    /// Claude Code's name for a strata tool (`None`: the tool has no counterpart, an MCP or
    /// extension tool keeps its own name).
    pub fn claude_name(tool: &str) -> Option<&'static str> {
        NAMES
            .iter()
            .find(|(strata, _)| *strata == tool)
            .map(|(_, claude)| *claude)
    }

    /// The name a hook sees in `tool_name`: Claude Code's where there is one.
    pub fn hook_name(tool: &str) -> String {
        Self::claude_name(tool).map_or_else(|| tool.to_owned(), str::to_owned)
    }

    /// The input a hook sees in `tool_input`: strata's arguments, plus `file_path` beside
    /// `path` for the file tools.
    pub fn hook_input(tool: &str, arguments: &Value) -> Value {
        let mut input = arguments.clone();
        if FILE_PATH_TOOLS.contains(&tool)
            && let Some(object) = input.as_object_mut()
            && let Some(path) = object.get("path").cloned()
        {
            object.entry("file_path").or_insert(path);
        }
        input
    }

    /// The arguments a tool runs with after a hook's `updatedInput`: its fields replace the
    /// original's (a field it leaves out is kept), and `file_path` becomes `path` for the file
    /// tools. An `updatedInput` that is not an object replaces nothing (`None`).
    pub fn apply_update(tool: &str, original: &Value, updated: &Value) -> Option<Value> {
        let updates = updated.as_object()?;
        let mut merged = original.as_object().cloned().unwrap_or_default();
        let file_tool = FILE_PATH_TOOLS.contains(&tool);
        let original_path = merged.get("path").cloned();
        for (key, value) in updates {
            merged.insert(key.clone(), value.clone());
        }
        if file_tool {
            // A hook that echoes the whole input back changes `file_path` and leaves `path`:
            // the changed one wins.
            if let Some(file_path) = merged.remove("file_path")
                && Some(&file_path) != original_path.as_ref()
            {
                merged.insert("path".into(), file_path);
            }
        }
        Some(Value::Object(merged))
    }
}
