//! The loaded provider table and model list, with user additions merged in.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::OnceLock;

use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::capabilities::{
    Capabilities, FeatureHeader, Protocol, ReasoningStyle, SystemRole, WireQuirks,
};
use crate::model::{Modality, Model};
use crate::table::{
    AuthScheme, CacheSpec, CatalogSource, Endpoint, FeatureSpec, ModelEntry, ModelOverride,
    ProviderRow, ProviderTable, ServerSpec,
};
use crate::usage::Prices;

/// The committed capability table, embedded at build time.
pub const BUILTIN_PROVIDERS_TOML: &str = include_str!("../data/providers.toml");
/// The committed generated model list, embedded at build time.
pub const BUILTIN_MODELS_JSON: &str = include_str!("../data/models.json");

/// The format version of `providers.toml` this crate reads.
pub const SCHEMA_VERSION: u32 = 1;

/// Defaults for a user-added model that leaves a field out (Pi's `models.json` defaults).
pub const DEFAULT_CONTEXT_WINDOW: u64 = 128_000;
/// Default output cap for a user-added model.
pub const DEFAULT_MAX_OUTPUT: u64 = 16_384;
/// Context window assumed for a served model whose server reports none. Local servers start
/// with small windows (llama-server and Ollama default to 4096 tokens unless told otherwise),
/// which a coding agent's system prompt and tools nearly fill; 32k is a common configured size.
pub const DEFAULT_SERVER_CONTEXT_WINDOW: u64 = 32_768;
/// The provenance of the committed table's rows and models.
pub const BUILTIN_ORIGIN: &str = "built-in";

/// A problem in the table, the model list or a user config, naming where it is.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CatalogError {
    /// The text is not valid TOML/JSON, or does not fit the expected shape.
    #[error("{origin}: {message}")]
    Parse {
        /// File name or description of the source.
        origin: String,
        /// Parser message (with line and column where the parser gives them).
        message: String,
    },
    /// A value is well-formed but wrong; `field` is the dotted path to it.
    #[error("{origin}: {field}: {message}")]
    Invalid {
        /// File name or description of the source.
        origin: String,
        /// Dotted path, e.g. `providers.my-llm.protocol`.
        field: String,
        /// What is wrong.
        message: String,
    },
    /// A file could not be read.
    #[error("{path}: {message}")]
    Io {
        /// The file.
        path: String,
        /// The OS error.
        message: String,
    },
}

impl CatalogError {
    fn invalid(origin: &str, field: impl Into<String>, message: impl Into<String>) -> Self {
        Self::Invalid {
            origin: origin.to_owned(),
            field: field.into(),
            message: message.into(),
        }
    }

    /// The dotted field path, for `Invalid` errors.
    pub fn field(&self) -> Option<&str> {
        match self {
            Self::Invalid { field, .. } => Some(field),
            Self::Parse { .. } | Self::Io { .. } => None,
        }
    }
}

/// The generated `models.json`: every model of every provider, sorted by provider then id.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ModelsFile {
    /// How the file was made (not edited by hand).
    pub generated_by: String,
    /// The models.
    pub models: Vec<Model>,
}

/// Text format of a user config.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConfigFormat {
    /// TOML.
    Toml,
    /// JSON.
    Json,
}

impl ConfigFormat {
    /// The format implied by a file extension (`.json` is JSON, anything else TOML).
    pub fn from_path(path: &Path) -> Self {
        match path.extension().and_then(|e| e.to_str()) {
            Some("json") => Self::Json,
            _ => Self::Toml,
        }
    }
}

/// A user's provider additions and changes (the shape of `schema.json`).
///
/// Every field of a provider is optional: for a built-in provider the given fields replace
/// the row's, overrides are appended and models are merged; a new provider needs at least
/// `protocol` and `base_url`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UserConfig {
    /// Editor hint pointing at `schema.json`; ignored.
    #[serde(rename = "$schema", default, skip_serializing_if = "Option::is_none")]
    pub schema: Option<String>,
    /// Format version (1 when given).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schema_version: Option<u32>,
    /// Providers keyed by id.
    #[serde(default)]
    pub providers: BTreeMap<String, UserProvider>,
}

