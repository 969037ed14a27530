//! `provider/id[:thinking]` on the command line, and the catalog entry it names.

use strata_provider::{Catalog, Model};

/// The model a run uses: `provider/id[:thinking]` from flags or config.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelChoice {
    /// Provider id.
    pub provider: String,
    /// Model id.
    pub id: String,
    /// Thinking level, when given with `:level`.
    pub thinking: Option<String>,
}

/// Thinking levels, lowest first (Pi's names).
pub const THINKING_LEVELS: [&str; 6] = ["off", "minimal", "low", "medium", "high", "xhigh"];

/// Parses `provider/id[:thinking]`; `--provider` supplies the provider when the id has none.
pub fn parse_model(text: &str, provider_flag: Option<&str>) -> anyhow::Result<ModelChoice> {
    let (name, thinking) = match text.rsplit_once(':') {
        Some((name, level)) if THINKING_LEVELS.contains(&level) => (name, Some(level.to_owned())),
        _ => (text, None),
    };
    let (provider, id) = match (provider_flag, name.split_once('/')) {
        (Some(provider), _) => (
            provider.to_owned(),
            name.strip_prefix(&format!("{provider}/"))
                .unwrap_or(name)
                .to_owned(),
        ),
        (None, Some((provider, id))) => (provider.to_owned(), id.to_owned()),
        (None, None) => anyhow::bail!(
            "model `{text}` needs a provider: write provider/{text} or pass --provider"
        ),
    };
    Ok(ModelChoice {
        provider,
        id,
        thinking,
    })
}

/// The catalog's model for `choice`, or an error listing a few of the provider's models.
pub fn resolve_model(catalog: &Catalog, choice: &ModelChoice) -> anyhow::Result<Model> {
    if let Some(model) = catalog.model(&choice.provider, &choice.id) {
        return Ok(model);
    }
    // Ids may hold a colon (`…-v1:0`), so `:level` is only split off for known levels; a
    // known model followed by another word is a mistyped level, not an unknown model.
    if let Some((id, level)) = choice.id.rsplit_once(':')
        && catalog.model(&choice.provider, id).is_some()
    {
        anyhow::bail!(
            "unknown thinking level `{level}` in `{}/{}` (levels: {})",
            choice.provider,
            choice.id,
            THINKING_LEVELS.join(", ")
        );
    }
    let known: Vec<String> = catalog
        .models_of(&choice.provider)
        .map(|m| m.id.clone())
        .take(12)
        .collect();
    anyhow::bail!(
        "unknown model `{}/{}`; {} has: {}",
        choice.provider,
        choice.id,
        choice.provider,
        if known.is_empty() {
            "no models in the table".to_owned()
        } else {
            known.join(", ")
        }
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wrong_thinking_level_is_named_as_such() {
        let catalog = Catalog::builtin().unwrap();
        let choice = parse_model("anthropic/claude-sonnet-4-5:ultra", None).unwrap();
        let err = resolve_model(&catalog, &choice).unwrap_err().to_string();
        assert_eq!(
            err,
            "unknown thinking level `ultra` in `anthropic/claude-sonnet-4-5:ultra` \
             (levels: off, minimal, low, medium, high, xhigh)"
        );
        let unknown = parse_model("anthropic/claude-nonesuch:high", None).unwrap();
        let err = resolve_model(&catalog, &unknown).unwrap_err().to_string();
        assert!(
            err.starts_with("unknown model `anthropic/claude-nonesuch`"),
            "{err}"
        );
    }
}
