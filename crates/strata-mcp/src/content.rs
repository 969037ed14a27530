//! A `tools/call` result as the blocks the model sees.
//!
//! Text stays text; images (and image resources) become image blocks; text resources become
//! their text; audio, binary resources and resource links are named in a line of text, since
//! no provider takes them in a tool result. A result with no content but `structuredContent`
//! shows that JSON. Text past the built-in tools' limits (2000 lines or 50 KB) is cut the
//! way `read` cuts a file: the head kept, the rest saved to a temporary file named in the note.

use serde_json::{Value, json};
use strata_tools::truncate::{format_size, truncate_head};
use strata_tools::{ToolContent, ToolLimits, ToolOutput};

/// Maps a `CallToolResult` (as JSON) to the tool output, truncating text to `limits`.
/// `temp_dir` keeps the full text of a truncated result.
pub fn to_output(
    server: &str,
    tool: &str,
    result: &Value,
    limits: &ToolLimits,
    temp_dir: &std::path::Path,
) -> ToolOutput {
    let is_error = result
        .get("isError")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let mut texts: Vec<String> = Vec::new();
    let mut images: Vec<ToolContent> = Vec::new();
    let blocks = result
        .get("content")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    for block in &blocks {
        match block_content(block) {
            Some(ToolContent::Text { text }) => texts.push(text),
            Some(image) => images.push(image),
            None => {}
        }
    }
    if blocks.is_empty()
        && let Some(structured) = result.get("structuredContent")
    {
        texts.push(serde_json::to_string_pretty(structured).unwrap_or_default());
    }
    let joined = texts.join("\n");
    let cut = truncate_head(&joined, limits.max_lines, limits.max_bytes);
    let mut details = json!({"server": server, "tool": tool});
    let text = if cut.truncated {
        let saved = save_full(temp_dir, &joined);
        let where_ = match &saved {
            Ok(path) => format!(" Full output: {}", path.display()),
            Err(error) => format!(" The full output could not be saved: {error}"),
        };
        if let Ok(path) = &saved {
            details["fullOutputPath"] = json!(path.display().to_string());
        }
        details["truncation"] = serde_json::to_value(&cut).unwrap_or(Value::Null);
        format!(
            "{}\n\n[Showing {} of {} lines ({} of {}).{where_}]",
            cut.content,
            cut.output_lines,
            cut.total_lines,
            format_size(cut.output_bytes as u64),
            format_size(cut.total_bytes as u64),
        )
    } else {
        joined
    };
    let mut content = Vec::new();
    if !text.is_empty() || images.is_empty() {
        content.push(ToolContent::text(if text.is_empty() && !is_error {
            "(no output)".to_owned()
        } else {
            text
        }));
    }
    content.extend(images);
    ToolOutput {
        content,
        details,
        is_error,
    }
}

fn block_content(block: &Value) -> Option<ToolContent> {
    let kind = block
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let str_field = |name: &str| block.get(name).and_then(Value::as_str).unwrap_or_default();
    Some(match kind {
        "text" => ToolContent::text(str_field("text")),
        "image" => ToolContent::Image {
            media_type: str_field("mimeType").to_owned(),
            data: str_field("data").to_owned(),
        },
        "audio" => ToolContent::text(format!("[audio {} omitted]", str_field("mimeType"))),
        "resource_link" => {
            ToolContent::text(format!("{}: {}", str_field("name"), str_field("uri")))
        }
        "resource" => {
            let resource = block.get("resource")?;
            let field = |name: &str| resource.get(name).and_then(Value::as_str);
            let mime = field("mimeType").unwrap_or("unknown type");
            if let Some(text) = field("text") {
                ToolContent::text(text)
            } else if mime.starts_with("image/")
                && let Some(blob) = field("blob")
            {
                ToolContent::Image {
                    media_type: mime.to_owned(),
                    data: blob.to_owned(),
                }
            } else {
                ToolContent::text(format!(
                    "[binary resource {} ({mime}) omitted]",
                    field("uri").unwrap_or_default()
                ))
            }
        }
        other => ToolContent::text(format!("[unsupported MCP content {other}]")),
    })
}

fn save_full(temp_dir: &std::path::Path, text: &str) -> std::io::Result<std::path::PathBuf> {
    let file = tempfile::Builder::new()
        .prefix("strata-mcp-")
        .suffix(".txt")
        .tempfile_in(temp_dir)?;
    std::fs::write(file.path(), text)?;
    let (_, path) = file.keep().map_err(|error| error.error)?;
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits() -> ToolLimits {
        ToolLimits::default()
    }

    #[test]
    fn text_images_and_resources_map_to_blocks() {
        let result = json!({"content": [
            {"type": "text", "text": "one"},
            {"type": "image", "data": "AAAA", "mimeType": "image/png"},
            {"type": "resource", "resource": {"uri": "x://a", "text": "resource text"}},
            {"type": "resource", "resource": {"uri": "x://b", "blob": "AA==", "mimeType": "application/zip"}},
            {"type": "resource_link", "uri": "x://c", "name": "c"},
            {"type": "audio", "data": "AA==", "mimeType": "audio/wav"}
        ]});
        let output = to_output("s", "t", &result, &limits(), &std::env::temp_dir());
        assert!(!output.is_error);
        assert_eq!(
            output.content[0].as_text().unwrap(),
            "one\nresource text\n[binary resource x://b (application/zip) omitted]\nc: x://c\n[audio audio/wav omitted]"
        );
        assert_eq!(
            output.content[1],
            ToolContent::Image {
                media_type: "image/png".into(),
                data: "AAAA".into()
            }
        );
    }

    #[test]
    fn errors_and_structured_content_reach_the_model() {
        let error = json!({"isError": true, "content": [{"type": "text", "text": "bad"}]});
        let output = to_output("s", "t", &error, &limits(), &std::env::temp_dir());
        assert!(output.is_error);
        assert_eq!(output.text_content(), "bad");
        let structured = json!({"content": [], "structuredContent": {"sum": 3}});
        let output = to_output("s", "t", &structured, &limits(), &std::env::temp_dir());
        assert_eq!(output.text_content(), "{\n  \"sum\": 3\n}");
    }

    #[test]
    fn long_text_is_cut_like_read_and_saved_whole() {
        let dir = tempfile::tempdir().unwrap();
        let text: String = (0..3000).map(|i| format!("line {i}\n")).collect();
        let result = json!({"content": [{"type": "text", "text": text}]});
        let output = to_output("s", "t", &result, &limits(), dir.path());
        let shown = output.text_content();
        assert!(shown.starts_with("line 0\n"));
        assert!(
            shown.contains("[Showing 2000 of 3001 lines"),
            "{}",
            &shown[shown.len() - 200..]
        );
        let path = output.details["fullOutputPath"].as_str().unwrap();
        assert_eq!(std::fs::read_to_string(path).unwrap(), text);
    }
}