/// One provider in a user config; see [`ProviderRow`] for the meaning of each field.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UserProvider {
    /// Display name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Wire protocol.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protocol: Option<Protocol>,
    /// Base URL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_url: Option<String>,
    /// Key environment variables.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auth_env: Option<Vec<String>>,
    /// How the key is sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auth: Option<AuthScheme>,
    /// Static headers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub headers: Option<BTreeMap<String, String>>,
    /// Documentation URL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub docs: Option<String>,
    /// The model a run uses when none is chosen and this provider has credentials.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_model: Option<String>,
    /// Catalog source (only meaningful to the generator).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub catalog: Option<CatalogSource>,
    /// Prompt-cache behaviour.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache: Option<CacheSpec>,
    /// Append-only context features.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub features: Option<FeatureSpec>,
    /// Reasoning parameter style.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<ReasoningStyle>,
    /// System role name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system_role: Option<SystemRole>,
    /// Feature headers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub feature_headers: Option<Vec<FeatureHeader>>,
    /// Wire quirks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wire: Option<WireQuirks>,
    /// Per-model overrides (appended after the row's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub overrides: Option<Vec<ModelOverride>>,
    /// Models to add or correct.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub models: Option<BTreeMap<String, ModelEntry>>,
    /// The server serves models the table does not list (local servers, gateways).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<ServerSpec>,
}

/// How many of a provider's models have a capability.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Support {
    /// None of them.
    None,
    /// Some of them (per-model overrides).
    Some,
    /// All of them.
    All,
}

impl Support {
    /// `none`, `some` or `all`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::None => "none",
            Self::Some => "some",
            Self::All => "all",
        }
    }
}

/// One provider, summarized for listings.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ProviderSummary {
    /// Provider id.
    pub id: String,
    /// Display name.
    pub name: String,
    /// Default protocol.
    pub protocol: Protocol,
    /// Every protocol the row uses (gateways use several).
    pub protocols: Vec<Protocol>,
    /// Base URL.
    pub base_url: String,
    /// Key environment variables.
    pub auth_env: Vec<String>,
    /// Row-level cache style.
    pub cache_style: crate::capabilities::CacheStyle,
    /// Number of known models.
    pub models: usize,
    /// Which models accept mid-conversation system messages.
    pub mid_conversation_system: Support,
    /// Which models take tool additions in place.
    pub tool_addition: Support,
    /// Which models take tool removals in place.
    pub tool_removal: Support,
}

/// The provider table plus every model, ready to query.
#[derive(Debug, Clone, PartialEq)]
pub struct Catalog {
    providers: BTreeMap<String, ProviderRow>,
    models: BTreeMap<String, BTreeMap<String, Model>>,
    /// Where each row came from, oldest first (`built-in`, then each file that changed it).
    row_origins: BTreeMap<String, Vec<String>>,
    /// Where each model came from, by provider then model id.
    model_origins: BTreeMap<String, BTreeMap<String, Vec<String>>>,
}

/// A model id the table does not list, made usable with guessed limits and prices.
#[derive(Debug, Clone, PartialEq)]
pub struct GuessedModel {
    /// The model, with limits and prices copied from `like` (or the defaults).
    pub model: Model,
    /// The listed model the guess copied, when one was near enough.
    pub like: Option<String>,
}

impl Catalog {
    /// The committed table and model list.
    pub fn builtin() -> Result<Self, CatalogError> {
        Self::from_sources(BUILTIN_PROVIDERS_TOML, BUILTIN_MODELS_JSON)
    }

