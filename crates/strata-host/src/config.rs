//! Configuration: built-in defaults, `~/.config/strata/config.toml`, `.strata/config.toml` in
//! the project, `STRATA_*` environment variables, then command-line flags (later wins).
//!
//! The project layer is read by hand so that, until the user trusts the project
//! ([`crate::trust`]), the settings that redirect traffic or change what the model is told
//! ([`TRUST_GATED`]) are left out and listed. Errors name the file, line or field and never
//! echo the value found there.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The compaction policy a configuration sets, in words (`strata config` prints it).
pub use strata_agent::policy::explain_compaction;

use anyhow::Context as _;
use figment::Figment;
use figment::providers::{Env, Serialized};
use serde::{Deserialize, Serialize};
use strata_agent::CacheSettings;
use strata_compaction::CompactionSettings;

use crate::Overrides;

/// The merged configuration.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    /// Model as `provider/id[:thinking]`.
    pub model: Option<String>,
    /// Tools enabled at start.
    pub tools: Vec<String>,
    /// Root of the session store (default `~/.strata/sessions`).
    pub sessions_dir: Option<PathBuf>,
    /// Replaces the built-in intro of the system prompt.
    pub system_prompt: Option<String>,
    /// Appended to the system prompt's rules.
    pub append_system_prompt: Option<String>,
    /// Output cap per request (`None`: the model's maximum).
    pub max_tokens: Option<u32>,
    /// Retries of a failed request before its first byte.
    pub max_retries: u32,
    /// When and how the context is compacted.
    pub compaction: CompactionSettings,
    /// Cache lifetime and keeping the cache warm while idle (`[cache]`).
    pub cache: CacheSettings,
    /// Provider rows: changes to built-in rows and new providers, by provider id.
    pub providers: BTreeMap<String, ProviderSettings>,
    /// Seconds a bash command may run when its call gives no timeout (0: no limit).
    pub bash_timeout: u64,
    /// Environment variables passed on to tool commands although they hold credentials
    /// (every provider's key variable and `*_API_KEY`-like names are dropped otherwise).
    pub tool_env_allow: Vec<String>,
    /// Projects whose `.strata/` settings apply in full (read from the user's own config only).
    pub trusted_projects: Vec<PathBuf>,
    /// Read Pi's `~/.pi/agent/models.json` (or `$PI_CODING_AGENT_DIR/models.json`).
    pub pi_models: bool,
    /// MCP tool servers (`[mcp.servers.NAME]`) and how long the first request waits for them.
    pub mcp: McpSettings,
    /// The terminal UI's colours: `dark` (the default), `light` or `mono`.
    pub theme: Option<String>,
    /// The thinking level a new session starts at when the model names none (`/settings`).
    pub thinking: Option<String>,
    /// The rules layer (`[permissions]`: `mode`, `allow`/`deny`/`ask` in Claude Code's rule
    /// syntax, `read_claude_settings`, `[permissions.sandbox]` `enabled`/`network`).
    pub permissions: strata_permissions::PermissionsConfig,
    /// Which hook files are read (`[hooks]`, docs/hooks.md).
    pub hooks: strata_hooks::HooksSettings,
    /// Extension processes by name (`[extensions.NAME]`, docs/extensions.md).
    pub extensions: BTreeMap<String, crate::extensions::ExtensionConfig>,
    /// Delegation (`[subagents]`: `mode`, `max_parallel`, `max_depth`, budgets), offered when
    /// `tools` names `task` (docs/subagents.md).
    pub subagents: crate::subagents::SubagentsConfig,
}

/// `[mcp]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct McpSettings {
    /// Servers by name: `command`/`args`/`env`/`cwd` or `url`/`headers`, `enabled`,
    /// `timeout` (seconds), `allow_tools`/`deny_tools`, `exposure`.
    pub servers: BTreeMap<String, strata_mcp::ServerSpec>,
    /// Seconds the first request waits for configured servers still connecting.
    pub startup_wait: f64,
}

