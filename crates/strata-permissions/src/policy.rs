//! Rules from every source and the mode, and the decision for one call: deny rules first,
//! then plan mode's refusal, then ask rules, then allow rules, then the mode's default.

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::call::{CallKind, CallView};
use crate::mode::Mode;
use crate::rule::{Rule, split_command};

/// Which list a rule is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum List {
    /// `permissions.allow`.
    Allow,
    /// `permissions.ask`.
    Ask,
    /// `permissions.deny`.
    Deny,
}

impl List {
    /// `allow`, `ask` or `deny`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Allow => "allow",
            Self::Ask => "ask",
            Self::Deny => "deny",
        }
    }
}

/// Where a rule (or a decision without one) came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", content = "path", rename_all = "snake_case")]
pub enum Source {
    /// Claude Code's user settings, `~/.claude/settings.json`.
    ClaudeUser(PathBuf),
    /// Claude Code's project settings, `.claude/settings.json` (trusted projects only).
    ClaudeProject(PathBuf),
    /// Claude Code's local project settings, `.claude/settings.local.json` (trusted only).
    ClaudeProjectLocal(PathBuf),
    /// `.strata/permissions.json`, where "always for this project" answers are kept.
    StrataProject(PathBuf),
    /// strata's own config, `[permissions]` of the named file.
    StrataConfig(String),
    /// An "always for this session" answer.
    Session,
    /// The permission mode itself (no rule matched).
    Mode(Mode),
}

impl std::fmt::Display for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::ClaudeUser(p) | Self::ClaudeProject(p) | Self::ClaudeProjectLocal(p) => {
                write!(f, "{}", p.display())
            }
            Self::StrataProject(p) => write!(f, "{}", p.display()),
            Self::StrataConfig(file) => write!(f, "[permissions] in {file}"),
            Self::Session => f.write_str("this session's answers"),
            Self::Mode(mode) => write!(f, "permission mode {mode}"),
        }
    }
}

/// A rule with its list and source.
#[derive(Debug, Clone)]
pub struct SourcedRule {
    /// The rule.
    pub rule: Rule,
    /// Its list.
    pub list: List,
    /// Where it was written.
    pub source: Source,
}

/// What happens to a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// It runs.
    Allow,
    /// The user is asked first.
    Ask,
    /// It is refused; the model reads why.
    Deny,
}

/// A verdict and what it rests on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Decision {
    /// What happens.
    pub verdict: Verdict,
    /// The rule that decided (`None`: the mode's default).
    pub rule: Option<String>,
    /// Where that rule (or the mode) came from.
    pub source: Source,
    /// One sentence for the model and the user.
    pub reason: String,
}

/// The rules in effect and the mode.
#[derive(Debug, Clone, Default)]
pub struct Policy {
    mode: Mode,
    rules: Vec<SourcedRule>,
    /// Directories edits mode lets file tools change without asking (the project and
    /// `additionalDirectories`).
    roots: Vec<PathBuf>,
    /// What reading the sources left aside, for the start-up notice.
    notes: Vec<String>,
}

impl Policy {
    /// A policy in `mode` with no rules; `roots` are the directories edits mode writes in.
    pub fn new(mode: Mode, roots: Vec<PathBuf>) -> Self {
        Self {
            mode,
            rules: Vec::new(),
            roots,
            notes: Vec::new(),
        }
    }

    /// The mode.
    pub fn mode(&self) -> Mode {
        self.mode
    }

    /// Switches the mode.
    pub fn set_mode(&mut self, mode: Mode) {
        self.mode = mode;
    }

    /// Adds a rule.
    pub fn push(&mut self, rule: Rule, list: List, source: Source) {
        self.rules.push(SourcedRule { rule, list, source });
    }

    /// Adds a directory edits mode writes in.
    pub fn add_root(&mut self, root: PathBuf) {
        if !self.roots.contains(&root) {
            self.roots.push(root);
        }
    }

