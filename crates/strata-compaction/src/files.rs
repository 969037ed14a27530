//! Files read and modified, accumulated across compactions and branch summaries.
//!
//! Sources: `read`, `write` and `edit` tool calls with a string `path` (as Pi), plus commands
//! run through the `bash` tool or `!cmd` whose file arguments can be told from their shape
//! (`cat f`, `sed -i … f`, `> f`, `mv a b`, …). Anything cleverer than that is left out rather
//! than guessed.

use std::collections::BTreeSet;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use strata_session::{AgentMessage, ContentBlock};

/// Files seen being read, written and edited.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FileOps {
    /// Paths read.
    pub read: BTreeSet<String>,
    /// Paths written whole.
    pub written: BTreeSet<String>,
    /// Paths edited in place.
    pub edited: BTreeSet<String>,
}

/// The `details` of a compaction or branch summary: `{readFiles, modifiedFiles}`, sorted.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FileLists {
    /// Files only read (never modified).
    pub read_files: Vec<String>,
    /// Files written or edited.
    pub modified_files: Vec<String>,
}

impl FileLists {
    /// The lists as the entry's `details` JSON.
    pub fn to_details(&self) -> Value {
        serde_json::json!({
            "readFiles": self.read_files,
            "modifiedFiles": self.modified_files,
        })
    }

    /// Pi's tags appended to a summary: `\n\n<read-files>…</read-files>\n\n<modified-files>…`,
    /// each only when non-empty; empty when both are.
    pub fn tags(&self) -> String {
        let mut sections = Vec::new();
        if !self.read_files.is_empty() {
            sections.push(format!(
                "<read-files>\n{}\n</read-files>",
                self.read_files.join("\n")
            ));
        }
        if !self.modified_files.is_empty() {
            sections.push(format!(
                "<modified-files>\n{}\n</modified-files>",
                self.modified_files.join("\n")
            ));
        }
        if sections.is_empty() {
            String::new()
        } else {
            format!("\n\n{}", sections.join("\n\n"))
        }
    }
}

impl FileOps {
    /// No files.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds the lists of an earlier compaction or branch summary (`details` written by strata
    /// or Pi; other shapes are ignored, as extension data).
    pub fn add_details(&mut self, details: &Value) {
        let list = |key: &str| {
            details
                .get(key)
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect::<Vec<_>>()
        };
        self.read.extend(list("readFiles"));
        // Pi files earlier modifications under "edited".
        self.edited.extend(list("modifiedFiles"));
    }

    /// Adds what one message shows: tool calls of an assistant, or a `!cmd` run by the user.
    pub fn add_message(&mut self, message: &AgentMessage) {
        match message {
            AgentMessage::Assistant(assistant) => {
                for block in &assistant.content {
                    if let ContentBlock::ToolCall(call) = block {
                        self.add_tool_call(&call.name, &call.arguments);
                    }
                }
            }
            AgentMessage::BashExecution(bash) => self.add_command(&bash.command),
            _ => {}
        }
    }

    /// Adds one tool call by name and arguments.
    pub fn add_tool_call(&mut self, name: &str, arguments: &Value) {
        let path = arguments.get("path").and_then(Value::as_str);
        match (name, path) {
            ("read", Some(path)) if !path.is_empty() => {
                self.read.insert(path.to_owned());
            }
            ("write", Some(path)) if !path.is_empty() => {
                self.written.insert(path.to_owned());
            }
            ("edit", Some(path)) if !path.is_empty() => {
                self.edited.insert(path.to_owned());
            }
            ("bash", _) => {
                if let Some(command) = arguments.get("command").and_then(Value::as_str) {
                    self.add_command(command);
                }
            }
            _ => {}
        }
    }

    /// Adds the files a shell command reads or modifies, where its shape tells.
    pub fn add_command(&mut self, command: &str) {
        for simple in split_commands(command) {
            self.add_simple_command(&simple);
        }
    }

