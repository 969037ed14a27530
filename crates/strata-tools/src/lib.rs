//! Built-in coding tools for strata: read, bash, edit, write (the default set), and grep,
//! find, ls (off by default).
//!
//! Each tool implements [`Tool`]: a name, a description, a JSON Schema of its arguments
//! (generated from Rust types and byte-stable, since the tool array is part of the cached
//! prompt prefix), and `execute`, which never fails: bad arguments, missing files, non-zero
//! exits and cancellations all come back as error results for the model to read.
//! [`ToolSet`] holds tools by name and runs a batch of calls, independent ones concurrently,
//! with results in call order.
//!
//! ```no_run
//! # async fn demo() {
//! use strata_tools::{ToolCall, ToolContext, ToolSet};
//! let tools = ToolSet::default_set();
//! let ctx = ToolContext::new("/tmp");
//! let call = ToolCall::new("call_1", "read", serde_json::json!({"path": "notes.txt"}));
//! let results = tools.run_batch(vec![call], &ctx).await;
//! println!("{}", results[0].text_content());
//! # }
//! ```

mod access;
mod args;
mod atomic;
mod bash;
mod diff;
mod edit;
mod environment;
mod find;
mod grep;
mod ls;
mod mailbox;
mod output;
mod path;
pub mod processes;
mod read;
mod scan;
mod set;
mod source;
mod tool;
pub mod truncate;
mod walk;
mod write;

pub use access::{Access, canonical_path};
pub use bash::{BashTool, CommandRun, SANDBOX_NOTE};
pub use diff::unified_diff;
pub use edit::EditTool;
pub use environment::ToolEnvironment;
pub use find::FindTool;
pub use grep::GrepTool;
pub use ls::LsTool;
pub use mailbox::{Inbox, Mailbox, Posted, Posting};
pub use path::resolve_path;
pub use read::{ReadTool, image_mime_type};
pub use set::{ALL_TOOL_NAMES, DEFAULT_TOOL_NAMES, ToolSet, builtin, run_batch};
pub use source::ToolSource;
pub use tokio_util::sync::CancellationToken;
pub use tool::{
    ABORTED_MESSAGE, CallerSession, DEFAULT_BASH_TIMEOUT, DEFAULT_MAX_OUTPUT_FILE_BYTES, Sandbox,
    Tool, ToolCall, ToolContent, ToolContext, ToolDefinition, ToolLimits, ToolOutput, ToolSettings,
    UpdateSender,
};
pub use walk::project_files;
pub use write::WriteTool;
