//! Agent definitions: Markdown files with a front matter block (`name`, `description`,
//! `tools`, `model`, …) and the child's prompt as the body — the shape Claude Code's subagents
//! and `pi-subagents` use — read from strata's, Claude Code's and Pi's agent folders.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::pricing::SpawnMode;

/// One agent definition.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentDefinition {
    /// The name the model asks for (`agent` in the delegation tool's arguments).
    pub name: String,
    /// When to use it, shown to the model in the tool's description.
    pub description: String,
    /// The tools the child may call, as strata names them; `None`: every tool of the parent.
    pub tools: Option<Vec<String>>,
    /// Tool names the file lists that strata has no tool for (Claude Code's `WebFetch`, …).
    pub unknown_tools: Vec<String>,
    /// The model (`provider/id`, a bare id, or Claude Code's aliases `sonnet`/`opus`/`haiku`);
    /// `None` (or `inherit`): the parent's.
    pub model: Option<String>,
    /// The child's instructions (the body).
    pub prompt: String,
    /// How the child starts when the file says (`defaultContext` in pi-subagents, `mode`).
    pub mode: Option<SpawnMode>,
    /// Most turns the child may take (`maxTurns`).
    pub max_turns: Option<u32>,
    /// The file it was read from.
    pub path: PathBuf,
    /// Where it was found.
    pub scope: Scope,
}

/// Where a definition was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Scope {
    /// A user folder (`~/.config/strata/agents`, `~/.claude/agents`, `~/.pi/agent/agents`).
    User,
    /// A project folder (`.strata/agents`, `.claude/agents`, `.pi/agents`), read only when the
    /// project is trusted.
    Project,
}

/// A definition file that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DefinitionError {
    /// The file could not be read.
    #[error("{path}: cannot read: {message}")]
    Read {
        /// The file.
        path: PathBuf,
        /// What the system said.
        message: String,
    },
    /// No `---` front matter block, or one never closed.
    #[error("{path}: {message}")]
    FrontMatter {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// A field is missing or has a value strata cannot use.
    #[error("{path}:{line}: field `{field}`: {message}")]
    Field {
        /// The file.
        path: PathBuf,
        /// The line of the field (1-based; the front matter's first line when missing).
        line: usize,
        /// The field.
        field: String,
        /// What is wrong.
        message: String,
    },
}

/// Claude Code's tool names, as strata's built-ins name them.
fn strata_tool_name(name: &str) -> Option<&'static str> {
    Some(match name.trim().to_ascii_lowercase().as_str() {
        "read" => "read",
        "write" => "write",
        "edit" | "multiedit" => "edit",
        "bash" => "bash",
        "grep" => "grep",
        "glob" | "find" => "find",
        "ls" => "ls",
        "task" | "agent" => crate::tool::TOOL_NAME,
        _ => return None,
    })
}

/// A front matter value: one scalar, or a list (`[a, b]` inline or `- a` lines).
#[derive(Debug, Clone, PartialEq)]
enum Value {
    Scalar(String),
    List(Vec<String>),
    /// A nested mapping (pi-subagents' `runner:`); kept only to be ignored.
    Block,
}