    fn add_simple_command(&mut self, words: &[Word]) {
        let mut args: Vec<&str> = Vec::new();
        for word in words {
            match word {
                Word::Redirect { append: _, target } => {
                    if let Some(target) = target.as_deref().filter(|t| is_path(t)) {
                        self.written.insert(target.to_owned());
                    }
                }
                Word::InputRedirect(target) => {
                    if let Some(target) = target.as_deref().filter(|t| is_path(t)) {
                        self.read.insert(target.to_owned());
                    }
                }
                Word::Plain(word) => args.push(word),
            }
        }
        // Skip `sudo` and leading VAR=value assignments.
        while let Some(first) = args.first() {
            if *first == "sudo" || (first.contains('=') && !first.starts_with('-')) {
                args.remove(0);
            } else {
                break;
            }
        }
        let Some((program, rest)) = args.split_first() else {
            return;
        };
        let program = program.rsplit('/').next().unwrap_or(program);
        let operands: Vec<&str> = rest
            .iter()
            .copied()
            // Option values such as `head -n 5` are numbers, never taken for files.
            .filter(|arg| {
                !arg.starts_with('-')
                    && is_path(arg)
                    && !arg
                        .trim_start_matches('+')
                        .chars()
                        .all(|c| c.is_ascii_digit())
            })
            .collect();
        match program {
            "cat" | "head" | "tail" | "less" | "more" | "wc" | "nl" | "bat" | "file" | "stat"
            | "md5sum" | "sha256sum" | "hexdump" | "xxd" | "diff" => {
                self.read.extend(operands.iter().map(|s| (*s).to_owned()));
            }
            "sed" if rest.iter().any(|arg| arg.starts_with("-i")) => {
                // The first operand is the script unless `-e` gave it.
                let skip = usize::from(!rest.contains(&"-e"));
                self.edited
                    .extend(operands.iter().skip(skip).map(|s| (*s).to_owned()));
            }
            "sed" | "awk" | "grep" | "rg" => {
                // The pattern or script comes first; later operands are files.
                self.read
                    .extend(operands.iter().skip(1).map(|s| (*s).to_owned()));
            }
            "tee" | "touch" | "truncate" | "rm" | "chmod" => {
                self.written
                    .extend(operands.iter().map(|s| (*s).to_owned()));
            }
            "mv" | "cp" if operands.len() >= 2 => {
                if let Some((target, sources)) = operands.split_last() {
                    if program == "mv" {
                        self.written.extend(sources.iter().map(|s| (*s).to_owned()));
                    } else {
                        self.read.extend(sources.iter().map(|s| (*s).to_owned()));
                    }
                    self.written.insert((*target).to_owned());
                }
            }
            _ => {}
        }
    }

    /// Adds everything another set holds.
    pub fn merge(&mut self, other: &FileOps) {
        self.read.extend(other.read.iter().cloned());
        self.written.extend(other.written.iter().cloned());
        self.edited.extend(other.edited.iter().cloned());
    }

    /// Pi's `computeFileLists`: modified = edited ∪ written; read = read − modified; sorted.
    pub fn lists(&self) -> FileLists {
        let modified: BTreeSet<&String> = self.edited.union(&self.written).collect();
        FileLists {
            read_files: self
                .read
                .iter()
                .filter(|path| !modified.contains(path))
                .cloned()
                .collect(),
            modified_files: modified.into_iter().cloned().collect(),
        }
    }
}

/// A word of a simple shell command.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Word {
    Plain(String),
    /// `>`, `>>` (and `1>`, `&>`): its target, `None` when it writes to a descriptor.
    Redirect {
        append: bool,
        target: Option<String>,
    },
    /// `<`: its source.
    InputRedirect(Option<String>),
}

/// Whether a word looks like a file path rather than a glob, variable or descriptor.
fn is_path(word: &str) -> bool {
    !word.is_empty()
        && !word.starts_with('&')
        && !word.contains(['*', '?', '$', '`', '(', ')', '{', '}'])
        && word != "/dev/null"
}

