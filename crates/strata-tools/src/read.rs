//! `read`: a file's text (a window of lines, truncated with a note) or an image.

use std::path::Path;

use async_trait::async_trait;
use base64::Engine;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::access::{Access, canonical_path};
use crate::args::{lenient, parse_args, schema_for};
use crate::path::resolve_path;
use crate::scan::{Scan, Window, scan_lines};
use crate::tool::{
    ABORTED_MESSAGE, Tool, ToolCall, ToolContent, ToolContext, ToolOutput, UpdateSender,
};
use crate::truncate::{TruncatedBy, format_size, truncate_head};

const DESCRIPTION: &str = "Read the contents of a file. Supports text files and images (jpg, png, gif, webp), which are returned as image attachments. Text output is truncated to 2000 lines or 50KB, whichever comes first. Use offset/limit for large files; when you need the whole file, continue with offset until it is complete.";

/// Arguments of `read`.
#[derive(Debug, Deserialize, JsonSchema)]
struct ReadArgs {
    /// Path to the file to read (relative or absolute)
    #[serde(alias = "file_path")]
    path: String,
    /// Line number to start reading from (1-indexed)
    #[serde(default, deserialize_with = "lenient::opt_u64")]
    offset: Option<u64>,
    /// Maximum number of lines to read
    #[serde(default, deserialize_with = "lenient::opt_u64")]
    limit: Option<u64>,
}

/// The `read` tool.
#[derive(Debug, Default, Clone, Copy)]
pub struct ReadTool;

#[async_trait]
impl Tool for ReadTool {
    fn name(&self) -> &str {
        "read"
    }

    fn description(&self) -> &str {
        DESCRIPTION
    }

    fn parameters(&self) -> Value {
        schema_for::<ReadArgs>()
    }

    fn prompt_snippet(&self) -> Option<&str> {
        Some("Read a file (text or image)")
    }

    fn prompt_guidelines(&self) -> &[&str] {
        &["Read files with read rather than cat or sed."]
    }

