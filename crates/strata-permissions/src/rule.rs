//! One permission rule in Claude Code's syntax, `Tool` or `Tool(specifier)`, and how it
//! matches a call.
//!
//! The forms read (Claude Code's permissions documentation, code.claude.com/docs/en/permissions):
//! - `Bash`, `Bash(npm run test)` (exact), `Bash(git diff:*)` (prefix at a word boundary),
//!   `Bash(npm run *)` / `Bash(git * main)` (`*` matches any characters; a single trailing
//!   ` *` is optional, like `:*`). A compound command (`a && b`, `a; b`, `a | b`) is matched
//!   part by part.
//! - `Read(...)`, `Edit(...)` (also `Write`, `MultiEdit`, `NotebookEdit`, `Grep`, `Glob`,
//!   `LS`) with gitignore-style paths: `//abs/path`, `~/path` (home), `/path` (the project
//!   root of the settings file), `path` or `./path` (the working directory); `*` stays in one
//!   directory, `**` crosses them, a pattern without `/` matches a name at any depth.
//! - `WebFetch(domain:example.com)` (and `*.example.com`), `WebSearch`.
//! - `mcp__server` and `mcp__server__*` (every tool of a server), `mcp__server__tool`,
//!   `mcp__server__get_*`.
//!
//! strata's own tool names (`bash`, `read`, `edit`, `write`, `grep`, `find`, `ls`) are read as
//! the Claude Code tool they correspond to; any other name matches a tool of that exact name.

use std::path::{Path, PathBuf};

use globset::{GlobBuilder, GlobMatcher};
use regex::Regex;

use crate::call::{CallKind, CallView};
use crate::error::RuleError;

/// A parsed rule.
#[derive(Debug, Clone)]
pub struct Rule {
    text: String,
    target: Target,
}

#[derive(Debug, Clone)]
enum Target {
    /// Every call of a kind (`Bash`, `Read`, `Edit`).
    AnyOf(ToolFamily),
    /// `Bash(...)`.
    Command(CommandPattern),
    /// `Read(...)`, `Edit(...)`, …: calls of the family touching a matching path.
    Path(ToolFamily, Vec<GlobMatcher>),
    /// `WebFetch(domain:...)`.
    Domain(String),
    /// `mcp__server`, `mcp__server__*`, `mcp__server__tool`: a glob on the tool name.
    Mcp(GlobMatcher),
    /// `Task` (every delegation) or `Task(agent)` (delegations to that agent definition).
    Delegation(Option<String>),
    /// Any other tool, by exact name.
    Named(String),
    /// A specifier strata cannot evaluate for that tool: the rule never matches.
    Unsupported(String),
}

/// Which calls a tool name in a rule stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ToolFamily {
    Bash,
    /// Every file-reading tool (Claude Code: Read rules apply to Grep, Glob and LS too).
    Read,
    /// One reading tool only.
    ReadTool(&'static str),
    /// Every file-changing tool.
    Edit,
    WebFetch,
    WebSearch,
}

impl ToolFamily {
    fn parse(name: &str) -> Option<Self> {
        Some(match name {
            "Bash" | "bash" => Self::Bash,
            "Read" | "read" => Self::Read,
            "Grep" | "grep" => Self::ReadTool("grep"),
            "Glob" | "find" => Self::ReadTool("find"),
            "LS" | "ls" => Self::ReadTool("ls"),
            "Edit" | "Write" | "MultiEdit" | "NotebookEdit" | "edit" | "write" => Self::Edit,
            "WebFetch" | "webfetch" | "web_fetch" => Self::WebFetch,
            "WebSearch" | "websearch" | "web_search" => Self::WebSearch,
            _ => return None,
        })
    }