/// Splits a command line into simple commands (at `;`, `&&`, `||`, `|`, newlines), each a
/// list of words with quotes removed. Unbalanced quotes end the current word at the line end.
fn split_commands(line: &str) -> Vec<Vec<Word>> {
    let mut commands = Vec::new();
    let mut words: Vec<Word> = Vec::new();
    let mut current = String::new();
    let mut in_word = false;
    let mut pending: Option<(bool, bool)> = None; // (is_input, append)
    let mut chars = line.chars().peekable();

    let finish_word = |words: &mut Vec<Word>,
                       current: &mut String,
                       in_word: &mut bool,
                       pending: &mut Option<(bool, bool)>| {
        if !*in_word {
            return;
        }
        let word = std::mem::take(current);
        *in_word = false;
        match pending.take() {
            Some((true, _)) => words.push(Word::InputRedirect(Some(word))),
            Some((false, append)) => words.push(Word::Redirect {
                append,
                target: Some(word),
            }),
            None => words.push(Word::Plain(word)),
        }
    };

    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                in_word = true;
                for q in chars.by_ref() {
                    if q == '\'' {
                        break;
                    }
                    current.push(q);
                }
            }
            '"' => {
                in_word = true;
                while let Some(q) = chars.next() {
                    match q {
                        '"' => break,
                        '\\' => {
                            if let Some(escaped) = chars.next() {
                                current.push(escaped);
                            }
                        }
                        _ => current.push(q),
                    }
                }
            }
            '\\' => {
                in_word = true;
                if let Some(escaped) = chars.next() {
                    current.push(escaped);
                }
            }
            ' ' | '\t' => finish_word(&mut words, &mut current, &mut in_word, &mut pending),
            ';' | '\n' | '|' | '&' if !(c == '&' && chars.peek() == Some(&'>')) => {
                finish_word(&mut words, &mut current, &mut in_word, &mut pending);
                while chars.peek().is_some_and(|n| matches!(n, '|' | '&')) {
                    chars.next();
                }
                if let Some((is_input, append)) = pending.take() {
                    words.push(if is_input {
                        Word::InputRedirect(None)
                    } else {
                        Word::Redirect {
                            append,
                            target: None,
                        }
                    });
                }
                if !words.is_empty() {
                    commands.push(std::mem::take(&mut words));
                }
            }
            '>' | '<' | '&' => {
                // A descriptor number right before `>` (`2>`) is not a word.
                if in_word && current.chars().all(|d| d.is_ascii_digit()) {
                    current.clear();
                    in_word = false;
                } else {
                    finish_word(&mut words, &mut current, &mut in_word, &mut pending);
                }
                let mut c = c;
                if c == '&' {
                    // `&>` or `&>>`
                    chars.next();
                    c = '>';
                }
                let is_input = c == '<';
                let mut append = false;
                if !is_input && chars.peek() == Some(&'>') {
                    chars.next();
                    append = true;
                }
                if chars.peek() == Some(&'&') {
                    // `>&2`: to a descriptor.
                    chars.next();
                    while chars.peek().is_some_and(char::is_ascii_digit) {
                        chars.next();
                    }
                    words.push(Word::Redirect {
                        append,
                        target: None,
                    });
                } else {
                    pending = Some((is_input, append));
                }
            }
            _ => {
                in_word = true;
                current.push(c);
            }
        }
    }
    finish_word(&mut words, &mut current, &mut in_word, &mut pending);
    if !words.is_empty() {
        commands.push(words);
    }
    commands
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn ops(command: &str) -> FileLists {
        let mut ops = FileOps::new();
        ops.add_command(command);
        ops.lists()
    }

    #[test]
    fn tool_calls_sort_into_read_and_modified() {
        let mut ops = FileOps::new();
        ops.add_tool_call("read", &json!({"path": "b.rs"}));
        ops.add_tool_call("read", &json!({"path": "a.rs"}));
        ops.add_tool_call("read", &json!({"path": "c.rs"}));
        ops.add_tool_call("edit", &json!({"path": "c.rs"}));
        ops.add_tool_call("write", &json!({"path": "d.rs"}));
        ops.add_tool_call("grep", &json!({"path": "e.rs"}));
        assert_eq!(
            ops.lists(),
            FileLists {
                read_files: vec!["a.rs".into(), "b.rs".into()],
                modified_files: vec!["c.rs".into(), "d.rs".into()],
            }
        );
        assert_eq!(
            ops.lists().tags(),
            "\n\n<read-files>\na.rs\nb.rs\n</read-files>\n\n<modified-files>\nc.rs\nd.rs\n</modified-files>"
        );
        assert_eq!(FileLists::default().tags(), "");
    }

    #[test]
    fn bash_commands_where_the_shape_tells() {
        assert_eq!(ops("cat src/a.rs | head -n 5").read_files, ["src/a.rs"]);
        assert_eq!(
            ops("sed -i 's/a/b/' src/x.rs && cargo test 2>&1").modified_files,
            ["src/x.rs"]
        );
        assert_eq!(ops("echo hi > out.txt").modified_files, ["out.txt"]);
        assert_eq!(
            ops("echo hi >> 'log file.txt'").modified_files,
            ["log file.txt"]
        );
        assert_eq!(
            ops("cargo build 2>/dev/null; ls").modified_files,
            Vec::<String>::new()
        );
        let moved = ops("mv old.rs new.rs");
        assert_eq!(moved.modified_files, ["new.rs", "old.rs"]);
        let copied = ops("cp a.txt b.txt");
        assert_eq!(copied.read_files, ["a.txt"]);
        assert_eq!(copied.modified_files, ["b.txt"]);
        assert_eq!(ops("grep -n foo src/lib.rs").read_files, ["src/lib.rs"]);
        assert_eq!(ops("rm -f *.tmp").modified_files, Vec::<String>::new());
        assert_eq!(ops("wc -l < input.txt").read_files, ["input.txt"]);
        assert_eq!(ops("cargo test &> test.log").modified_files, ["test.log"]);
    }

    #[test]
    fn bash_tool_calls_and_user_commands_count() {
        let mut ops = FileOps::new();
        ops.add_tool_call("bash", &json!({"command": "touch new.md"}));
        let user: AgentMessage = serde_json::from_value(json!({"role":"bashExecution","command":"cat notes.md","output":"","exitCode":0,"cancelled":false,"truncated":false,"timestamp":0})).expect("message");
        ops.add_message(&user);
        assert_eq!(
            ops.lists(),
            FileLists {
                read_files: vec!["notes.md".into()],
                modified_files: vec!["new.md".into()],
            }
        );
    }

    #[test]
    fn earlier_details_accumulate() {
        let mut ops = FileOps::new();
        ops.add_details(&json!({"readFiles": ["a", "b"], "modifiedFiles": ["c"]}));
        ops.add_details(&json!({"custom": true}));
        ops.add_tool_call("edit", &json!({"path": "a"}));
        assert_eq!(
            ops.lists().to_details(),
            json!({"readFiles": ["b"], "modifiedFiles": ["a", "c"]})
        );
    }
}
