//! `ls` (off by default): one directory's entries, sorted, directories marked with `/`.

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Map, Value, json};

use crate::access::{Access, canonical_path};
use crate::args::{lenient, parse_args, schema_for};
use crate::path::resolve_path;
use crate::tool::{ABORTED_MESSAGE, Tool, ToolCall, ToolContext, ToolOutput, UpdateSender};
use crate::truncate::{format_size, truncate_head};

const DESCRIPTION: &str = "List directory contents. Returns entries sorted alphabetically, with '/' suffix for directories. Includes dotfiles. Output is truncated to 500 entries or 50KB, whichever comes first.";
const DEFAULT_LIMIT: u64 = 500;

/// Arguments of `ls`.
#[derive(Debug, Deserialize, JsonSchema)]
struct LsArgs {
    /// Directory to list (default: current directory)
    #[serde(default)]
    path: Option<String>,
    /// Maximum number of entries to return (default: 500)
    #[serde(default, deserialize_with = "lenient::opt_u64")]
    limit: Option<u64>,
}

/// The `ls` tool.
#[derive(Debug, Default, Clone, Copy)]
pub struct LsTool;

#[async_trait]
impl Tool for LsTool {
    fn name(&self) -> &str {
        "ls"
    }

    fn description(&self) -> &str {
        DESCRIPTION
    }

    fn parameters(&self) -> Value {
        schema_for::<LsArgs>()
    }

    fn prompt_snippet(&self) -> Option<&str> {
        Some("List a directory")
    }

    fn access(&self, arguments: &Value, ctx: &ToolContext) -> Access {
        match parse_args::<LsArgs>("ls", arguments) {
            Ok(args) => {
                let root = resolve_path(args.path.as_deref().unwrap_or("."), &ctx.cwd);
                Access::Read(vec![canonical_path(&root, &ctx.cwd)])
            }
            Err(_) => Access::None,
        }
    }

    async fn execute(
        &self,
        call: ToolCall,
        ctx: &ToolContext,
        _updates: Option<UpdateSender>,
    ) -> ToolOutput {
        let args: LsArgs = match parse_args("ls", &call.arguments) {
            Ok(args) => args,
            Err(error) => return error,
        };
        if ctx.cancel.is_cancelled() {
            return ToolOutput::error(ABORTED_MESSAGE);
        }
        let shown = args.path.clone().unwrap_or_else(|| ".".to_owned());
        let dir = resolve_path(&shown, &ctx.cwd);
        if !dir.exists() {
            return ToolOutput::error(format!("Path not found: {shown}"));
        }
        if !dir.is_dir() {
            return ToolOutput::error(format!("Not a directory: {shown}"));
        }
        let mut reader = match tokio::fs::read_dir(&dir).await {
            Ok(reader) => reader,
            Err(e) => return ToolOutput::error(format!("Cannot read directory {shown}: {e}")),
        };
        let mut entries: Vec<String> = Vec::new();
        loop {
            match reader.next_entry().await {
                Ok(Some(entry)) => {
                    let name = entry.file_name().to_string_lossy().into_owned();
                    // Follows symlinks, as `ls` does for the trailing slash; unreadable entries drop.
                    match tokio::fs::metadata(entry.path()).await {
                        Ok(meta) if meta.is_dir() => entries.push(format!("{name}/")),
                        Ok(_) => entries.push(name),
                        Err(_) => {}
                    }
                }
                Ok(None) => break,
                Err(e) => return ToolOutput::error(format!("Cannot read directory {shown}: {e}")),
            }
            if ctx.cancel.is_cancelled() {
                return ToolOutput::error(ABORTED_MESSAGE);
            }
        }
        if entries.is_empty() {
            return ToolOutput::text("(empty directory)");
        }
        entries.sort_by(|a, b| {
            a.to_lowercase()
                .cmp(&b.to_lowercase())
                .then_with(|| a.cmp(b))
        });
        let limit =
            usize::try_from(args.limit.unwrap_or(DEFAULT_LIMIT).max(1)).unwrap_or(usize::MAX);
        let limit_reached = entries.len() > limit;
        entries.truncate(limit);
        let raw = entries.join("\n");
        let cut = truncate_head(&raw, usize::MAX, ctx.limits.max_bytes);
        let mut output = cut.content.clone();
        let mut details = Map::new();
        let mut notices = Vec::new();
        if limit_reached {
            notices.push(format!(
                "{limit} entries limit reached. Use limit={} for more",
                limit.saturating_mul(2)
            ));
            details.insert("entryLimitReached".to_owned(), json!(limit));
        }
        if cut.truncated {
            notices.push(format!(
                "{} limit reached",
                format_size(ctx.limits.max_bytes as u64)
            ));
            details.insert("truncation".to_owned(), json!(cut));
        }
        if !notices.is_empty() {
            output.push_str(&format!("\n\n[{}]", notices.join(". ")));
        }
        let details = if details.is_empty() {
            Value::Null
        } else {
            Value::Object(details)
        };
        ToolOutput::text(output).with_details(details)
    }
}
