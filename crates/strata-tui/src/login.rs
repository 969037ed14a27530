//! `/login` and the first screen without credentials: where keys come from (each provider's
//! variables), and storing a key as `[providers.NAME] api_key` in the user's config.toml,
//! which strata-host reads back at every start; the file is made private (0600) first.

use std::path::PathBuf;

use anyhow::Context as _;
use strata_host::Setup;

/// What to do to give strata a key: the variables each provider reads, `/login`, the file.
pub fn instructions(setup: &Setup) -> Vec<String> {
    let file = config_file(setup).map_or_else(
        || "(no config directory: set HOME)".to_owned(),
        |p| p.display().to_string(),
    );
    // The list first, the steps last: the bottom of the screen is what shows.
    let vars: Vec<String> = setup
        .catalog
        .providers()
        .filter(|row| !row.auth_env.is_empty())
        .map(|row| format!("{} {}", row.id, row.auth_env.join("|")))
        .collect();
    let lines =
        vec![
        format!("providers and the variables they read: {}", vars.join(" · ")),
        String::new(),
        "strata needs a key for a model provider. Either:".to_owned(),
        "  • set the provider's variable and start strata again, e.g. export ANTHROPIC_API_KEY=…"
            .to_owned(),
        "  • or type /login PROVIDER KEY here: the key is saved in your config (mode 0600)"
            .to_owned(),
        format!("    config: {file}"),
        "  • or pass --api-key KEY with --model PROVIDER/ID".to_owned(),
    ];
    lines
}

/// The user's config.toml.
pub fn config_file(setup: &Setup) -> Option<PathBuf> {
    strata_host::mcp::user_config_path(&setup.sources)
}

/// Saves `key` for `provider` in the user's config and makes this run use it too.
pub fn store(setup: &mut Setup, provider: &str, key: &str) -> anyhow::Result<PathBuf> {
    if setup.catalog.provider(provider).is_none() {
        let known: Vec<&str> = setup.catalog.providers().map(|r| r.id.as_str()).collect();
        anyhow::bail!(
            "unknown provider `{provider}` (known: {})",
            known.join(", ")
        );
    }
    let file = config_file(setup).context("no user config directory: set HOME")?;
    strata_host::config_edit::set_secret(&file, &["providers", provider, "api_key"], key)?;
    setup
        .config
        .providers
        .entry(provider.to_owned())
        .or_default()
        .api_key = Some(key.to_owned());
    Ok(file)
}