    /// The committed catalog, parsed once per process (about 7 ms) and shared afterwards.
    pub fn builtin_shared() -> Result<&'static Self, CatalogError> {
        static BUILTIN: OnceLock<Result<Catalog, CatalogError>> = OnceLock::new();
        BUILTIN
            .get_or_init(Self::builtin)
            .as_ref()
            .map_err(Clone::clone)
    }

    /// Loads a table (`providers.toml` text) and a model list (`models.json` text).
    pub fn from_sources(providers_toml: &str, models_json: &str) -> Result<Self, CatalogError> {
        let table = parse_provider_table(providers_toml, "providers.toml")?;
        let file: ModelsFile =
            serde_json::from_str(models_json).map_err(|e| CatalogError::Parse {
                origin: "models.json".into(),
                message: e.to_string(),
            })?;
        let mut models: BTreeMap<String, BTreeMap<String, Model>> = BTreeMap::new();
        for (i, model) in file.models.into_iter().enumerate() {
            if !table.providers.contains_key(&model.provider) {
                return Err(CatalogError::invalid(
                    "models.json",
                    format!("models[{i}].provider"),
                    format!(
                        "model `{}` names unknown provider `{}`",
                        model.id, model.provider
                    ),
                ));
            }
            models
                .entry(model.provider.clone())
                .or_default()
                .insert(model.id.clone(), model);
        }
        let row_origins = table
            .providers
            .keys()
            .map(|id| (id.clone(), vec![BUILTIN_ORIGIN.to_owned()]))
            .collect();
        let model_origins = models
            .iter()
            .map(|(provider, models)| {
                let ids = models
                    .keys()
                    .map(|id| (id.clone(), vec![BUILTIN_ORIGIN.to_owned()]))
                    .collect();
                (provider.clone(), ids)
            })
            .collect();
        Ok(Self {
            providers: table.providers,
            models,
            row_origins,
            model_origins,
        })
    }

    /// Merges a user config given as text; errors name the offending field.
    pub fn with_user_config(
        self,
        text: &str,
        format: ConfigFormat,
        origin: &str,
    ) -> Result<Self, CatalogError> {
        let config = parse_user_config(text, format, origin)?;
        self.merge_user_config(config, origin)
    }

    /// Merges an already parsed user config (from any format) that came from `origin`.
    pub fn merge_user_config(
        mut self,
        config: UserConfig,
        origin: &str,
    ) -> Result<Self, CatalogError> {
        if let Some(v) = config.schema_version
            && v != SCHEMA_VERSION
        {
            return Err(CatalogError::invalid(
                origin,
                "schema_version",
                format!("unsupported version {v} (this build reads {SCHEMA_VERSION})"),
            ));
        }
        for (id, user) in config.providers {
            self.merge_provider(&id, user, origin)?;
        }
        Ok(self)
    }

    /// Reads and merges a user config file (`.json` as JSON, anything else as TOML).
    pub fn with_user_config_file(self, path: &Path) -> Result<Self, CatalogError> {
        let text = std::fs::read_to_string(path).map_err(|e| CatalogError::Io {
            path: path.display().to_string(),
            message: e.to_string(),
        })?;
        let origin = path.display().to_string();
        self.with_user_config(&text, ConfigFormat::from_path(path), &origin)
    }

    fn merge_provider(
        &mut self,
        id: &str,
        user: UserProvider,
        origin: &str,
    ) -> Result<(), CatalogError> {
        let field = |name: &str| format!("providers.{id}.{name}");
        let row = match self.providers.remove(id) {
            Some(row) => patch_row(row, &user),
            None => {
                let protocol = user.protocol.ok_or_else(|| {
                    CatalogError::invalid(
                        origin,
                        field("protocol"),
                        format!(
                            "required for a new provider (one of: {})",
                            protocol_names().join(", ")
                        ),
                    )
                })?;
                let base_url = user.base_url.clone().ok_or_else(|| {
                    CatalogError::invalid(origin, field("base_url"), "required for a new provider")
                })?;
                let row = blank_row(id, protocol, &base_url);
                patch_row(row, &user)
            }
        };
        validate_row(&row, origin)?;
        if let Some(entries) = &user.models {
            let models = self.models.entry(id.to_owned()).or_default();
            for (model_id, entry) in entries {
                validate_model_entry(entry, origin, &format!("providers.{id}.models.{model_id}"))?;
                let merged = match models.remove(model_id) {
                    Some(existing) => patch_model(existing, entry, &row),
                    None => new_model(id, model_id, entry, &row),
                };
                models.insert(model_id.clone(), merged);
                push_origin(
                    self.model_origins
                        .entry(id.to_owned())
                        .or_default()
                        .entry(model_id.clone())
                        .or_default(),
                    origin,
                );
            }
        }
        push_origin(self.row_origins.entry(id.to_owned()).or_default(), origin);
        self.providers.insert(id.to_owned(), row);
        Ok(())
    }

    /// Where the row `provider` came from, oldest first: `built-in`, then each config file
    /// that changed it.
    pub fn row_origins(&self, provider: &str) -> &[String] {
        self.row_origins
            .get(provider)
            .map(Vec::as_slice)
            .unwrap_or_default()
    }

    /// Where the model `provider/id` came from, oldest first.
    pub fn model_origins(&self, provider: &str, id: &str) -> &[String] {
        self.model_origins
            .get(provider)
            .and_then(|m| m.get(id))
            .map(Vec::as_slice)
            .unwrap_or_default()
    }

    /// A model for an id the table does not list at `provider`: limits and prices copied from
    /// the listed model whose id shares the longest prefix with it (at least its family name,
    /// e.g. `gpt-` or `claude-`), else Pi's defaults with no prices. `None` for an unknown
    /// provider.
    pub fn guess_model(&self, provider: &str, id: &str) -> Option<GuessedModel> {
        let row = self.providers.get(provider)?;
        let family = |s: &str| {
            s.find(|c: char| !c.is_ascii_alphabetic())
                .map_or(s.len(), |i| i)
        };
        let words = |s: &str| -> Vec<String> {
            s.split(['-', '.', ':', '/', '_'])
                .filter(|w| !w.is_empty())
                .map(str::to_owned)
                .collect()
        };
        let wanted = words(id);
        let like = self
            .models_of(provider)
            .map(|m| (common_prefix(&m.id, id), m))
            .filter(|(shared, _)| *shared > 0 && *shared >= family(id))
            // Longest shared prefix; then the most shared words (`mini` finds a mini); then
            // the largest window (usually the newest).
            .max_by_key(|(shared, m)| {
                let common = words(&m.id).iter().filter(|w| wanted.contains(w)).count();
                (*shared, common, m.context_window, m.id.clone())
            });
        let model = match like {
            Some((_, m)) => Model {
                id: id.to_owned(),
                name: id.to_owned(),
                ..m.clone()
            },
            None => new_model(provider, id, &ModelEntry::default(), row),
        };
        Some(GuessedModel {
            model,
            like: like.map(|(_, m)| m.id.clone()),
        })
    }

    /// Every provider row, sorted by id.
    pub fn providers(&self) -> impl Iterator<Item = &ProviderRow> {
        self.providers.values()
    }

    /// The row for `provider`.
    pub fn provider(&self, provider: &str) -> Option<&ProviderRow> {
        self.providers.get(provider)
    }

    /// The models of `provider`, sorted by id.
    pub fn models_of(&self, provider: &str) -> impl Iterator<Item = &Model> {
        self.models
            .get(provider)
            .into_iter()
            .flat_map(|m| m.values())
    }

    /// Every model, sorted by provider then id.
    pub fn models(&self) -> impl Iterator<Item = &Model> {
        self.models.values().flat_map(|m| m.values())
    }

    /// One model.
    pub fn model(&self, provider: &str, id: &str) -> Option<Model> {
        self.models.get(provider).and_then(|m| m.get(id)).cloned()
    }

    /// A model named `provider/id` (the id may itself contain `/`).
    pub fn resolve(&self, qualified: &str) -> Option<Model> {
        let (provider, id) = qualified.split_once('/')?;
        self.model(provider, id)
    }

    /// Capabilities of `model` at `provider`; the conservative default for an unknown provider.
    pub fn capabilities(&self, provider: &str, model: &str) -> Capabilities {
        self.providers
            .get(provider)
            .map(|row| row.capabilities(model))
            .unwrap_or_default()
    }

    /// One line per provider for listings (`strata providers`), sorted by id.
    pub fn summaries(&self) -> Vec<ProviderSummary> {
        self.providers
            .values()
            .map(|row| {
                let ids: Vec<&str> = self.models_of(&row.id).map(|m| m.id.as_str()).collect();
                let support = |flag: fn(&Capabilities) -> bool| -> Support {
                    if ids.is_empty() {
                        let base = flag(&row.base_capabilities());
                        let any_override = row.overrides.iter().any(|o| {
                            let mut caps = row.base_capabilities();
                            crate::table::apply_override(&mut caps, o);
                            flag(&caps)
                        });
                        return match (base, any_override) {
                            (true, _) => Support::All,
                            (false, true) => Support::Some,
                            (false, false) => Support::None,
                        };
                    }
                    let yes = ids.iter().filter(|id| flag(&row.capabilities(id))).count();
                    match yes {
                        0 => Support::None,
                        n if n == ids.len() => Support::All,
                        _ => Support::Some,
                    }
                };
                ProviderSummary {
                    id: row.id.clone(),
                    name: row.name.clone(),
                    protocol: row.protocol,
                    protocols: row.protocols(),
                    base_url: row.base_url.clone(),
                    auth_env: row.auth_env.clone(),
                    cache_style: row.cache.style,
                    models: ids.len(),
                    mid_conversation_system: support(|c| c.mid_conversation_system),
                    tool_addition: support(|c| c.tool_addition),
                    tool_removal: support(|c| c.tool_removal),
                }
            })
            .collect()
    }

    /// Protocol, base URL and auth for `model` at `provider`.
    pub fn endpoint(&self, provider: &str, model: &str) -> Option<Endpoint> {
        self.providers.get(provider).map(|row| row.endpoint(model))
    }
}