impl Default for McpSettings {
    fn default() -> Self {
        Self {
            servers: BTreeMap::new(),
            startup_wait: strata_mcp::DEFAULT_STARTUP_WAIT.as_secs_f64(),
        }
    }
}

/// `[providers.<id>]`: any field of a table row (`crates/strata-provider/data/schema.json`), plus a key.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ProviderSettings {
    /// Base URL replacing the table's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub base_url: Option<String>,
    /// API key (the flag and the row's environment variables come first); never printed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub api_key: Option<String>,
    /// Every other row field (protocol, headers, models, cache, server, …), checked against
    /// the row schema when the catalog is built.
    #[serde(flatten)]
    pub row: serde_json::Map<String, serde_json::Value>,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            model: None,
            tools: ["read", "bash", "edit", "write"].map(String::from).to_vec(),
            sessions_dir: None,
            system_prompt: None,
            append_system_prompt: None,
            max_tokens: None,
            max_retries: 3,
            compaction: CompactionSettings::default(),
            cache: CacheSettings::default(),
            providers: BTreeMap::new(),
            bash_timeout: strata_tools::DEFAULT_BASH_TIMEOUT.as_secs(),
            tool_env_allow: Vec::new(),
            mcp: McpSettings::default(),
            trusted_projects: Vec::new(),
            pi_models: true,
            theme: None,
            thinking: None,
            permissions: strata_permissions::PermissionsConfig::default(),
            hooks: strata_hooks::HooksSettings::default(),
            extensions: BTreeMap::new(),
            subagents: crate::subagents::SubagentsConfig::default(),
        }
    }
}

/// Values set on the command line, as a figment layer (unset flags are absent).
#[derive(Debug, Clone, Default, Serialize)]
struct Flags {
    #[serde(skip_serializing_if = "Option::is_none")]
    model: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tools: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    system_prompt: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    append_system_prompt: Option<String>,
}

/// Where the layers come from.
#[derive(Debug, Clone)]
pub struct Sources {
    /// `~/.config/strata` (or `$XDG_CONFIG_HOME/strata`).
    pub global_dir: Option<PathBuf>,
    /// The project directory whose `.strata/config.toml` is read.
    pub project_dir: PathBuf,
}

impl Sources {
    /// The user's config dir and the current directory.
    pub fn from_environment() -> Self {
        let global_dir = std::env::var_os("XDG_CONFIG_HOME")
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|home| Path::new(&home).join(".config")))
            .map(|base| base.join("strata"));
        let project_dir = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
        Self {
            global_dir,
            project_dir,
        }
    }
}

/// A serialized layer under a name a person understands (figment names them by Rust type).
struct Named<T> {
    name: &'static str,
    layer: Serialized<T>,
}

impl<T: Serialize> figment::Provider for Named<T> {
    fn metadata(&self) -> figment::Metadata {
        figment::Metadata::named(self.name)
    }

    fn data(
        &self,
    ) -> Result<figment::value::Map<figment::Profile, figment::value::Dict>, figment::Error> {
        self.layer.data()
    }
}

/// Top-level keys of [`Config`], as `STRATA_<KEY>` variables name them.
const CONFIG_KEYS: &[&str] = &[
    "model",
    "tools",
    "sessions_dir",
    "system_prompt",
    "append_system_prompt",
    "max_tokens",
    "max_retries",
    "compaction",
    "cache",
    "providers",
    "bash_timeout",
    "tool_env_allow",
    "trusted_projects",
    "pi_models",
    "mcp",
    "theme",
    "thinking",
    "permissions",
    "hooks",
    "extensions",
    "subagents",
];

/// Project settings that apply only once the user trusts the project: they change where a
/// prompt goes (the model, the summary model, provider rows: base URLs, headers, keys, new
/// providers), what it costs (output cap, retries, cache lifetime, compaction), how long a tool
/// may run (`bash_timeout`), what the model is told (prompts, tools, MCP servers) or where
/// sessions are written. That is every setting an untrusted project's file could hold.
pub const TRUST_GATED: &[&str] = &[
    "model",
    "thinking",
    "providers",
    "max_tokens",
    "max_retries",
    "compaction",
    "cache",
    "bash_timeout",
    "system_prompt",
    "append_system_prompt",
    "tools",
    "sessions_dir",
    "mcp",
    "mcp_servers",
    // An untrusted project's rules could allow what the user's rules ask about.
    "permissions",
    "hooks",
    "extensions",
    // What children may cost and how many run.
    "subagents",
];

