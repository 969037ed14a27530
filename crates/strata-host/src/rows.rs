//! The provider table a run uses: the built-in rows, then Pi's `models.json`, then the
//! `[providers.*]` rows of the user's config and of a trusted project's; and which hosts may
//! receive each row's key.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use anyhow::Context as _;
use figment::Figment;
use serde_json::{Value, json};
use strata_provider::catalog::parse_user_config;
use strata_provider::pi::parse_pi_models;
use strata_provider::{Catalog, CatalogError, ConfigFormat, ProviderRow};

use crate::config::{Config, Layers};

/// The listings' vocabulary (`strata models`, `strata providers`): a row's capabilities, the
/// features a provider refused and the table learned, a server's own model list.
pub use strata_provider::{Capabilities, Lesson, discovery::Discovery};

/// Which hosts each provider's key may be sent to: those of the row as the user configured it
/// outside the project (built-in table, Pi's file, the user's config, `STRATA_*`).
#[derive(Debug, Clone, Default)]
pub struct KeyPolicy {
    /// `None`: no policy (in-process setups such as the demo, which pass the key as a flag).
    hosts: Option<BTreeMap<String, BTreeSet<String>>>,
    /// Providers whose `api_key` the project's own file supplied (the project's key, not the
    /// user's: it may go where the project's row points).
    project_keys: BTreeSet<String>,
    /// Literal keys from Pi's `models.json`, by provider.
    pi_keys: BTreeMap<String, String>,
    /// Every base URL (as written, `{VAR}` placeholders kept) of each row as the user
    /// configured it outside the project: the only URLs whose placeholders are filled.
    user_urls: BTreeMap<String, BTreeSet<String>>,
}

impl KeyPolicy {
    /// Whether a key read from the environment or the user's config may go to `url`.
    pub fn allows(&self, provider: &str, url: &str) -> bool {
        let Some(hosts) = &self.hosts else {
            return true;
        };
        if self.project_keys.contains(provider) {
            return true;
        }
        hosts
            .get(provider)
            .is_some_and(|allowed| allowed.contains(&host_of(url)))
    }

    /// Whether `url` (as written) is one the user configured for `provider` outside the
    /// project, so that its `{VAR}` placeholders may be filled from the environment. A URL a
    /// project wrote must not: `http://host/{ANTHROPIC_API_KEY}` would carry the key.
    pub fn fills_placeholders(&self, provider: &str, url: &str) -> bool {
        if self.hosts.is_none() || !url.contains('{') {
            return true;
        }
        self.user_urls
            .get(provider)
            .is_some_and(|urls| urls.contains(url))
    }

    /// The key Pi's `models.json` gives `provider` literally.
    pub fn pi_key(&self, provider: &str) -> Option<&str> {
        self.pi_keys.get(provider).map(String::as_str)
    }
}

/// `host[:port]` of a URL, lower-cased (`{VAR}` placeholders are kept as written).
pub fn host_of(url: &str) -> String {
    let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
    let authority = rest.split(['/', '?', '#']).next().unwrap_or(rest);
    let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    host.to_ascii_lowercase()
}

/// Every base URL of a row, as written (its own and its per-model ones).
fn row_urls(row: &ProviderRow) -> BTreeSet<String> {
    std::iter::once(row.base_url.as_str())
        .chain(row.overrides.iter().filter_map(|o| o.base_url.as_deref()))
        .map(str::to_owned)
        .collect()
}

/// Every host a row sends requests to (its base URL and its per-model ones).
fn row_hosts(row: &ProviderRow) -> BTreeSet<String> {
    row_urls(row).iter().map(|url| host_of(url)).collect()
}

/// The catalog, the key policy and what Pi's file could not carry over.
#[derive(Debug, Clone)]
pub struct Rows {
    /// Built-in rows with every layer's additions.
    pub catalog: Catalog,
    /// Where keys may go.
    pub keys: KeyPolicy,
    /// Pi's file, when one was read.
    pub pi_file: Option<PathBuf>,
    /// Pi fields with no counterpart (`field: why`).
    pub pi_ignored: Vec<String>,
    /// Things to tell the user (a Pi file that does not parse, …).
    pub warnings: Vec<String>,
}

/// Pi's `models.json`: `$PI_CODING_AGENT_DIR/models.json`, else `~/.pi/agent/models.json`.
/// (Pi has no project-level model file: `.pi/` holds settings, MCP servers and resources.)
pub fn pi_models_path() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("PI_CODING_AGENT_DIR").filter(|d| !d.is_empty()) {
        return Some(Path::new(&dir).join("models.json"));
    }
    std::env::var_os("HOME").map(|home| Path::new(&home).join(".pi/agent/models.json"))
}

