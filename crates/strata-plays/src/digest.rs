//! What a conversation did, read syntactically from Pi's message shapes (no model): the
//! user's requests, files read and changed, commands with their exit codes, errors, and the
//! last answer of each task. The lossless and the precompute plays write it as a summary;
//! a digest written before is read back from its own text, so repeated compactions merge
//! instead of nesting.

use std::collections::{BTreeSet, HashMap};
use std::fmt::Write as _;

use serde_json::Value;

/// The first line of a digest's text (how a digest recognises its own earlier summary).
pub const HEADER: &str = "# Session digest (syntactic, no model call)";

/// Characters kept of one error or one task outcome (the rest is in the session file).
const EXCERPT: usize = 400;

/// What the messages did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Digest {
    /// A summary that was not a digest (kept word for word).
    pub earlier: Option<String>,
    /// The user's requests, in order, whole.
    pub requests: Vec<String>,
    /// Files read.
    pub read: BTreeSet<String>,
    /// Files written or edited.
    pub changed: BTreeSet<String>,
    /// Commands run, in order: `command → exit N` (or `→ error`).
    pub commands: Vec<String>,
    /// Errors tools reported, with the tool: first lines only.
    pub errors: Vec<String>,
    /// Other tool calls: `name {arguments}`.
    pub actions: Vec<String>,
    /// The model's last words at the end of each task (only with outcomes on).
    pub outcomes: Vec<String>,
}

impl Digest {
    /// A digest continuing `previous` (a summary a compaction wrote before: a digest's text
    /// is read back, anything else is kept whole).
    pub fn continuing(previous: Option<&str>) -> Self {
        let Some(previous) = previous else {
            return Self::default();
        };
        // The agent appends Pi's file tags to every summary; the lists come back as params.
        let text = previous
            .split("\n\n<read-files>")
            .next()
            .unwrap_or(previous)
            .split("\n\n<modified-files>")
            .next()
            .unwrap_or(previous);
        if !text.starts_with(HEADER) {
            return Self {
                earlier: Some(text.trim().to_owned()),
                ..Self::default()
            };
        }
        let mut digest = Self::default();
        let mut section = "";
        let mut earlier = String::new();
        for line in text.lines().skip(1) {
            if let Some(name) = line.strip_prefix("## ") {
                section = match name {
                    "Earlier summary" => "earlier",
                    "User requests" => "requests",
                    "Files read" => "read",
                    "Files changed" => "changed",
                    "Commands" => "commands",
                    "Errors" => "errors",
                    "Other actions" => "actions",
                    "Task outcomes" => "outcomes",
                    _ => "",
                };
                continue;
            }
            if section == "earlier" {
                earlier.push_str(line);
                earlier.push('\n');
                continue;
            }
            let Some(item) = line.strip_prefix("- ") else {
                // A request spanning lines continues its item.
                if let (Some(last), "requests", Some(rest)) =
                    (digest.requests.last_mut(), section, line.strip_prefix("  "))
                {
                    last.push('\n');
                    last.push_str(rest);
                }
                continue;
            };
            let item = item.to_owned();
            match section {
                "requests" => digest.requests.push(item),
                "read" => {
                    digest.read.insert(item);
                }
                "changed" => {
                    digest.changed.insert(item);
                }
                "commands" => digest.commands.push(item),
                "errors" => digest.errors.push(item),
                "actions" => digest.actions.push(item),
                "outcomes" => digest.outcomes.push(item),
                _ => {}
            }
        }
        let earlier = earlier.trim();
        digest.earlier = (!earlier.is_empty()).then(|| earlier.to_owned());
        digest
    }