/// A row with nothing but an id, protocol and base URL (a new provider before its fields
/// apply): no cache, no features, bearer auth, the `system` role.
pub(crate) fn blank_row(id: &str, protocol: Protocol, base_url: &str) -> ProviderRow {
    ProviderRow {
        id: id.to_owned(),
        name: id.to_owned(),
        protocol,
        base_url: base_url.to_owned(),
        auth_env: Vec::new(),
        auth: AuthScheme::Bearer,
        headers: BTreeMap::new(),
        docs: None,
        default_model: None,
        catalog: None,
        cache: CacheSpec::default(),
        features: FeatureSpec::default(),
        reasoning: ReasoningStyle::None,
        system_role: SystemRole::System,
        feature_headers: Vec::new(),
        wire: WireQuirks::default(),
        overrides: Vec::new(),
        models: BTreeMap::new(),
        server: None,
    }
}

fn push_origin(origins: &mut Vec<String>, origin: &str) {
    if origins.last().map(String::as_str) != Some(origin) {
        origins.push(origin.to_owned());
    }
}

fn common_prefix(a: &str, b: &str) -> usize {
    a.chars()
        .zip(b.chars())
        .take_while(|(x, y)| x == y)
        .map(|(x, _)| x.len_utf8())
        .sum()
}