impl Rows {
    /// Builds the catalog for `config` (merged from `layers`).
    pub fn load(layers: &Layers, config: &Config) -> anyhow::Result<Self> {
        let builtin = Catalog::builtin_shared()
            .context("loading the capability table")?
            .clone();
        let mut warnings = Vec::new();
        let mut pi_keys = BTreeMap::new();
        let mut pi_ignored = Vec::new();
        let mut pi_file = None;
        let mut base = builtin;
        if config.pi_models
            && let Some(path) = pi_models_path()
            && let Ok(text) = std::fs::read_to_string(&path)
        {
            let origin = path.display().to_string();
            match parse_pi_models(&text, &origin, &base).and_then(|pi| {
                Ok((
                    base.clone().merge_user_config(pi.config.clone(), &origin)?,
                    pi,
                ))
            }) {
                Ok((merged, pi)) => {
                    base = merged;
                    pi_keys = pi.api_keys;
                    pi_ignored = pi.ignored;
                    pi_file = Some(path);
                }
                Err(e) => warnings.push(format!("skipping Pi's models.json: {e}")),
            }
        }
        let outside_figment = layers.figment_outside_project();
        let outside_config = crate::config::extract(&outside_figment)?;
        let outside = merge_config_rows(base.clone(), &outside_figment, &outside_config)?;
        let figment = layers.figment();
        let catalog = merge_config_rows(base, &figment, config)?;
        let hosts = outside
            .providers()
            .map(|row| (row.id.clone(), row_hosts(row)))
            .collect();
        let user_urls = outside
            .providers()
            .map(|row| (row.id.clone(), row_urls(row)))
            .collect();
        let project_path = layers.project.as_ref().map(|p| p.path.clone());
        let project_keys = config
            .providers
            .iter()
            .filter(|(_, settings)| settings.api_key.is_some())
            .filter(|(id, _)| {
                let source = figment
                    .find_metadata(&format!("providers.{id}.api_key"))
                    .and_then(|m| m.source.as_ref())
                    .and_then(|s| s.file_path().map(Path::to_path_buf));
                source.is_some() && source == project_path
            })
            .map(|(id, _)| id.clone())
            .collect();
        Ok(Self {
            catalog,
            keys: KeyPolicy {
                hosts: Some(hosts),
                project_keys,
                pi_keys,
                user_urls,
            },
            pi_file,
            pi_ignored,
            warnings,
        })
    }
}

/// Where a provider's settings came from: the distinct sources of its fields.
fn origins_of(figment: &Figment, id: &str, fields: &serde_json::Map<String, Value>) -> String {
    let mut keys = Vec::new();
    for (field, value) in fields {
        collect_keys(&format!("providers.{id}.{field}"), value, &mut keys);
    }
    let mut origins: Vec<String> = Vec::new();
    for key in keys {
        let Some(meta) = figment.find_metadata(&key) else {
            continue;
        };
        let origin = meta
            .source
            .as_ref()
            .map(ToString::to_string)
            .unwrap_or_else(|| meta.name.to_string());
        if !origins.contains(&origin) {
            origins.push(origin);
        }
    }
    if origins.is_empty() {
        "config".to_owned()
    } else {
        origins.join(" + ")
    }
}

/// Leaf keys figment can look up (a key holding `.`, such as a model id, stops the descent).
fn collect_keys(prefix: &str, value: &Value, out: &mut Vec<String>) {
    match value {
        Value::Object(map) if !map.is_empty() => {
            let mut descended = false;
            for (key, child) in map {
                if key.contains('.') {
                    continue;
                }
                descended = true;
                collect_keys(&format!("{prefix}.{key}"), child, out);
            }
            if !descended {
                out.push(prefix.to_owned());
            }
        }
        _ => out.push(prefix.to_owned()),
    }
}

/// Merges every `[providers.<id>]` of `config` into `catalog`, each under the file(s) it came
/// from; an error names the file of the faulty field.
fn merge_config_rows(
    mut catalog: Catalog,
    figment: &Figment,
    config: &Config,
) -> anyhow::Result<Catalog> {
    for (id, settings) in &config.providers {
        let mut fields = settings.row.clone();
        if let Some(url) = &settings.base_url {
            fields.insert("base_url".into(), Value::String(url.clone()));
        }
        if fields.is_empty() {
            continue;
        }
        let origin = origins_of(figment, id, &fields);
        let text = json!({ "providers": { id: fields } }).to_string();
        let relabel = |e: CatalogError| -> anyhow::Error {
            let origin = match e.field().and_then(|f| figment.find_metadata(f)) {
                Some(meta) => meta
                    .source
                    .as_ref()
                    .map(ToString::to_string)
                    .unwrap_or_else(|| meta.name.to_string()),
                None => origin.clone(),
            };
            let message = match &e {
                CatalogError::Invalid { field, message, .. } => format!("{field}: {message}"),
                other => other.to_string(),
            };
            anyhow::anyhow!("invalid configuration: {origin}: {message}")
        };
        let parsed = parse_user_config(&text, ConfigFormat::Json, &origin).map_err(relabel)?;
        catalog = catalog
            .merge_user_config(parsed, &origin)
            .map_err(relabel)?;
    }
    Ok(catalog)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_ignore_paths_users_and_case() {
        assert_eq!(host_of("https://API.anthropic.com/v1"), "api.anthropic.com");
        assert_eq!(host_of("http://u:p@127.0.0.1:8080"), "127.0.0.1:8080");
        assert_eq!(
            host_of("https://{AZURE_RESOURCE}.openai.azure.com/openai"),
            "{azure_resource}.openai.azure.com"
        );
    }

    #[test]
    fn keys_go_only_to_the_users_hosts() {
        let mut hosts = BTreeMap::new();
        hosts.insert(
            "anthropic".to_owned(),
            BTreeSet::from(["api.anthropic.com".to_owned()]),
        );
        let policy = KeyPolicy {
            hosts: Some(hosts),
            ..KeyPolicy::default()
        };
        assert!(policy.allows("anthropic", "https://api.anthropic.com"));
        assert!(!policy.allows("anthropic", "http://127.0.0.1:9"));
        assert!(!policy.allows("evil", "http://127.0.0.1:9"));
        assert!(KeyPolicy::default().allows("anything", "http://x"));
    }
}