    /// Records something reading the sources left aside (said at start).
    pub fn note(&mut self, text: String) {
        self.notes.push(text);
    }

    /// What reading the sources left aside.
    pub fn notes(&self) -> &[String] {
        &self.notes
    }

    /// Every rule, in the order read.
    pub fn rules(&self) -> &[SourcedRule] {
        &self.rules
    }

    /// One line per rule (`deny Bash(rm:*) — ~/.claude/settings.json`), then the mode, for
    /// `/context` and `strata config`.
    pub fn describe(&self) -> Vec<String> {
        let mut lines = vec![format!("permission mode: {}", self.mode)];
        for r in &self.rules {
            let mut line = format!("{} {} — {}", r.list.as_str(), r.rule.text(), r.source);
            if let Some(why) = r.rule.unsupported() {
                line.push_str(&format!(" (never matches: {why})"));
            }
            lines.push(line);
        }
        lines
    }

    /// The decision for `call`.
    pub fn decide(&self, call: &CallView<'_>) -> Decision {
        // A shell command is judged part by part: one denied part denies the whole, and an
        // allow needs every part allowed.
        let parts = match call.command {
            Some(command) if call.kind == CallKind::Command => split_command(command),
            _ => vec![String::new()],
        };
        let matching = |list: List, part: &str| {
            self.rules
                .iter()
                .find(|r| r.list == list && r.rule.matches_part(call, part))
        };
        let decided = |verdict, r: &SourcedRule, what: &str| Decision {
            verdict,
            rule: Some(r.rule.text().to_owned()),
            source: r.source.clone(),
            reason: format!("{what} by the rule `{}` ({})", r.rule.text(), r.source),
        };
        if let Some(r) = parts.iter().find_map(|p| matching(List::Deny, p)) {
            return decided(Verdict::Deny, r, "denied");
        }
        if self.mode == Mode::Plan && call.kind.changes_things() {
            return Decision {
                verdict: Verdict::Deny,
                rule: None,
                source: Source::Mode(Mode::Plan),
                reason: "plan mode is read-only: tools that change files or run commands are \
                         refused until the user switches the mode"
                    .to_owned(),
            };
        }
        if let Some(r) = parts.iter().find_map(|p| matching(List::Ask, p)) {
            return decided(Verdict::Ask, r, "to be asked");
        }
        let allowed: Vec<&SourcedRule> = parts
            .iter()
            .filter_map(|p| matching(List::Allow, p))
            .collect();
        if !allowed.is_empty() && allowed.len() == parts.len() {
            return decided(Verdict::Allow, allowed[0], "allowed");
        }
        self.default_for(call)
    }

    fn default_for(&self, call: &CallView<'_>) -> Decision {
        let verdict = match (self.mode, call.kind) {
            (Mode::Auto, _) | (_, CallKind::Read | CallKind::Delegate) => Verdict::Allow,
            (Mode::Edits, CallKind::Edit) if self.inside_roots(&call.paths) => Verdict::Allow,
            _ => Verdict::Ask,
        };
        let reason = match verdict {
            Verdict::Allow => format!("allowed by permission mode {}", self.mode),
            _ => format!(
                "permission mode {} asks before {}",
                self.mode,
                match call.kind {
                    CallKind::Edit => "file edits outside the project",
                    CallKind::Command => "shell commands",
                    _ => "this tool",
                }
                .replace(
                    " outside the project",
                    if self.mode == Mode::Edits {
                        " outside the project"
                    } else {
                        ""
                    }
                )
            ),
        };
        Decision {
            verdict,
            rule: None,
            source: Source::Mode(self.mode),
            reason,
        }
    }

    fn inside_roots(&self, paths: &[PathBuf]) -> bool {
        !paths.is_empty()
            && paths
                .iter()
                .all(|p| self.roots.iter().any(|root| Path::new(p).starts_with(root)))
    }
}