    fn covers(self, call: &CallView<'_>) -> bool {
        match self {
            Self::Bash => call.kind == CallKind::Command,
            Self::Read => call.kind == CallKind::Read,
            Self::ReadTool(name) => call.kind == CallKind::Read && call.tool == name,
            Self::Edit => call.kind == CallKind::Edit,
            Self::WebFetch => matches!(call.tool, "webfetch" | "web_fetch" | "WebFetch"),
            Self::WebSearch => matches!(call.tool, "websearch" | "web_search" | "WebSearch"),
        }
    }
}

/// The directories a rule's relative paths start from.
#[derive(Debug, Clone)]
pub struct Bases {
    /// `~`.
    pub home: Option<PathBuf>,
    /// `/path` in a rule: the project root of the settings file.
    pub root: PathBuf,
    /// `path` and `./path`: the working directory.
    pub cwd: PathBuf,
}

impl Rule {
    /// Parses `text` (a rule string as written in `settings.json` or strata's config).
    pub fn parse(text: &str, bases: &Bases) -> Result<Self, RuleError> {
        let trimmed = text.trim();
        let invalid = |why: &str| RuleError {
            rule: text.to_owned(),
            reason: why.to_owned(),
        };
        if trimmed.is_empty() {
            return Err(invalid("empty rule"));
        }
        let (tool, specifier) = match trimmed.find('(') {
            Some(open) => {
                let Some(inner) = trimmed[open + 1..].strip_suffix(')') else {
                    return Err(invalid("a `(` without the closing `)` at the end"));
                };
                (&trimmed[..open], Some(inner))
            }
            None => (trimmed, None),
        };
        if tool.is_empty() || tool.contains(char::is_whitespace) {
            return Err(invalid("the tool name is empty or has spaces"));
        }
        // `Bash()` and `Bash(*)` mean the whole tool, as in Claude Code.
        let specifier = specifier.filter(|s| !s.trim().is_empty() && s.trim() != "*");
        let target = if let Some(rest) = tool.strip_prefix("mcp__") {
            if specifier.is_some() {
                return Err(invalid("MCP rules take no `(...)`"));
            }
            let pattern = if rest.contains("__") {
                tool.to_owned()
            } else {
                format!("{tool}__*")
            };
            if pattern["mcp__".len()..]
                .split("__")
                .next()
                .is_some_and(|server| server.contains('*'))
            {
                return Err(invalid(
                    "`*` may appear only in the tool name, not the server",
                ));
            }
            Target::Mcp(glob(&pattern, false).map_err(|e| invalid(&e))?)
        } else if matches!(tool, "Task" | "task" | "Agent") {
            // Claude Code's delegation tool (`Task`, `Agent` in newer versions) is strata's `task`.
            Target::Delegation(specifier.map(|s| s.trim().to_owned()))
        } else if let Some(family) = ToolFamily::parse(tool) {
            match (family, specifier) {
                (family, None) => Target::AnyOf(family),
                (ToolFamily::Bash, Some(spec)) => {
                    Target::Command(CommandPattern::parse(spec).map_err(|e| invalid(&e))?)
                }
                (ToolFamily::WebFetch, Some(spec)) => match spec.strip_prefix("domain:") {
                    Some(domain) => Target::Domain(domain.trim().to_ascii_lowercase()),
                    None => Target::Unsupported(format!(
                        "WebFetch rules take `domain:...`, not `{spec}`"
                    )),
                },
                (ToolFamily::WebSearch, Some(_)) => {
                    Target::Unsupported("WebSearch rules take no specifier".to_owned())
                }
                (family, Some(spec)) => {
                    Target::Path(family, path_globs(spec, bases).map_err(|e| invalid(&e))?)
                }
            }
        } else {
            match specifier {
                None => Target::Named(tool.to_owned()),
                Some(spec) => Target::Unsupported(format!(
                    "strata cannot evaluate `{spec}` for the tool {tool}"
                )),
            }
        };
        Ok(Self {
            text: trimmed.to_owned(),
            target,
        })
    }