fn protocol_names() -> Vec<&'static str> {
    Protocol::ALL.iter().map(|p| p.as_str()).collect()
}

/// Parses `providers.toml` text; errors name the provider and field.
pub fn parse_provider_table(text: &str, origin: &str) -> Result<ProviderTable, CatalogError> {
    let raw: toml::Table = toml::from_str(text).map_err(|e| CatalogError::Parse {
        origin: origin.to_owned(),
        message: e.to_string(),
    })?;
    let mut table: ProviderTable =
        toml::Value::Table(raw.clone())
            .try_into()
            .map_err(|e: toml::de::Error| {
                // Re-deserialize row by row so the error names the provider it is in.
                let row_error =
                    raw.get("providers")
                        .and_then(|p| p.as_table())
                        .and_then(|providers| {
                            providers.iter().find_map(|(id, value)| {
                                value
                                    .clone()
                                    .try_into::<ProviderRow>()
                                    .err()
                                    .map(|e| (id.clone(), e.message().to_owned()))
                            })
                        });
                match row_error {
                    Some((id, message)) => {
                        CatalogError::invalid(origin, format!("providers.{id}"), message)
                    }
                    None => CatalogError::Parse {
                        origin: origin.to_owned(),
                        message: e.message().to_owned(),
                    },
                }
            })?;
    if table.schema_version != SCHEMA_VERSION {
        return Err(CatalogError::invalid(
            origin,
            "schema_version",
            format!(
                "unsupported version {} (this build reads {SCHEMA_VERSION})",
                table.schema_version
            ),
        ));
    }
    for (id, row) in &mut table.providers {
        row.id.clone_from(id);
        validate_row(row, origin)?;
        for (model_id, entry) in &row.models {
            validate_model_entry(entry, origin, &format!("providers.{id}.models.{model_id}"))?;
        }
    }
    Ok(table)
}

