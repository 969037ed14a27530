//! The sticky note: a short structured note (goal, files changed, open items) kept up to date
//! from hook inputs as the session goes, put at the end of the conversation when it changed,
//! and given as the summary at a compaction instead of re-summarising.

use std::collections::BTreeSet;
use std::fmt::Write as _;

use serde_json::Value;

/// Characters kept of the goal.
const REQUEST_CHARS: usize = 600;

/// Open items kept (the oldest drop off first).
const MAX_OPEN: usize = 12;

/// The note.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Note {
    /// The session's first request.
    pub goal: Option<String>,
    /// Files written or edited.
    pub changed: BTreeSet<String>,
    /// What failed and has not succeeded since (a command, a tool call).
    pub open: Vec<String>,
}

impl Note {
    /// A `UserPromptSubmit` input: the first prompt is the goal. (The latest prompt is not
    /// copied: the model reads it right above the note.)
    pub fn prompt(&mut self, prompt: &str) {
        let prompt = shorten(prompt.trim());
        if self.goal.is_none() && !prompt.is_empty() {
            self.goal = Some(prompt);
        }
    }

    /// A `PostToolUse` input: a file written is changed; a failure opens an item, and the
    /// same call succeeding later closes it.
    pub fn tool(&mut self, input: &Value) {
        let name = input["tool_name"].as_str().unwrap_or_default();
        let tool_input = &input["tool_input"];
        let failed = input["tool_response"]["is_error"]
            .as_bool()
            .unwrap_or(false);
        let what = match name {
            "Bash" => format!("`{}`", tool_input["command"].as_str().unwrap_or_default()),
            _ => format!(
                "{name} {}",
                tool_input["file_path"]
                    .as_str()
                    .map_or_else(|| tool_input.to_string(), str::to_owned)
            ),
        };
        if matches!(name, "Edit" | "Write")
            && !failed
            && let Some(path) = tool_input["file_path"].as_str()
        {
            self.changed.insert(path.to_owned());
        }
        let item = format!("{what} failed");
        self.open.retain(|open| *open != item);
        if failed {
            self.open.push(item);
            if self.open.len() > MAX_OPEN {
                self.open.remove(0);
            }
        }
    }

    /// Files a compaction's params list as modified (the part before the note was kept).
    pub fn add_changed<'a>(&mut self, files: impl IntoIterator<Item = &'a str>) {
        self.changed.extend(files.into_iter().map(str::to_owned));
    }

    /// The note's text.
    pub fn render(&self) -> String {
        let mut out = String::from("# Sticky note\n");
        let _ = writeln!(
            out,
            "Goal: {}",
            self.goal.as_deref().unwrap_or("(not stated yet)")
        );
        let changed: Vec<&str> = self.changed.iter().map(String::as_str).collect();
        let _ = writeln!(
            out,
            "Files changed: {}",
            if changed.is_empty() {
                "none".to_owned()
            } else {
                changed.join(", ")
            }
        );
        if self.open.is_empty() {
            out.push_str("Open items: none\n");
        } else {
            out.push_str("Open items:\n");
            for item in &self.open {
                let _ = writeln!(out, "- {item}");
            }
        }
        out
    }
}

fn shorten(text: &str) -> String {
    if text.chars().count() <= REQUEST_CHARS {
        return text.to_owned();
    }
    let kept: String = text.chars().take(REQUEST_CHARS).collect();
    format!("{kept}…")
}