    fn access(&self, arguments: &Value, ctx: &ToolContext) -> Access {
        match parse_args::<ReadArgs>("read", arguments) {
            Ok(args) => Access::Read(vec![canonical_path(
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
        let args: ReadArgs = match parse_args("read", &call.arguments) {
            Ok(args) => args,
            Err(error) => return error,
        };
        if ctx.cancel.is_cancelled() {
            return ToolOutput::error(ABORTED_MESSAGE);
        }
        tokio::select! {
            biased;
            () = ctx.cancel.cancelled() => ToolOutput::error(ABORTED_MESSAGE),
            output = read(&args, ctx) => output,
        }
    }
}

async fn read(args: &ReadArgs, ctx: &ToolContext) -> ToolOutput {
    let path = resolve_path(&args.path, &ctx.cwd);
    let meta = match tokio::fs::metadata(&path).await {
        Ok(meta) => meta,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return ToolOutput::error(format!("File not found: {}", args.path));
        }
        Err(e) => return ToolOutput::error(format!("Cannot read {}: {e}", args.path)),
    };
    if meta.is_dir() {
        return ToolOutput::error(format!(
            "{} is a directory, not a file. List it with ls (or bash: ls -la).",
            args.path
        ));
    }
    if !meta.is_file() {
        return ToolOutput::error(format!(
            "{} is not a regular file (a device, pipe or socket); read only reads files.",
            args.path
        ));
    }
    if let Some(mime) = sniff_image(&path).await {
        if meta.len() > ctx.limits.max_image_bytes {
            return image_too_large(mime, meta.len(), ctx.limits.max_image_bytes);
        }
        return match tokio::fs::read(&path).await {
            Ok(bytes) => image_output(mime, &bytes),
            Err(e) => ToolOutput::error(format!("Cannot read {}: {e}", args.path)),
        };
    }
    let offset = args.offset.unwrap_or(1);
    let start = usize::try_from(offset.saturating_sub(1)).unwrap_or(usize::MAX);
    let window_lines = args
        .limit
        .map_or(usize::MAX, |l| usize::try_from(l).unwrap_or(usize::MAX));
    let limits = ctx.limits.clone();
    let scan_path = path.clone();
    let scanned = tokio::task::spawn_blocking(move || {
        let file = std::fs::File::open(&scan_path)?;
        // One line past each limit is enough to know that the limit cut something.
        scan_lines(
            file,
            start,
            window_lines,
            limits.max_lines.saturating_add(1),
            limits.max_bytes,
        )
    })
    .await;
    match scanned {
        Ok(Ok(Scan::Text(window))) => text_output(args, &path, &window, start, ctx),
        Ok(Ok(Scan::Binary)) => ToolOutput::error(format!(
            "{} is a binary file ({}); it cannot be shown as text. Inspect it with bash (e.g. file, xxd | head).",
            args.path,
            format_size(meta.len())
        )),
        Ok(Err(e)) => ToolOutput::error(format!("Cannot read {}: {e}", args.path)),
        Err(e) => ToolOutput::error(format!("Cannot read {}: {e}", args.path)),
    }
}

/// The image type of the file at `path`, from its first bytes.
async fn sniff_image(path: &Path) -> Option<&'static str> {
    use tokio::io::AsyncReadExt;
    let mut file = tokio::fs::File::open(path).await.ok()?;
    let mut head = [0u8; 16];
    let mut filled = 0;
    while filled < head.len() {
        match file.read(&mut head[filled..]).await {
            Ok(0) | Err(_) => break,
            Ok(n) => filled += n,
        }
    }
    image_mime_type(&head[..filled])
}

/// The image type of `bytes`, by magic number, for the formats providers accept.
pub fn image_mime_type(bytes: &[u8]) -> Option<&'static str> {
    if bytes.starts_with(b"\x89PNG\r\n\x1a\n") {
        Some("image/png")
    } else if bytes.starts_with(&[0xFF, 0xD8, 0xFF]) {
        Some("image/jpeg")
    } else if bytes.starts_with(b"GIF87a") || bytes.starts_with(b"GIF89a") {
        Some("image/gif")
    } else if bytes.len() >= 12 && &bytes[..4] == b"RIFF" && &bytes[8..12] == b"WEBP" {
        Some("image/webp")
    } else {
        None
    }
}

fn image_too_large(mime: &str, size: u64, max_bytes: u64) -> ToolOutput {
    ToolOutput::text(format!(
        "Read image file [{mime}]\n[Image omitted: it is {}, over the {} inline image limit. Make a smaller copy with bash (e.g. ImageMagick's convert -resize) and read that.]",
        format_size(size),
        format_size(max_bytes)
    ))
    .with_details(json!({ "mimeType": mime, "bytes": size }))
}

fn image_output(mime: &str, bytes: &[u8]) -> ToolOutput {
    let details = json!({ "mimeType": mime, "bytes": bytes.len() });
    ToolOutput {
        content: vec![
            ToolContent::text(format!("Read image file [{mime}]")),
            ToolContent::Image {
                media_type: mime.to_owned(),
                data: base64::engine::general_purpose::STANDARD.encode(bytes),
            },
        ],
        details,
        is_error: false,
    }
}

fn text_output(
    args: &ReadArgs,
    path: &Path,
    window: &Window,
    start: usize,
    ctx: &ToolContext,
) -> ToolOutput {
    let total = window.total_lines;
    if total == 0 {
        return ToolOutput::text("(empty file)");
    }
    let offset = args.offset.unwrap_or(1);
    if start >= total {
        return ToolOutput::error(format!(
            "Offset {offset} is beyond end of file ({total} lines total)"
        ));
    }
    let end = match args.limit {
        Some(limit) => start
            .saturating_add(usize::try_from(limit).unwrap_or(usize::MAX))
            .min(total),
        None => total,
    };
    let kept: Vec<String> = window
        .kept
        .iter()
        .map(|line| String::from_utf8_lossy(line).into_owned())
        .collect();
    let limits = &ctx.limits;
    let mut cut = truncate_head(&kept.join("\n"), limits.max_lines, limits.max_bytes);
    // The scan kept only a little past the limits; report the window's real size.
    cut.total_lines = end - start;
    cut.total_bytes = usize::try_from(window.window_bytes).unwrap_or(usize::MAX);
    let first = start + 1;
    if cut.first_line_exceeds_limit {
        let line_size = format_size(window.first_line_bytes);
        let text = format!(
            "[Line {first} is {line_size}, exceeds {} limit. Use bash: sed -n '{first}p' {} | head -c {}]",
            format_size(limits.max_bytes as u64),
            path.display(),
            limits.max_bytes
        );
        return ToolOutput::text(text).with_details(json!({ "truncation": cut }));
    }
    if cut.truncated {
        let last = first + cut.output_lines - 1;
        let next = last + 1;
        let note = match cut.truncated_by {
            Some(TruncatedBy::Bytes) => format!(
                "[Showing lines {first}-{last} of {total} ({} limit). Use offset={next} to continue.]",
                format_size(limits.max_bytes as u64)
            ),
            _ => {
                format!("[Showing lines {first}-{last} of {total}. Use offset={next} to continue.]")
            }
        };
        let text = format!("{}\n\n{note}", cut.content);
        return ToolOutput::text(text).with_details(json!({ "truncation": cut }));
    }
    if end < total {
        let remaining = total - end;
        let next = end + 1;
        return ToolOutput::text(format!(
            "{}\n\n[{remaining} more lines in file. Use offset={next} to continue.]",
            cut.content
        ));
    }
    ToolOutput::text(cut.content)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn magic_bytes_pick_the_image_type() {
        assert_eq!(image_mime_type(b"\x89PNG\r\n\x1a\nrest"), Some("image/png"));
        assert_eq!(
            image_mime_type(&[0xFF, 0xD8, 0xFF, 0xE0]),
            Some("image/jpeg")
        );
        assert_eq!(image_mime_type(b"GIF89a..."), Some("image/gif"));
        assert_eq!(image_mime_type(b"RIFF\0\0\0\0WEBPVP8 "), Some("image/webp"));
        assert_eq!(image_mime_type(b"RIFF\0\0\0\0WAVEfmt "), None);
        assert_eq!(image_mime_type(b"hello"), None);
    }
}
