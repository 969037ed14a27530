//! Generation of `models.json` and `schema.json` from a models.dev-format catalog and the table.
//!
//! `cargo xtask refresh-capabilities` calls [`regenerate`] and writes the outputs; the drift
//! test calls it on the committed inputs and compares. Nothing here touches the network.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use crate::capabilities::Capabilities;
use crate::catalog::{
    CatalogError, ModelsFile, UserConfig, new_model, parse_provider_table, patch_model,
};
use crate::model::{Modality, Model};
use crate::request::CacheTtl;
use crate::table::{ProviderRow, ProviderTable, glob_match};
use crate::usage::Prices;

/// The hand-kept table, relative to the workspace root.
pub const PROVIDERS_TOML_PATH: &str = "crates/strata-provider/data/providers.toml";
/// The committed models.dev-format catalog snapshot (input), relative to the workspace root.
pub const CATALOG_JSON_PATH: &str = "crates/strata-provider/data/catalog.json";
/// The generated model list (output).
pub const MODELS_JSON_PATH: &str = "crates/strata-provider/data/models.json";
/// The generated JSON Schema of provider config (output).
pub const SCHEMA_JSON_PATH: &str = "crates/strata-provider/data/schema.json";
/// The command that regenerates the outputs.
pub const REFRESH_COMMAND: &str = "cargo xtask refresh-capabilities";

/// Why generation failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RefreshError {
    /// The table is invalid.
    #[error(transparent)]
    Table(#[from] CatalogError),
    /// The catalog is not valid models.dev JSON; `path` is the dotted path at fault.
    #[error("{origin}: {path}: {message}")]
    Catalog {
        /// Which catalog file.
        origin: String,
        /// Dotted path inside it.
        path: String,
        /// What is wrong.
        message: String,
    },
    /// Serializing an output failed.
    #[error("serializing {what}: {message}")]
    Serialize {
        /// Which output.
        what: String,
        /// The serializer's message.
        message: String,
    },
}

/// The three files generation writes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outputs {
    /// The (merged, trimmed) catalog snapshot.
    pub catalog_json: String,
    /// The generated model list.
    pub models_json: String,
    /// The JSON Schema of provider config.
    pub schema_json: String,
}

/// Regenerates every output from the table text and the committed catalog text.
///
/// With `incoming` (a fresh models.dev catalog), its providers replace the committed
/// snapshot's; providers it lacks keep the snapshot's models.
pub fn regenerate(
    providers_toml: &str,
    catalog_json: &str,
    incoming: Option<&str>,
) -> Result<Outputs, RefreshError> {
    let table = parse_provider_table(providers_toml, PROVIDERS_TOML_PATH)?;
    let mut catalog = parse_catalog(catalog_json, CATALOG_JSON_PATH)?;
    if let Some(incoming) = incoming {
        let fresh = parse_catalog(incoming, "incoming catalog")?;
        for (key, provider) in fresh {
            catalog.insert(key, provider);
        }
    }
    let catalog = trim_catalog(&table, catalog);
    let models = build_models(&table, &catalog)?;
    Ok(Outputs {
        catalog_json: render_json(&sort_keys(Value::Object(catalog)), "catalog.json")?,
        models_json: render_models_json(models)?,
        schema_json: render_schema_json()?,
    })
}

/// Parses a models.dev `api.json`-format catalog (object keyed by provider id).
pub fn parse_catalog(text: &str, origin: &str) -> Result<Map<String, Value>, RefreshError> {
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(_) => Err(RefreshError::Catalog {
            origin: origin.to_owned(),
            path: "(root)".into(),
            message: "expected an object keyed by provider id".into(),
        }),
        Err(e) => Err(RefreshError::Catalog {
            origin: origin.to_owned(),
            path: "(root)".into(),
            message: e.to_string(),
        }),
    }
}

/// Keeps only the catalog providers some row reads from.
pub fn trim_catalog(table: &ProviderTable, catalog: Map<String, Value>) -> Map<String, Value> {
    let used: Vec<String> = table
        .providers
        .values()
        .map(|row| row.catalog_source().provider)
        .collect();
    catalog
        .into_iter()
        .filter(|(key, _)| used.contains(key))
        .collect()
}

