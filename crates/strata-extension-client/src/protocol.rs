//! The wire types: JSON-RPC 2.0, one JSON object per line on stdin (host → extension) and
//! stdout (extension → host). Specified in `docs/extensions.md`.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The protocol version this crate speaks.
pub const PROTOCOL_VERSION: u32 = 1;

/// What an extension declares in its answer to `initialize`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Manifest {
    /// The extension's name (reports and slots name it).
    pub name: String,
    /// Its version.
    pub version: String,
    /// Runtime events it wants as `event` notifications (`agent_start`, `tool_end`, …, or
    /// `*` for all).
    pub events: Vec<String>,
    /// Hook events it answers as `hook` requests (`PreToolUse`, `PostToolUse`,
    /// `UserPromptSubmit`, `Stop`, `SessionStart`).
    pub hooks: Vec<String>,
    /// Slash commands it serves.
    pub commands: Vec<CommandSpec>,
    /// Tools it contributes.
    pub tools: Vec<ToolSpec>,
    /// Memory slots it claims (`ingress_filter`, `compaction`, `precompute`, `forgetting`).
    pub slots: Vec<String>,
}

/// A slash command.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct CommandSpec {
    /// Its name, without the slash.
    pub name: String,
    /// One line for the command list.
    pub description: String,
}

/// A tool.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ToolSpec {
    /// Its name.
    pub name: String,
    /// What the model reads about it.
    pub description: String,
    /// JSON Schema of its arguments.
    pub parameters: Value,
}

/// A tool call's answer.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ToolResult {
    /// The text the model reads.
    pub text: String,
    /// Whether the call failed.
    pub is_error: bool,
}

/// One line of the protocol: a request (`id` and `method`), a notification (`method`
/// only) or a response (`id` and `result` or `error`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    /// Always `"2.0"`.
    pub jsonrpc: String,
    /// Present on requests and responses.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<u64>,
    /// Present on requests and notifications.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub method: Option<String>,
    /// The method's parameters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub params: Option<Value>,
    /// A success response's value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<Value>,
    /// A failure response's error.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<RpcError>,
}

/// A JSON-RPC error object.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RpcError {
    /// The code (`-32601`: no such method, `-32000`: the handler failed).
    pub code: i64,
    /// What went wrong.
    pub message: String,
}

impl Message {
    /// A request.
    pub fn request(id: u64, method: &str, params: Value) -> Self {
        Self {
            jsonrpc: "2.0".into(),
            id: Some(id),
            method: Some(method.into()),
            params: Some(params),
            result: None,
            error: None,
        }
    }

    /// A notification.
    pub fn notification(method: &str, params: Value) -> Self {
        Self {
            jsonrpc: "2.0".into(),
            id: None,
            method: Some(method.into()),
            params: Some(params),
            result: None,
            error: None,
        }
    }

    /// A success response.
    pub fn response(id: u64, result: Value) -> Self {
        Self {
            jsonrpc: "2.0".into(),
            id: Some(id),
            method: None,
            params: None,
            result: Some(result),
            error: None,
        }
    }

    /// A failure response.
    pub fn error(id: u64, code: i64, message: impl Into<String>) -> Self {
        Self {
            jsonrpc: "2.0".into(),
            id: Some(id),
            method: None,
            params: None,
            result: None,
            error: Some(RpcError {
                code,
                message: message.into(),
            }),
        }
    }

    /// The line written for it (no newline inside: serde_json escapes them).
    pub fn to_line(&self) -> String {
        let mut line = serde_json::to_string(self).unwrap_or_default();
        line.push('\n');
        line
    }
}
