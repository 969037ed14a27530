//! Reading hook files: Claude Code's `settings.json` (its `hooks` key) and Codex's
//! `hooks.json` share one shape — event name → matcher groups → command hooks.

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use regex::Regex;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::HookError;
use crate::event::HookEvent;

/// Where a hook file sits: the user's own files always load; a project's only when the
/// project is trusted (a hook is a command run with the user's rights).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// The user's home or strata's config dir.
    User,
    /// The project's `.claude/`, `.codex/` or `.strata/`.
    Project,
}

/// The `[hooks]` section of strata's config.toml.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct HooksSettings {
    /// Runs no hook at all when false (Claude Code's `disableAllHooks`, for every file).
    pub enabled: bool,
    /// Reads `~/.claude/settings.json` and the project's `.claude/settings.json` and
    /// `.claude/settings.local.json`.
    pub claude: bool,
    /// Reads `~/.codex/hooks.json` and the project's `.codex/hooks.json`.
    pub codex: bool,
    /// Seconds a hook may run when its entry gives no `timeout` (Claude Code's default, 60).
    pub default_timeout_secs: u64,
}

impl Default for HooksSettings {
    fn default() -> Self {
        Self {
            enabled: true,
            claude: true,
            codex: true,
            default_timeout_secs: 60,
        }
    }
}

/// The hook files to read, user files first.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HookFiles {
    /// The user's files.
    pub user: Vec<PathBuf>,
    /// The project's files (read only when trusted).
    pub project: Vec<PathBuf>,
}

impl HookFiles {
    /// The standard places: strata's own `hooks.json` (in `strata_dir`, `~/.config/strata`,
    /// and the project's `.strata/`), then Claude Code's and Codex's where `settings` reads
    /// them. `home` is the user's home directory (`None`: no home files).
    pub fn standard(
        settings: &HooksSettings,
        home: Option<&Path>,
        strata_dir: Option<&Path>,
        project_root: &Path,
    ) -> Self {
        let mut files = HookFiles::default();
        if let Some(dir) = strata_dir {
            files.user.push(dir.join("hooks.json"));
        }
        if let Some(home) = home {
            if settings.claude {
                files.user.push(home.join(".claude").join("settings.json"));
            }
            if settings.codex {
                files.user.push(home.join(".codex").join("hooks.json"));
            }
        }
        files
            .project
            .push(project_root.join(".strata").join("hooks.json"));
        if settings.claude {
            let claude = project_root.join(".claude");
            files.project.push(claude.join("settings.json"));
            files.project.push(claude.join("settings.local.json"));
        }
        if settings.codex {
            files
                .project
                .push(project_root.join(".codex").join("hooks.json"));
        }
        files
    }
}

/// Which subjects (tool names, session sources) a group applies to.
#[derive(Debug, Clone)]
pub struct Matcher {
    text: String,
    /// `None`: matches everything (`""`, `"*"` or no matcher).
    regex: Option<Regex>,
}

impl Matcher {
    /// A matcher from the config's text: empty or `*` match all; anything else is a regular
    /// expression matched against the whole name (`Bash`, `Edit|Write`, `mcp__.*`).
    pub fn new(text: &str) -> Result<Self, regex::Error> {
        let regex = match text {
            "" | "*" => None,
            pattern => Some(Regex::new(&format!("^(?:{pattern})$"))?),
        };
        Ok(Self {
            text: text.to_owned(),
            regex,
        })
    }

    /// The config's text.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// Whether any of `names` matches (a tool has strata's name and Claude Code's).
    pub fn matches_any<'a>(&self, mut names: impl Iterator<Item = &'a str>) -> bool {
        match &self.regex {
            None => true,
            Some(regex) => names.any(|name| regex.is_match(name)),
        }
    }
}

/// One command hook.
#[derive(Debug, Clone)]
pub struct HookCommand {
    /// The shell command (`sh -c`).
    pub command: String,
    /// How long it may run.
    pub timeout: Duration,
    /// Shown while it runs, when given.
    pub status_message: Option<String>,
    /// The file it came from.
    pub file: Arc<PathBuf>,
    /// The file's scope.
    pub scope: Scope,
}

