//! Runs the `read` tool on a file: `cargo run -p strata-tools --example read -- FILE [OFFSET [LIMIT]]`.

use std::process::ExitCode;

use serde_json::json;
use strata_tools::{ToolCall, ToolContent, ToolContext, ToolSet};

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let Some(path) = args.next() else {
        eprintln!("usage: read FILE [OFFSET [LIMIT]]");
        return ExitCode::from(2);
    };
    let mut arguments = json!({ "path": path });
    if let Some(offset) = args.next() {
        arguments["offset"] = json!(offset);
    }
    if let Some(limit) = args.next() {
        arguments["limit"] = json!(limit);
    }
    let cwd = match std::env::current_dir() {
        Ok(cwd) => cwd,
        Err(e) => {
            eprintln!("cannot read the current directory: {e}");
            return ExitCode::FAILURE;
        }
    };
    let ctx = ToolContext::new(cwd);
    let tools = ToolSet::default_set();
    let output = tools
        .execute(ToolCall::new("example", "read", arguments), &ctx, None)
        .await;
    for block in &output.content {
        match block {
            ToolContent::Text { text } => println!("{text}"),
            ToolContent::Image { media_type, data } => {
                println!("<image {media_type}, {} base64 characters>", data.len());
            }
        }
    }
    if !output.details.is_null() {
        eprintln!("details: {}", output.details);
    }
    if output.is_error {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}
