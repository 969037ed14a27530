//! Which model a run uses when the user named it loosely or not at all: patterns and bare ids
//! (`sonnet`, `claude-sonnet-4-6:high`, `anthropic/opus`), and a default from the credentials
//! present. Providers with a key win over those without, as in Pi.

use strata_provider::{Catalog, Model, Protocol, ProviderRow};

use crate::model::{ModelChoice, THINKING_LEVELS};
use crate::setup::Setup;

/// Providers tried for a default model, in order; rows not listed follow alphabetically.
/// Bedrock comes last: AWS credentials are often present for other reasons.
pub const DEFAULT_ORDER: &[&str] = &[
    "anthropic",
    "openai",
    "google",
    "deepseek",
    "xai",
    "mistral",
    "moonshotai",
    "zai",
    "groq",
    "cerebras",
    "openrouter",
    "amazon-bedrock",
];

/// A model chosen without the user naming it, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Defaulted {
    /// The model.
    pub choice: ModelChoice,
    /// One sentence saying why this one (which credential was found).
    pub why: String,
}

impl Setup {
    /// Where `row`'s credential comes from (`ANTHROPIC_API_KEY`, the config's `api_key`, Pi's
    /// `models.json`, AWS credentials), or `None` when a request would go without one. A key
    /// the key policy would not send to the row's host does not count.
    pub fn credential_source(&self, row: &ProviderRow) -> Option<String> {
        if row.protocol == Protocol::BedrockConverse {
            return strata_bedrock::credentials::resolve_from_process()
                .ok()
                .map(|_| "AWS credentials".to_owned());
        }
        let url = row.endpoint("").base_url;
        self.key_for_listing(row, &url, false)?;
        let from_env = row
            .auth_env
            .iter()
            .find(|var| std::env::var_os(var).is_some_and(|v| !v.is_empty()));
        Some(match from_env {
            Some(var) => format!("{var} is set"),
            None if self
                .config
                .providers
                .get(&row.id)
                .is_some_and(|p| p.api_key.is_some()) =>
            {
                "its api_key is in your config".to_owned()
            }
            None => "Pi's models.json has its key".to_owned(),
        })
    }

    /// Whether requests to `provider` would carry a credential.
    pub fn has_credentials(&self, provider: &str) -> bool {
        self.catalog
            .provider(provider)
            .is_some_and(|row| self.credential_source(row).is_some())
    }

    /// The model to use when none is configured: the default model of the first provider
    /// (in [`DEFAULT_ORDER`], then alphabetically) that has credentials.
    pub fn default_choice(&self) -> Option<Defaulted> {
        let mut rows: Vec<&ProviderRow> = self
            .catalog
            .providers()
            .filter(|row| row.default_model.is_some())
            .collect();
        let rank = |row: &ProviderRow| {
            DEFAULT_ORDER
                .iter()
                .position(|p| *p == row.id)
                .unwrap_or(DEFAULT_ORDER.len())
        };
        rows.sort_by(|a, b| rank(a).cmp(&rank(b)).then_with(|| a.id.cmp(&b.id)));
        rows.into_iter().find_map(|row| {
            let id = row.default_model.clone()?;
            self.catalog.model(&row.id, &id)?;
            let source = self.credential_source(row)?;
            Some(Defaulted {
                why: format!(
                    "no model is configured and {source}, so {}/{id} is {}'s default",
                    row.id, row.name
                ),
                choice: ModelChoice {
                    provider: row.id.clone(),
                    id,
                    thinking: None,
                },
            })
        })
    }

    /// Resolves what the user typed for a model: `provider/id`, a bare id, or a pattern
    /// matched against ids and names, each with an optional `:thinking`. `--provider`
    /// restricts the search. Exact ids win over patterns; among matches on several providers
    /// the one with credentials wins; among patterns an alias (no date suffix) wins, then the
    /// newest. A name that matches nothing but resembles a listed id is an error that says
    /// "did you mean"; any other unknown `provider/id` passes through (a model newer than the
    /// table is guessed later, with a warning).
    pub fn resolve_choice(&self, text: &str) -> anyhow::Result<ModelChoice> {
        resolve_pattern(&self.catalog, text, self.run.provider.as_deref(), &|p| {
            self.has_credentials(p)
        })
    }

    /// The message when no model is configured and no provider has credentials: what to
    /// set and where.
    pub fn no_model_help(&self) -> String {
        let config = self.sources.global_dir.as_ref().map_or_else(
            || "~/.config/strata/config.toml".to_owned(),
            |dir| dir.join("config.toml").display().to_string(),
        );
        let vars: Vec<String> = DEFAULT_ORDER
            .iter()
            .filter_map(|p| self.catalog.provider(p))
            .filter_map(|row| row.auth_env.first().cloned())
            .take(5)
            .collect();
        format!(
            "no model chosen, and no provider has a key.\n  \
             - set a key: export {}=… (or {}; `strata providers` lists every provider's variables)\n  \
             - or choose a model: --model provider/id, or model = \"provider/id\" in {config} (`strata models` lists them)\n  \
             - or try strata with no key at all: `strata demo`",
            vars.first().map_or("ANTHROPIC_API_KEY", String::as_str),
            vars.get(1..).unwrap_or_default().join(", "),
        )
    }
}