/// A matcher and the hooks it runs.
#[derive(Debug, Clone)]
pub struct MatcherGroup {
    /// Which subjects it applies to.
    pub matcher: Matcher,
    /// The hooks.
    pub hooks: Vec<HookCommand>,
}

/// Hooks loaded from files, by event, in file order.
#[derive(Debug, Clone, Default)]
pub struct HookSet {
    groups: BTreeMap<HookEvent, Vec<MatcherGroup>>,
    files: Vec<(PathBuf, Scope)>,
    problems: Vec<String>,
}

impl HookSet {
    /// The hooks of one file's text. A file that is not JSON is an error; a part strata cannot
    /// use (an unknown event, a bad matcher, a non-command hook) is skipped and named in
    /// [`HookSet::problems`] with the file and the field.
    pub fn parse(
        text: &str,
        path: &Path,
        scope: Scope,
        default_timeout: Duration,
    ) -> Result<Self, HookError> {
        let value: Value = serde_json::from_str(text).map_err(|error| HookError::Json {
            path: path.to_owned(),
            line: error.line(),
            column: error.column(),
            message: error.to_string(),
        })?;
        let mut set = HookSet {
            files: vec![(path.to_owned(), scope)],
            ..HookSet::default()
        };
        let file = Arc::new(path.to_owned());
        let at = |field: &str| format!("{}: {field}", path.display());
        // Claude Code's switch for the whole file.
        if value.get("disableAllHooks").and_then(Value::as_bool) == Some(true) {
            return Ok(set);
        }
        let Some(hooks) = value.get("hooks") else {
            return Ok(set);
        };
        let Some(events) = hooks.as_object() else {
            set.problems
                .push(format!("{}: not an object; skipped", at("hooks")));
            return Ok(set);
        };
        for (name, groups) in events {
            let field = format!("hooks.{name}");
            let Some(event) = HookEvent::from_name(name) else {
                let why = if HookEvent::is_known_elsewhere(name) {
                    "strata does not run this event yet"
                } else {
                    "unknown event"
                };
                set.problems.push(format!("{}: {why}; skipped", at(&field)));
                continue;
            };
            let Some(groups) = groups.as_array() else {
                set.problems
                    .push(format!("{}: not an array; skipped", at(&field)));
                continue;
            };
            for (g, group) in groups.iter().enumerate() {
                let field = format!("{field}[{g}]");
                let matcher_text = group.get("matcher").and_then(Value::as_str).unwrap_or("");
                let matcher = match Matcher::new(matcher_text) {
                    Ok(matcher) => matcher,
                    Err(error) => {
                        set.problems.push(format!(
                            "{}: bad regular expression ({error}); group skipped",
                            at(&format!("{field}.matcher"))
                        ));
                        continue;
                    }
                };
                let mut commands = Vec::new();
                let entries = group.get("hooks").and_then(Value::as_array);
                for (h, hook) in entries.into_iter().flatten().enumerate() {
                    let field = format!("{field}.hooks[{h}]");
                    let kind = hook
                        .get("type")
                        .and_then(Value::as_str)
                        .unwrap_or("command");
                    if kind != "command" {
                        set.problems.push(format!(
                            "{}: type `{kind}` is not run by strata (command only); skipped",
                            at(&field)
                        ));
                        continue;
                    }
                    let Some(command) = hook.get("command").and_then(Value::as_str) else {
                        set.problems
                            .push(format!("{}: no `command`; skipped", at(&field)));
                        continue;
                    };
                    let timeout = match hook.get("timeout") {
                        None | Some(Value::Null) => default_timeout,
                        Some(value) => match value.as_f64() {
                            Some(secs) if secs > 0.0 && secs.is_finite() => {
                                Duration::from_secs_f64(secs.min(86_400.0))
                            }
                            _ => {
                                set.problems.push(format!(
                                    "{}: not a positive number of seconds; default used",
                                    at(&format!("{field}.timeout"))
                                ));
                                default_timeout
                            }
                        },
                    };
                    commands.push(HookCommand {
                        command: command.to_owned(),
                        timeout,
                        status_message: hook
                            .get("statusMessage")
                            .and_then(Value::as_str)
                            .map(str::to_owned),
                        file: Arc::clone(&file),
                        scope,
                    });
                }
                if entries.is_none() {
                    set.problems
                        .push(format!("{}: no `hooks` array; skipped", at(&field)));
                }
                if !commands.is_empty() {
                    set.groups.entry(event).or_default().push(MatcherGroup {
                        matcher,
                        hooks: commands,
                    });
                }
            }
        }
        Ok(set)
    }

