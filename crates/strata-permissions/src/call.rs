//! What the permission rules see of a tool call.

use std::path::PathBuf;

/// The kind of a call, from what the tool says it touches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallKind {
    /// Reads files only (read, grep, find, ls).
    Read,
    /// Changes files (edit, write).
    Edit,
    /// Runs a shell command (bash).
    Command,
    /// Hands work to a child agent (`task`): the child's own calls meet the same gate, so
    /// the delegation itself is allowed in every mode unless a rule names it.
    Delegate,
    /// Anything else (MCP and extension tools): its effects are unknown.
    Other,
}

impl CallKind {
    /// Whether plan mode refuses the kind (it changes files or runs commands).
    pub fn changes_things(self) -> bool {
        matches!(self, Self::Edit | Self::Command)
    }
}

/// One call as the rules see it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallView<'a> {
    /// The tool's name (`bash`, `read`, `mcp__server__tool`).
    pub tool: &'a str,
    /// What it does.
    pub kind: CallKind,
    /// The shell command of a `bash` call.
    pub command: Option<&'a str>,
    /// The absolute paths a file tool reads or writes.
    pub paths: Vec<PathBuf>,
    /// The URL of a web fetch.
    pub url: Option<&'a str>,
    /// The agent definition a delegation names (`task`'s `agent`).
    pub agent: Option<&'a str>,
}

impl<'a> CallView<'a> {
    /// A call of `tool` of `kind` with nothing else known.
    pub fn new(tool: &'a str, kind: CallKind) -> Self {
        Self {
            tool,
            kind,
            command: None,
            paths: Vec::new(),
            url: None,
            agent: None,
        }
    }

    /// A `bash` call running `command`.
    pub fn command(tool: &'a str, command: &'a str) -> Self {
        Self {
            command: Some(command),
            ..Self::new(tool, CallKind::Command)
        }
    }

    /// A file tool touching `paths`.
    pub fn files(tool: &'a str, kind: CallKind, paths: Vec<PathBuf>) -> Self {
        Self {
            paths,
            ..Self::new(tool, kind)
        }
    }

    /// One line for the user: the tool and what it acts on.
    pub fn summary(&self) -> String {
        if let Some(command) = self.command {
            return format!("{}: {command}", self.tool);
        }
        if let Some(url) = self.url {
            return format!("{}: {url}", self.tool);
        }
        if self.paths.is_empty() {
            return self.tool.to_owned();
        }
        let paths: Vec<String> = self.paths.iter().map(|p| p.display().to_string()).collect();
        format!("{}: {}", self.tool, paths.join(", "))
    }
}