fn validate_row(row: &ProviderRow, origin: &str) -> Result<(), CatalogError> {
    let id = &row.id;
    if row.base_url.trim().is_empty() {
        return Err(CatalogError::invalid(
            origin,
            format!("providers.{id}.base_url"),
            "must not be empty",
        ));
    }
    let multipliers = [
        ("read_multiplier", Some(row.cache.read_multiplier)),
        ("write_multiplier", Some(row.cache.write_multiplier)),
        ("write_1h_multiplier", row.cache.write_1h_multiplier),
    ];
    for (name, value) in multipliers {
        if let Some(v) = value
            && !(v.is_finite() && v >= 0.0)
        {
            return Err(CatalogError::invalid(
                origin,
                format!("providers.{id}.cache.{name}"),
                format!("must be a non-negative number, got {v}"),
            ));
        }
    }
    let peaks = std::iter::once(("cache.peak".to_owned(), row.cache.peak.as_ref())).chain(
        row.overrides
            .iter()
            .enumerate()
            .map(|(i, o)| (format!("overrides[{i}].peak"), o.peak.as_ref())),
    );
    for (field, peak) in peaks {
        let Some(peak) = peak else { continue };
        if !(peak.multiplier.is_finite() && peak.multiplier >= 0.0) {
            return Err(CatalogError::invalid(
                origin,
                format!("providers.{id}.{field}.multiplier"),
                format!("must be a non-negative number, got {}", peak.multiplier),
            ));
        }
        if let Some([from, to]) = peak.hours_utc.iter().find(|[f, t]| f >= t || *t > 24) {
            return Err(CatalogError::invalid(
                origin,
                format!("providers.{id}.{field}.hours_utc"),
                format!("[{from}, {to}] is not a window of whole hours (from < to <= 24)"),
            ));
        }
    }
    for (i, o) in row.overrides.iter().enumerate() {
        if o.models.is_empty() || o.models.iter().any(|p| p.is_empty()) {
            return Err(CatalogError::invalid(
                origin,
                format!("providers.{id}.overrides[{i}].models"),
                "needs at least one non-empty model pattern",
            ));
        }
    }
    Ok(())
}

fn validate_model_entry(entry: &ModelEntry, origin: &str, path: &str) -> Result<(), CatalogError> {
    if let Some(prices) = &entry.prices {
        let all = [
            ("input", prices.input),
            ("output", prices.output),
            ("cache_read", prices.cache_read),
            ("cache_write_5m", prices.cache_write_5m),
            ("cache_write_1h", prices.cache_write_1h),
        ];
        for (name, value) in all {
            if let Some(v) = value
                && !(v.is_finite() && v >= 0.0)
            {
                return Err(CatalogError::invalid(
                    origin,
                    format!("{path}.prices.{name}"),
                    format!("must be a non-negative number, got {v}"),
                ));
            }
        }
    }
    if entry.context_window == Some(0) {
        return Err(CatalogError::invalid(
            origin,
            format!("{path}.context_window"),
            "must be greater than 0",
        ));
    }
    Ok(())
}

/// Parses a user config; every error names the dotted path of the field at fault.
pub fn parse_user_config(
    text: &str,
    format: ConfigFormat,
    origin: &str,
) -> Result<UserConfig, CatalogError> {
    let value: serde_json::Value = match format {
        ConfigFormat::Json => serde_json::from_str(text).map_err(|e| CatalogError::Parse {
            origin: origin.to_owned(),
            message: e.to_string(),
        })?,
        ConfigFormat::Toml => {
            let table: toml::Table = toml::from_str(text).map_err(|e| CatalogError::Parse {
                origin: origin.to_owned(),
                message: e.to_string(),
            })?;
            serde_json::to_value(table).map_err(|e| CatalogError::Parse {
                origin: origin.to_owned(),
                message: e.to_string(),
            })?
        }
    };
    let serde_json::Value::Object(top) = value else {
        return Err(CatalogError::invalid(
            origin,
            "(root)",
            "expected a table/object",
        ));
    };
    let mut config = UserConfig::default();
    for (key, value) in top {
        match key.as_str() {
            "$schema" => config.schema = Some(field_from(value, origin, "$schema")?),
            "schema_version" => {
                config.schema_version = Some(field_from(value, origin, "schema_version")?)
            }
            "providers" => {
                let serde_json::Value::Object(providers) = value else {
                    return Err(CatalogError::invalid(
                        origin,
                        "providers",
                        "expected a table of providers",
                    ));
                };
                for (id, provider) in providers {
                    let parsed = parse_user_provider(provider, origin, &id)?;
                    config.providers.insert(id, parsed);
                }
            }
            other => {
                return Err(CatalogError::invalid(
                    origin,
                    other,
                    "unknown field (expected `schema_version` or `providers`)",
                ));
            }
        }
    }
    Ok(config)
}

