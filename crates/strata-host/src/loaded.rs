//! What is loaded of extensions and hooks, as `/extensions` and `/hooks` (TUI) and
//! `get_extensions` / `get_hooks` (rpc) show it: one implementation, rows for JSON and lines
//! for the terminal.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use serde::Serialize;
use strata_accounting::Attribution;
use strata_extensions::{ExtensionSet, ExtensionState};
use strata_hooks::{HookEvent, HookSet, Scope};

/// A run's extensions and command hooks, with where each extension was configured.
#[derive(Debug, Clone, Default)]
pub struct Loaded {
    extensions: Option<Arc<ExtensionSet>>,
    hooks: HookSet,
    /// Extension name → the config file that named it.
    sources: BTreeMap<String, String>,
}

/// One configured extension.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ExtensionRow {
    /// Its configured name (`[extensions.NAME]`).
    pub name: String,
    /// The program and its arguments.
    pub command: String,
    /// The config file that configured it.
    pub source: String,
    /// `not started`, `running` or `failed`.
    pub status: &'static str,
    /// Why it failed (could not start, exited, stopped after a timeout).
    pub error: Option<String>,
    /// The memory slots it holds now.
    pub slots: Vec<String>,
    /// The hook events it answers.
    pub hooks: Vec<String>,
    /// The tools it contributes.
    pub tools: Vec<String>,
    /// Its slash commands.
    pub commands: Vec<String>,
    /// Tokens what it added at the end of the conversation cost in cache writes.
    pub cache_write_tokens: u64,
    /// The same in dollars.
    pub cache_write_cost: f64,
}

/// One command hook, or an extension answering a hook event.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct HookRow {
    /// The event (`PreToolUse`, …).
    pub event: &'static str,
    /// The matcher's text (`""`: everything).
    pub matcher: String,
    /// The shell command, or `extension NAME`.
    pub command: String,
    /// The file it came from, or `[extensions.NAME]`'s config file.
    pub source: String,
    /// `user` or `project`; `extension` for an extension.
    pub scope: &'static str,
    /// Seconds it may run.
    pub timeout_secs: f64,
    /// Tokens what it added at the end of the conversation cost in cache writes.
    pub cache_write_tokens: u64,
    /// The same in dollars.
    pub cache_write_cost: f64,
}

/// A slash command a running extension serves (`/name args`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ExtensionCommand {
    /// Its name, without the slash.
    pub name: String,
    /// Its line for command lists.
    pub description: String,
    /// The configured name of the extension serving it.
    pub extension: String,
}

/// What an extension's command answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandOutput {
    /// The command, without the slash.
    pub name: String,
    /// The configured name of the extension that ran it.
    pub extension: String,
    /// The text to show the user (never sent to the model).
    pub text: String,
}

/// `/name args` split into the name and the text after it (`None`: not a slash command).
pub fn split_command(text: &str) -> Option<(&str, &str)> {
    let text = text.trim().strip_prefix('/')?;
    let (name, args) = text.split_once(char::is_whitespace).unwrap_or((text, ""));
    (!name.is_empty()).then(|| (name, args.trim()))
}

/// What `attributed` (a session's, `strata_accounting::attributions`) says `source` cost.
fn cost_of(attributed: &[Attribution], source: &str) -> (u64, f64) {
    attributed
        .iter()
        .find(|a| a.source == source)
        .map_or((0, 0.0), |a| (a.tokens, a.cost))
}

/// A row's cache-write line, when it cost anything.
fn cost_line(tokens: u64, cost: f64) -> Option<String> {
    (tokens > 0).then(|| format!("  cache writes: {tokens} tokens, ${cost:.6}"))
}

impl Loaded {
    /// `hooks` and `extensions`, the latter configured in `sources` (name → file).
    pub fn new(
        hooks: HookSet,
        extensions: Option<Arc<ExtensionSet>>,
        sources: BTreeMap<String, String>,
    ) -> Self {
        Self {
            extensions,
            hooks,
            sources,
        }
    }

    fn source(&self, name: &str) -> String {
        self.sources
            .get(name)
            .cloned()
            .unwrap_or_else(|| "environment".to_owned())
    }