/// Every model of every row: catalog models (tool-capable, filtered), then hand-kept entries.
pub fn build_models(
    table: &ProviderTable,
    catalog: &Map<String, Value>,
) -> Result<Vec<Model>, RefreshError> {
    let mut out = Vec::new();
    for (id, row) in &table.providers {
        let source = row.catalog_source();
        let mut models: BTreeMap<String, Model> = BTreeMap::new();
        match catalog.get(&source.provider) {
            Some(provider) => {
                let path = source.provider.clone();
                let entries = provider
                    .get("models")
                    .and_then(Value::as_object)
                    .ok_or_else(|| RefreshError::Catalog {
                        origin: CATALOG_JSON_PATH.into(),
                        path: format!("{path}.models"),
                        message: "expected an object of models".into(),
                    })?;
                for (model_id, value) in entries {
                    let included = source.include.is_empty()
                        || source.include.iter().any(|p| glob_match(p, model_id));
                    let excluded = source.exclude.iter().any(|p| glob_match(p, model_id));
                    if !included || excluded {
                        continue;
                    }
                    let model_path = format!("{path}.models.{model_id}");
                    if let Some(model) = catalog_model(id, model_id, value, row, &model_path)? {
                        models.insert(model_id.clone(), model);
                    }
                }
            }
            None if row.catalog.is_some() => {
                return Err(RefreshError::Table(CatalogError::Invalid {
                    origin: PROVIDERS_TOML_PATH.into(),
                    field: format!("providers.{id}.catalog.provider"),
                    message: format!("catalog has no provider `{}`", source.provider),
                }));
            }
            None => {}
        }
        for (model_id, entry) in &row.models {
            let merged = match models.remove(model_id) {
                Some(existing) => patch_model(existing, entry, row),
                None => new_model(id, model_id, entry, row),
            };
            models.insert(model_id.clone(), merged);
        }
        out.extend(models.into_values());
    }
    Ok(out)
}

/// One catalog model, or `None` when it cannot call tools (a coding agent needs tools).
fn catalog_model(
    provider: &str,
    id: &str,
    value: &Value,
    row: &ProviderRow,
    path: &str,
) -> Result<Option<Model>, RefreshError> {
    let bad = |field: &str, message: &str| RefreshError::Catalog {
        origin: CATALOG_JSON_PATH.into(),
        path: format!("{path}.{field}"),
        message: message.to_owned(),
    };
    if value.get("tool_call").and_then(Value::as_bool) == Some(false) {
        return Ok(None);
    }
    let number = |v: Option<&Value>, field: &str| -> Result<Option<f64>, RefreshError> {
        match v {
            None | Some(Value::Null) => Ok(None),
            Some(v) => v
                .as_f64()
                .map(Some)
                .ok_or_else(|| bad(field, "expected a number")),
        }
    };
    let limit = value.get("limit");
    let context = number(limit.and_then(|l| l.get("context")), "limit.context")?
        .ok_or_else(|| bad("limit.context", "missing"))?;
    let output = number(limit.and_then(|l| l.get("output")), "limit.output")?.unwrap_or(0.0);
    let cost = value.get("cost");
    let input_price = number(cost.and_then(|c| c.get("input")), "cost.input")?.unwrap_or(0.0);
    let output_price = number(cost.and_then(|c| c.get("output")), "cost.output")?.unwrap_or(0.0);
    let cache_read = number(cost.and_then(|c| c.get("cache_read")), "cost.cache_read")?;
    let cache_write = number(cost.and_then(|c| c.get("cache_write")), "cost.cache_write")?;
    // Negative prices mean "variable" (OpenRouter's auto router): no price can be kept.
    let priced = [
        Some(input_price),
        Some(output_price),
        cache_read,
        cache_write,
    ];
    if priced.iter().flatten().any(|p| *p < 0.0) {
        return Ok(None);
    }
    let mut input = Vec::new();
    if let Some(list) = value
        .get("modalities")
        .and_then(|m| m.get("input"))
        .and_then(Value::as_array)
    {
        for m in list {
            let parsed = m
                .as_str()
                .and_then(|s| serde_json::from_value::<Modality>(Value::String(s.to_owned())).ok());
            // Modalities strata cannot send (e.g. `file`) are left out.
            if let Some(p) = parsed
                && !input.contains(&p)
            {
                input.push(p);
            }
        }
    }
    if input.is_empty() {
        input.push(Modality::Text);
    }
    input.sort();
    let name = value
        .get("name")
        .and_then(Value::as_str)
        .unwrap_or(id)
        .to_owned();
    Ok(Some(Model {
        provider: provider.to_owned(),
        id: id.to_owned(),
        name,
        context_window: context as u64,
        max_output: output as u64,
        input,
        reasoning: value
            .get("reasoning")
            .and_then(Value::as_bool)
            .unwrap_or(false),
        prices: derive_prices(
            input_price,
            output_price,
            cache_read,
            cache_write,
            &row.capabilities(id),
        ),
    }))
}

/// Prices from catalog figures; missing cache prices come from the model's multipliers.
///
/// models.dev's `cache_write` is the default-TTL (5-minute) rate. The 1-hour rate is derived
/// from the 1-hour multiplier when the model offers a 1-hour TTL, else it equals the 5-minute
/// rate (no such writes happen).
pub fn derive_prices(
    input: f64,
    output: f64,
    cache_read: Option<f64>,
    cache_write: Option<f64>,
    caps: &Capabilities,
) -> Prices {
    let m = caps.price_multipliers;
    let cache_write_5m = cache_write.unwrap_or(input * m.cache_write_5m);
    let cache_write_1h = if caps.supports_ttl(CacheTtl::OneHour) {
        input * m.cache_write_1h
    } else {
        cache_write_5m
    };
    Prices {
        input: round_price(input),
        output: round_price(output),
        cache_read: round_price(cache_read.unwrap_or(input * m.cache_read)),
        cache_write_5m: round_price(cache_write_5m),
        cache_write_1h: round_price(cache_write_1h),
        cache_storage: round_price(caps.explicit_cache_offer.map_or(0.0, |e| e.storage_price)),
    }
}