    /// Reads `files`: the user's always, the project's only when `trusted`. A missing file is
    /// no hooks; an unreadable or malformed one is named in [`HookSet::problems`] and the
    /// others still load. With `settings.enabled` false nothing loads.
    pub fn load(files: &HookFiles, settings: &HooksSettings, trusted: bool) -> Self {
        let mut set = HookSet::default();
        if !settings.enabled {
            return set;
        }
        let timeout = Duration::from_secs(settings.default_timeout_secs.max(1));
        let project: &[PathBuf] = if trusted { &files.project } else { &[] };
        let listed = files
            .user
            .iter()
            .map(|p| (p, Scope::User))
            .chain(project.iter().map(|p| (p, Scope::Project)));
        for (path, scope) in listed {
            let text = match std::fs::read_to_string(path) {
                Ok(text) => text,
                Err(error) if error.kind() == std::io::ErrorKind::NotFound => continue,
                Err(source) => {
                    let error = HookError::Read {
                        path: path.clone(),
                        source,
                    };
                    set.problems.push(error.to_string());
                    continue;
                }
            };
            match HookSet::parse(&text, path, scope, timeout) {
                Ok(parsed) => set.merge(parsed),
                Err(error) => set.problems.push(error.to_string()),
            }
        }
        // Said only when the files hold hooks: a `settings.json` with permissions alone is
        // no news.
        let holds_hooks = |path: &PathBuf| {
            std::fs::read_to_string(path)
                .ok()
                .and_then(|text| HookSet::parse(&text, path, Scope::Project, timeout).ok())
                .is_some_and(|set| !set.is_empty())
        };
        if !trusted && files.project.iter().any(holds_hooks) {
            set.problems.push(
                "project hooks not loaded: the project is not trusted (`strata trust`)".into(),
            );
        }
        set
    }

    /// Adds `other`'s hooks after this set's.
    pub fn merge(&mut self, other: HookSet) {
        for (event, groups) in other.groups {
            self.groups.entry(event).or_default().extend(groups);
        }
        self.files.extend(other.files);
        self.problems.extend(other.problems);
    }

    /// The hooks `event` runs for a subject with these names, in file order, each command
    /// once (Claude Code runs an identical command once per event).
    pub fn matching<'a>(&'a self, event: HookEvent, names: &[&str]) -> Vec<&'a HookCommand> {
        let mut seen = HashSet::new();
        self.groups
            .get(&event)
            .into_iter()
            .flatten()
            .filter(|group| {
                !event.uses_matcher() || group.matcher.matches_any(names.iter().copied())
            })
            .flat_map(|group| group.hooks.iter())
            .filter(|hook| seen.insert(hook.command.as_str()))
            .collect()
    }

    /// The groups of `event`.
    pub fn groups(&self, event: HookEvent) -> &[MatcherGroup] {
        self.groups.get(&event).map_or(&[], Vec::as_slice)
    }

    /// Whether no hook is loaded.
    pub fn is_empty(&self) -> bool {
        self.groups.values().all(Vec::is_empty)
    }

    /// Whether `event` has any hook.
    pub fn has(&self, event: HookEvent) -> bool {
        !self.groups(event).is_empty()
    }

    /// The files read, with their scope.
    pub fn files(&self) -> &[(PathBuf, Scope)] {
        &self.files
    }

    /// What was skipped while loading and why, each naming its file and field.
    pub fn problems(&self) -> &[String] {
        &self.problems
    }
}
