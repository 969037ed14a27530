//! Pi's `~/.pi/agent/models.json` read as a user config: its providers, models and
//! `modelOverrides` mapped onto table rows (see `docs/providers.md` for the field map).
//!
//! The file is JSON with `//` and `/* */` comments and trailing commas, as Pi reads it. Fields
//! that have no counterpart in the table are reported in [`PiConfig::ignored`], never silently
//! dropped and never an error, so one file serves both programs.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use crate::capabilities::{CacheKeyParam, ParamLocation, Protocol, ReasoningStyle, SystemRole};
use crate::catalog::{Catalog, CatalogError, UserConfig, UserProvider, redact_values};
use crate::model::Modality;
use crate::request::CacheTtl;
use crate::table::{AuthScheme, ModelEntry, ModelOverride, PricesPatch, ProviderRow};

/// A Pi `models.json` mapped onto user-config rows.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PiConfig {
    /// The rows, as a strata user config would write them.
    pub config: UserConfig,
    /// Literal `apiKey` values by provider id (Pi's `$NAME` keys become `auth_env`).
    pub api_keys: BTreeMap<String, String>,
    /// `field: why` for every field or provider that was not carried over.
    pub ignored: Vec<String>,
}

/// Removes `//` and `/* */` comments and trailing commas outside strings, keeping line
/// numbers (a comment's newlines stay) so parse errors point at the right line.
pub fn strip_jsonc(text: &str) -> String {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    let mut in_string = false;
    while let Some(c) = chars.next() {
        if in_string {
            out.push(c);
            match c {
                '\\' => {
                    if let Some(next) = chars.next() {
                        out.push(next);
                    }
                }
                '"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match (c, chars.peek()) {
            ('"', _) => {
                in_string = true;
                out.push(c);
            }
            ('/', Some('/')) => {
                for skipped in chars.by_ref() {
                    if skipped == '\n' {
                        out.push('\n');
                        break;
                    }
                }
            }
            ('/', Some('*')) => {
                chars.next();
                let mut last = '\0';
                for skipped in chars.by_ref() {
                    if skipped == '\n' {
                        out.push('\n');
                    }
                    if last == '*' && skipped == '/' {
                        break;
                    }
                    last = skipped;
                }
            }
            (',', _) => {
                // A comma whose next meaningful character closes a list or object is dropped.
                let rest: String = chars.clone().collect();
                let next = strip_leading_trivia(&rest);
                if !(next.starts_with('}') || next.starts_with(']')) {
                    out.push(',');
                }
            }
            _ => out.push(c),
        }
    }
    out
}

/// `text` without leading whitespace and comments.
fn strip_leading_trivia(mut text: &str) -> &str {
    loop {
        let trimmed = text.trim_start();
        if let Some(rest) = trimmed.strip_prefix("//") {
            text = rest.find('\n').map_or("", |i| &rest[i..]);
        } else if let Some(rest) = trimmed.strip_prefix("/*") {
            text = rest.find("*/").map_or("", |i| &rest[i + 2..]);
        } else {
            return trimmed;
        }
    }
}

/// Pi's `api` names and the protocol that speaks each (Mistral's conversations endpoint takes
/// the same turns as its chat endpoint; Codex and Azure speak Responses).
fn protocol_of(api: &str) -> Option<Protocol> {
    Some(match api {
        "openai-completions" | "mistral-conversations" => Protocol::OpenaiChat,
        "openai-responses" | "azure-openai-responses" | "openai-codex-responses" => {
            Protocol::OpenaiResponses
        }
        "anthropic-messages" => Protocol::AnthropicMessages,
        "google-generative-ai" => Protocol::GoogleGenerativeAi,
        "bedrock-converse-stream" => Protocol::BedrockConverse,
        _ => return None,
    })
}

/// Reads `models.json` text from `origin` against `catalog` (to know which providers are
/// built in). Syntax errors and wrong types are errors naming the field; fields strata has
/// no use for are listed in `ignored`.
pub fn parse_pi_models(
    text: &str,
    origin: &str,
    catalog: &Catalog,
) -> Result<PiConfig, CatalogError> {
    let value: Value =
        serde_json::from_str(&strip_jsonc(text)).map_err(|e| CatalogError::Parse {
            origin: origin.to_owned(),
            message: format!(
                "line {} column {}: {}",
                e.line(),
                e.column(),
                redact_values(&e.to_string())
                    .split(" at line ")
                    .next()
                    .unwrap_or_default()
            ),
        })?;
    let mut out = PiConfig::default();
    let top = object(&value, origin, "(root)")?;
    for key in top.keys() {
        if key != "providers" && key != "$schema" {
            out.ignored
                .push(format!("{key}: not a field of Pi's models.json"));
        }
    }
    let Some(providers) = top.get("providers") else {
        return Ok(out);
    };
    for (id, provider) in object(providers, origin, "providers")? {
        let path = format!("providers.{id}");
        let fields = object(provider, origin, &path)?;
        let mut reader = Reader {
            origin,
            path: path.clone(),
            ignored: &mut out.ignored,
        };
        if let Some(user) = reader.provider(id, fields, catalog)? {
            if let Some(key) = fields.get("apiKey").and_then(Value::as_str)
                && let KeySource::Literal(key) = key_source(key)
            {
                out.api_keys.insert(id.clone(), key);
            }
            out.config.providers.insert(id.clone(), user);
        }
    }
    Ok(out)
}

/// Where a Pi `apiKey` or header value comes from.
#[derive(Debug, PartialEq)]
enum KeySource {
    Literal(String),
    Env(String),
    Command,
}

fn key_source(value: &str) -> KeySource {
    if value.starts_with('!') {
        return KeySource::Command;
    }
    let name = value
        .strip_prefix("${")
        .and_then(|v| v.strip_suffix('}'))
        .or_else(|| value.strip_prefix('$'))
        .filter(|n| !n.is_empty() && n.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'));
    match name {
        Some(name) if !value.starts_with("$$") => KeySource::Env(name.to_owned()),
        _ => KeySource::Literal(value.replace("$$", "$").replace("$!", "!")),
    }
}

fn object<'a>(
    value: &'a Value,
    origin: &str,
    path: &str,
) -> Result<&'a Map<String, Value>, CatalogError> {
    value.as_object().ok_or_else(|| CatalogError::Invalid {
        origin: origin.to_owned(),
        field: path.to_owned(),
        message: "expected an object".to_owned(),
    })
}

