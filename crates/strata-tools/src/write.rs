//! `write`: creates or overwrites a file atomically, creating parent directories.

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::access::{Access, canonical_path};
use crate::args::{parse_args, schema_for};
use crate::atomic::atomic_write;
use crate::path::resolve_path;
use crate::tool::{ABORTED_MESSAGE, Tool, ToolCall, ToolContext, ToolOutput, UpdateSender};

const DESCRIPTION: &str = "Write content to a file. Creates the file if it doesn't exist, overwrites it if it does. Automatically creates parent directories.";

/// Arguments of `write`.
#[derive(Debug, Deserialize, JsonSchema)]
struct WriteArgs {
    /// Path to the file to write (relative or absolute)
    #[serde(alias = "file_path")]
    path: String,
    /// Content to write to the file
    content: String,
}

/// The `write` tool.
#[derive(Debug, Default, Clone, Copy)]
pub struct WriteTool;

#[async_trait]
impl Tool for WriteTool {
    fn name(&self) -> &str {
        "write"
    }

    fn description(&self) -> &str {
        DESCRIPTION
    }

    fn parameters(&self) -> Value {
        schema_for::<WriteArgs>()
    }

    fn prompt_snippet(&self) -> Option<&str> {
        Some("Create a file or replace it whole")
    }

    fn prompt_guidelines(&self) -> &[&str] {
        &["Use write for new files or complete rewrites; use edit for changes."]
    }

    fn access(&self, arguments: &Value, ctx: &ToolContext) -> Access {
        match parse_args::<WriteArgs>("write", arguments) {
            Ok(args) => Access::Write(vec![canonical_path(
                &resolve_path(&args.path, &ctx.cwd),
                &ctx.cwd,
            )]),
            Err(_) => Access::None,
        }
    }

    async fn execute(
        &self,
        call: ToolCall,
        ctx: &ToolContext,
        _updates: Option<UpdateSender>,
    ) -> ToolOutput {
        let args: WriteArgs = match parse_args("write", &call.arguments) {
            Ok(args) => args,
            Err(error) => return error,
        };
        if ctx.cancel.is_cancelled() {
            return ToolOutput::error(ABORTED_MESSAGE);
        }
        let path = resolve_path(&args.path, &ctx.cwd);
        if path.is_dir() {
            return ToolOutput::error(format!("Could not write {}: it is a directory.", args.path));
        }
        let bytes = args.content.len();
        let created = !path.exists();
        let write_path = path.clone();
        let content = args.content;
        let result = tokio::task::spawn_blocking(move || {
            if let Some(parent) = write_path.parent() {
                std::fs::create_dir_all(parent)?;
            }
            atomic_write(&write_path, content.as_bytes())
        })
        .await;
        match result {
            Ok(Ok(())) => {
                ToolOutput::text(format!("Successfully wrote {bytes} bytes to {}", args.path))
                    .with_details(json!({ "bytes": bytes, "created": created }))
            }
            Ok(Err(e)) => ToolOutput::error(format!("Could not write {}: {e}", args.path)),
            Err(e) => ToolOutput::error(format!("Could not write {}: {e}", args.path)),
        }
    }
}