    /// Reads `messages` (`memory/compaction` params: `{entryId, message}` or bare messages),
    /// oldest first. With `outcomes`, the model's last text before each new request (and at
    /// the end) is kept as that task's outcome.
    pub fn absorb(&mut self, messages: &[Value], outcomes: bool) {
        let mut calls: HashMap<String, (String, Value)> = HashMap::new();
        let mut last_answer: Option<String> = None;
        for item in messages {
            let message = item.get("message").unwrap_or(item);
            match message["role"].as_str().unwrap_or_default() {
                "user" => {
                    if let Some(answer) = last_answer.take().filter(|_| outcomes) {
                        self.outcomes.push(excerpt(&answer));
                    }
                    let text = text_of(&message["content"]);
                    if !text.trim().is_empty() {
                        self.requests.push(text.trim().to_owned());
                    }
                }
                "assistant" => {
                    let mut said = String::new();
                    for block in message["content"].as_array().into_iter().flatten() {
                        match block["type"].as_str() {
                            Some("toolCall") => {
                                let id = block["id"].as_str().unwrap_or_default().to_owned();
                                let name = block["name"].as_str().unwrap_or_default().to_owned();
                                calls.insert(id, (name, block["arguments"].clone()));
                            }
                            Some("text") => said.push_str(block["text"].as_str().unwrap_or("")),
                            _ => {}
                        }
                    }
                    if !said.trim().is_empty() {
                        last_answer = Some(said.trim().to_owned());
                    }
                }
                "toolResult" => {
                    let id = message["toolCallId"].as_str().unwrap_or_default();
                    let (name, arguments) = calls.remove(id).unwrap_or_else(|| {
                        let name = message["toolName"].as_str().unwrap_or("tool").to_owned();
                        (name, Value::Null)
                    });
                    self.result(&name, &arguments, message);
                }
                "bashExecution" => {
                    let command = message["command"].as_str().unwrap_or_default();
                    let exit = message["exitCode"].as_i64();
                    self.commands
                        .push(command_line(command, exit, exit.is_none()));
                }
                _ => {}
            }
        }
        if let Some(answer) = last_answer.filter(|_| outcomes) {
            self.outcomes.push(excerpt(&answer));
        }
    }

    fn result(&mut self, name: &str, arguments: &Value, message: &Value) {
        let path = arguments["path"]
            .as_str()
            .or_else(|| arguments["file_path"].as_str())
            .map(str::to_owned);
        let is_error = message["isError"].as_bool().unwrap_or(false);
        match (name, path) {
            ("read", Some(path)) => {
                self.read.insert(path);
            }
            ("edit" | "write", Some(path)) if !is_error => {
                self.changed.insert(path);
            }
            ("bash", _) => {
                let command = arguments["command"].as_str().unwrap_or_default();
                let exit = message["details"]["exitCode"].as_i64();
                self.commands.push(command_line(command, exit, is_error));
            }
            ("edit" | "write", Some(_)) => {}
            _ => self
                .actions
                .push(format!("{name} {}", compact_json(arguments))),
        }
        if is_error {
            let text = text_of(&message["content"]);
            let first: Vec<&str> = text.lines().take(3).collect();
            self.errors
                .push(format!("{name}: {}", excerpt(&first.join(" / "))));
        }
    }

    /// The digest as a summary text.
    pub fn render(&self) -> String {
        let mut out = String::from(HEADER);
        out.push('\n');
        if let Some(earlier) = &self.earlier {
            let _ = write!(out, "\n## Earlier summary\n{earlier}\n");
        }
        let lists: [(&str, Vec<&String>); 7] = [
            ("User requests", self.requests.iter().collect()),
            ("Files read", self.read.iter().collect()),
            ("Files changed", self.changed.iter().collect()),
            ("Commands", self.commands.iter().collect()),
            ("Errors", self.errors.iter().collect()),
            ("Other actions", self.actions.iter().collect()),
            ("Task outcomes", self.outcomes.iter().collect()),
        ];
        for (title, items) in lists {
            if items.is_empty() {
                continue;
            }
            let _ = write!(out, "\n## {title}\n");
            for item in items {
                // A multi-line request stays one item: its next lines are indented.
                let _ = writeln!(out, "- {}", item.replace('\n', "\n  "));
            }
        }
        out
    }
}

/// The text of Pi content: a string, or the text blocks joined.
pub fn text_of(content: &Value) -> String {
    match content {
        Value::String(text) => text.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .filter(|b| b["type"] == "text")
            .filter_map(|b| b["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

fn command_line(command: &str, exit: Option<i64>, is_error: bool) -> String {
    let command = command.replace('\n', "; ");
    match (exit, is_error) {
        (Some(code), _) => format!("`{command}` → exit {code}"),
        (None, true) => format!("`{command}` → error"),
        (None, false) => format!("`{command}` → exit 0"),
    }
}

fn compact_json(value: &Value) -> String {
    excerpt(&value.to_string())
}

/// The first [`EXCERPT`] characters, on one line.
fn excerpt(text: &str) -> String {
    let line = text.replace('\n', " ");
    if line.chars().count() <= EXCERPT {
        return line;
    }
    let kept: String = line.chars().take(EXCERPT).collect();
    format!("{kept}…")
}