fn parse_user_provider(
    value: serde_json::Value,
    origin: &str,
    id: &str,
) -> Result<UserProvider, CatalogError> {
    let serde_json::Value::Object(mut fields) = value else {
        return Err(CatalogError::invalid(
            origin,
            format!("providers.{id}"),
            "expected a table",
        ));
    };
    // Models and overrides are checked entry by entry so errors point inside them.
    let models = fields.remove("models");
    let overrides = fields.remove("overrides");
    let mut provider: UserProvider = serde_json::from_value(serde_json::Value::Object(fields))
        .map_err(|e| {
            let message = redact_values(&e.to_string());
            let field = unknown_field_name(&message)
                .map(|f| format!("providers.{id}.{f}"))
                .unwrap_or_else(|| format!("providers.{id}"));
            CatalogError::invalid(origin, field, message)
        })?;
    if let Some(models) = models {
        let serde_json::Value::Object(models) = models else {
            return Err(CatalogError::invalid(
                origin,
                format!("providers.{id}.models"),
                "expected a table of models",
            ));
        };
        let mut parsed = BTreeMap::new();
        for (model_id, entry) in models {
            let path = format!("providers.{id}.models.{model_id}");
            parsed.insert(model_id, field_from::<ModelEntry>(entry, origin, &path)?);
        }
        provider.models = Some(parsed);
    }
    if let Some(overrides) = overrides {
        let serde_json::Value::Array(items) = overrides else {
            return Err(CatalogError::invalid(
                origin,
                format!("providers.{id}.overrides"),
                "expected an array of tables",
            ));
        };
        let mut parsed = Vec::new();
        for (i, item) in items.into_iter().enumerate() {
            let path = format!("providers.{id}.overrides[{i}]");
            let o = field_from::<ModelOverride>(item, origin, &path)?;
            if o.models.is_empty() || o.models.iter().any(|p| p.is_empty()) {
                return Err(CatalogError::invalid(
                    origin,
                    format!("{path}.models"),
                    "needs at least one non-empty model pattern",
                ));
            }
            parsed.push(o);
        }
        provider.overrides = Some(parsed);
    }
    Ok(provider)
}

fn field_from<T: DeserializeOwned>(
    value: serde_json::Value,
    origin: &str,
    path: &str,
) -> Result<T, CatalogError> {
    serde_json::from_value(value).map_err(|e| {
        let message = redact_values(&e.to_string());
        let field = unknown_field_name(&message)
            .map(|f| format!("{path}.{f}"))
            .unwrap_or_else(|| path.to_owned());
        CatalogError::invalid(origin, field, message)
    })
}

/// A serde message without the value it found: `invalid type: string "sk-…", expected u32`
/// becomes `invalid type: string, expected u32`, so a key typed into the wrong field never
/// reaches an error message. Field names (`unknown field `x``) stay: they are the user's
/// spelling of a key, not a value.
pub fn redact_values(message: &str) -> String {
    let value_first = ["invalid type: ", "invalid value: ", "unknown variant "];
    let Some(prefix) = value_first.iter().find(|p| message.starts_with(**p)) else {
        return message.to_owned();
    };
    let rest = &message[prefix.len()..];
    let (found, tail) = match rest.find(", expected") {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, ""),
    };
    if prefix.starts_with("unknown") {
        return format!("unknown variant{tail}");
    }
    // Keep the kind word (`string`, `integer`, …) and drop the literal after it.
    let kind = found
        .split([' ', '`', '"'])
        .next()
        .filter(|k| !k.is_empty())
        .unwrap_or("value");
    format!("{}{kind}{tail}", prefix)
}

/// Pulls the field name out of serde's "unknown field `x`" / "missing field `x`" messages.
fn unknown_field_name(message: &str) -> Option<&str> {
    let rest = message
        .strip_prefix("unknown field `")
        .or_else(|| message.strip_prefix("missing field `"))?;
    rest.split('`').next()
}

fn patch_row(mut row: ProviderRow, user: &UserProvider) -> ProviderRow {
    if let Some(v) = &user.name {
        row.name.clone_from(v);
    }
    if let Some(v) = user.protocol {
        row.protocol = v;
    }
    if let Some(v) = &user.base_url {
        row.base_url.clone_from(v);
    }
    if let Some(v) = &user.auth_env {
        row.auth_env.clone_from(v);
    }
    if let Some(v) = user.auth {
        row.auth = v;
    }
    if let Some(v) = &user.headers {
        row.headers
            .extend(v.iter().map(|(k, v)| (k.clone(), v.clone())));
    }
    if let Some(v) = &user.default_model {
        row.default_model = Some(v.clone());
    }
    if let Some(v) = &user.docs {
        row.docs = Some(v.clone());
    }
    if let Some(v) = &user.catalog {
        row.catalog = Some(v.clone());
    }
    if let Some(v) = &user.cache {
        row.cache = v.clone();
    }
    if let Some(v) = user.features {
        row.features = v;
    }
    if let Some(v) = user.reasoning {
        row.reasoning = v;
    }
    if let Some(v) = user.system_role {
        row.system_role = v;
    }
    if let Some(v) = &user.feature_headers {
        row.feature_headers.clone_from(v);
    }
    if let Some(v) = &user.wire {
        row.wire = v.clone();
    }
    if let Some(v) = &user.overrides {
        row.overrides.extend(v.iter().cloned());
    }
    if let Some(v) = user.server {
        row.server = Some(v);
    }
    row
}