/// Settings a project can never set: they decide trust and what else is read, or which
/// credentials tool commands may see, and the user's own look (`theme`).
pub const USER_ONLY: &[&str] = &["trusted_projects", "pi_models", "tool_env_allow", "theme"];

/// Whether a `STRATA_*` variable (prefix removed, nested keys joined by `__`) is configuration.
/// Others — another program's `STRATA_FOO`, or `STRATA_API_KEY`, which only the flag reads —
/// are left alone instead of failing every run.
fn is_config_key(key: &str) -> bool {
    let top = key.split("__").next().unwrap_or(key);
    CONFIG_KEYS.iter().any(|k| k.eq_ignore_ascii_case(top))
}

/// `STRATA_*` variables in the environment that are not configuration (shown by
/// `strata config`, so a misspelt key is noticed). `STRATA_API_KEY` is read by `--api-key`.
pub fn ignored_environment() -> Vec<String> {
    let mut ignored: Vec<String> = std::env::vars_os()
        .filter_map(|(name, _)| name.into_string().ok())
        .filter(|name| {
            name.strip_prefix("STRATA_")
                .is_some_and(|key| !is_config_key(key) && !key.eq_ignore_ascii_case("api_key"))
        })
        .collect();
    ignored.sort();
    ignored
}

/// A config file read as a table, merged as a figment layer named after the file.
#[derive(Debug, Clone)]
pub struct FileLayer {
    /// The file.
    pub path: PathBuf,
    /// Its settings (after trust filtering, for the project file).
    pub table: toml::Table,
}

impl figment::Provider for FileLayer {
    fn metadata(&self) -> figment::Metadata {
        figment::Metadata::from("TOML file", figment::Source::File(self.path.clone()))
    }

    fn data(
        &self,
    ) -> Result<figment::value::Map<figment::Profile, figment::value::Dict>, figment::Error> {
        Serialized::globals(&self.table).data()
    }
}

/// Reads a TOML config file; a missing file is `None`. A syntax error names the file and line
/// but not the text there (which may be a key typed in the wrong place).
pub fn read_toml(path: &Path) -> anyhow::Result<Option<toml::Table>> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e).with_context(|| format!("reading {}", path.display())),
    };
    toml::from_str::<toml::Table>(&text).map(Some).map_err(|e| {
        let line = e
            .span()
            .map(|span| text[..span.start.min(text.len())].matches('\n').count() + 1);
        let at = line.map(|l| format!(" line {l}")).unwrap_or_default();
        anyhow::anyhow!(
            "invalid configuration: {}{at}: {}",
            path.display(),
            e.message().trim()
        )
    })
}

/// Every layer, read once: the user's file, the project's (filtered until trusted), the
/// environment and the flags; plus the trust decision and what it left out.
#[derive(Debug, Clone)]
pub struct Layers {
    /// `~/.config/strata/config.toml`.
    pub user: Option<FileLayer>,
    /// `.strata/config.toml`, without what trust withholds.
    pub project: Option<FileLayer>,
    /// Whether the project is trusted, and why.
    pub trust: crate::trust::ProjectTrust,
    /// Dotted keys of the project file that were left out (values are never shown).
    pub ignored: Vec<String>,
    flags: Flags,
}