    /// The rule as written.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// Why strata cannot evaluate the rule (it never matches), if so.
    pub fn unsupported(&self) -> Option<&str> {
        match &self.target {
            Target::Unsupported(why) => Some(why),
            _ => None,
        }
    }

    /// Whether the rule covers the whole call. For a compound shell command that is every
    /// part; [`Rule::matches_part`] asks about one.
    pub fn matches(&self, call: &CallView<'_>) -> bool {
        match &self.target {
            Target::Command(pattern) => {
                call.kind == CallKind::Command && {
                    let parts = split_command(call.command.unwrap_or(""));
                    !parts.is_empty() && parts.iter().all(|part| pattern.matches(part))
                }
            }
            _ => self.matches_non_command(call),
        }
    }

    /// Whether the rule covers `part`, one simple command of the call's shell command (for
    /// non-shell calls: the call as a whole).
    pub fn matches_part(&self, call: &CallView<'_>, part: &str) -> bool {
        match &self.target {
            Target::Command(pattern) => call.kind == CallKind::Command && pattern.matches(part),
            _ => self.matches_non_command(call),
        }
    }

    fn matches_non_command(&self, call: &CallView<'_>) -> bool {
        match &self.target {
            Target::AnyOf(family) => family.covers(call),
            Target::Command(_) => false,
            Target::Path(family, globs) => {
                family.covers(call)
                    && !call.paths.is_empty()
                    && call
                        .paths
                        .iter()
                        .any(|path| globs.iter().any(|g| g.is_match(path)))
            }
            Target::Domain(domain) => {
                ToolFamily::WebFetch.covers(call)
                    && call.url.and_then(host_of).is_some_and(|host| {
                        match domain.strip_prefix("*.") {
                            Some(parent) => host.ends_with(&format!(".{parent}")),
                            None => host == *domain,
                        }
                    })
            }
            Target::Mcp(glob) => glob.is_match(call.tool),
            Target::Delegation(agent) => {
                call.kind == CallKind::Delegate
                    && agent.as_deref().is_none_or(|name| call.agent == Some(name))
            }
            Target::Named(name) => call.tool == name,
            Target::Unsupported(_) => false,
        }
    }
}

/// A `Bash(...)` specifier.
#[derive(Debug, Clone)]
enum CommandPattern {
    Exact(String),
    /// `prefix:*`: the prefix alone or followed by a space and anything.
    Prefix(String),
    Wildcard(Regex),
}

impl CommandPattern {
    fn parse(spec: &str) -> Result<Self, String> {
        let spec = spec.trim();
        if let Some(prefix) = spec.strip_suffix(":*") {
            if prefix.contains('*') {
                return Err("`:*` works only at the end of a pattern without other `*`".into());
            }
            return Ok(Self::Prefix(prefix.trim_end().to_owned()));
        }
        if !spec.contains('*') {
            return Ok(Self::Exact(spec.to_owned()));
        }
        // A single trailing ` *` is optional: `ls *` matches `ls` too (and, through the
        // space, not `lsof`).
        let mut source = String::from("^");
        let stars = spec.matches('*').count();
        let (body, optional_tail) = match spec.strip_suffix(" *") {
            Some(body) if stars == 1 => (body, true),
            _ => (spec, false),
        };
        for (i, piece) in body.split('*').enumerate() {
            if i > 0 {
                source.push_str(".*");
            }
            source.push_str(&regex::escape(piece));
        }
        if optional_tail {
            source.push_str("(?: .*)?");
        }
        source.push('$');
        Regex::new(&source)
            .map(Self::Wildcard)
            .map_err(|e| e.to_string())
    }

    fn matches(&self, command: &str) -> bool {
        let command = command.trim();
        match self {
            Self::Exact(exact) => command == exact,
            Self::Prefix(prefix) => {
                command == prefix
                    || command
                        .strip_prefix(prefix.as_str())
                        .is_some_and(|rest| rest.starts_with(char::is_whitespace))
            }
            Self::Wildcard(regex) => regex.is_match(command),
        }
    }
}

