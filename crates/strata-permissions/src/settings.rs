//! Reading rules: Claude Code's `settings.json` files as they are, and strata's own
//! `[permissions]` config section.
//!
//! Read, in this order (the order matters only for the source a decision names; deny wins
//! wherever it is written):
//! 1. `~/.claude/settings.json` (Claude Code user settings);
//! 2. for a trusted project only: `.claude/settings.json`, `.claude/settings.local.json`;
//! 3. `.strata/permissions.json` (trusted only; "always for this project" answers land here,
//!    in Claude Code's shape);
//! 4. strata's config section, [`PermissionsConfig`], loaded by the host.
//!
//! The mode: the one asked for on the command line, else strata's config, else Claude Code's
//! `permissions.defaultMode` (local, project, user), else `auto`.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::error::SettingsError;
use crate::mode::Mode;
use crate::policy::{List, Policy, Source};
use crate::rule::{Bases, Rule};

/// `permissions` of a Claude Code `settings.json` (other keys are ignored).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClaudePermissions {
    /// Calls that run without asking.
    #[serde(default)]
    pub allow: Vec<String>,
    /// Calls that are refused.
    #[serde(default)]
    pub deny: Vec<String>,
    /// Calls that are always asked.
    #[serde(default)]
    pub ask: Vec<String>,
    /// `default`, `acceptEdits`, `plan`, `bypassPermissions`, `auto`, `dontAsk`.
    #[serde(default)]
    pub default_mode: Option<String>,
    /// More directories file tools may work in.
    #[serde(default)]
    pub additional_directories: Vec<String>,
}

#[derive(Debug, Deserialize)]
struct ClaudeSettingsFile {
    #[serde(default)]
    permissions: ClaudePermissions,
}

/// strata's own `[permissions]` section (TOML in `config.toml`; the host deserializes it and
/// passes it to [`load`]). Rules use the same strings as Claude Code, with strata's tool
/// names accepted too (`bash(git diff:*)`, `read(./src/**)`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PermissionsConfig {
    /// `plan`, `ask`, `edits` or `auto`.
    #[serde(default)]
    pub mode: Option<Mode>,
    /// Calls that run without asking.
    #[serde(default)]
    pub allow: Vec<String>,
    /// Calls that are refused.
    #[serde(default)]
    pub deny: Vec<String>,
    /// Calls that are always asked.
    #[serde(default)]
    pub ask: Vec<String>,
    /// Whether Claude Code's `settings.json` files are read (default true).
    #[serde(default)]
    pub read_claude_settings: Option<bool>,
    /// The bash sandbox.
    #[serde(default)]
    pub sandbox: crate::sandbox::SandboxConfig,
}

/// Where to look.
#[derive(Debug, Clone)]
pub struct Places {
    /// The user's home (`~/.claude`, `~/` in rules).
    pub home: Option<PathBuf>,
    /// The project root (`.claude/`, `.strata/`, `/path` in project rules).
    pub project: PathBuf,
    /// The working directory (`path` in rules).
    pub cwd: PathBuf,
    /// Whether the project's own files may set rules (strata's trust).
    pub project_trusted: bool,
}

impl Places {
    /// The places for `cwd` as its own project, with `$HOME`.
    pub fn for_project(project: &Path, trusted: bool) -> Self {
        let project = std::fs::canonicalize(project).unwrap_or_else(|_| project.to_path_buf());
        Self {
            home: std::env::var_os("HOME").map(PathBuf::from),
            cwd: project.clone(),
            project,
            project_trusted: trusted,
        }
    }

    /// `.strata/permissions.json`, where project answers are kept.
    pub fn project_answers(&self) -> PathBuf {
        self.project.join(".strata/permissions.json")
    }
}

/// Reads `permissions` from a Claude Code settings file; `None` when there is no file.
pub fn read_claude_settings(path: &Path) -> Result<Option<ClaudePermissions>, SettingsError> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(source) => {
            return Err(SettingsError::Io {
                path: path.to_path_buf(),
                source,
            });
        }
    };
    let mut de = serde_json::Deserializer::from_str(&text);
    let file: ClaudeSettingsFile =
        serde_path_to_error::deserialize(&mut de).map_err(|e| SettingsError::Json {
            path: path.to_path_buf(),
            message: e.to_string(),
        })?;
    Ok(Some(file.permissions))
}

/// Makes the [`Source`] of a settings file from its path.
type SourceOf = fn(PathBuf) -> Source;