impl Layers {
    /// Reads the files and decides trust (`--trust` trusts the project for this run).
    pub fn read(sources: &Sources, run: &Overrides) -> anyhow::Result<Self> {
        let user = match &sources.global_dir {
            Some(dir) => {
                let path = dir.join("config.toml");
                read_toml(&path)?.map(|table| FileLayer { path, table })
            }
            None => None,
        };
        let project_path = sources.project_dir.join(".strata/config.toml");
        let project_table = read_toml(&project_path)?;
        let trust = crate::trust::decide(
            sources.global_dir.as_deref(),
            user.as_ref().map(|u| &u.table),
            &sources.project_dir,
            run.trust,
        );
        let mut ignored = Vec::new();
        let project = project_table.map(|mut table| {
            let withheld: Vec<String> = table
                .keys()
                .filter(|key| {
                    USER_ONLY.contains(&key.as_str())
                        || (!trust.trusted && TRUST_GATED.contains(&key.as_str()))
                })
                .cloned()
                .collect();
            for key in withheld {
                if let Some(value) = table.remove(&key) {
                    leaf_keys(&key, &value, &mut ignored);
                }
            }
            FileLayer {
                path: project_path,
                table,
            }
        });
        Ok(Self {
            user,
            project,
            trust,
            ignored,
            flags: Flags {
                model: run.model.clone(),
                tools: run.tools.clone(),
                system_prompt: run.system_prompt.clone(),
                append_system_prompt: run.append_system_prompt.clone(),
            },
        })
    }

    /// The figment of all layers, lowest first.
    pub fn figment(&self) -> Figment {
        self.figment_with(true)
    }

    /// Every layer but the project's: what the user configured themselves.
    pub fn figment_outside_project(&self) -> Figment {
        self.figment_with(false)
    }

    fn figment_with(&self, project: bool) -> Figment {
        let mut figment = Figment::from(Named {
            name: "built-in default",
            layer: Serialized::defaults(Config::default()),
        });
        if let Some(user) = &self.user {
            figment = figment.merge(user.clone());
        }
        if project && let Some(layer) = &self.project {
            figment = figment.merge(layer.clone());
        }
        figment
            .merge(
                Env::prefixed("STRATA_")
                    .filter(|key| is_config_key(key.as_str()))
                    .split("__"),
            )
            .merge(Named {
                name: "command-line flag",
                layer: Serialized::globals(Flags {
                    model: self.flags.model.clone(),
                    tools: self.flags.tools.clone(),
                    system_prompt: self.flags.system_prompt.clone(),
                    append_system_prompt: self.flags.append_system_prompt.clone(),
                }),
            })
    }

    /// The merged configuration.
    pub fn config(&self) -> anyhow::Result<Config> {
        extract(&self.figment())
    }

    /// One line saying what the untrusted project's file set that was left out, if anything.
    pub fn ignored_notice(&self) -> Option<String> {
        if self.ignored.is_empty() {
            return None;
        }
        let path = self
            .project
            .as_ref()
            .map(|p| p.path.display().to_string())
            .unwrap_or_default();
        let user_only: Vec<&str> = self
            .ignored
            .iter()
            .map(String::as_str)
            .filter(|k| USER_ONLY.iter().any(|u| k.split('.').next() == Some(*u)))
            .collect();
        let gated: Vec<&str> = self
            .ignored
            .iter()
            .map(String::as_str)
            .filter(|k| !user_only.contains(k))
            .collect();
        let mut parts = Vec::new();
        if !gated.is_empty() {
            parts.push(format!(
                "ignoring {} in {path} until you trust this project (`strata trust`, or `--trust` for one run)",
                gated.join(", ")
            ));
        }
        if !user_only.is_empty() {
            parts.push(format!(
                "ignoring {} in {path}: only your own config.toml sets it",
                user_only.join(", ")
            ));
        }
        Some(parts.join("; "))
    }
}

/// The skills visible from `cwd` and the user's config dir `global_dir`; the project's own
/// only once the user trusts the project (the rule the agent's prompt follows).
pub fn skills(global_dir: Option<&Path>, cwd: &Path, trusted: bool) -> Vec<Skill> {
    strata_agent::resources::skills(&strata_agent::prompt::skill_roots_for(
        global_dir, cwd, trusted,
    ))
}

/// A skill: its name, description and `SKILL.md`.
pub use strata_agent::resources::Skill;