/// Rounds to a billionth of a dollar per MTok, so `3 × 0.1` prints as `0.3`.
fn round_price(v: f64) -> f64 {
    (v * 1e9).round() / 1e9
}

/// `models.json` text for `models`.
pub fn render_models_json(models: Vec<Model>) -> Result<String, RefreshError> {
    let file = ModelsFile {
        generated_by: format!(
            "{REFRESH_COMMAND} from {CATALOG_JSON_PATH} and {PROVIDERS_TOML_PATH}; do not edit"
        ),
        models,
    };
    let value = serde_json::to_value(&file).map_err(|e| RefreshError::Serialize {
        what: "models.json".into(),
        message: e.to_string(),
    })?;
    render_json(&value, "models.json")
}

/// `schema.json` text: the JSON Schema of a provider config (user config and table rows).
pub fn render_schema_json() -> Result<String, RefreshError> {
    let schema = schemars::schema_for!(UserConfig);
    let value = serde_json::to_value(&schema).map_err(|e| RefreshError::Serialize {
        what: "schema.json".into(),
        message: e.to_string(),
    })?;
    render_json(&value, "schema.json")
}

fn render_json(value: &Value, what: &str) -> Result<String, RefreshError> {
    let mut text = serde_json::to_string_pretty(value).map_err(|e| RefreshError::Serialize {
        what: what.to_owned(),
        message: e.to_string(),
    })?;
    text.push('\n');
    Ok(text)
}

fn sort_keys(value: Value) -> Value {
    match value {
        Value::Object(map) => {
            let sorted: BTreeMap<String, Value> =
                map.into_iter().map(|(k, v)| (k, sort_keys(v))).collect();
            Value::Object(sorted.into_iter().collect())
        }
        Value::Array(items) => Value::Array(items.into_iter().map(sort_keys).collect()),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capabilities::CacheStyle;

    fn anthropic_caps() -> Capabilities {
        Capabilities {
            cache_style: CacheStyle::ExplicitBreakpoints,
            ttl_options: vec![CacheTtl::FiveMinutes, CacheTtl::OneHour],
            price_multipliers: crate::usage::PriceMultipliers {
                cache_read: 0.1,
                cache_write_5m: 1.25,
                cache_write_1h: 2.0,
            },
            ..Capabilities::default()
        }
    }

    fn row() -> ProviderRow {
        crate::catalog::parse_provider_table(
            "schema_version = 1\n[providers.p]\nname = \"P\"\nprotocol = \"openai-chat\"\nbase_url = \"http://x\"\n",
            "test",
        )
        .unwrap()
        .providers
        .remove("p")
        .unwrap()
    }

    #[test]
    fn catalog_figures_win_and_gaps_follow_multipliers() {
        let p = derive_prices(3.0, 15.0, Some(0.3), None, &anthropic_caps());
        assert_eq!(p.cache_read, 0.3);
        assert_eq!(p.cache_write_5m, 3.75);
        assert_eq!(p.cache_write_1h, 6.0);
        let p = derive_prices(3.0, 15.0, None, Some(4.0), &anthropic_caps());
        assert_eq!(p.cache_read, 0.3);
        assert_eq!(p.cache_write_5m, 4.0);
        // Without a 1-hour TTL the 1-hour price is the 5-minute one.
        let no_hour = Capabilities::default();
        let p = derive_prices(2.0, 8.0, None, Some(2.5), &no_hour);
        assert_eq!(
            (p.cache_read, p.cache_write_5m, p.cache_write_1h),
            (2.0, 2.5, 2.5)
        );
    }

    #[test]
    fn models_without_tool_calls_are_skipped_and_fields_named_on_error() {
        let cache = row();
        let no_tools = serde_json::json!({"tool_call": false, "limit": {"context": 1}});
        assert_eq!(
            catalog_model("p", "m", &no_tools, &cache, "p.models.m").unwrap(),
            None
        );
        let bad = serde_json::json!({"limit": {"context": "big"}});
        let err = catalog_model("p", "m", &bad, &cache, "p.models.m").unwrap_err();
        assert!(
            err.to_string().contains("p.models.m.limit.context"),
            "{err}"
        );
        let ok = serde_json::json!({
            "name": "M", "reasoning": true, "tool_call": true,
            "modalities": {"input": ["image", "text", "file"]},
            "cost": {"input": 1.0, "output": 2.0},
            "limit": {"context": 1000, "output": 100}
        });
        let m = catalog_model("p", "m", &ok, &cache, "p.models.m")
            .unwrap()
            .unwrap();
        assert_eq!(m.input, vec![Modality::Text, Modality::Image]);
        assert_eq!(m.prices.cache_read, 1.0);
        assert!(m.reasoning);
    }
}
