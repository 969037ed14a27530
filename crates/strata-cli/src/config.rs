//! Configuration: built-in defaults, `~/.config/strata/config.toml`, `.strata/config.toml` in
//! the project, `STRATA_*` environment variables, then command-line flags (later wins).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use figment::Figment;
use figment::providers::{Env, Format, Serialized, Toml};
use serde::{Deserialize, Serialize};
use strata_agent::CacheSettings;
use strata_compaction::CompactionSettings;

use crate::args::RunArgs;

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
    /// Per-provider settings (base URL of a proxy, …), by provider id.
    pub providers: BTreeMap<String, ProviderSettings>,
    /// Seconds a bash command may run when its call gives no timeout (0: no limit).
    pub bash_timeout: u64,
    /// Environment variables passed on to tool commands although they hold credentials
    /// (every provider's key variable and `*_API_KEY`-like names are dropped otherwise).
    pub tool_env_allow: Vec<String>,
}

/// `[providers.<id>]`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ProviderSettings {
    /// Base URL replacing the table's.
    pub base_url: Option<String>,
    /// API key (the flag and the row's environment variables come first); never printed.
    pub api_key: Option<String>,
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
        }
    }
}

/// Values set on the command line, as a figment layer (unset flags are absent).
#[derive(Debug, Default, Serialize)]
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
];

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

/// The figment of all layers, lowest first.
pub fn figment(sources: &Sources, run: &RunArgs) -> Figment {
    let mut figment = Figment::from(Named {
        name: "built-in default",
        layer: Serialized::defaults(Config::default()),
    });
    if let Some(global) = &sources.global_dir {
        figment = figment.merge(Toml::file(global.join("config.toml")));
    }
    figment = figment
        .merge(Toml::file(sources.project_dir.join(".strata/config.toml")))
        .merge(
            Env::prefixed("STRATA_")
                .filter(|key| is_config_key(key.as_str()))
                .split("__"),
        )
        .merge(Named {
            name: "command-line flag",
            layer: Serialized::globals(Flags {
                model: run.model.clone(),
                tools: run.tools.clone(),
                system_prompt: run.system_prompt.clone(),
                append_system_prompt: run.append_system_prompt.clone(),
            }),
        });
    figment
}

/// The merged configuration; an error names the file or variable and the field.
pub fn load(sources: &Sources, run: &RunArgs) -> anyhow::Result<Config> {
    figment(sources, run)
        .extract()
        .map_err(|error| anyhow::anyhow!(describe(&error)))
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
            e.kind
        ));
    }
    format!("invalid configuration: {}", parts.join("; "))
}

/// Every set value as `key = value` with the layer it came from.
pub fn explain(figment: &Figment, config: &Config) -> Vec<(String, serde_json::Value, String)> {
    let mut out = Vec::new();
    let value = serde_json::to_value(config).unwrap_or(serde_json::Value::Null);
    walk("", &value, &mut |key, value| {
        let value = if key.ends_with(".api_key") {
            &serde_json::Value::String("***".into())
        } else {
            value
        };
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
        let run = RunArgs {
            tools: Some(vec!["read".into()]),
            ..RunArgs::default()
        };
        let figment = figment(&sources, &run);
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
    fn api_keys_in_config_are_never_printed() {
        let dir = tempfile::tempdir().unwrap();
        let sources = sources(dir.path());
        std::fs::create_dir_all(sources.project_dir.join(".strata")).unwrap();
        std::fs::write(
            sources.project_dir.join(".strata/config.toml"),
            "[providers.anthropic]\napi_key = \"sk-ant-secret\"\n",
        )
        .unwrap();
        let figment = figment(&sources, &RunArgs::default());
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
        let error = load(&sources, &RunArgs::default()).unwrap_err().to_string();
        assert!(error.contains("compaction.reserve_tokens"), "{error}");
        assert!(error.contains(".strata/config.toml"), "{error}");
    }
}