/// One line naming the skills of an untrusted project (under `cwd` and its parents) that are
/// not offered, if there are any.
pub fn ignored_skills_notice(cwd: &Path) -> Option<String> {
    let found = strata_agent::resources::skills(&strata_agent::prompt::project_skill_roots(cwd));
    if found.is_empty() {
        return None;
    }
    let listed: Vec<String> = found
        .iter()
        .map(|skill| format!("{} ({})", skill.name, skill.path.display()))
        .collect();
    Some(format!(
        "ignoring the project's skills {} until you trust this project (`strata trust`, or `--trust` for one run)",
        listed.join(", ")
    ))
}

/// Every leaf key under `prefix` (a table's own key when empty).
fn leaf_keys(prefix: &str, value: &toml::Value, out: &mut Vec<String>) {
    match value {
        toml::Value::Table(table) if !table.is_empty() => {
            for (key, child) in table {
                leaf_keys(&format!("{prefix}.{key}"), child, out);
            }
        }
        _ => out.push(prefix.to_owned()),
    }
}

/// The figment of all layers, lowest first (re-reads the files).
#[cfg(test)]
pub fn figment(sources: &Sources, run: &Overrides) -> anyhow::Result<Figment> {
    Ok(Layers::read(sources, run)?.figment())
}

/// The merged configuration; an error names the file or variable and the field.
#[cfg(test)]
pub fn load(sources: &Sources, run: &Overrides) -> anyhow::Result<Config> {
    Layers::read(sources, run)?.config()
}

/// Extracts a [`Config`] from `figment`, describing errors without their values.
pub fn extract(figment: &Figment) -> anyhow::Result<Config> {
    let config: Config = figment
        .extract()
        .map_err(|error| anyhow::anyhow!(describe(&error)))?;
    // Ranges the types do not hold (a percentage, a share of the window).
    config
        .compaction
        .validate()
        .map_err(|error| anyhow::anyhow!("invalid configuration: {error}"))?;
    Ok(config)
}

fn describe(error: &figment::Error) -> String {
    let mut parts = Vec::new();
    for e in error.clone() {
        let field = if e.path.is_empty() {
            String::new()
        } else {
            format!("field `{}`: ", e.path.join("."))
        };
        let origin = e.metadata.as_ref().map(|m| match &m.source {
            Some(source) => format!("{} ({source})", m.name),
            None => m.name.to_string(),
        });
        parts.push(format!(
            "{}{field}{}",
            origin.map(|o| format!("{o}: ")).unwrap_or_default(),
            kind_without_value(&e.kind)
        ));
    }
    format!("invalid configuration: {}", parts.join("; "))
}

/// What a figment error says, without the value it found.
fn kind_without_value(kind: &figment::error::Kind) -> String {
    use figment::error::{Actual, Kind};
    let what = |actual: &Actual| match actual {
        Actual::Bool(_) => "a boolean",
        Actual::Unsigned(_) | Actual::Signed(_) => "an integer",
        Actual::Float(_) => "a number",
        Actual::Char(_) | Actual::Str(_) => "a string",
        Actual::Bytes(_) => "bytes",
        Actual::Seq => "a list",
        Actual::Map => "a table",
        _ => "a value",
    };
    match kind {
        Kind::InvalidType(actual, expected) => {
            format!("invalid type: found {}, expected {expected}", what(actual))
        }
        Kind::InvalidValue(actual, expected) => {
            format!("invalid value: found {}, expected {expected}", what(actual))
        }
        Kind::UnknownVariant(_, expected) => {
            format!("unknown value, expected one of: {}", expected.join(", "))
        }
        Kind::Message(message) => strata_provider::catalog::redact_values(message),
        other => other.to_string(),
    }
}

/// Every set value as `key = value` with the layer it came from.
pub fn explain(figment: &Figment, config: &Config) -> Vec<(String, serde_json::Value, String)> {
    let mut out = Vec::new();
    let mut value = serde_json::to_value(config).unwrap_or(serde_json::Value::Null);
    mask_secrets(&mut value);
    walk("", &value, &mut |key, value| {
        let source = figment
            .find_metadata(key)
            .map(|m| match &m.source {
                Some(source) => format!("{} ({source})", m.name),
                None => m.name.to_string(),
            })
            .unwrap_or_else(|| "default".to_owned());
        out.push((key.to_owned(), value.clone(), source));
    });
    out
}

