//! A readable view of a context for a person: each message with its entry id and size.

use std::fmt::Write as _;

use strata_session::{AgentMessage, ContentBlock, MessageContent, StopReason};

use crate::flatten::Context;
use crate::system::{Sections, SnapshotSource, SystemPatch};

/// Longest preview of a message's text, in characters.
const PREVIEW_CHARS: usize = 72;

/// The context as text: a header (leaf, model, thinking), the system snapshot and tools, then
/// one line per message with its entry id, role, size in bytes and a preview, and each system
/// patch where it happened.
pub fn to_text(context: &Context) -> String {
    let mut out = String::new();
    let leaf = context.leaf.as_ref().map_or("(none)", |leaf| leaf.as_str());
    let model = context.model.as_ref().map_or_else(
        || "(none)".to_owned(),
        |m| format!("{}/{}", m.provider, m.model_id),
    );
    let _ = writeln!(
        out,
        "leaf {leaf}  model {model}  thinking {}",
        context.thinking_level
    );

    match &context.system.source {
        SnapshotSource::None => out.push_str("system: none\n"),
        source => {
            let origin = match source {
                SnapshotSource::SystemEntry(id) => format!("system entry {id}"),
                SnapshotSource::Compaction(id) => format!("compaction {id}"),
                SnapshotSource::FoldedBeforeCompaction(id) => {
                    format!("system entries folded before compaction {id}")
                }
                SnapshotSource::None => String::new(),
            };
            let _ = writeln!(
                out,
                "system snapshot from {origin}: {}",
                describe_sections(&context.system.snapshot)
            );
        }
    }
    if !context.tools.is_empty() {
        let names: Vec<String> = context
            .tools
            .all()
            .iter()
            .map(|tool| {
                if tool.is_live() {
                    tool.name.clone()
                } else {
                    format!("{} (removed)", tool.name)
                }
            })
            .collect();
        let _ = writeln!(out, "tools: {}", names.join(", "));
    }

    let _ = writeln!(out, "messages: {}", context.messages.len());
    let mut patches = context.system.patches.iter().peekable();
    let width = context.messages.len().to_string().len();
    for (index, message) in context.messages.iter().enumerate() {
        while let Some(patch) = patches.next_if(|patch| patch.after_messages <= index) {
            write_patch(&mut out, patch);
        }
        let size = serde_json::to_string(message.message.as_ref()).map_or(0, |json| json.len());
        let _ = writeln!(
            out,
            "{:>width$}  {}  {:<17} {:>7}  {}",
            index + 1,
            message.entry_id,
            message.message.role(),
            format_size(size),
            preview(&message.message),
        );
    }
    for patch in patches {
        write_patch(&mut out, patch);
    }
    let total: usize = context
        .messages
        .iter()
        .map(|message| serde_json::to_string(message.message.as_ref()).map_or(0, |json| json.len()))
        .sum();
    let _ = writeln!(
        out,
        "total {} in {} messages",
        format_size(total),
        context.messages.len()
    );
    out
}

fn write_patch(out: &mut String, patch: &SystemPatch) {
    let mut parts = Vec::new();
    if !patch.sections.is_empty() {
        parts.push(describe_sections(&patch.sections));
    }
    for tool in &patch.tools_added {
        parts.push(format!(
            "+{}",
            tool.get("name")
                .and_then(|name| name.as_str())
                .unwrap_or("?")
        ));
    }
    for name in &patch.tools_removed {
        parts.push(format!("-{name}"));
    }
    let _ = writeln!(
        out,
        "   ── system patch {}: {}",
        patch.entry_id,
        parts.join("; ")
    );
}

fn describe_sections(sections: &Sections) -> String {
    if sections.is_empty() {
        return "(no sections)".to_owned();
    }
    sections
        .iter()
        .map(|(name, text)| format!("{} ({})", name.as_str(), format_size(text.len())))
        .collect::<Vec<_>>()
        .join(", ")
}

fn format_size(bytes: usize) -> String {
    match bytes {
        0..1024 => format!("{bytes} B"),
        1024..1_048_576 => format!("{:.1} KiB", bytes as f64 / 1024.0),
        _ => format!("{:.1} MiB", bytes as f64 / 1_048_576.0),
    }
}

/// First line of the message's text (tool calls and images named), cut to a short width.
fn preview(message: &AgentMessage) -> String {
    let text = match message {
        AgentMessage::User(user) => content_preview(&user.content),
        AgentMessage::Custom(custom) => {
            format!(
                "[{}] {}",
                custom.custom_type,
                content_preview(&custom.content)
            )
        }
        AgentMessage::Assistant(assistant) => {
            let text = blocks_preview(&assistant.content);
            match (&assistant.stop_reason, &assistant.error_message) {
                (_, Some(error)) => format!("({}: {error}) {text}", assistant.stop_reason.as_str()),
                (StopReason::Aborted | StopReason::Error | StopReason::Length, None) => {
                    format!("({}) {text}", assistant.stop_reason.as_str())
                }
                _ => text,
            }
        }
        AgentMessage::ToolResult(result) => {
            let status = if result.is_error { "error" } else { "ok" };
            format!(
                "{} {status}: {}",
                result.tool_name,
                blocks_preview(&result.content)
            )
        }
        AgentMessage::BashExecution(bash) => {
            let mut notes = Vec::new();
            if bash.exclude_from_context == Some(true) {
                notes.push("excluded from context".to_owned());
            }
            if bash.cancelled {
                notes.push("cancelled".to_owned());
            } else if let Some(Some(code)) = bash.exit_code
                && code != 0
            {
                notes.push(format!("exit {code}"));
            }
            if notes.is_empty() {
                format!("$ {}", bash.command)
            } else {
                format!("$ {} ({})", bash.command, notes.join(", "))
            }
        }
        AgentMessage::BranchSummary(summary) => summary.summary.clone(),
        AgentMessage::CompactionSummary(summary) => summary.summary.clone(),
        AgentMessage::System(system) => system.instructions(),
        AgentMessage::Unknown(_) => String::new(),
    };
    shorten(&text)
}

fn content_preview(content: &MessageContent) -> String {
    match content {
        MessageContent::Text(text) => text.clone(),
        MessageContent::Blocks(blocks) => blocks_preview(blocks),
    }
}

fn blocks_preview(blocks: &[ContentBlock]) -> String {
    let parts: Vec<String> = blocks
        .iter()
        .map(|block| match block {
            ContentBlock::Text(text) => text.text.clone(),
            ContentBlock::Thinking(thinking) => format!("[thinking {} B]", thinking.thinking.len()),
            ContentBlock::Image(image) => format!("[image {}]", image.mime_type),
            ContentBlock::ToolCall(call) => format!("[call {}]", call.name),
            ContentBlock::Unknown(_) => "[block]".to_owned(),
        })
        .collect();
    parts.join(" ")
}

fn shorten(text: &str) -> String {
    let line = text
        .lines()
        .find(|line| !line.trim().is_empty())
        .unwrap_or("")
        .trim();
    let mut chars = line.chars();
    let short: String = chars.by_ref().take(PREVIEW_CHARS).collect();
    if chars.next().is_some() || text.trim().lines().count() > 1 {
        format!("{short}…")
    } else {
        short
    }
}
