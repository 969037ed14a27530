//! Opens a session file and prints its tree: one line per entry, indented by depth, the
//! current leaf marked, labels and the session name shown.
//!
//! `cargo run -p strata-session --example tree -- SESSION.jsonl`

use strata_session::{Entry, EntryId, EntryKind, Session, Tree};

fn describe(tree: &Tree, id: &EntryId) -> String {
    match tree.entry(id) {
        Ok(Entry::Message(message)) => {
            let text = match &*message.message {
                strata_session::AgentMessage::User(user) => user.content.text_joined(" "),
                strata_session::AgentMessage::Assistant(assistant) => {
                    strata_session::join_text(&assistant.content, " ")
                }
                strata_session::AgentMessage::ToolResult(result) => {
                    strata_session::join_text(&result.content, " ")
                }
                strata_session::AgentMessage::BashExecution(bash) => bash.command.clone(),
                other => other.role().to_owned(),
            };
            let text: String = text.chars().take(60).collect();
            format!("{}: {}", message.message.role(), text.replace('\n', " "))
        }
        Ok(Entry::Compaction(compaction)) => {
            format!("compaction ({} tokens before)", compaction.tokens_before)
        }
        Ok(Entry::BranchSummary(summary)) => format!("branch summary from {}", summary.from_id),
        Ok(Entry::Leaf(leaf)) => format!(
            "leaf → {}",
            leaf.base
                .parent_id
                .as_ref()
                .map_or("(start)", |id| id.as_str())
        ),
        Ok(other) => other.type_name().to_owned(),
        Err(error) => format!("unreadable: {error}"),
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let path = std::env::args().nth(1).ok_or("usage: tree SESSION.jsonl")?;
    let opened = Session::open(&path)?;
    for diagnostic in &opened.diagnostics {
        eprintln!("warning: {diagnostic}");
    }
    let tree = opened.session.tree();
    let header = tree.header();
    println!(
        "session {} (v{}) in {}{}",
        header.id,
        tree.version(),
        header.cwd,
        tree.name()
            .map(|name| format!(" — {name}"))
            .unwrap_or_default()
    );
    // Depth-first from each root, iteratively (trees can be deep).
    let mut stack: Vec<(EntryId, usize)> = tree
        .roots()
        .into_iter()
        .rev()
        .map(|id| (id.clone(), 0))
        .collect();
    while let Some((id, depth)) = stack.pop() {
        let marker = if tree.leaf() == Some(&id) { "*" } else { " " };
        let label = tree
            .label_of(&id)
            .map(|label| format!(" [{label}]"))
            .unwrap_or_default();
        let kind = tree.get(&id).map(|entry| entry.kind());
        let dim = if matches!(kind, Some(EntryKind::Label | EntryKind::Leaf)) {
            "·"
        } else {
            ""
        };
        println!(
            "{marker} {}{dim}{id} {}{label}",
            "  ".repeat(depth),
            describe(tree, &id)
        );
        for child in tree.children(&id).into_iter().rev() {
            stack.push((child.clone(), depth + 1));
        }
    }
    Ok(())
}