struct Reader<'a> {
    origin: &'a str,
    path: String,
    ignored: &'a mut Vec<String>,
}

impl Reader<'_> {
    fn wrong(&self, field: &str, expected: &str) -> CatalogError {
        CatalogError::Invalid {
            origin: self.origin.to_owned(),
            field: format!("{}.{field}", self.path),
            message: format!("expected {expected}"),
        }
    }

    fn ignore(&mut self, field: &str, why: &str) {
        self.ignored.push(format!("{}.{field}: {why}", self.path));
    }

    fn string(
        &self,
        fields: &Map<String, Value>,
        name: &str,
    ) -> Result<Option<String>, CatalogError> {
        match fields.get(name) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(_) => Err(self.wrong(name, "a string")),
        }
    }

    fn boolean(
        &self,
        fields: &Map<String, Value>,
        name: &str,
    ) -> Result<Option<bool>, CatalogError> {
        match fields.get(name) {
            None => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(*b)),
            Some(_) => Err(self.wrong(name, "true or false")),
        }
    }

    fn count(&self, fields: &Map<String, Value>, name: &str) -> Result<Option<u64>, CatalogError> {
        match fields.get(name) {
            None => Ok(None),
            Some(v) => match v.as_f64() {
                Some(n) if n > 0.0 && n.is_finite() => Ok(Some(n as u64)),
                _ => Err(self.wrong(name, "a positive number")),
            },
        }
    }

    fn provider(
        &mut self,
        id: &str,
        fields: &Map<String, Value>,
        catalog: &Catalog,
    ) -> Result<Option<UserProvider>, CatalogError> {
        let builtin = catalog.provider(id);
        let mut user = UserProvider {
            name: self.string(fields, "name")?,
            base_url: self.string(fields, "baseUrl")?,
            ..UserProvider::default()
        };
        let api = self.string(fields, "api")?;
        if let Some(api) = &api {
            match protocol_of(api) {
                Some(p) => user.protocol = Some(p),
                None => {
                    self.ignore(
                        "api",
                        &format!("`{api}` is not a protocol strata speaks; provider skipped"),
                    );
                    return Ok(None);
                }
            }
        }
        if builtin.is_none() {
            // A new provider: Pi lets models carry `api`/`baseUrl`; the first one decides.
            let first_model = fields
                .get("models")
                .and_then(Value::as_array)
                .and_then(|m| m.first())
                .and_then(Value::as_object);
            if user.protocol.is_none()
                && let Some(api) = first_model
                    .and_then(|m| m.get("api"))
                    .and_then(Value::as_str)
            {
                user.protocol = protocol_of(api);
            }
            if user.base_url.is_none() {
                user.base_url = first_model
                    .and_then(|m| m.get("baseUrl"))
                    .and_then(Value::as_str)
                    .map(str::to_owned);
            }
            if user.protocol.is_none() || user.base_url.is_none() {
                self.ignore(
                    "",
                    "a new provider needs `api` and `baseUrl` (strata speaks openai-completions, mistral-conversations, openai-responses, azure-openai-responses, openai-codex-responses, anthropic-messages, google-generative-ai and bedrock-converse-stream); provider skipped",
                );
                return Ok(None);
            }
        }
        let protocol = user
            .protocol
            .or(builtin.map(|r| r.protocol))
            .unwrap_or(Protocol::OpenaiChat);
        if builtin.is_none() {
            user.auth = Some(match protocol {
                Protocol::AnthropicMessages => AuthScheme::XApiKey,
                Protocol::GoogleGenerativeAi => AuthScheme::XGoogApiKey,
                Protocol::BedrockConverse => AuthScheme::AwsSigv4,
                Protocol::OpenaiChat | Protocol::OpenaiResponses => AuthScheme::Bearer,
            });
            if api.as_deref() == Some("azure-openai-responses") {
                user.auth = Some(AuthScheme::ApiKey);
            }
        }
        if self.boolean(fields, "authHeader")? == Some(true) {
            user.auth = Some(AuthScheme::Bearer);
        }
        if let Some(key) = self.string(fields, "apiKey")? {
            match key_source(&key) {
                KeySource::Env(name) => user.auth_env = Some(vec![name]),
                KeySource::Literal(_) => {}
                KeySource::Command => {
                    self.ignore("apiKey", "`!command` keys are not run by strata")
                }
            }
        }
        if let Some(headers) = fields.get("headers") {
            let mut kept = BTreeMap::new();
            for (name, value) in object(headers, self.origin, &format!("{}.headers", self.path))? {
                let Some(text) = value.as_str() else {
                    return Err(self.wrong(&format!("headers.{name}"), "a string"));
                };
                match key_source(text) {
                    KeySource::Literal(v) => {
                        kept.insert(name.clone(), v);
                    }
                    KeySource::Env(var) => match std::env::var(&var) {
                        Ok(v) => {
                            kept.insert(name.clone(), v);
                        }
                        Err(_) => {
                            self.ignore(&format!("headers.{name}"), &format!("${var} is not set"))
                        }
                    },
                    KeySource::Command => self.ignore(
                        &format!("headers.{name}"),
                        "`!command` values are not run by strata",
                    ),
                }
            }
            user.headers = Some(kept);
        }
        for skipped in ["oauth"] {
            if fields.contains_key(skipped) {
                self.ignore(skipped, "strata has no OAuth login");
            }
        }
        // Pi marks cache breakpoints on every Anthropic-protocol provider, its own or not: a new
        // one takes the Anthropic row's cache rules (breakpoints, lifetimes, minimums) rather
        // than sending uncached requests.
        if builtin.is_none()
            && protocol == Protocol::AnthropicMessages
            && let Some(anthropic) = catalog.provider("anthropic")
        {
            user.cache = Some(anthropic.cache.clone());
        }
        // Pi's `openai-responses` sends, to any provider, `prompt_cache_key` (the session id),
        // `store: false`, a reasoning model's effort, and the system prompt as a developer
        // message (pi-ai 1.6 defaults, its compat flags change them): a new provider's row says
        // so, and the cache Pi keyed is the one strata's requests reach.
        if builtin.is_none() && api.as_deref() == Some("openai-responses") {
            let mut cache = catalog
                .provider("openai")
                .map(|openai| openai.cache.clone())
                .unwrap_or_default();
            // Pi asks for no retention unless told to (`cacheRetention: "long"`).
            cache.ttl = Vec::new();
            cache.key = Some(CacheKeyParam {
                location: ParamLocation::Body,
                name: "prompt_cache_key".to_owned(),
            });
            user.cache = Some(cache);
            user.reasoning = Some(ReasoningStyle::OpenaiEffort);
            user.system_role = Some(SystemRole::Developer);
            user.wire = Some(crate::capabilities::WireQuirks {
                supports_store: true,
                ..Default::default()
            });
        }
        let base_row = builtin.cloned();
        let compat = match fields.get("compat") {
            Some(c) => Some(object(c, self.origin, &format!("{}.compat", self.path))?.clone()),
            None => None,
        };
        if let Some(compat) = &compat {
            let mut row = base_row.clone().unwrap_or_else(|| {
                let mut row = crate::catalog::blank_row(id, protocol, "");
                if let Some(cache) = &user.cache {
                    row.cache = cache.clone();
                }
                row.reasoning = user.reasoning.unwrap_or(row.reasoning);
                row.system_role = user.system_role.unwrap_or(row.system_role);
                if let Some(wire) = &user.wire {
                    row.wire = wire.clone();
                }
                row
            });
            self.apply_compat(compat, "compat", &mut RowCompat::Row(&mut row), protocol);
            user.wire = Some(row.wire.clone());
            user.reasoning = Some(row.reasoning);
            user.system_role = Some(row.system_role);
            user.features = Some(row.features);
            user.cache = Some(row.cache.clone());
        }
        let mut models = BTreeMap::new();
        let mut overrides = Vec::new();
        if let Some(list) = fields.get("models") {
            let Some(list) = list.as_array() else {
                return Err(self.wrong("models", "an array of models"));
            };
            for (i, model) in list.iter().enumerate() {
                let mut reader = Reader {
                    origin: self.origin,
                    path: format!("{}.models[{i}]", self.path),
                    ignored: &mut *self.ignored,
                };
                let fields = object(model, reader.origin, &reader.path)?;
                let Some(model_id) = reader.string(fields, "id")? else {
                    return Err(reader.wrong("id", "a model id"));
                };
                let is_new = catalog.model(id, &model_id).is_none();
                let (entry, o) = reader.model(
                    &model_id,
                    fields,
                    protocol,
                    &user,
                    builtin.map(|r| &r.wire),
                    is_new,
                )?;
                models.insert(model_id, entry);
                overrides.extend(o);
            }
        }
        if let Some(map) = fields.get("modelOverrides") {
            for (model_id, model) in
                object(map, self.origin, &format!("{}.modelOverrides", self.path))?
            {
                let mut reader = Reader {
                    origin: self.origin,
                    path: format!("{}.modelOverrides.{model_id}", self.path),
                    ignored: &mut *self.ignored,
                };
                let fields = object(model, reader.origin, &reader.path)?;
                if catalog.model(id, model_id).is_none() {
                    reader.ignore("", "override of a model the provider does not list");
                    continue;
                }
                let (entry, o) = reader.model(
                    model_id,
                    fields,
                    protocol,
                    &user,
                    builtin.map(|r| &r.wire),
                    false,
                )?;
                models.insert(model_id.clone(), entry);
                overrides.extend(o);
            }
        }
        if !models.is_empty() {
            user.models = Some(models);
        }
        if !overrides.is_empty() {
            user.overrides = Some(overrides);
        }
        Ok(Some(user))
    }

    fn model(
        &mut self,
        model_id: &str,
        fields: &Map<String, Value>,
        protocol: Protocol,
        provider: &UserProvider,
        builtin_wire: Option<&crate::capabilities::WireQuirks>,
        is_new: bool,
    ) -> Result<(ModelEntry, Option<ModelOverride>), CatalogError> {
        let mut entry = ModelEntry {
            name: self.string(fields, "name")?,
            context_window: self.count(fields, "contextWindow")?,
            max_output: self.count(fields, "maxTokens")?,
            reasoning: self.boolean(fields, "reasoning")?,
            ..ModelEntry::default()
        };
        if let Some(input) = fields.get("input") {
            let Some(list) = input.as_array() else {
                return Err(self.wrong("input", "an array of \"text\" / \"image\""));
            };
            let mut kinds = Vec::new();
            for kind in list {
                match kind.as_str() {
                    Some("text") => kinds.push(Modality::Text),
                    Some("image") => kinds.push(Modality::Image),
                    _ => return Err(self.wrong("input", "an array of \"text\" / \"image\"")),
                }
            }
            entry.input = Some(kinds);
        }
        if let Some(cost) = fields.get("cost") {
            let cost = object(cost, self.origin, &format!("{}.cost", self.path))?;
            let price = |name: &str| -> Result<Option<f64>, CatalogError> {
                match cost.get(name) {
                    None => Ok(None),
                    Some(v) => v
                        .as_f64()
                        .filter(|n| n.is_finite() && *n >= 0.0)
                        .map(Some)
                        .ok_or_else(|| self.wrong(&format!("cost.{name}"), "a price ≥ 0")),
                }
            };
            let write = price("cacheWrite")?;
            entry.prices = Some(PricesPatch {
                input: price("input")?,
                output: price("output")?,
                cache_read: price("cacheRead")?,
                cache_write_5m: write,
                cache_write_1h: write,
            });
            if cost.contains_key("tiers") {
                self.ignore(
                    "cost.tiers",
                    "tiered prices are not modelled; the base rates apply",
                );
            }
        } else if is_new {
            // Pi prices an unpriced custom model at zero; say so rather than guessing.
            entry.prices = Some(PricesPatch {
                input: Some(0.0),
                output: Some(0.0),
                cache_read: Some(0.0),
                cache_write_5m: Some(0.0),
                cache_write_1h: Some(0.0),
            });
        }
        let mut o = ModelOverride {
            models: vec![model_id.to_owned()],
            ..ModelOverride::default()
        };
        let mut used = false;
        if let Some(api) = self.string(fields, "api")? {
            match protocol_of(&api) {
                Some(p) if p != protocol => {
                    o.protocol = Some(p);
                    used = true;
                }
                Some(_) => {}
                None => self.ignore("api", &format!("`{api}` is not a protocol strata speaks")),
            }
        }
        if let Some(url) = self.string(fields, "baseUrl")?
            && provider.base_url.as_deref() != Some(url.as_str())
        {
            o.base_url = Some(url);
            used = true;
        }
        if let Some(map) = fields.get("thinkingLevelMap") {
            let map = object(map, self.origin, &format!("{}.thinkingLevelMap", self.path))?;
            // Only "every level but off is unsupported" changes what strata sends.
            let all_off = ["minimal", "low", "medium", "high"]
                .iter()
                .all(|level| map.get(*level).is_some_and(Value::is_null));
            if all_off {
                entry.reasoning = Some(false);
            } else {
                self.ignore(
                    "thinkingLevelMap",
                    "per-level provider values are not sent; strata's level names are",
                );
            }
        }
        if let Some(compat) = fields.get("compat") {
            let compat = object(compat, self.origin, &format!("{}.compat", self.path))?.clone();
            // The model's quirks start from its provider's (after the provider's compat).
            let base_wire = provider
                .wire
                .clone()
                .or_else(|| builtin_wire.cloned())
                .unwrap_or_default();
            let mut target = RowCompat::Override(&mut o, base_wire);
            self.apply_compat(&compat, "compat", &mut target, protocol);
            used = true;
        }
        for (field, why) in [
            (
                "headers",
                "per-model headers are not supported; set them on the provider",
            ),
            ("inputLimits", "image limits are not applied"),
            ("promptCache", "cache lifetimes come from the provider row"),
            ("samplingParams", "sampling parameters are not sent"),
            (
                "samplingParamsByThinkingLevel",
                "sampling parameters are not sent",
            ),
        ] {
            if fields.contains_key(field) {
                self.ignore(field, why);
            }
        }
        Ok((entry, used.then_some(o)))
    }

    /// Maps Pi's `compat` flags onto a row or a per-model override.
    fn apply_compat(
        &mut self,
        compat: &Map<String, Value>,
        at: &str,
        target: &mut RowCompat<'_>,
        protocol: Protocol,
    ) {
        for (flag, value) in compat {
            let on = value.as_bool();
            let text = value.as_str();
            let known = match (flag.as_str(), on, text) {
                ("supportsStore", Some(b), _) => target.wire(|w| w.supports_store = b),
                ("supportsUsageInStreaming", Some(b), _) => {
                    target.wire(|w| w.supports_usage_in_streaming = b)
                }
                ("supportsStrictMode" | "supportsStrictTools", Some(b), _) => {
                    target.wire(|w| w.supports_strict_mode = b)
                }
                ("requiresToolResultName", Some(b), _) => {
                    target.wire(|w| w.requires_tool_result_name = b)
                }
                ("requiresAssistantAfterToolResult", Some(b), _) => {
                    target.wire(|w| w.requires_assistant_after_tool_result = b)
                }
                ("requiresThinkingAsText", Some(b), _) => {
                    target.wire(|w| w.requires_thinking_as_text = b)
                }
                ("requiresReasoningContentOnAssistantMessages", Some(b), _) => {
                    target.wire(|w| w.requires_reasoning_content = b)
                }
                ("maxTokensField", _, Some(f @ ("max_tokens" | "max_completion_tokens"))) => {
                    let f = f.to_owned();
                    target.wire(move |w| w.max_tokens_field = f.clone())
                }
                ("supportsDeveloperRole", Some(b), _) => target.system_role(if b {
                    SystemRole::Developer
                } else {
                    SystemRole::System
                }),
                ("supportsReasoningEffort", Some(true), _) => {
                    target.reasoning(ReasoningStyle::OpenaiEffort)
                }
                ("supportsReasoningEffort", Some(false), _) => {
                    target.reasoning(ReasoningStyle::None)
                }
                ("thinkingFormat", _, Some(format)) => match format {
                    "openai" => target.reasoning(ReasoningStyle::OpenaiEffort),
                    "openrouter" => target.reasoning(ReasoningStyle::ReasoningObject),
                    "deepseek" | "zai" => target.reasoning(ReasoningStyle::ThinkingToggle),
                    "qwen" => target.reasoning(ReasoningStyle::EnableThinking),
                    _ => false,
                },
                ("forceAdaptiveThinking", Some(true), _)
                    if protocol == Protocol::AnthropicMessages =>
                {
                    target.reasoning(ReasoningStyle::AnthropicAdaptive)
                }
                ("supportsMidConvoSystemMessages", Some(b), _) => {
                    target.features(|f| f.0 = Some(b))
                }
                ("supportsMidConvoToolAdditions", Some(b), _) => target.features(|f| f.1 = Some(b)),
                ("supportsMidConvoToolChanges", Some(b), _) => target.features(|f| {
                    f.1 = Some(b);
                    f.2 = Some(b);
                }),
                // Pi 1.x: effort changes sent in the conversation (`configuration_update`
                // items, Anthropic per-message effort) keep the cache.
                ("supportsMidConvoEffort", Some(b), _) => target.mid_conversation_effort(b),
                ("supportsLongCacheRetention", Some(false), _) => {
                    target.ttl(vec![CacheTtl::FiveMinutes])
                }
                ("promptCacheKeyMode", _, Some("enabled")) => {
                    target.cache_key(Some(CacheKeyParam {
                        location: ParamLocation::Body,
                        name: "prompt_cache_key".to_owned(),
                    }))
                }
                ("promptCacheKeyMode", _, Some("disabled")) => target.cache_key(None),
                _ => false,
            };
            if !known {
                self.ignore(&format!("{at}.{flag}"), "no counterpart in the table");
            }
        }
    }
}