/// What stands for a secret in shown configuration.
const MASK: &str = "***";

/// Replaces the secrets in a configuration (as JSON) before it is shown: `api_key`s, every
/// header value, every MCP server's `env` value, and the argument after (or the value in)
/// an MCP argument named like a credential (`--token X`, `--api-key=X`).
pub fn mask_secrets(value: &mut serde_json::Value) {
    use serde_json::Value;
    let Value::Object(map) = value else {
        if let Value::Array(items) = value {
            items.iter_mut().for_each(mask_secrets);
        }
        return;
    };
    for (key, child) in map.iter_mut() {
        match key.as_str() {
            "api_key" if !child.is_null() => *child = Value::String(MASK.into()),
            "headers" | "env" => {
                if let Value::Object(entries) = child {
                    for entry in entries.values_mut() {
                        *entry = Value::String(MASK.into());
                    }
                }
            }
            "args" => {
                if let Value::Array(args) = child {
                    mask_credential_args(args);
                }
            }
            _ => mask_secrets(child),
        }
    }
}

/// An MCP server's target (command and arguments, or URL) as shown: credential arguments
/// masked as [`mask_secrets`] masks them.
pub fn shown_target(server: &strata_mcp::ServerConfig) -> String {
    match &server.transport {
        strata_mcp::Transport::Stdio { command, args, .. } => {
            let mut shown: Vec<serde_json::Value> = args
                .iter()
                .cloned()
                .map(serde_json::Value::String)
                .collect();
            mask_credential_args(&mut shown);
            std::iter::once(command.clone())
                .chain(shown.iter().filter_map(|a| a.as_str().map(str::to_owned)))
                .collect::<Vec<_>>()
                .join(" ")
        }
        strata_mcp::Transport::Http { .. } => server.target(),
    }
}

fn mask_credential_args(args: &mut [serde_json::Value]) {
    let names_credential = |flag: &str| {
        let flag = flag.trim_start_matches('-').to_ascii_lowercase();
        flag.starts_with(|c: char| c.is_ascii_alphabetic())
            && ["token", "key", "secret", "password", "auth", "credential"]
                .iter()
                .any(|word| flag.contains(word))
    };
    let mut mask_next = false;
    for arg in args.iter_mut() {
        let Some(text) = arg.as_str().map(str::to_owned) else {
            continue;
        };
        if mask_next {
            *arg = serde_json::Value::String(MASK.into());
            mask_next = false;
            continue;
        }
        if !text.starts_with('-') {
            continue;
        }
        match text.split_once('=') {
            Some((flag, _)) if names_credential(flag) => {
                *arg = serde_json::Value::String(format!("{flag}={MASK}"));
            }
            Some(_) => {}
            None => mask_next = names_credential(&text),
        }
    }
}