/// Parses one definition file's text.
pub fn parse(path: &Path, text: &str, scope: Scope) -> Result<AgentDefinition, DefinitionError> {
    let front_error = |message: &str| DefinitionError::FrontMatter {
        path: path.to_path_buf(),
        message: message.to_owned(),
    };
    let mut lines = text.lines().enumerate();
    match lines.next() {
        Some((_, first)) if first.trim_end() == "---" => {}
        _ => {
            return Err(front_error(
                "no front matter: the file must start with a `---` line",
            ));
        }
    }
    let mut fields: BTreeMap<String, (usize, Value)> = BTreeMap::new();
    let mut current: Option<String> = None;
    let mut body_start = None;
    for (index, line) in lines.by_ref() {
        let number = index + 1;
        if line.trim_end() == "---" {
            body_start = Some(index + 1);
            break;
        }
        if line.trim().is_empty() || line.trim_start().starts_with('#') {
            continue;
        }
        let indented = line.starts_with(' ') || line.starts_with('\t');
        if indented {
            // `- item` under a key with no inline value; anything else nested is ignored.
            let item = line.trim();
            if let (Some(rest), Some(key)) = (item.strip_prefix("- "), current.as_ref())
                && let Some((_, value)) = fields.get_mut(key)
            {
                match value {
                    Value::List(items) => items.push(unquote(rest.trim())),
                    Value::Block => *value = Value::List(vec![unquote(rest.trim())]),
                    Value::Scalar(_) => {}
                }
            }
            continue;
        }
        let Some((key, value)) = line.split_once(':') else {
            return Err(DefinitionError::Field {
                path: path.to_path_buf(),
                line: number,
                field: line.trim().to_owned(),
                message: "expected `key: value`".into(),
            });
        };
        let key = key.trim().to_owned();
        let value = value.trim();
        let parsed = if value.is_empty() {
            Value::Block
        } else if let Some(inner) = value.strip_prefix('[').and_then(|v| v.strip_suffix(']')) {
            Value::List(
                inner
                    .split(',')
                    .map(|item| unquote(item.trim()))
                    .filter(|item| !item.is_empty())
                    .collect(),
            )
        } else {
            Value::Scalar(unquote(value))
        };
        current = Some(key.clone());
        fields.insert(key, (number, parsed));
    }
    let Some(body_start) = body_start else {
        return Err(front_error(
            "the front matter is never closed by a `---` line",
        ));
    };
    let field_error = |field: &str, line: usize, message: &str| DefinitionError::Field {
        path: path.to_path_buf(),
        line,
        field: field.to_owned(),
        message: message.to_owned(),
    };
    let scalar = |field: &str| -> Result<Option<(usize, String)>, DefinitionError> {
        match fields.get(field) {
            None => Ok(None),
            Some((line, Value::Scalar(text))) => Ok(Some((*line, text.clone()))),
            Some((line, _)) => Err(field_error(field, *line, "expected a single value")),
        }
    };
    let required = |field: &str| -> Result<String, DefinitionError> {
        match scalar(field)? {
            Some((_, text)) if !text.trim().is_empty() => Ok(text),
            Some((line, _)) => Err(field_error(field, line, "is empty")),
            None => Err(field_error(field, 1, "is missing")),
        }
    };
    let name = required("name")?;
    if !name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.')
    {
        let line = fields.get("name").map_or(1, |(line, _)| *line);
        return Err(field_error(
            "name",
            line,
            "use letters, digits, `-`, `_` or `.` (the model names the agent by it)",
        ));
    }
    let description = required("description")?;

    let (tools, unknown_tools) = match fields.get("tools") {
        None => (None, Vec::new()),
        Some((line, value)) => {
            let listed: Vec<String> = match value {
                Value::Scalar(text) => text
                    .split(',')
                    .map(|item| item.trim().to_owned())
                    .filter(|item| !item.is_empty())
                    .collect(),
                Value::List(items) => items.clone(),
                Value::Block => {
                    return Err(field_error(
                        "tools",
                        *line,
                        "expected a comma-separated list or a YAML list of tool names",
                    ));
                }
            };
            let mut known = Vec::new();
            let mut unknown = Vec::new();
            for item in listed {
                // Claude Code allows `Bash(git *)`-style rules; the tool is what precedes `(`.
                let bare = item.split('(').next().unwrap_or(&item).trim();
                match strata_tool_name(bare) {
                    Some(name) if !known.iter().any(|k| k == name) => known.push(name.to_owned()),
                    Some(_) => {}
                    None if bare.starts_with("mcp__") => unknown.push(item.clone()),
                    // pi-subagents lists strata-style lowercase names already; an unknown one
                    // is kept by name so a tool of that name (MCP, extension) still matches.
                    None if bare.chars().all(|c| c.is_ascii_lowercase() || c == '_') => {
                        known.push(bare.to_owned());
                    }
                    None => unknown.push(item.clone()),
                }
            }
            (Some(known), unknown)
        }
    };
    let model = scalar("model")?
        .map(|(_, model)| model)
        .filter(|model| !model.eq_ignore_ascii_case("inherit") && !model.is_empty());
    let mode = match scalar("mode")?.or(scalar("defaultContext")?) {
        None => None,
        Some((line, text)) => Some(text.parse::<SpawnMode>().map_err(|_| {
            field_error(
                if fields.contains_key("mode") {
                    "mode"
                } else {
                    "defaultContext"
                },
                line,
                "expected `fork`, `fresh` or `auto`",
            )
        })?),
    };
    let max_turns = match scalar("maxTurns")? {
        None => None,
        Some((line, text)) => Some(
            text.parse::<u32>()
                .ok()
                .filter(|turns| *turns > 0)
                .ok_or_else(|| field_error("maxTurns", line, "expected a positive number"))?,
        ),
    };
    let prompt = text
        .lines()
        .skip(body_start)
        .collect::<Vec<_>>()
        .join("\n")
        .trim()
        .to_owned();
    Ok(AgentDefinition {
        name,
        description,
        tools,
        unknown_tools,
        model,
        prompt,
        mode,
        max_turns,
        path: path.to_path_buf(),
        scope,
    })
}