    /// Every configured extension, in configuration order, with what it cost in cache
    /// writes according to `attributed`.
    pub fn extensions(&self, attributed: &[Attribution]) -> Vec<ExtensionRow> {
        let Some(set) = &self.extensions else {
            return Vec::new();
        };
        set.status()
            .into_iter()
            .map(|status| {
                let manifest = status.manifest.unwrap_or_default();
                let command = std::iter::once(status.spec.program.display().to_string())
                    .chain(status.spec.args.iter().cloned())
                    .collect::<Vec<_>>()
                    .join(" ");
                let error = match &status.state {
                    ExtensionState::Failed(why) => Some(why.clone()),
                    _ => None,
                };
                let (cache_write_tokens, cache_write_cost) =
                    cost_of(attributed, &format!("extension {}", status.spec.name));
                ExtensionRow {
                    cache_write_tokens,
                    cache_write_cost,
                    source: self.source(&status.spec.name),
                    name: status.spec.name,
                    command,
                    status: status.state.label(),
                    error,
                    slots: status.slots.iter().map(|s| s.name().to_owned()).collect(),
                    hooks: manifest.hooks,
                    tools: manifest.tools.into_iter().map(|t| t.name).collect(),
                    commands: manifest.commands.into_iter().map(|c| c.name).collect(),
                }
            })
            .collect()
    }

    /// Every command hook by event (file order), then the running extensions that answer
    /// hook events (they run after the commands), with what each cost in cache writes
    /// according to `attributed`.
    pub fn hooks(&self, attributed: &[Attribution]) -> Vec<HookRow> {
        let mut rows = Vec::new();
        for event in HookEvent::ALL {
            for group in self.hooks.groups(event) {
                for hook in &group.hooks {
                    let (cache_write_tokens, cache_write_cost) = cost_of(attributed, &hook.command);
                    rows.push(HookRow {
                        cache_write_tokens,
                        cache_write_cost,
                        event: event.name(),
                        matcher: group.matcher.text().to_owned(),
                        command: hook.command.clone(),
                        source: hook.file.display().to_string(),
                        scope: match hook.scope {
                            Scope::User => "user",
                            Scope::Project => "project",
                        },
                        timeout_secs: hook.timeout.as_secs_f64(),
                    });
                }
            }
            if let Some(set) = &self.extensions {
                for extension in set.running() {
                    if extension.manifest().hooks.iter().any(|h| h == event.name()) {
                        let command = format!("extension {}", extension.name());
                        let (cache_write_tokens, cache_write_cost) = cost_of(attributed, &command);
                        rows.push(HookRow {
                            cache_write_tokens,
                            cache_write_cost,
                            event: event.name(),
                            matcher: String::new(),
                            command,
                            source: self.source(extension.name()),
                            scope: "extension",
                            timeout_secs: extension.spec().timeout.as_secs_f64(),
                        });
                    }
                }
            }
        }
        rows
    }

    /// What was skipped while loading the hook files (named with file and field).
    pub fn hook_problems(&self) -> &[String] {
        self.hooks.problems()
    }

    /// The slash commands of the running extensions, in configuration order. Of two
    /// extensions declaring one name the first's is listed and run; front ends put their
    /// built-in commands before these.
    pub fn commands(&self) -> Vec<ExtensionCommand> {
        let Some(set) = &self.extensions else {
            return Vec::new();
        };
        let mut commands: Vec<ExtensionCommand> = Vec::new();
        for extension in set.running().iter().filter(|e| e.is_alive()) {
            for spec in &extension.manifest().commands {
                if !commands.iter().any(|c| c.name == spec.name) {
                    commands.push(ExtensionCommand {
                        name: spec.name.clone(),
                        description: spec.description.clone(),
                        extension: extension.name().to_owned(),
                    });
                }
            }
        }
        commands
    }

    /// The running extension's command `text` (`/name args`) names, if any.
    pub fn command(&self, text: &str) -> Option<ExtensionCommand> {
        let (name, _) = split_command(text)?;
        self.commands().into_iter().find(|c| c.name == name)
    }