fn walk(prefix: &str, value: &serde_json::Value, visit: &mut dyn FnMut(&str, &serde_json::Value)) {
    match value {
        serde_json::Value::Object(map) if !map.is_empty() => {
            for (key, child) in map {
                let path = if prefix.is_empty() {
                    key.clone()
                } else {
                    format!("{prefix}.{key}")
                };
                walk(&path, child, visit);
            }
        }
        serde_json::Value::Null => {}
        other => visit(prefix, other),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sources(dir: &Path) -> Sources {
        Sources {
            global_dir: Some(dir.join("global")),
            project_dir: dir.join("project"),
        }
    }

    #[test]
    fn config_keys_are_the_fields_of_config() {
        let value = serde_json::to_value(Config::default()).unwrap();
        let fields: Vec<&str> = value
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(fields, CONFIG_KEYS);
        assert!(is_config_key("COMPACTION__RESERVE_TOKENS"));
        assert!(is_config_key("model"));
        assert!(!is_config_key("BENCH_CHILD"));
        assert!(!is_config_key("API_KEY"));
    }

    #[test]
    fn layers_merge_lowest_first_and_name_their_source() {
        let dir = tempfile::tempdir().unwrap();
        let sources = sources(dir.path());
        std::fs::create_dir_all(sources.global_dir.as_ref().unwrap()).unwrap();
        std::fs::create_dir_all(sources.project_dir.join(".strata")).unwrap();
        std::fs::write(
            sources.global_dir.as_ref().unwrap().join("config.toml"),
            "model = \"openai/gpt-5\"\n[compaction]\nreserve_tokens = 8000\n[cache]\nretention = \"long\"\nkeep_warm = false\n",
        )
        .unwrap();
        std::fs::write(
            sources.project_dir.join(".strata/config.toml"),
            "model = \"anthropic/claude-sonnet-4-5\"\n",
        )
        .unwrap();
        let run = Overrides {
            tools: Some(vec!["read".into()]),
            trust: true,
            ..Overrides::default()
        };
        let figment = figment(&sources, &run).unwrap();
        let config: Config = figment.extract().unwrap();
        assert_eq!(config.model.as_deref(), Some("anthropic/claude-sonnet-4-5"));
        assert_eq!(config.compaction.reserve_tokens, 8000);
        assert_eq!(
            config.cache.retention,
            strata_provider::CacheRetention::Long
        );
        assert!(!config.cache.keep_warm);
        assert_eq!(
            config.cache.keep_warm_margin_secs, 30,
            "unset keys keep defaults"
        );
        assert_eq!(config.compaction.keep_recent_tokens, 20_000);
        assert_eq!(config.tools, ["read"]);
        assert!(source_of_tools(&figment, &config).contains("command-line flag"));

        let explained = explain(&figment, &config);
        let source_of = |key: &str| {
            explained
                .iter()
                .find(|(k, _, _)| k == key)
                .map(|(_, _, s)| s.clone())
                .unwrap()
        };
        assert!(
            source_of("model").contains("project/.strata/config.toml"),
            "{}",
            source_of("model")
        );
        assert!(source_of("compaction.reserve_tokens").contains("global/config.toml"));
        assert!(
            source_of("compaction.keep_recent_tokens").contains("built-in default"),
            "{}",
            source_of("compaction.keep_recent_tokens")
        );
    }

    fn source_of_tools(figment: &Figment, config: &Config) -> String {
        explain(figment, config)
            .into_iter()
            .find(|(k, _, _)| k == "tools")
            .map(|(_, _, s)| s)
            .unwrap()
    }

    #[test]
    fn every_setting_waits_for_trust_or_is_the_users_alone() {
        for key in CONFIG_KEYS {
            assert!(
                TRUST_GATED.contains(key) || USER_ONLY.contains(key),
                "`{key}` would apply from an untrusted project's file"
            );
        }
    }

    #[test]
    fn an_untrusted_project_chooses_no_model_cost_or_timeout_and_is_told_so() {
        let dir = tempfile::tempdir().unwrap();
        let sources = sources(dir.path());
        std::fs::create_dir_all(sources.project_dir.join(".strata")).unwrap();
        std::fs::write(
            sources.project_dir.join(".strata/config.toml"),
            "model = \"openai/gpt-5\"\nmax_tokens = 64000\nmax_retries = 50\nbash_timeout = 0\n\
             [compaction]\ncompaction_model = \"openai/gpt-5\"\n[cache]\nretention = \"long\"\n",
        )
        .unwrap();
        let layers = Layers::read(&sources, &Overrides::default()).unwrap();
        let config = layers.config().unwrap();
        assert_eq!(config, Config::default());
        let notice = layers.ignored_notice().unwrap();
        for key in [
            "model",
            "max_tokens",
            "max_retries",
            "bash_timeout",
            "compaction.compaction_model",
            "cache.retention",
        ] {
            assert!(notice.contains(key), "{key} not named in: {notice}");
        }
        let trusted = Overrides {
            trust: true,
            ..Overrides::default()
        };
        let config = Layers::read(&sources, &trusted).unwrap().config().unwrap();
        assert_eq!(config.model.as_deref(), Some("openai/gpt-5"));
        assert_eq!(config.bash_timeout, 0);
    }

    #[test]
    fn api_keys_in_config_are_never_printed() {
        let dir = tempfile::tempdir().unwrap();
        let sources = sources(dir.path());
        let global = sources.global_dir.clone().unwrap();
        std::fs::create_dir_all(&global).unwrap();
        std::fs::write(
            global.join("config.toml"),
            "[providers.anthropic]\napi_key = \"sk-ant-secret\"\n",
        )
        .unwrap();
        let figment = figment(&sources, &Overrides::default()).unwrap();
        let config: Config = figment.extract().unwrap();
        assert_eq!(
            config.providers["anthropic"].api_key.as_deref(),
            Some("sk-ant-secret")
        );
        let shown = format!("{:?}", explain(&figment, &config));
        assert!(
            !shown.contains("sk-ant-secret") && shown.contains("***"),
            "{shown}"
        );
    }

    #[test]
    fn a_bad_value_names_the_file_and_field() {
        let dir = tempfile::tempdir().unwrap();
        let sources = sources(dir.path());
        std::fs::create_dir_all(sources.project_dir.join(".strata")).unwrap();
        std::fs::write(
            sources.project_dir.join(".strata/config.toml"),
            "[compaction]\nreserve_tokens = \"lots\"\n",
        )
        .unwrap();
        let error = load(
            &sources,
            &Overrides {
                trust: true,
                ..Overrides::default()
            },
        )
        .unwrap_err()
        .to_string();
        assert!(error.contains("compaction.reserve_tokens"), "{error}");
        assert!(error.contains(".strata/config.toml"), "{error}");
    }

    #[test]
    fn shown_configuration_masks_keys_headers_and_mcp_secrets() {
        let mut value = serde_json::json!({
            "providers": {"p": {"api_key": "sk-1", "headers": {"x-auth": "hdr-secret"}}},
            "mcp": {"servers": {"s": {
                "command": "server",
                "args": ["--token", "arg-secret", "--api-key=eq-secret", "--port", "8080", "plain"],
                "env": {"GITHUB_TOKEN": "env-secret"},
                "headers": {"Authorization": "Bearer http-secret"},
            }}},
        });
        mask_secrets(&mut value);
        let shown = value.to_string();
        for secret in [
            "sk-1",
            "hdr-secret",
            "arg-secret",
            "eq-secret",
            "env-secret",
            "http-secret",
        ] {
            assert!(!shown.contains(secret), "{secret} in {shown}");
        }
        // What is not a secret is still shown.
        for kept in [
            "GITHUB_TOKEN",
            "x-auth",
            "--api-key=***",
            "8080",
            "plain",
            "--port",
        ] {
            assert!(shown.contains(kept), "{kept} not in {shown}");
        }
    }

    #[test]
    fn max_tool_share_is_read_and_checked() {
        let dir = tempfile::tempdir().unwrap();
        let sources = sources(dir.path());
        let trusted = Overrides {
            trust: true,
            ..Overrides::default()
        };
        std::fs::create_dir_all(sources.project_dir.join(".strata")).unwrap();
        let file = sources.project_dir.join(".strata/config.toml");
        assert_eq!(
            load(&sources, &trusted).unwrap().compaction.max_tool_share,
            strata_compaction::DEFAULT_MAX_TOOL_SHARE
        );
        std::fs::write(&file, "[compaction]\nmax_tool_share = 0.5\n").unwrap();
        assert_eq!(
            load(&sources, &trusted).unwrap().compaction.max_tool_share,
            0.5
        );
        std::fs::write(&file, "[compaction]\nmax_tool_share = 2.0\n").unwrap();
        let error = load(&sources, &trusted).unwrap_err().to_string();
        assert!(error.contains("compaction.max_tool_share"), "{error}");
    }
}