fn unquote(value: &str) -> String {
    let bytes = value.as_bytes();
    if bytes.len() >= 2
        && ((bytes[0] == b'"' && bytes[bytes.len() - 1] == b'"')
            || (bytes[0] == b'\'' && bytes[bytes.len() - 1] == b'\''))
    {
        return value[1..value.len() - 1].to_owned();
    }
    value.to_owned()
}

/// The folders agent definitions are read from, lowest priority first: a later folder's
/// definition replaces an earlier one of the same name.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AgentFolders {
    /// `(folder, scope)`, lowest priority first.
    pub folders: Vec<(PathBuf, Scope)>,
}

impl AgentFolders {
    /// The standard folders: the user's Claude Code, Pi and strata folders, then — only when
    /// `trusted` — the project's (`.claude/agents`, `.pi/agents`, `.strata/agents` in `cwd`).
    /// `home` is the user's home; `config_dir` strata's (`~/.config/strata`).
    pub fn standard(
        home: Option<&Path>,
        config_dir: Option<&Path>,
        cwd: &Path,
        trusted: bool,
    ) -> Self {
        let mut folders = Vec::new();
        if let Some(home) = home {
            folders.push((home.join(".claude/agents"), Scope::User));
            folders.push((home.join(".pi/agent/agents"), Scope::User));
        }
        if let Some(config) = config_dir {
            folders.push((config.join("agents"), Scope::User));
        }
        // A project's agent file is an instruction to the model: read it only once the user
        // trusts the project.
        if trusted {
            folders.push((cwd.join(".claude/agents"), Scope::Project));
            folders.push((cwd.join(".pi/agents"), Scope::Project));
            folders.push((cwd.join(".strata/agents"), Scope::Project));
        }
        Self { folders }
    }
}

/// The definitions found, and the files that could not be used (each error names its file).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Loaded {
    /// By name, the highest-priority definition of each.
    pub agents: BTreeMap<String, AgentDefinition>,
    /// Files skipped, with why.
    pub errors: Vec<DefinitionError>,
}

impl Loaded {
    /// The definition called `name`.
    pub fn get(&self, name: &str) -> Option<&AgentDefinition> {
        self.agents.get(name)
    }
}

/// Reads every `*.md` file under the folders (recursively; missing folders are skipped).
pub fn load(folders: &AgentFolders) -> Loaded {
    let mut loaded = Loaded::default();
    for (folder, scope) in &folders.folders {
        let mut files = Vec::new();
        collect_markdown(folder, 0, &mut files);
        files.sort();
        for file in files {
            // pi-subagents' workflow files share the folder but define no agent.
            if file.to_string_lossy().ends_with(".chain.md") {
                continue;
            }
            let text = match std::fs::read_to_string(&file) {
                Ok(text) => text,
                Err(error) => {
                    loaded.errors.push(DefinitionError::Read {
                        path: file,
                        message: error.to_string(),
                    });
                    continue;
                }
            };
            match parse(&file, &text, *scope) {
                Ok(definition) => {
                    loaded.agents.insert(definition.name.clone(), definition);
                }
                Err(error) => loaded.errors.push(error),
            }
        }
    }
    loaded
}

