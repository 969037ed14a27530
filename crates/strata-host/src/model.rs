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

impl ModelChoice {
    /// The model a runtime operation names, without a thinking level.
    pub fn of(model: &strata_runtime::ModelRef) -> Self {
        Self {
            provider: model.provider.clone(),
            id: model.model.clone(),
            thinking: None,
        }
    }

    /// The runtime's reference to this model.
    pub fn reference(&self) -> strata_runtime::ModelRef {
        strata_runtime::ModelRef::new(self.provider.clone(), self.id.clone())
    }
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

/// What a server said about a model id it may serve.
#[derive(Debug, Clone, Default)]
pub struct ServerAnswer {
    /// The ids it lists (`Err`: why it could not be asked).
    pub listed: Option<Result<Vec<String>, String>>,
    /// The window it reports for the id.
    pub window: Option<u64>,
    /// Why the window could not be read, when it could not.
    pub window_error: Option<String>,
}

/// The model for `choice` and a warning to show when its facts are not the table's: a listed
/// model as listed; a served model (local servers) with the server's window or the row's
/// default; any other id usable with limits and prices guessed from its nearest sibling.
///
/// Guessing rather than refusing: a model released after the table was written works the day
/// it ships, the provider itself rejects an id it does not serve (a typo costs one failed
/// request), and the warning shows the config that pins the real limits and prices.
pub fn resolve_model(
    catalog: &Catalog,
    choice: &ModelChoice,
    ask_server: &dyn Fn(&strata_provider::ProviderRow, &str) -> ServerAnswer,
) -> anyhow::Result<(Model, Option<String>)> {
    if let Some(model) = catalog.model(&choice.provider, &choice.id) {
        return Ok((model, None));
    }
    // Ids may hold a colon (`…-v1:0`), so `:level` is only split off for known levels; a
    // known model followed by another word is a mistyped level, not a new model to guess.
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
    let (provider, id) = (&choice.provider, &choice.id);
    let Some(row) = catalog.provider(provider) else {
        anyhow::bail!("unknown provider `{provider}` (see `strata providers`)");
    };
    if let Some(server) = row.server {
        let answer = ask_server(row, id);
        if let Some(Ok(listed)) = &answer.listed
            && !listed.is_empty()
            && !listed.iter().any(|m| m == id)
        {
            anyhow::bail!(
                "{provider} at {} does not serve `{id}`; it serves: {}",
                row.base_url,
                listed.join(", ")
            );
        }
        let (window, warning) = match answer.window {
            Some(window) => (window, None),
            None => {
                let fallback = server.fallback_context_window();
                let why = answer
                    .window_error
                    .map(|e| format!(" ({e})"))
                    .unwrap_or_default();
                (
                    fallback,
                    Some(format!(
                        "{provider} did not report a context window for `{id}`{why}; assuming {fallback} tokens. Set the real one in config.toml:\n[providers.{provider}.models.\"{id}\"]\ncontext_window = {fallback}"
                    )),
                )
            }
        };
        let entry = strata_provider::ModelEntry {
            context_window: Some(window),
            max_output: Some(window.min(strata_provider::catalog::DEFAULT_MAX_OUTPUT)),
            ..strata_provider::ModelEntry::default()
        };
        return Ok((
            strata_provider::catalog::new_model(provider, id, &entry, row),
            warning,
        ));
    }
    let Some(guess) = catalog.guess_model(provider, id) else {
        anyhow::bail!("unknown provider `{provider}` (see `strata providers`)");
    };
    let m = &guess.model;
    let from = match &guess.like {
        Some(like) => format!("guessed from `{provider}/{like}`"),
        None => "guessed (no similar model is listed; prices count as zero)".to_owned(),
    };
    let warning = format!(
        "`{provider}/{id}` is not in strata's model table; its limits and prices are {from}: {} tokens of context, {} of output, ${} in / ${} out per million. To set them, add to config.toml:\n[providers.{provider}.models.\"{id}\"]\ncontext_window = {}\nmax_output = {}\nprices = {{ input = {}, output = {} }}",
        m.context_window,
        m.max_output,
        m.prices.input,
        m.prices.output,
        m.context_window,
        m.max_output,
        m.prices.input,
        m.prices.output,
    );
    Ok((guess.model, Some(warning)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wrong_thinking_level_is_named_as_such() {
        let catalog = Catalog::builtin().unwrap();
        let no_server = |_: &strata_provider::ProviderRow, _: &str| ServerAnswer::default();
        let choice = parse_model("anthropic/claude-sonnet-4-5:ultra", None).unwrap();
        let err = resolve_model(&catalog, &choice, &no_server)
            .unwrap_err()
            .to_string();
        assert_eq!(
            err,
            "unknown thinking level `ultra` in `anthropic/claude-sonnet-4-5:ultra` \
             (levels: off, minimal, low, medium, high, xhigh)"
        );
        // An id whose part before the colon is not a listed model is a new model, guessed.
        let unknown = parse_model("anthropic/claude-nonesuch:high-v1", None).unwrap();
        assert!(resolve_model(&catalog, &unknown, &no_server).is_ok());
    }
}