/// A model that is only in the table (or a user config), with Pi's defaults for gaps.
pub fn new_model(provider: &str, id: &str, entry: &ModelEntry, row: &ProviderRow) -> Model {
    let base = Model {
        provider: provider.to_owned(),
        id: id.to_owned(),
        name: id.to_owned(),
        context_window: DEFAULT_CONTEXT_WINDOW,
        max_output: DEFAULT_MAX_OUTPUT,
        input: vec![Modality::Text],
        reasoning: false,
        prices: Prices::default(),
    };
    patch_model(base, entry, row)
}

/// Applies a hand-kept entry to a model; unset cache prices follow the row's multipliers.
pub fn patch_model(mut model: Model, entry: &ModelEntry, row: &ProviderRow) -> Model {
    if let Some(v) = &entry.name {
        model.name.clone_from(v);
    }
    if let Some(v) = entry.context_window {
        model.context_window = v;
    }
    if let Some(v) = entry.max_output {
        model.max_output = v;
    }
    if let Some(v) = &entry.input {
        model.input.clone_from(v);
    }
    if let Some(v) = entry.reasoning {
        model.reasoning = v;
    }
    if let Some(p) = &entry.prices {
        let input_changed = p.input.is_some();
        if let Some(v) = p.input {
            model.prices.input = v;
        }
        if let Some(v) = p.output {
            model.prices.output = v;
        }
        let derived = crate::refresh::derive_prices(
            model.prices.input,
            model.prices.output,
            None,
            None,
            &row.capabilities(&model.id),
        );
        // A new input price re-derives unset cache prices from the row's multipliers.
        model.prices.cache_read = p.cache_read.unwrap_or(if input_changed {
            derived.cache_read
        } else {
            model.prices.cache_read
        });
        model.prices.cache_write_5m = p.cache_write_5m.unwrap_or(if input_changed {
            derived.cache_write_5m
        } else {
            model.prices.cache_write_5m
        });
        model.prices.cache_write_1h = p.cache_write_1h.unwrap_or(if input_changed {
            derived.cache_write_1h
        } else {
            model.prices.cache_write_1h
        });
    }
    model
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redacted_messages_keep_the_kind_and_drop_the_value() {
        assert_eq!(
            redact_values("invalid type: string \"sk-ant-secret\", expected u32"),
            "invalid type: string, expected u32"
        );
        assert_eq!(
            redact_values("invalid value: integer `-5`, expected u64"),
            "invalid value: integer, expected u64"
        );
        assert_eq!(
            redact_values("unknown variant `sk-ant-x`, expected one of `a`, `b`"),
            "unknown variant, expected one of `a`, `b`"
        );
        assert_eq!(
            redact_values("unknown field `apikey`, expected `name`"),
            "unknown field `apikey`, expected `name`"
        );
    }

    #[test]
    fn an_unlisted_id_copies_its_nearest_sibling() {
        let catalog = Catalog::builtin().unwrap();
        let guess = catalog.guess_model("openai", "gpt-7-preview").unwrap();
        let like = guess.like.clone().unwrap();
        assert!(like.starts_with("gpt-"), "{like}");
        let sibling = catalog.model("openai", &like).unwrap();
        assert_eq!(guess.model.id, "gpt-7-preview");
        assert_eq!(guess.model.context_window, sibling.context_window);
        assert_eq!(guess.model.prices, sibling.prices);
        let mini = catalog.guess_model("openai", "gpt-8-mini").unwrap();
        assert!(
            mini.like.unwrap().ends_with("-mini"),
            "a mini is guessed from a mini"
        );
        // Nothing shares even the family name: Pi's defaults, no prices.
        let none = catalog.guess_model("openai", "zzz").unwrap();
        assert_eq!(none.like, None);
        assert_eq!(none.model.context_window, DEFAULT_CONTEXT_WINDOW);
        assert!(catalog.guess_model("no-such-provider", "m").is_none());
    }
}
