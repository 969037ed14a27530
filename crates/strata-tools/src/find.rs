//! `find` (off by default): files and directories whose path matches a glob, .gitignore respected.

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Map, Value, json};

use crate::access::{Access, canonical_path};
use crate::args::{lenient, parse_args, schema_for};
use crate::grep::file_glob;
use crate::path::resolve_path;
use crate::tool::{ABORTED_MESSAGE, Tool, ToolCall, ToolContext, ToolOutput, UpdateSender};
use crate::truncate::{format_size, truncate_head};
use crate::walk::{relative, walk};

const DESCRIPTION: &str = "Search for files by glob pattern. Returns matching file paths relative to the search directory. Respects .gitignore. Output is truncated to 1000 results or 50KB, whichever comes first.";
const DEFAULT_LIMIT: u64 = 1000;

/// Arguments of `find`.
#[derive(Debug, Deserialize, JsonSchema)]
struct FindArgs {
    /// Glob pattern to match files, e.g. '*.ts', '**/*.json', or 'src/**/*.spec.ts'
    pattern: String,
    /// Directory to search in (default: current directory)
    #[serde(default)]
    path: Option<String>,
    /// Maximum number of results (default: 1000)
    #[serde(default, deserialize_with = "lenient::opt_u64")]
    limit: Option<u64>,
}

/// The `find` tool.
#[derive(Debug, Default, Clone, Copy)]
pub struct FindTool;

#[async_trait]
impl Tool for FindTool {
    fn name(&self) -> &str {
        "find"
    }

    fn description(&self) -> &str {
        DESCRIPTION
    }

    fn parameters(&self) -> Value {
        schema_for::<FindArgs>()
    }

    fn prompt_snippet(&self) -> Option<&str> {
        Some("Find files by glob pattern (respects .gitignore)")
    }

    fn access(&self, arguments: &Value, ctx: &ToolContext) -> Access {
        match parse_args::<FindArgs>("find", arguments) {
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
        let args: FindArgs = match parse_args("find", &call.arguments) {
            Ok(args) => args,
            Err(error) => return error,
        };
        if ctx.cancel.is_cancelled() {
            return ToolOutput::error(ABORTED_MESSAGE);
        }
        let shown = args.path.clone().unwrap_or_else(|| ".".to_owned());
        let root = resolve_path(&shown, &ctx.cwd);
        if !root.exists() {
            return ToolOutput::error(format!("Path not found: {shown}"));
        }
        if !root.is_dir() {
            return ToolOutput::error(format!("Not a directory: {shown}"));
        }
        let glob = match file_glob(&args.pattern) {
            Ok(glob) => glob,
            Err(e) => return ToolOutput::error(format!("Invalid glob pattern: {e}")),
        };
        let limit =
            usize::try_from(args.limit.unwrap_or(DEFAULT_LIMIT).max(1)).unwrap_or(usize::MAX);
        let cancel = ctx.cancel.clone();
        let max_bytes = ctx.limits.max_bytes;
        let searched = tokio::task::spawn_blocking(move || {
            let mut results = Vec::new();
            let mut limit_reached = false;
            let completed = walk(&root, &cancel, |entry| {
                let rel = relative(&entry.path, &root);
                if !glob.is_match(&rel) {
                    return true;
                }
                if results.len() >= limit {
                    limit_reached = true;
                    return false;
                }
                results.push(if entry.is_dir { format!("{rel}/") } else { rel });
                true
            });
            completed.then_some((results, limit_reached))
        })
        .await;
        let (results, limit_reached) = match searched {
            Ok(Some(found)) => found,
            Ok(None) => return ToolOutput::error(ABORTED_MESSAGE),
            Err(e) => return ToolOutput::error(format!("find failed: {e}")),
        };
        if results.is_empty() {
            return ToolOutput::text("No files found matching pattern");
        }
        let raw = results.join("\n");
        let cut = truncate_head(&raw, usize::MAX, max_bytes);
        let mut output = cut.content.clone();
        let mut details = Map::new();
        let mut notices = Vec::new();
        if limit_reached {
            notices.push(format!(
                "{limit} results limit reached. Use limit={} for more, or refine pattern",
                limit.saturating_mul(2)
            ));
            details.insert("resultLimitReached".to_owned(), json!(limit));
        }
        if cut.truncated {
            notices.push(format!("{} limit reached", format_size(max_bytes as u64)));
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