fn collect_markdown(dir: &Path, depth: usize, out: &mut Vec<PathBuf>) {
    if depth > 4 {
        return;
    }
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.filter_map(Result::ok) {
        let path = entry.path();
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        if kind.is_dir() {
            if !entry.file_name().to_string_lossy().starts_with('.') {
                collect_markdown(&path, depth + 1, out);
            }
        } else if path.extension().is_some_and(|ext| ext == "md") {
            out.push(path);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn claude_code_file_reads_with_tools_mapped() {
        let text = "---\nname: code-reviewer\ndescription: Reviews code. Use after edits.\ntools: Read, Grep, Glob, Bash, WebFetch\nmodel: sonnet\n---\n\nYou are a senior reviewer.\n";
        let def = parse(Path::new("r.md"), text, Scope::User).unwrap();
        assert_eq!(def.name, "code-reviewer");
        assert_eq!(
            def.tools.as_deref(),
            Some(
                &[
                    "read".to_owned(),
                    "grep".into(),
                    "find".into(),
                    "bash".into()
                ][..]
            )
        );
        assert_eq!(def.unknown_tools, ["WebFetch"]);
        assert_eq!(def.model.as_deref(), Some("sonnet"));
        assert_eq!(def.prompt, "You are a senior reviewer.");
    }

    #[test]
    fn pi_subagents_file_reads_and_ignores_nested_blocks() {
        let text = "---\nname: scout\ndescription: Fast recon\ntools: read, grep, find, ls, contact_supervisor\nthinking: low\ndefaultContext: fork\nrunner:\n  type: external-cli\n---\nScout.\n";
        let def = parse(Path::new("scout.md"), text, Scope::Project).unwrap();
        assert_eq!(
            def.tools.unwrap(),
            ["read", "grep", "find", "ls", "contact_supervisor"]
        );
        assert_eq!(def.mode, Some(SpawnMode::Fork));
        assert_eq!(def.model, None);
    }

    #[test]
    fn yaml_list_of_tools_and_inherit_model() {
        let text =
            "---\nname: a\ndescription: b\ntools:\n  - Read\n  - Edit\nmodel: inherit\n---\n";
        let def = parse(Path::new("a.md"), text, Scope::User).unwrap();
        assert_eq!(def.tools.unwrap(), ["read", "edit"]);
        assert_eq!(def.model, None);
    }

    #[test]
    fn errors_name_the_file_and_field() {
        let missing = parse(Path::new("x/a.md"), "---\nname: a\n---\nbody", Scope::User);
        assert_eq!(
            missing.unwrap_err().to_string(),
            "x/a.md:1: field `description`: is missing"
        );
        let bad = parse(
            Path::new("b.md"),
            "---\nname: b\ndescription: d\nmaxTurns: lots\n---\n",
            Scope::User,
        );
        assert_eq!(
            bad.unwrap_err().to_string(),
            "b.md:4: field `maxTurns`: expected a positive number"
        );
        let open = parse(Path::new("c.md"), "---\nname: c\n", Scope::User);
        assert!(open.unwrap_err().to_string().contains("never closed"));
        let none = parse(Path::new("d.md"), "just text", Scope::User);
        assert!(
            none.unwrap_err()
                .to_string()
                .starts_with("d.md: no front matter")
        );
        let spaced = parse(
            Path::new("e.md"),
            "---\nname: two words\ndescription: d\n---\n",
            Scope::User,
        );
        assert!(
            spaced
                .unwrap_err()
                .to_string()
                .starts_with("e.md:2: field `name`")
        );
    }

    #[test]
    fn project_folders_are_read_only_when_trusted_and_win_over_user_ones() {
        let root = tempfile::tempdir().unwrap();
        let home = root.path().join("home");
        let cwd = root.path().join("project");
        let write = |dir: &Path, body: &str| {
            std::fs::create_dir_all(dir).unwrap();
            std::fs::write(
                dir.join("scout.md"),
                format!("---\nname: scout\ndescription: d\n---\n{body}"),
            )
            .unwrap();
        };
        write(&home.join(".claude/agents"), "user");
        write(&cwd.join(".strata/agents"), "project");
        std::fs::write(cwd.join(".strata/agents/broken.md"), "---\nname: x\n---\n").unwrap();

        let untrusted = load(&AgentFolders::standard(Some(&home), None, &cwd, false));
        assert_eq!(untrusted.get("scout").unwrap().prompt, "user");
        assert!(untrusted.errors.is_empty(), "the project was not read");

        let trusted = load(&AgentFolders::standard(Some(&home), None, &cwd, true));
        let scout = trusted.get("scout").unwrap();
        assert_eq!(
            (scout.prompt.as_str(), scout.scope),
            ("project", Scope::Project)
        );
        assert_eq!(trusted.errors.len(), 1);
        assert!(
            trusted.errors[0]
                .to_string()
                .contains("broken.md:1: field `description`")
        );
    }
}