/// [`Setup::resolve_choice`] over `catalog`, with `usable` saying which providers have
/// credentials.
pub fn resolve_pattern(
    catalog: &Catalog,
    text: &str,
    provider_flag: Option<&str>,
    usable: &dyn Fn(&str) -> bool,
) -> anyhow::Result<ModelChoice> {
    let (name, thinking) = match text.rsplit_once(':') {
        Some((name, level)) if THINKING_LEVELS.contains(&level) => (name, Some(level.to_owned())),
        _ => (text, None),
    };
    let choice = |model: &Model| ModelChoice {
        provider: model.provider.clone(),
        id: model.id.clone(),
        thinking: thinking.clone(),
    };
    // `provider/rest`: the provider is named (unless `rest` is an id on the flag's provider,
    // as OpenRouter's `moonshotai/kimi-k2.6`).
    let (provider, rest) = match (provider_flag, name.split_once('/')) {
        (Some(flag), _) => (
            Some(flag),
            name.strip_prefix(&format!("{flag}/")).unwrap_or(name),
        ),
        (None, Some((p, rest))) if catalog.provider(p).is_some() => (Some(p), rest),
        _ => (None, name),
    };
    if let Some(provider) = provider {
        if catalog.provider(provider).is_none() {
            anyhow::bail!("unknown provider `{provider}` (see `strata providers`)");
        }
        let models: Vec<&Model> = catalog.models_of(provider).collect();
        if let Some(model) = models.iter().find(|m| m.id.eq_ignore_ascii_case(rest)) {
            return Ok(choice(model));
        }
        if let Some(model) = best_match(fuzzy(rest, &models)) {
            return Ok(choice(model));
        }
        if let Some((id, level)) = rest.rsplit_once(':')
            && models.iter().any(|m| m.id == id)
        {
            anyhow::bail!(
                "unknown thinking level `{level}` in `{provider}/{rest}` (levels: {})",
                THINKING_LEVELS.join(", ")
            );
        }
        if let Some(near) = nearest(rest, &models) {
            anyhow::bail!(
                "`{provider}/{rest}` is not in strata's model table; did you mean `{provider}/{near}`? (`strata models {provider}` lists them)"
            );
        }
        // A model newer than the table: the caller guesses its facts and says so.
        return Ok(ModelChoice {
            provider: provider.to_owned(),
            id: rest.to_owned(),
            thinking,
        });
    }
    let all: Vec<&Model> = catalog
        .providers()
        .flat_map(|row| catalog.models_of(&row.id))
        .collect();
    let exact: Vec<&Model> = all
        .iter()
        .copied()
        .filter(|m| m.id.eq_ignore_ascii_case(name))
        .collect();
    if let Some(model) = pick_provider(&exact, usable, name)? {
        return Ok(choice(model));
    }
    let matches = fuzzy(name, &all);
    // Prefer matches on providers with credentials, then the best alias among them.
    let usable_matches: Vec<&Model> = matches
        .iter()
        .copied()
        .filter(|m| usable(&m.provider))
        .collect();
    let pool = if usable_matches.is_empty() {
        matches
    } else {
        usable_matches
    };
    if let Some(best) = best_match(pool.clone()) {
        let tied: Vec<&Model> = pool.iter().copied().filter(|m| m.id == best.id).collect();
        if let Some(model) = pick_provider(&tied, usable, name)? {
            return Ok(choice(model));
        }
    }
    if let Some((provider, _)) = name.split_once('/')
        && catalog.provider(provider).is_none()
        && provider_flag.is_none()
    {
        anyhow::bail!("unknown provider `{provider}` (see `strata providers`)");
    }
    match nearest(name, &all) {
        Some(near) => anyhow::bail!(
            "no model matches `{name}`; did you mean `{near}`? (`strata models` lists them)"
        ),
        None => anyhow::bail!(
            "no model matches `{name}`: write provider/id (`strata models` lists them), or pass --provider"
        ),
    }
}

/// One model among the same id on several providers: the only one, the only usable one, or
/// an error naming the providers.
fn pick_provider<'a>(
    candidates: &[&'a Model],
    usable: &dyn Fn(&str) -> bool,
    name: &str,
) -> anyhow::Result<Option<&'a Model>> {
    match candidates {
        [] => Ok(None),
        [only] => Ok(Some(only)),
        _ => {
            let with_key: Vec<&&Model> =
                candidates.iter().filter(|m| usable(&m.provider)).collect();
            if let [only] = with_key.as_slice() {
                return Ok(Some(only));
            }
            let mut providers: Vec<&str> = candidates.iter().map(|m| m.provider.as_str()).collect();
            providers.dedup();
            anyhow::bail!(
                "`{name}` is offered by several providers{}: {}; write provider/id or pass --provider",
                if with_key.is_empty() {
                    ""
                } else {
                    " with a key"
                },
                providers.join(", ")
            )
        }
    }
}

