//! `strata tree FILE`: the session tree as text, the current leaf marked.
//!
//! A linear run of entries is printed at one indentation; only a fork (an entry with several
//! children) indents, so a 100,000-entry session with a few branches stays readable.

use std::fmt::Write as _;
use std::io::Write as _;

use strata_session::{
    AgentMessage, ContentBlock, EditEffect, Entry, EntryId, MessageContent, Session,
};

use super::open::open_session;
use crate::args::TreeArgs;

pub fn run(args: &TreeArgs) -> anyhow::Result<()> {
    let session = open_session(&args.file)?;
    let text = render_tree(&session, args.width.max(8));
    std::io::stdout().lock().write_all(text.as_bytes())?;
    Ok(())
}

/// The whole tree as text, one line per entry.
pub fn render_tree(session: &Session, width: usize) -> String {
    let tree = session.tree();
    let leaf = session.leaf();
    let mut out = String::new();
    let header = session.header();
    let _ = writeln!(
        out,
        "session {}  cwd {}  ({} entries)",
        header.id,
        header.cwd,
        tree.len()
    );
    if let Some(name) = tree.name() {
        let _ = writeln!(out, "name: {name}");
    }
    // Depth-first, explicit stack: (entry, prefix for its line, prefix for its children).
    let mut stack: Vec<(EntryId, String, String)> = Vec::new();
    let roots = tree.roots();
    push_children(&mut stack, &roots, "");
    while let Some((id, line_prefix, child_prefix)) = stack.pop() {
        let summary = match tree.entry(&id) {
            Ok(entry) => summarize(&entry, width),
            Err(error) => format!("(unreadable: {error})"),
        };
        let label = tree
            .label_of(&id)
            .map(|l| format!("  [{l}]"))
            .unwrap_or_default();
        let marker = if leaf == Some(&id) { "  ← leaf" } else { "" };
        let _ = writeln!(out, "{line_prefix}{id} {summary}{label}{marker}");
        let children = tree.children(&id);
        push_children(&mut stack, &children, &child_prefix);
    }
    if leaf.is_none() {
        out.push_str("(leaf: before the first entry)\n");
    }
    out
}

/// Pushes `children` so that the first pops first. A single child continues the run at the
/// same indentation; several children each get a connector and their own indentation.
fn push_children(stack: &mut Vec<(EntryId, String, String)>, children: &[&EntryId], prefix: &str) {
    if let [only] = children {
        stack.push(((*only).clone(), prefix.to_owned(), prefix.to_owned()));
        return;
    }
    let last = children.len().saturating_sub(1);
    for (index, child) in children.iter().enumerate().rev() {
        let (connector, continuation) = if index == last {
            ("└─ ", "   ")
        } else {
            ("├─ ", "│  ")
        };
        stack.push((
            (*child).clone(),
            format!("{prefix}{connector}"),
            format!("{prefix}{continuation}"),
        ));
    }
}

/// One line describing an entry, content elided to `width` characters.
fn summarize(entry: &Entry, width: usize) -> String {
    match entry {
        Entry::Message(e) => summarize_message(&e.message, width),
        Entry::Compaction(e) => format!(
            "compaction ({} tokens before, kept from {}): {}",
            e.tokens_before,
            e.first_kept_entry_id.as_ref().map_or("-", |id| id.as_str()),
            elide(&e.summary, width)
        ),
        Entry::BranchSummary(e) => format!("branch summary: {}", elide(&e.summary, width)),
        Entry::ModelChange(e) => format!("model → {}/{}", e.provider, e.model_id),
        Entry::ThinkingLevelChange(e) => format!("thinking → {}", e.thinking_level),
        Entry::Custom(e) => format!("custom {}", e.custom_type),
        Entry::CustomMessage(e) => format!(
            "custom message {}: {}",
            e.custom_type,
            elide(&e.content.text_joined(" "), width)
        ),
        Entry::Label(e) => match &e.label {
            Some(label) => format!("label {} = {label:?}", e.target_id),
            None => format!("label {} cleared", e.target_id),
        },
        Entry::SessionInfo(e) => format!("name: {}", e.name.as_deref().unwrap_or("(cleared)")),
        Entry::System(e) => system_line(
            "",
            e.sections.keys().map(String::as_str).collect(),
            Vec::new(),
            e.tools_added.iter().map(|t| t.name.as_str()).collect(),
            e.tools_removed.iter().map(String::as_str).collect(),
            width,
        ),
        Entry::Usage(e) => format!(
            "usage {}: {} in, {} read, {} written, {} out (${:.4}) {}/{}",
            if e.kind.is_empty() { "-" } else { &e.kind },
            e.usage.input,
            e.usage.cache_read,
            e.usage.cache_write,
            e.usage.output,
            e.usage.cost.total,
            e.provider,
            e.model
        ),
        Entry::ContextEdit(e) => {
            let effects: Vec<String> = e
                .effects()
                .into_iter()
                .map(|(target, effect)| match effect {
                    EditEffect::Omit => format!("omit {target}"),
                    EditEffect::Replace(replacement) => format!(
                        "replace {target}: {}",
                        elide(
                            &replacement
                                .content
                                .as_ref()
                                .map(edit_text)
                                .unwrap_or_default(),
                            width / 2
                        )
                    ),
                })
                .collect();
            if effects.is_empty() {
                "context edit (no effect)".to_owned()
            } else {
                format!("context edit: {}", effects.join(", "))
            }
        }
        Entry::Leaf(e) => format!(
            "leaf moved → {}",
            e.base.parent_id.as_ref().map_or("(root)", |id| id.as_str())
        ),
        Entry::Unknown(e) => format!("{} (unknown type)", e.entry_type),
    }
}