    /// Whether any extension is configured (its commands may exist once started).
    pub fn has_extensions(&self) -> bool {
        self.extensions.is_some()
    }

    /// Starts the extensions unless started (they otherwise start with the first prompt):
    /// their commands are known only from their handshakes.
    pub async fn start_extensions(&self) {
        if let Some(set) = &self.extensions {
            set.start().await;
        }
    }

    /// Runs `text` (`/name args`) when it names a running extension's command, starting
    /// the extensions first: `None` when it names none; else its text, or why it failed
    /// (the error names the extension).
    pub async fn run_command(&self, text: &str) -> Option<Result<CommandOutput, String>> {
        self.start_extensions().await;
        let command = self.command(text)?;
        let (_, args) = split_command(text)?;
        let extension = self
            .extensions
            .as_ref()?
            .running()
            .into_iter()
            .find(|e| e.name() == command.extension)?;
        Some(
            extension
                .command(&command.name, args)
                .await
                .map(|text| CommandOutput {
                    name: command.name.clone(),
                    extension: command.extension.clone(),
                    text,
                })
                .map_err(|error| format!("/{}: {error}", command.name)),
        )
    }

    /// `/extensions`: one line per extension, then its slots, hooks, tools and error.
    pub fn extension_lines(&self, attributed: &[Attribution]) -> Vec<String> {
        let rows = self.extensions(attributed);
        if rows.is_empty() {
            return vec![
                "no extensions configured ([extensions.NAME] in config.toml, docs/extensions.md)"
                    .to_owned(),
            ];
        }
        let mut lines = Vec::new();
        for row in rows {
            lines.push(format!("{}  {}  {}", row.name, row.status, row.command));
            lines.push(format!("  from {}", row.source));
            if let Some(error) = &row.error {
                lines.push(format!("  ! {error}"));
            }
            if !row.slots.is_empty() {
                lines.push(format!("  memory slots: {}", row.slots.join(", ")));
            }
            for (what, names) in [
                ("hooks", &row.hooks),
                ("tools", &row.tools),
                ("commands", &row.commands),
            ] {
                if !names.is_empty() {
                    lines.push(format!("  {what}: {}", names.join(", ")));
                }
            }
            lines.extend(cost_line(row.cache_write_tokens, row.cache_write_cost));
        }
        lines
    }

    /// `/hooks`: one line per hook (event, matcher, command), its file under it, then what
    /// was skipped.
    pub fn hook_lines(&self, attributed: &[Attribution]) -> Vec<String> {
        let rows = self.hooks(attributed);
        let mut lines = Vec::new();
        if rows.is_empty() {
            lines.push("no hooks loaded (settings.json / hooks.json, docs/hooks.md)".to_owned());
        }
        for row in rows {
            let matcher = if row.matcher.is_empty() {
                String::new()
            } else {
                format!(" [{}]", row.matcher)
            };
            lines.push(format!("{}{matcher}  {}", row.event, row.command));
            lines.push(format!(
                "  {} {}  timeout {}s",
                row.scope, row.source, row.timeout_secs
            ));
            lines.extend(cost_line(row.cache_write_tokens, row.cache_write_cost));
        }
        lines.extend(self.hook_problems().iter().map(|p| format!("skipped: {p}")));
        lines
    }
}

/// Which config file names each `[extensions.NAME]`: the project's when it is trusted and
/// names it (it wins over the user's), else the user's.
pub(crate) fn extension_sources(
    names: impl Iterator<Item = String>,
    user: Option<PathBuf>,
    project: Option<PathBuf>,
) -> BTreeMap<String, String> {
    let table = |path: &Option<PathBuf>| {
        path.as_deref()
            .and_then(|p| crate::config::read_toml(p).ok().flatten())
            .and_then(|t| t.get("extensions").and_then(|e| e.as_table()).cloned())
            .unwrap_or_default()
    };
    let (user_table, project_table) = (table(&user), table(&project));
    names
        .filter_map(|name| {
            let file = if project_table.contains_key(&name) {
                project.as_ref()
            } else if user_table.contains_key(&name) {
                user.as_ref()
            } else {
                None
            }?;
            Some((name, file.display().to_string()))
        })
        .collect()
}
