//! `strata tree FILE`: the session tree as text, the current leaf marked.
//!
//! A linear run of entries is printed at one indentation; only a fork (an entry with several
//! children) indents, so a 100,000-entry session with a few branches stays readable.

use std::fmt::Write as _;
use std::io::Write as _;
use std::rc::Rc;

use strata_runtime::{
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
    // Depth-first, explicit stack. Indentation is a shared list of levels, not a string per
    // entry, and a line shows at most MAX_SHOWN_LEVELS of them: output and memory stay
    // linear in entries however deeply branches nest.
    let delegated = strata_runtime::sessions::delegated_by_entry(session.path());
    let mut stack: Vec<(EntryId, Indent)> = Vec::new();
    let roots = tree.roots();
    push_children(&mut stack, &roots, &None);
    let mut line_prefix = String::new();
    while let Some((id, indent)) = stack.pop() {
        let summary = match tree.entry(&id) {
            Ok(entry) => summarize(&entry, width),
            Err(error) => format!("(unreadable: {error})"),
        };
        let label = tree
            .label_of(&id)
            .map(|l| format!("  [{l}]"))
            .unwrap_or_default();
        let marker = if leaf == Some(&id) { "  ← leaf" } else { "" };
        indent.write_prefix(&mut line_prefix);
        let _ = writeln!(out, "{line_prefix}{id} {summary}{label}{marker}");
        for child in delegated.get(id.as_str()).into_iter().flatten() {
            let _ = writeln!(out, "{line_prefix}  ↳ {}", child.line());
        }
        let children = tree.children(&id);
        push_children(&mut stack, &children, &indent.levels_for_children());
    }
    if leaf.is_none() {
        out.push_str("(leaf: before the first entry)\n");
    }
    out
}

/// Indentation levels shown in full; deeper ones are summarised as a count.
const MAX_SHOWN_LEVELS: usize = 24;

/// One indentation level: whether a sibling below keeps its bar (`│`) running, and the
/// levels above it.
#[derive(Debug)]
struct Level {
    bar: bool,
    depth: usize,
    parent: Levels,
}

type Levels = Option<Rc<Level>>;

/// Where an entry's line sits: the levels above it, and its own connector if it is one of
/// several children.
#[derive(Debug, Clone)]
struct Indent {
    levels: Levels,
    /// `Some(true)` for `├─ ` (more siblings follow), `Some(false)` for `└─ `.
    connector: Option<bool>,
}

impl Indent {
    /// The levels an entry's children continue from: a connector becomes a level.
    fn levels_for_children(&self) -> Levels {
        match self.connector {
            None => self.levels.clone(),
            Some(bar) => Some(Rc::new(Level {
                bar,
                depth: depth(&self.levels) + 1,
                parent: self.levels.clone(),
            })),
        }
    }

    /// Writes the line's prefix into `out` (cleared first).
    fn write_prefix(&self, out: &mut String) {
        out.clear();
        let total = depth(&self.levels);
        let mut shown = Vec::with_capacity(total.min(MAX_SHOWN_LEVELS));
        let mut level = self.levels.as_deref();
        while let Some(l) = level {
            if shown.len() == MAX_SHOWN_LEVELS {
                break;
            }
            shown.push(l.bar);
            level = l.parent.as_deref();
        }
        if total > shown.len() {
            let _ = write!(out, "[+{}] ", total - shown.len());
        }
        for bar in shown.iter().rev() {
            out.push_str(if *bar { "│  " } else { "   " });
        }
        match self.connector {
            Some(true) => out.push_str("├─ "),
            Some(false) => out.push_str("└─ "),
            None => {}
        }
    }
}

fn depth(levels: &Levels) -> usize {
    levels.as_ref().map_or(0, |l| l.depth)
}

/// Pushes `children` so that the first pops first. A single child continues the run at the
/// same indentation; several children each get a connector and their own indentation.
fn push_children(stack: &mut Vec<(EntryId, Indent)>, children: &[&EntryId], levels: &Levels) {
    if let [only] = children {
        let indent = Indent {
            levels: levels.clone(),
            connector: None,
        };
        stack.push(((*only).clone(), indent));
        return;
    }
    let last = children.len().saturating_sub(1);
    for (index, child) in children.iter().enumerate().rev() {
        let indent = Indent {
            levels: levels.clone(),
            connector: Some(index != last),
        };
        stack.push(((*child).clone(), indent));
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
            elide(&strata_runtime::join_text(&m.content, " "), width)
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A session where each of `forks` entries has two children: a short side branch and the
    /// entry that continues, so branches nest `forks` deep.
    fn nested(dir: &std::path::Path, forks: usize) -> Session {
        let path = dir.join(format!("nested-{forks}.jsonl"));
        let mut text = String::from(
            "{\"type\":\"session\",\"version\":3,\"id\":\"s\",\"timestamp\":\"2026-01-01T00:00:00.000Z\",\"cwd\":\"/\"}\n",
        );
        let entry = |id: usize, parent: Option<usize>| {
            let parent = parent.map_or("null".to_owned(), |p| format!("\"{p:08x}\""));
            format!(
                "{{\"type\":\"message\",\"id\":\"{id:08x}\",\"parentId\":{parent},\"timestamp\":\"2026-01-01T00:00:00.000Z\",\"message\":{{\"role\":\"user\",\"content\":\"m\",\"timestamp\":1}}}}\n"
            )
        };
        text.push_str(&entry(1, None));
        for fork in 0..forks {
            let at = 1 + fork * 2;
            text.push_str(&entry(at + 1, Some(at)));
            text.push_str(&entry(at + 2, Some(at)));
        }
        std::fs::write(&path, text).unwrap();
        Session::open(&path).unwrap().session
    }

    #[test]
    fn output_grows_linearly_with_nested_branches() {
        let dir = tempfile::tempdir().unwrap();
        let small = render_tree(&nested(dir.path(), 500), 72).len();
        let large = render_tree(&nested(dir.path(), 2000), 72).len();
        // Four times the entries: about four times the output (sixteen if quadratic).
        let ratio = large as f64 / small as f64;
        assert!(ratio < 4.5, "{small} → {large} bytes, ratio {ratio:.1}");
    }

    #[test]
    fn shallow_forks_draw_their_connectors() {
        let dir = tempfile::tempdir().unwrap();
        let text = render_tree(&nested(dir.path(), 2), 72);
        let lines: Vec<&str> = text.lines().skip(1).collect();
        assert_eq!(
            lines,
            [
                "00000001 user: m",
                "├─ 00000002 user: m",
                "└─ 00000003 user: m",
                "   ├─ 00000004 user: m",
                "   └─ 00000005 user: m  ← leaf",
            ]
        );
    }

    #[test]
    fn deep_levels_are_counted_not_drawn() {
        let dir = tempfile::tempdir().unwrap();
        let text = render_tree(&nested(dir.path(), 40), 72);
        let last = text.lines().last().unwrap();
        assert!(
            last.starts_with(&format!("[+15] {}└─ ", "   ".repeat(24))),
            "{last}"
        );
    }
}
