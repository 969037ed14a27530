//! An agent run from the command line: `-p` print mode and `--mode json`.

mod factory;
mod output;

use std::io::{IsTerminal as _, Read as _};
use std::path::PathBuf;

use anyhow::Context as _;
use strata_agent::{Agent, AgentConfig, RetryEvents, SummaryModel};
use strata_provider::{Catalog, Model, StreamOptions};
use strata_session::{Session, SessionStore, WriteOptions};
use strata_tools::ToolSet;

use crate::args::{Mode, RunArgs};
use crate::config::{self, Config, Sources};

pub use factory::provider_for;

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

const THINKING_LEVELS: [&str; 6] = ["off", "minimal", "low", "medium", "high", "xhigh"];

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

/// Runs one prompt in print or json mode.
pub fn run(run: &RunArgs) -> anyhow::Result<()> {
    let sources = Sources::from_environment();
    let config = config::load(&sources, run)?;
    let Some(prompt) = prompt_text(run)? else {
        anyhow::bail!(
            "the interactive terminal UI is not built yet: pass a prompt with -p \"…\" (or pipe one on stdin), or try `strata demo`"
        );
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    runtime.block_on(run_prompt(run, &config, &sources, prompt))
}

/// `-p` text, with piped stdin appended; piped stdin alone when there is no `-p`.
fn prompt_text(run: &RunArgs) -> anyhow::Result<Option<String>> {
    let stdin = std::io::stdin();
    let mut piped = String::new();
    if !stdin.is_terminal() {
        stdin
            .lock()
            .read_to_string(&mut piped)
            .context("reading stdin")?;
    }
    let piped = piped.trim();
    Ok(match (&run.print, piped.is_empty()) {
        (Some(prompt), true) => Some(prompt.clone()),
        (Some(prompt), false) => Some(format!("{prompt}\n\n{piped}")),
        (None, false) => Some(piped.to_owned()),
        (None, true) => None,
    })
}

async fn run_prompt(
    run: &RunArgs,
    config: &Config,
    sources: &Sources,
    prompt: String,
) -> anyhow::Result<()> {
    let catalog = Catalog::builtin().context("loading the capability table")?;
    let choice = match &config.model {
        Some(text) => parse_model(text, run.provider.as_deref())?,
        None => anyhow::bail!(
            "no model chosen: pass --model provider/id (see `strata providers`) or set `model` in config.toml"
        ),
    };
    let row = catalog
        .provider(&choice.provider)
        .with_context(|| {
            format!(
                "unknown provider `{}` (see `strata providers`)",
                choice.provider
            )
        })?
        .clone();
    let model = resolve_model(&catalog, &choice)?;
    let endpoint = row.endpoint(&model.id);
    let retries = RetryEvents::new();
    let provider = provider_for(
        &row,
        endpoint.protocol,
        config.max_retries,
        Some(retries.observer()),
    )?;

    let cwd = std::env::current_dir().context("reading the current directory")?;
    let (session, _temp) = open_session(run, config, &cwd)?;

    let configured = config.providers.get(&row.id);
    let stream = StreamOptions {
        max_retries: config.max_retries,
        api_key: factory::api_key(
            run.api_key.as_deref(),
            configured.and_then(|p| p.api_key.as_deref()),
            &row,
        ),
        base_url: run
            .base_url
            .clone()
            .or_else(|| configured.and_then(|p| p.base_url.clone())),
        ..StreamOptions::default()
    };
    let agent_config = AgentConfig {
        cwd: cwd.clone(),
        capabilities: row.capabilities(&model.id),
        api: endpoint.protocol.as_str().to_owned(),
        model,
        max_tokens: config.max_tokens,
        global_dir: sources.global_dir.clone(),
        custom_intro: config.system_prompt.clone(),
        append_system_prompt: config.append_system_prompt.clone(),
        stream,
        render_policy: strata_context::RenderPolicy::Strata,
        compaction: config.compaction.clone(),
        summary_model: summary_model(&catalog, config)?,
    };
    let names: Vec<&str> = config.tools.iter().map(String::as_str).collect();
    for name in &names {
        if strata_tools::builtin(name).is_none() {
            anyhow::bail!(
                "unknown tool `{name}` (known: {})",
                strata_tools::ALL_TOOL_NAMES.join(", ")
            );
        }
    }
    let mut agent = Agent::new(session, provider, ToolSet::builtins(&names), agent_config)
        .with_retry_events(retries);
    record_model(&mut agent, choice.thinking.as_deref())?;
    let events = agent.subscribe();
    let printer = tokio::spawn(output::print_events(events, run.mode));
    let result = agent.prompt(prompt).await;
    drop(agent);
    let printed = printer.await.context("the output task failed")?;
    let summary = result.context("the run failed")?;
    if run.mode == Mode::Text {
        output::print_final(&summary.final_text)?;
    }
    printed?;
    if summary.reason == "error" || summary.reason == "aborted" {
        anyhow::bail!("the run ended: {}", summary.reason);
    }
    Ok(())
}

/// `[compaction] compaction_model = "provider/id"`: the adapter and options for summaries.
fn summary_model(catalog: &Catalog, config: &Config) -> anyhow::Result<Option<SummaryModel>> {
    let Some(name) = &config.compaction.compaction_model else {
        return Ok(None);
    };
    let choice = parse_model(name, None).context("compaction.compaction_model")?;
    let row = catalog.provider(&choice.provider).with_context(|| {
        format!(
            "compaction.compaction_model: unknown provider `{}`",
            choice.provider
        )
    })?;
    let model = resolve_model(catalog, &choice).context("compaction.compaction_model")?;
    let provider = provider_for(
        row,
        row.endpoint(&model.id).protocol,
        config.max_retries,
        None,
    )?;
    // --api-key and --base-url belong to the session's model; this one uses its own settings.
    let stream = StreamOptions {
        max_retries: config.max_retries,
        api_key: factory::api_key(
            None,
            config
                .providers
                .get(&row.id)
                .and_then(|p| p.api_key.as_deref()),
            row,
        ),
        base_url: config
            .providers
            .get(&row.id)
            .and_then(|p| p.base_url.clone()),
        ..StreamOptions::default()
    };
    Ok(Some(SummaryModel {
        provider,
        model,
        stream,
    }))
}

fn resolve_model(catalog: &Catalog, choice: &ModelChoice) -> anyhow::Result<Model> {
    if let Some(model) = catalog.model(&choice.provider, &choice.id) {
        return Ok(model);
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

/// The session a run appends to, and a temp dir to delete afterwards for `--no-session`.
fn open_session(
    run: &RunArgs,
    config: &Config,
    cwd: &std::path::Path,
) -> anyhow::Result<(Session, Option<tempfile::TempDir>)> {
    let options = WriteOptions::default();
    let cwd_text = cwd.display().to_string();
    if run.no_session {
        let dir = tempfile::tempdir().context("creating a temporary session dir")?;
        let session = Session::create(dir.path().join("session.jsonl"), &cwd_text, options)?;
        return Ok((session, Some(dir)));
    }
    if let Some(path) = &run.session {
        let session = if path.exists() {
            Session::open_writable(path, options)
                .with_context(|| format!("opening {}", path.display()))?
                .session
        } else {
            Session::create(path, &cwd_text, options)
                .with_context(|| format!("creating {}", path.display()))?
        };
        return Ok((session, None));
    }
    let root = match &config.sessions_dir {
        Some(root) => root.clone(),
        None => SessionStore::default_root(&home()?),
    };
    let store = SessionStore::new(root);
    if run.continue_session
        && let Some(path) = store.most_recent(&cwd_text)?
    {
        let opened = Session::open_writable(&path, options)
            .with_context(|| format!("opening {}", path.display()))?;
        return Ok((opened.session, None));
    }
    Ok((store.create(&cwd_text, options)?, None))
}

fn home() -> anyhow::Result<PathBuf> {
    std::env::var_os("HOME")
        .map(PathBuf::from)
        .context("HOME is not set; set sessions_dir in config.toml")
}

/// Appends `model_change` / `thinking_level_change` when they differ from the session's.
fn record_model(agent: &mut Agent, thinking: Option<&str>) -> anyhow::Result<()> {
    let model = agent.config().model.clone();
    // The agent's own assembler: the context built here is the one its first request extends.
    let context = agent.context()?;
    let same_model = context
        .model
        .as_ref()
        .is_some_and(|m| m.provider == model.provider && m.model_id == model.id);
    let current = context.thinking_level.clone();
    let empty = context.leaf.is_none();
    let wanted = match thinking {
        Some(level) => level,
        None if current != "off" || !model.reasoning => &current,
        None => "medium",
    };
    let wanted = if model.reasoning { wanted } else { "off" };
    let session = agent.session_mut();
    if !same_model {
        session.append_model_change(&model.provider, &model.id)?;
    }
    if current != wanted || empty {
        session.append_thinking_level_change(wanted)?;
    }
    Ok(())
}