/// The simple commands of a shell command line: split at `&&`, `||`, `;`, `|`, `&` and
/// newlines outside quotes. Claude Code does the same so that `Bash(safe:*)` does not allow
/// `safe && other`. Empty parts are dropped.
pub fn split_command(command: &str) -> Vec<String> {
    let mut parts = Vec::new();
    let mut current = String::new();
    let mut quote: Option<char> = None;
    let mut chars = command.chars().peekable();
    while let Some(c) = chars.next() {
        match quote {
            Some(q) => {
                current.push(c);
                if c == q {
                    quote = None;
                } else if c == '\\'
                    && q == '"'
                    && let Some(next) = chars.next()
                {
                    current.push(next);
                }
            }
            None => match c {
                '\'' | '"' => {
                    quote = Some(c);
                    current.push(c);
                }
                '\\' => {
                    current.push(c);
                    if let Some(next) = chars.next() {
                        current.push(next);
                    }
                }
                ';' | '\n' | '|' | '&' => {
                    // `&&`, `||`, `|&` are one separator.
                    if matches!(chars.peek(), Some('&' | '|')) {
                        chars.next();
                    }
                    // `2>&1` and `>&` are redirections, not separators.
                    if c == '&' && current.ends_with('>') {
                        current.push(c);
                        continue;
                    }
                    parts.push(std::mem::take(&mut current));
                }
                _ => current.push(c),
            },
        }
    }
    parts.push(current);
    parts
        .into_iter()
        .map(|p| p.trim().to_owned())
        .filter(|p| !p.is_empty())
        .collect()
}

fn glob(pattern: &str, literal_separator: bool) -> Result<GlobMatcher, String> {
    GlobBuilder::new(pattern)
        .literal_separator(literal_separator)
        .backslash_escape(true)
        .build()
        .map(|g| g.compile_matcher())
        .map_err(|e| e.to_string())
}

/// The absolute globs a gitignore-style path specifier stands for.
fn path_globs(spec: &str, bases: &Bases) -> Result<Vec<GlobMatcher>, String> {
    let spec = spec.trim();
    let (base, rest): (PathBuf, &str) = if let Some(abs) = spec.strip_prefix("//") {
        (PathBuf::from("/"), abs)
    } else if let Some(home) = spec.strip_prefix("~/") {
        let Some(dir) = &bases.home else {
            return Err("`~/` but no home directory is known".into());
        };
        (dir.clone(), home)
    } else if let Some(root) = spec.strip_prefix('/') {
        (bases.root.clone(), root)
    } else {
        (bases.cwd.clone(), spec.strip_prefix("./").unwrap_or(spec))
    };
    let base = base.to_string_lossy().trim_end_matches('/').to_owned();
    let anchored = rest.trim_end_matches('/');
    // gitignore: a pattern without a slash (other than a trailing one) matches at any depth.
    let pattern = if !anchored.contains('/') && !spec.starts_with("./") && base_is_relative(spec) {
        format!("{base}/**/{anchored}")
    } else {
        format!("{base}/{anchored}")
    };
    // A pattern naming a directory covers what is inside it.
    let inside = format!("{pattern}/**");
    Ok(vec![glob(&pattern, true)?, glob(&inside, true)?])
}

fn base_is_relative(spec: &str) -> bool {
    !(spec.starts_with('/') || spec.starts_with("~/"))
}

fn host_of(url: &str) -> Option<String> {
    let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
    let authority = rest.split(['/', '?', '#']).next()?;
    let host = authority.rsplit('@').next()?;
    let host = host.split(':').next()?;
    (!host.is_empty()).then(|| host.to_ascii_lowercase())
}

/// `path` made absolute against `cwd` without touching the file system (`.` and `..`
/// resolved), for matching.
pub fn absolute(path: &Path, cwd: &Path) -> PathBuf {
    use std::path::Component;
    let mut out = PathBuf::new();
    for component in cwd.join(path).components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}