/// Models whose id or name contains `text`, case-insensitively.
fn fuzzy<'a>(text: &str, models: &[&'a Model]) -> Vec<&'a Model> {
    let lower = text.to_lowercase();
    models
        .iter()
        .copied()
        .filter(|m| m.id.to_lowercase().contains(&lower) || m.name.to_lowercase().contains(&lower))
        .collect()
}

/// Aliases (`claude-sonnet-4-5`) over dated ids (`claude-sonnet-4-5-20250929`), then the
/// greatest id (the newest, in the providers' naming).
fn best_match(matches: Vec<&Model>) -> Option<&Model> {
    let aliases: Vec<&Model> = matches
        .iter()
        .copied()
        .filter(|m| is_alias(&m.id))
        .collect();
    let pool = if aliases.is_empty() { matches } else { aliases };
    pool.into_iter().max_by(|a, b| a.id.cmp(&b.id))
}

/// Not ending in an eight-digit date.
fn is_alias(id: &str) -> bool {
    if id.ends_with("-latest") {
        return true;
    }
    let tail = id.rsplit('-').next().unwrap_or("");
    !(tail.len() == 8 && tail.bytes().all(|b| b.is_ascii_digit()))
}

/// The listed id a misspelling of which `text` is: at most two edits away with the same
/// numbers in it. A different number is a different model (`gpt-8-mini` is not a typo of
/// `gpt-5-mini` but a model newer than the table), so it is let through to be guessed.
fn nearest<'a>(text: &str, models: &[&'a Model]) -> Option<&'a str> {
    let lower = text.to_lowercase();
    let digits = |s: &str| s.chars().filter(char::is_ascii_digit).collect::<String>();
    let wanted = digits(&lower);
    models
        .iter()
        .map(|m| (m.id.as_str(), m.id.to_lowercase()))
        .filter(|(_, id)| digits(id) == wanted)
        .map(|(original, id)| (strsim::levenshtein(&lower, &id), original))
        .filter(|(distance, _)| (1..=2).contains(distance))
        .min_by_key(|(distance, _)| *distance)
        .map(|(_, id)| id)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resolve(text: &str, keys: &[&str]) -> anyhow::Result<String> {
        let catalog = Catalog::builtin().unwrap();
        resolve_pattern(&catalog, text, None, &|p| keys.contains(&p)).map(|c| {
            format!(
                "{}/{}{}",
                c.provider,
                c.id,
                c.thinking.map(|t| format!(":{t}")).unwrap_or_default()
            )
        })
    }

    #[test]
    fn patterns_and_bare_ids_resolve_as_pi_resolves_them() {
        // A bare id several providers list: the one with a key, else ask which.
        assert_eq!(
            resolve("claude-sonnet-4-6", &["anthropic"]).unwrap(),
            "anthropic/claude-sonnet-4-6"
        );
        let err = resolve("claude-sonnet-4-6", &[]).unwrap_err().to_string();
        assert!(err.contains("several providers: anthropic, "), "{err}");
        // A bare id only one provider lists.
        assert_eq!(
            resolve("devstral-medium-latest", &[]).unwrap(),
            "mistral/devstral-medium-latest"
        );
        // A pattern picks the alias, not the dated id, and keeps the thinking suffix.
        assert_eq!(
            resolve("anthropic/sonnet-4-5:high", &[]).unwrap(),
            "anthropic/claude-sonnet-4-5:high"
        );
        // The same pattern across providers: the one with a key wins.
        let bedrock = resolve("sonnet-4-6", &["amazon-bedrock"]).unwrap();
        assert!(bedrock.starts_with("amazon-bedrock/"), "{bedrock}");
        // OpenRouter's ids hold a slash that is not a provider.
        assert_eq!(
            resolve("openrouter/moonshotai/kimi-k2.6", &[]).unwrap(),
            "openrouter/moonshotai/kimi-k2.6"
        );
    }

    #[test]
    fn a_misspelt_model_gets_did_you_mean_and_a_new_one_passes() {
        let err = resolve("anthropic/claude-sonet-4-6", &[])
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("did you mean `anthropic/claude-sonnet-4-6`"),
            "{err}"
        );
        let err = resolve("claude-sonet-4-6", &[]).unwrap_err().to_string();
        assert!(err.contains("did you mean `claude-sonnet-4-6`"), "{err}");
        // Nothing like it: a model newer than the table is let through to be guessed.
        assert_eq!(
            resolve("anthropic/claude-nonesuch-9", &[]).unwrap(),
            "anthropic/claude-nonesuch-9"
        );
        assert!(resolve("zzzz-no-such-thing", &[]).is_err());
        // Another number is another model, not a typo.
        assert_eq!(
            resolve("openai/gpt-8-mini", &[]).unwrap(),
            "openai/gpt-8-mini"
        );
        let err = resolve("anthropic/claude-sonnet-4-5:ultra", &[])
            .unwrap_err()
            .to_string();
        assert!(err.contains("unknown thinking level `ultra`"), "{err}");
        let err = resolve("nope/x", &[]).unwrap_err().to_string();
        assert!(err.contains("unknown provider `nope`"), "{err}");
    }
}