/// Where compat flags land: the provider row, or one model's override.
enum RowCompat<'a> {
    Row(&'a mut ProviderRow),
    Override(&'a mut ModelOverride, crate::capabilities::WireQuirks),
}

impl RowCompat<'_> {
    fn wire(&mut self, change: impl Fn(&mut crate::capabilities::WireQuirks)) -> bool {
        match self {
            Self::Row(row) => change(&mut row.wire),
            Self::Override(o, base) => {
                let mut wire = o.wire.clone().unwrap_or_else(|| base.clone());
                change(&mut wire);
                o.wire = Some(wire);
            }
        }
        true
    }

    fn system_role(&mut self, role: SystemRole) -> bool {
        match self {
            Self::Row(row) => row.system_role = role,
            Self::Override(o, _) => o.system_role = Some(role),
        }
        true
    }

    fn reasoning(&mut self, style: ReasoningStyle) -> bool {
        match self {
            Self::Row(row) => row.reasoning = style,
            Self::Override(o, _) => o.reasoning = Some(style),
        }
        true
    }

    /// Mid-conversation system, tool addition, tool removal.
    fn features(
        &mut self,
        change: impl Fn(&mut (Option<bool>, Option<bool>, Option<bool>)),
    ) -> bool {
        let mut flags = (None, None, None);
        change(&mut flags);
        match self {
            Self::Row(row) => {
                if let Some(b) = flags.0 {
                    row.features.mid_conversation_system = b;
                }
                if let Some(b) = flags.1 {
                    row.features.tool_addition = b;
                }
                if let Some(b) = flags.2 {
                    row.features.tool_removal = b;
                }
            }
            Self::Override(o, _) => {
                o.mid_conversation_system = flags.0.or(o.mid_conversation_system);
                o.tool_addition = flags.1.or(o.tool_addition);
                o.tool_removal = flags.2.or(o.tool_removal);
            }
        }
        true
    }

    fn mid_conversation_effort(&mut self, on: bool) -> bool {
        match self {
            Self::Row(row) => row.features.mid_conversation_effort = on,
            Self::Override(o, _) => o.mid_conversation_effort = Some(on),
        }
        true
    }

    fn ttl(&mut self, ttl: Vec<CacheTtl>) -> bool {
        match self {
            Self::Row(row) => row.cache.ttl = ttl,
            Self::Override(o, _) => o.ttl = Some(ttl),
        }
        true
    }

    fn cache_key(&mut self, key: Option<CacheKeyParam>) -> bool {
        match self {
            Self::Row(row) => row.cache.key = key,
            Self::Override(o, _) => match key {
                Some(k) => o.cache_key = Some(k),
                None => return false,
            },
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comments_and_trailing_commas_go_strings_stay() {
        let text = "{\n  // a comment, with a comma,\n  \"a\": \"http://x//y\", /* block\n */ \"b\": [1, 2,],\n}";
        let stripped = strip_jsonc(text);
        let value: Value = serde_json::from_str(&stripped).unwrap();
        assert_eq!(value["a"], "http://x//y");
        assert_eq!(value["b"], serde_json::json!([1, 2]));
        assert_eq!(stripped.lines().count(), text.lines().count());
        let quoted: Value = serde_json::from_str(&strip_jsonc(r#"{"s": "a,]\" // b"}"#)).unwrap();
        assert_eq!(quoted["s"], "a,]\" // b");
    }

    #[test]
    fn key_values_are_literal_env_or_command() {
        assert_eq!(
            key_source("$OLLAMA_KEY"),
            KeySource::Env("OLLAMA_KEY".into())
        );
        assert_eq!(key_source("${K_2}"), KeySource::Env("K_2".into()));
        assert_eq!(key_source("!pass show x"), KeySource::Command);
        assert_eq!(key_source("ollama"), KeySource::Literal("ollama".into()));
        assert_eq!(key_source("$$5"), KeySource::Literal("$5".into()));
    }
}