/// The text of a replacement's content (a string, or its text blocks).
fn edit_text(content: &serde_json::Value) -> String {
    match content {
        serde_json::Value::String(text) => text.clone(),
        serde_json::Value::Array(blocks) => blocks
            .iter()
            .filter_map(|block| block["text"].as_str())
            .collect::<Vec<_>>()
            .join(" "),
        _ => String::new(),
    }
}

/// One line for a system message (or an earlier strata `system` entry): what it sets,
/// removes, declares and withdraws.
fn system_line(
    instructions: &str,
    sections: Vec<&str>,
    removed_sections: Vec<&str>,
    tools_added: Vec<&str>,
    tools_removed: Vec<&str>,
    width: usize,
) -> String {
    let mut parts = vec!["system:".to_owned()];
    if !instructions.is_empty() {
        parts.push(format!("\"{}\"", elide(instructions, width / 2)));
    }
    if !sections.is_empty() {
        parts.push(format!("sections [{}]", sections.join(", ")));
    }
    if !removed_sections.is_empty() {
        parts.push(format!("-sections [{}]", removed_sections.join(", ")));
    }
    if !tools_added.is_empty() {
        parts.push(format!("+tools [{}]", tools_added.join(", ")));
    }
    if !tools_removed.is_empty() {
        parts.push(format!("-tools [{}]", tools_removed.join(", ")));
    }
    parts.join(" ")
}

fn summarize_message(message: &AgentMessage, width: usize) -> String {
    match message {
        AgentMessage::System(m) => {
            let (set, removed): (Vec<_>, Vec<_>) =
                m.section_changes().partition(|(_, text)| text.is_some());
            system_line(
                &m.instructions(),
                set.into_iter().map(|(name, _)| name).collect(),
                removed.into_iter().map(|(name, _)| name).collect(),
                m.tools_added().iter().map(|t| t.name.as_str()).collect(),
                m.tools_removed().collect(),
                width,
            )
        }
        AgentMessage::User(m) => format!("user: {}", elide(&content_text(&m.content), width)),
        AgentMessage::Assistant(m) => {
            let calls: Vec<String> = m
                .tool_calls()
                .map(|call| format!("{}({})", call.name, elide(&call.arguments.to_string(), 32)))
                .collect();
            let text: String = m
                .content
                .iter()
                .filter_map(|block| match block {
                    ContentBlock::Text(t) => Some(t.text.as_str()),
                    _ => None,
                })
                .collect::<Vec<_>>()
                .join(" ");
            let mut line = format!("assistant: {}", elide(&text, width));
            if !calls.is_empty() {
                line = format!("assistant → {}", calls.join(", "));
                if !text.is_empty() {
                    let _ = write!(line, " · {}", elide(&text, width / 2));
                }
            }
            if !matches!(m.stop_reason.as_str(), "stop" | "toolUse") {
                let _ = write!(line, " ({})", m.stop_reason.as_str());
            }
            line
        }
        AgentMessage::ToolResult(m) => format!(
            "{} {}: {}",
            if m.is_error {
                "tool error"
            } else {
                "tool result"
            },
            m.tool_name,
            elide(&strata_session::join_text(&m.content, " "), width)
        ),
        AgentMessage::BashExecution(m) => format!(
            "$ {}{}",
            elide(&m.command, width),
            if m.exclude_from_context == Some(true) {
                "  (excluded from context)"
            } else {
                ""
            }
        ),
        AgentMessage::Custom(m) => {
            format!(
                "custom {}: {}",
                m.custom_type,
                elide(&content_text(&m.content), width)
            )
        }
        AgentMessage::BranchSummary(m) => format!("branch summary: {}", elide(&m.summary, width)),
        AgentMessage::CompactionSummary(m) => {
            format!("compaction summary: {}", elide(&m.summary, width))
        }
        AgentMessage::Unknown(_) => format!("{} (unknown role)", message.role()),
    }
}

fn content_text(content: &MessageContent) -> String {
    content.text_joined(" ")
}

/// The text on one line, cut to `width` characters with an ellipsis.
fn elide(text: &str, width: usize) -> String {
    let flat: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() <= width {
        return flat;
    }
    let cut: String = flat.chars().take(width.saturating_sub(1)).collect();
    format!("{cut}…")
}