/// Builds the policy from every source; `flag_mode` (the command line) wins over the rest.
/// `strata` holds strata's `[permissions]` sections, lowest layer first, each with the file
/// it came from: every layer's rules apply (as Claude Code's levels do), the last layer that
/// sets `mode` or `read_claude_settings` decides it.
pub fn load(
    places: &Places,
    strata: &[(&PermissionsConfig, &str)],
    flag_mode: Option<Mode>,
) -> Result<Policy, SettingsError> {
    let mut policy = Policy::new(Mode::Auto, vec![places.project.clone()]);
    let mut claude_mode = None;
    let read_claude = strata
        .iter()
        .rev()
        .find_map(|(config, _)| config.read_claude_settings)
        .unwrap_or(true);
    let mut files: Vec<(PathBuf, SourceOf)> = Vec::new();
    if read_claude && let Some(home) = &places.home {
        files.push((home.join(".claude/settings.json"), Source::ClaudeUser));
    }
    if places.project_trusted {
        if read_claude {
            files.push((
                places.project.join(".claude/settings.json"),
                Source::ClaudeProject,
            ));
            files.push((
                places.project.join(".claude/settings.local.json"),
                Source::ClaudeProjectLocal,
            ));
        }
        files.push((places.project_answers(), Source::StrataProject));
    }
    let bases = Bases {
        home: places.home.clone(),
        root: places.project.clone(),
        cwd: places.cwd.clone(),
    };
    for (path, source) in files {
        let Some(perms) = read_claude_settings(&path)? else {
            continue;
        };
        let label = path.display().to_string();
        for (list, rules) in [
            (List::Allow, &perms.allow),
            (List::Ask, &perms.ask),
            (List::Deny, &perms.deny),
        ] {
            for (i, text) in rules.iter().enumerate() {
                let rule = Rule::parse(text, &bases).map_err(|error| SettingsError::Rule {
                    path: label.clone(),
                    field: format!("permissions.{}[{i}]", list.as_str()),
                    error,
                })?;
                policy.push(rule, list, source(path.clone()));
            }
        }
        // A mode Claude Code added later is not a reason to refuse to start: said, and left.
        if let Some(name) = &perms.default_mode {
            match Mode::parse(name) {
                Some(mode) => claude_mode = Some(mode),
                None => policy.note(format!(
                    "{label}: permissions.defaultMode `{name}` is not a mode strata knows \
                     (plan, default, acceptEdits, bypassPermissions, dontAsk, auto); it is ignored"
                )),
            }
        }
        for dir in &perms.additional_directories {
            let dir = match dir.strip_prefix("~/") {
                Some(rest) => places.home.clone().unwrap_or_default().join(rest),
                None => places.cwd.join(dir),
            };
            policy.add_root(dir);
        }
    }
    let mut config_mode = None;
    for (config, file) in strata {
        for (list, rules) in [
            (List::Allow, &config.allow),
            (List::Ask, &config.ask),
            (List::Deny, &config.deny),
        ] {
            for (i, text) in rules.iter().enumerate() {
                let rule = Rule::parse(text, &bases).map_err(|error| SettingsError::Rule {
                    path: (*file).to_owned(),
                    field: format!("permissions.{}[{i}]", list.as_str()),
                    error,
                })?;
                policy.push(rule, list, Source::StrataConfig((*file).to_owned()));
            }
        }
        config_mode = config.mode.or(config_mode);
    }
    policy.set_mode(
        flag_mode
            .or(config_mode)
            .or(claude_mode)
            .unwrap_or_default(),
    );
    Ok(policy)
}

/// Adds `rule` to `permissions.allow` of the project answers file (Claude Code's shape),
/// keeping every other key; the file is replaced in one step.
pub fn remember_for_project(places: &Places, rule: &str) -> Result<PathBuf, SettingsError> {
    let path = places.project_answers();
    let io = |source| SettingsError::Io {
        path: path.clone(),
        source,
    };
    let mut doc: Value = match std::fs::read_to_string(&path) {
        Ok(text) => serde_json::from_str(&text).map_err(|e| SettingsError::Json {
            path: path.clone(),
            message: e.to_string(),
        })?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => json!({}),
        Err(e) => return Err(io(e)),
    };
    let Some(object) = doc.as_object_mut() else {
        return Err(SettingsError::Json {
            path: path.clone(),
            message: "expected a JSON object".to_owned(),
        });
    };
    let permissions = object.entry("permissions").or_insert_with(|| json!({}));
    let allow = permissions
        .as_object_mut()
        .map(|p| p.entry("allow").or_insert_with(|| json!([])));
    match allow.and_then(Value::as_array_mut) {
        Some(list) => {
            if !list.iter().any(|v| v.as_str() == Some(rule)) {
                list.push(Value::String(rule.to_owned()));
            }
        }
        None => {
            return Err(SettingsError::Json {
                path: path.clone(),
                message: "permissions.allow is not an array".to_owned(),
            });
        }
    }
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).map_err(io)?;
    let text = serde_json::to_string_pretty(&doc).map_err(|e| SettingsError::Json {
        path: path.clone(),
        message: e.to_string(),
    })?;
    let mut tmp = tempfile::NamedTempFile::new_in(dir).map_err(io)?;
    std::io::Write::write_all(&mut tmp, format!("{text}\n").as_bytes()).map_err(io)?;
    tmp.persist(&path).map_err(|e| io(e.error))?;
    Ok(path)
}
