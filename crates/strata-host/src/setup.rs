//! Turning flags and configuration into a ready agent: shared by print, json and rpc modes and
//! the terminal UI, so every front end opens sessions and picks models the same way.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context as _;
use strata_agent::{Agent, AgentConfig, ModelRoute, RetryEvents};
use strata_extensions::ExtensionSet;
use strata_provider::transport::RetryObserver;
use strata_provider::{Catalog, Model, ProviderRow, StreamOptions};
use strata_session::{Session, SessionStore, WriteOptions};
use strata_tools::{ToolEnvironment, ToolLimits, ToolSet, ToolSettings};

use crate::Overrides;
use crate::config::{Config, Layers, Sources};
use crate::factory::{self, provider_for};
use crate::model::{ModelChoice, ServerAnswer, parse_model, resolve_model};
use crate::rows::{KeyPolicy, Rows};
use crate::trust::ProjectTrust;

/// Everything a front end needs before it builds an agent.
#[derive(Debug, Clone)]
pub struct Setup {
    /// The capability table.
    pub catalog: Catalog,
    /// The merged configuration.
    pub config: Config,
    /// Where configuration came from (the global dir also holds AGENTS.md and skills).
    pub sources: Sources,
    /// What the program that starts the session says (a CLI's flags).
    pub run: Overrides,
    /// The working directory tools run in.
    pub cwd: PathBuf,
    /// The MCP servers, shared by every agent built from this setup (made on first use).
    pub mcp: std::sync::Arc<std::sync::OnceLock<strata_mcp::McpManager>>,
    /// Where each provider's key may be sent.
    pub keys: KeyPolicy,
    /// Whether the project's `.strata/` settings apply (MCP servers and other project
    /// resources ask this too).
    pub trust: ProjectTrust,
    /// What to tell the user at start (settings an untrusted project was denied, bash
    /// running without the OS sandbox).
    pub notices: Vec<String>,
    /// The provider of the run's first model, once an agent was built: the flags' key and
    /// base URL are for it.
    pub first_provider: std::sync::Arc<std::sync::OnceLock<String>>,
    /// The permission gate, bash sandbox and checkpoints every agent of the run gets (one
    /// gate: answers given for the session hold for all of them).
    pub rules: strata_agent::ToolRules,
    /// The run's extensions, shared by every agent built from this setup (made on first
    /// use, started when the first prompt settles the tools; `None`: none configured).
    pub extensions: std::sync::Arc<std::sync::OnceLock<Option<std::sync::Arc<ExtensionSet>>>>,
}

/// An agent ready to run, with what it was built from.
pub struct Built {
    /// The agent.
    pub agent: Agent,
    /// The model as chosen (`:thinking` included).
    pub choice: ModelChoice,
    /// Why this model, when the user did not name it (the session's, the credentials'
    /// default): a front end says it once.
    pub why: Option<String>,
    /// A temporary session directory (`--no-session`), deleted when dropped.
    pub temp: Option<tempfile::TempDir>,
    /// Carries the transport's retries to the agent's events: routes built later with its
    /// observer report theirs too.
    pub retries: RetryEvents,
}

impl Setup {
    /// Reads configuration layers and the capability table for the current directory and
    /// the user's config directory.
    pub fn load(run: &Overrides) -> anyhow::Result<Self> {
        let sources = Sources::from_environment();
        let cwd = std::env::current_dir().context("reading the current directory")?;
        Self::load_in(sources, cwd, run)
    }

    /// Reads configuration layers and the capability table from `sources` (the user's config
    /// directory and the project's), for tools running in `cwd`: what an embedding program
    /// calls when its project is not the process's current directory.
    pub fn load_in(sources: Sources, cwd: PathBuf, run: &Overrides) -> anyhow::Result<Self> {
        let (setup, warnings) = Self::read_quietly(sources, cwd, run)?;
        for warning in setup.notices.iter().chain(&warnings) {
            warn(warning);
        }
        Ok(setup)
    }

    /// [`Self::load_in`] without saying anything: the setup, and the warnings about the
    /// provider rows (Pi's file, …) beside its notices, for a program that reports them
    /// itself (`strata config`).
    pub fn read_quietly(
        sources: Sources,
        cwd: PathBuf,
        run: &Overrides,
    ) -> anyhow::Result<(Self, Vec<String>)> {
        let layers = Layers::read(&sources, run)?;
        let config = layers.config()?;
        let rows = Rows::load(&layers, &config)?;
        let mut notices: Vec<String> = layers.ignored_notice().into_iter().collect();
        if !layers.trust.trusted {
            notices.extend(crate::config::ignored_skills_notice(&cwd));
        }
        // Instruction files found but not read (a link out of the project, a FIFO, too big).
        notices.extend(
            strata_agent::resources::context_files_noting(sources.global_dir.as_deref(), &cwd).1,
        );
        let rules = crate::rules::build(&layers, &config, &sources, &cwd, run)?;
        notices.extend(rules.notices);
        let setup = Self {
            catalog: rows.catalog,
            config,
            sources,
            run: run.clone(),
            cwd,
            mcp: Default::default(),
            keys: rows.keys,
            trust: layers.trust,
            notices,
            first_provider: Default::default(),
            rules: rules.rules,
            extensions: Default::default(),
        };
        Ok((setup, rows.warnings))
    }

    /// A setup whose only model is `model` (`provider/id`) on an in-process server at
    /// `base_url`: no user configuration, no MCP servers, no key policy (the key is a
    /// placeholder the program chose), the project untrusted. For demos and tests.
    pub fn in_process(
        catalog: Catalog,
        model: &str,
        base_url: String,
        cwd: &Path,
        temp_dir: Option<PathBuf>,
    ) -> Self {
        let config = Config {
            model: Some(model.to_owned()),
            ..Config::default()
        };
        Self {
            catalog,
            config,
            sources: Sources {
                global_dir: None,
                project_dir: cwd.to_path_buf(),
            },
            run: Overrides {
                base_url: Some(base_url),
                api_key: Some("strata-in-process".to_owned()),
                interactive: std::io::IsTerminal::is_terminal(&std::io::stdin()),
                temp_dir,
                ..Overrides::default()
            },
            cwd: cwd.to_path_buf(),
            // The numbers of an in-process run must not depend on the user's MCP servers.
            mcp: std::sync::Arc::new(std::sync::OnceLock::from(strata_mcp::McpManager::new(
                Vec::new(),
                Duration::ZERO,
            ))),
            keys: KeyPolicy::default(),
            trust: ProjectTrust::untrusted(cwd),
            notices: Vec::new(),
            first_provider: Default::default(),
            // The demo's figures must not depend on the user's rules or this kernel.
            rules: strata_agent::ToolRules::default(),
            extensions: Default::default(),
        }
    }

    /// The model from `--model` / config (a pattern or bare id is resolved against the
    /// table), else the default of the first provider with credentials.
    pub fn model_choice(&self) -> anyhow::Result<ModelChoice> {
        let mut choice = self.configured_or_default()?;
        if let Some(level) = &self.run.thinking {
            choice.thinking = Some(level.clone());
        }
        Ok(choice)
    }

    /// [`Self::model_choice`] before `--thinking` applies.
    fn configured_or_default(&self) -> anyhow::Result<ModelChoice> {
        match &self.config.model {
            Some(text) => self.resolve_choice(text),
            None => self
                .default_choice()
                .map(|d| d.choice)
                .ok_or_else(|| anyhow::anyhow!(self.no_model_help())),
        }
    }

    /// The model for a run on `session`: the configured one; else the session's own (a
    /// resumed session goes on with the model it used, as in Pi), when strata can route it;
    /// else the credentials' default. The second value says why, when the user did not
    /// choose.
    pub fn model_for(&self, session: &Session) -> anyhow::Result<(ModelChoice, Option<String>)> {
        if self.config.model.is_some() {
            return Ok((self.model_choice()?, None));
        }
        let named = strata_context::Assembler::new()
            .context(session.tree(), session.leaf())
            .ok()
            .and_then(|(context, _)| context.model.clone());
        if let Some(named) = named
            && self.catalog.provider(&named.provider).is_some()
        {
            let why = format!(
                "{}/{} is the model this session used",
                named.provider, named.model_id
            );
            return Ok((
                ModelChoice {
                    provider: named.provider,
                    id: named.model_id,
                    thinking: self.run.thinking.clone(),
                },
                Some(why),
            ));
        }
        match self.default_choice() {
            Some(mut defaulted) => {
                defaulted.choice.thinking.clone_from(&self.run.thinking);
                Ok((defaulted.choice, Some(defaulted.why)))
            }
            None => anyhow::bail!(self.no_model_help()),
        }
    }

    /// The route to `choice`: adapter, model, capabilities, protocol and request options.
    /// `--api-key` and `--base-url` apply to the provider chosen on the command line only.
    pub fn model_route(
        &self,
        choice: &ModelChoice,
        retries: Option<RetryObserver>,
    ) -> anyhow::Result<ModelRoute> {
        let row = self
            .catalog
            .provider(&choice.provider)
            .with_context(|| {
                format!(
                    "unknown provider `{}` (see `strata providers`)",
                    choice.provider
                )
            })?
            .clone();
        // `--api-key` / `--base-url` go with the run's first model (chosen, the session's or
        // the default), not with a provider switched to later.
        let flags_apply = match self.first_provider.get() {
            Some(first) => *first == choice.provider,
            None => self
                .model_choice()
                .is_ok_and(|initial| initial.provider == choice.provider),
        };
        let flag_url = self.run.base_url.clone().filter(|_| flags_apply);
        let flag_key = self.run.api_key.as_deref().filter(|_| flags_apply);
        let (model, warning) = resolve_model(&self.catalog, choice, &|row, id| {
            self.ask_server(row, id, flag_url.as_deref(), flag_key)
        })?;
        if let Some(warning) = warning {
            warn(&warning);
        }
        let endpoint = row.endpoint(&model.id);
        let (row, stream) = self.stream_options(&row, &model.id, flag_key, flag_url)?;
        let provider = provider_for(&row, endpoint.protocol, self.config.max_retries, retries)?;
        Ok(strata_runtime::ModelRoute {
            provider,
            capabilities: row.capabilities(&model.id),
            protocol: endpoint.protocol,
            model,
            stream,
        })
    }

    /// The route to the model a session file names, for [`strata_runtime::Op::SwitchSession`]
    /// (Pi restores a resumed session's model): `None` where the catalog does not know the
    /// model or strata cannot route it, so the switch keeps the current model.
    pub fn session_route(
        &self,
        model: &strata_runtime::ModelRef,
        retries: Option<RetryObserver>,
    ) -> Option<strata_runtime::ModelRoute> {
        self.catalog.model(&model.provider, &model.model)?;
        self.model_route(&ModelChoice::of(model), retries).ok()
    }

    /// The tools named in configuration, checked against the built-in set.
    pub fn tools(&self) -> anyhow::Result<ToolSet> {
        // `task` (delegation) is built with the agent: its children need the agent's setup.
        let names: Vec<&str> = self
            .config
            .tools
            .iter()
            .map(String::as_str)
            .filter(|name| *name != crate::subagents::TASK_TOOL)
            .collect();
        check_tool_names(&names)?;
        Ok(ToolSet::builtins(&names))
    }

    /// Tool limits, environment and temp dir from configuration: `bash_timeout`, and
    /// credentials (every provider row's key variables too) kept from tool processes except
    /// those in `tool_env_allow`.
    pub fn tool_settings(&self) -> ToolSettings {
        let limits = ToolLimits {
            bash_default_timeout: (self.config.bash_timeout > 0)
                .then(|| Duration::from_secs(self.config.bash_timeout)),
            ..ToolLimits::default()
        };
        ToolSettings {
            limits,
            environment: credential_filter(&self.catalog, &self.config),
            temp_dir: self.run.temp_dir.clone(),
        }
    }

    /// Opens the session the flags name and builds the agent on it, recording the model and
    /// thinking level when they differ from the session's.
    pub fn build_agent(&self) -> anyhow::Result<Built> {
        // Fail on a bad --model before a session file is created.
        if self.config.model.is_some() {
            self.model_choice()?;
        }
        let (session, temp) = self.open_session()?;
        let (choice, why) = self.model_for(&session)?;
        let _ = self.first_provider.set(choice.provider.clone());
        let retries = RetryEvents::new();
        let agent = self.agent_reporting(session, &choice, retries.clone())?;
        Ok(Built {
            agent,
            choice,
            why,
            temp,
            retries,
        })
    }

    /// An agent appending to `session` with the model `choice`.
    /// Its provider's retries are reported through `retries`.
    pub fn agent_reporting(
        &self,
        session: Session,
        choice: &ModelChoice,
        retries: RetryEvents,
    ) -> anyhow::Result<Agent> {
        let switch = self.model_route(choice, Some(retries.observer()))?;
        let native_deferral = switch.capabilities.deferred_tools;
        let api = switch.protocol.as_str().to_owned();
        let searchable = mcp_searchable(&api);
        // The model's prices decide whether an `auto` MCP server is declared or searched.
        let prices = strata_mcp::TokenPrices {
            cache_read: switch.model.prices.cache_read,
            cache_write: switch.model.prices.cache_write_5m,
            output: switch.model.prices.output,
        };
        let agent_config = AgentConfig {
            cwd: self.cwd.clone(),
            capabilities: switch.capabilities,
            api,
            model: switch.model,
            max_tokens: self.config.max_tokens,
            global_dir: self.sources.global_dir.clone(),
            custom_intro: self.config.system_prompt.clone(),
            append_system_prompt: self.config.append_system_prompt.clone(),
            stream: switch.stream,
            render_policy: strata_context::RenderPolicy::Strata,
            compaction: self.config.compaction.clone(),
            summary_model: self.summary_model()?,
            cache: self.config.cache,
            tool_settings: self.tool_settings(),
        };
        let mut tools = self.tools()?;
        // Children inherit the tools as they are before `task` joins them, last.
        if crate::subagents::wanted(self) {
            let delegation = crate::subagents::delegation(
                self,
                std::sync::Arc::clone(&switch.provider),
                &agent_config,
                &tools,
            )?;
            tools.insert(delegation.tool());
        }
        let mut agent =
            Agent::new(session, switch.provider, tools, agent_config).with_retry_events(retries);
        let mcp = self.mcp_manager();
        // A deferred server's tools go out with `defer_loading` where the row searches tools
        // itself, behind `mcp_tool_search` where it does not.
        mcp.set_native_deferral(native_deferral);
        mcp.set_searchable(searchable);
        mcp.set_prices(prices);
        let mcp: std::sync::Arc<dyn strata_tools::ToolSource> = std::sync::Arc::new(mcp);
        self.add_hooks_and_extensions(&mut agent, mcp);
        agent.set_tool_rules(self.rules.clone());
        agent.set_project_skills(self.trust.trusted);
        // Asking for a prompt of one's own is asking for strata's prompt on a Pi session too.
        agent.set_adopt_foreign_prompt(
            self.config.system_prompt.is_none() && self.config.append_system_prompt.is_none(),
        );
        record_model(
            &mut agent,
            choice.thinking.as_deref(),
            self.config.thinking.as_deref(),
        )?;
        // Entries the context left out (a field of the wrong type): said once, here.
        if !self.interactive() {
            for diagnostic in &agent.context()?.skipped {
                warn(&diagnostic.to_string());
            }
        }
        Ok(agent)
    }

    /// The run's extensions (`[extensions]`; a project's only when it is trusted, as the
    /// configuration layers already decided), created once.
    pub fn extension_set(&self) -> Option<std::sync::Arc<ExtensionSet>> {
        self.extensions
            .get_or_init(|| {
                let specs = crate::extensions::extension_specs(&self.config.extensions, &self.cwd);
                (!specs.is_empty()).then(|| std::sync::Arc::new(ExtensionSet::new(specs, None)))
            })
            .clone()
    }

    /// The UI requests of the run's extensions, for the front end that answers them (made
    /// before the first prompt starts the extensions).
    pub fn extension_ui(&self) -> crate::extensions::ExtensionUi {
        crate::extensions::ExtensionUi::for_set(self.extension_set().as_ref())
    }

    /// The run's hooks and extensions as `/extensions`, `/hooks` and their rpc queries show
    /// them.
    pub fn loaded(&self) -> crate::Loaded {
        let user = self
            .sources
            .global_dir
            .as_ref()
            .map(|dir| dir.join("config.toml"));
        // The project's `[extensions]` counts only where trust let it through.
        let project = self
            .trust
            .trusted
            .then(|| self.sources.project_dir.join(".strata/config.toml"));
        let sources =
            crate::loaded::extension_sources(self.config.extensions.keys().cloned(), user, project);
        crate::Loaded::new(self.hook_set(), self.extension_set(), sources)
    }

    /// The run's command hooks: strata's `hooks.json`, Claude Code's `settings.json` and
    /// Codex's `hooks.json` of the user, and the project's only when it is trusted.
    pub fn hook_set(&self) -> strata_hooks::HookSet {
        let home = std::env::var_os("HOME").map(PathBuf::from);
        crate::extensions::hook_set(
            &self.config.hooks,
            home.as_deref(),
            self.sources.global_dir.as_deref(),
            &self.trust.project_dir,
            self.trust.trusted,
        )
    }

    /// Gives `agent` the run's hooks, the extensions' tools after `mcp`'s, their hook
    /// answers and the memory slots they claim.
    fn add_hooks_and_extensions(
        &self,
        agent: &mut Agent,
        mcp: std::sync::Arc<dyn strata_tools::ToolSource>,
    ) {
        let hooks = self.hook_set();
        if !self.interactive() {
            for problem in hooks.problems() {
                warn(problem);
            }
        }
        let extensions = self.extension_set();
        agent.set_hooks(crate::extensions::hook_runner(
            hooks,
            &self.cwd,
            extensions.as_ref(),
        ));
        match extensions {
            Some(set) => {
                // The extensions' operations go to the session runtime started on this agent;
                // a few may wait, more are refused as a flood.
                let (ops, taken) = tokio::sync::mpsc::channel(16);
                set.set_ops(ops);
                agent.set_extension_ops(Some(taken));
                agent.set_tool_source(Some(std::sync::Arc::new(set.tool_source(Some(mcp)))));
                agent.set_extension_problems(Some(std::sync::Arc::new(
                    crate::extensions::ExtensionReports(std::sync::Arc::clone(&set)),
                )));
                agent.set_memory_plays(Some(std::sync::Arc::new(
                    crate::extensions::ExtensionMemory(set),
                )));
            }
            None => agent.set_tool_source(Some(mcp)),
        }
    }

    /// The MCP servers of this run (connected when the first prompt starts).
    pub fn mcp_manager(&self) -> strata_mcp::McpManager {
        self.mcp
            .get_or_init(|| {
                let filter = credential_filter(&self.catalog, &self.config);
                crate::mcp::manager(
                    &self.sources,
                    &self.config,
                    self.trust.trusted,
                    &filter,
                    self.rules.sandbox.as_ref(),
                )
            })
            .clone()
    }

    /// The session store under the configured root.
    pub fn store(&self) -> anyhow::Result<SessionStore> {
        let root = match &self.config.sessions_dir {
            Some(root) => root.clone(),
            None => SessionStore::default_root(&home()?),
        };
        Ok(SessionStore::new(root))
    }

    /// A new session in the store for this working directory.
    pub fn new_session(&self) -> anyhow::Result<Session> {
        Ok(self
            .store()?
            .create(&self.cwd.display().to_string(), WriteOptions::default())?)
    }

    /// The session a run appends to, and a temp dir to delete afterwards for `--no-session`.
    pub fn open_session(&self) -> anyhow::Result<(Session, Option<tempfile::TempDir>)> {
        let options = WriteOptions::default();
        let cwd_text = self.cwd.display().to_string();
        if self.run.no_session {
            // Inside the run's temp dir, so that a run stopped by a signal leaves nothing.
            let dir = match &self.run.temp_dir {
                Some(run_dir) => tempfile::tempdir_in(run_dir),
                None => tempfile::tempdir(),
            }
            .context("creating a temporary session dir")?;
            let session = Session::create(dir.path().join("session.jsonl"), &cwd_text, options)?;
            return Ok((session, Some(dir)));
        }
        if let Some(path) = &self.run.session {
            return Ok((self.open_warning(path, &cwd_text)?, None));
        }
        let store = self.store()?;
        if self.run.continue_session
            && let Some(path) = store.most_recent(&cwd_text)?
        {
            return Ok((self.open_warning(&path, &cwd_text)?, None));
        }
        Ok((store.create(&cwd_text, options)?, None))
    }

    /// Opens or creates the session at `path` ([`open_or_create_with`]), saying on stderr what
    /// was skipped in a damaged file unless the terminal UI is about to take the screen (it
    /// shows them itself, in `/tree`).
    fn open_warning(&self, path: &Path, cwd: &str) -> anyhow::Result<Session> {
        let interactive = self.interactive();
        open_or_create_with(path, cwd, |diagnostic| {
            if !interactive {
                eprintln!("strata: warning: {diagnostic}");
            }
        })
    }

    /// Whether the terminal UI is about to take the screen (it shows damage itself).
    pub(crate) fn interactive(&self) -> bool {
        self.run.interactive
    }

    /// The key `row` may use at `url`: the flag's, else the row's environment variables, the
    /// config's `api_key` or Pi's literal key, unless the URL was set by the project and is
    /// not one of the hosts the user configured for the row (then none).
    fn key_for(
        &self,
        row: &ProviderRow,
        url: &str,
        flag_key: Option<&str>,
        flag_url: bool,
    ) -> Option<strata_provider::ApiKey> {
        let configured = self
            .config
            .providers
            .get(&row.id)
            .and_then(|p| p.api_key.as_deref())
            .or_else(|| self.keys.pi_key(&row.id));
        let key = factory::api_key(flag_key, configured, row)?;
        (flag_key.is_some() || flag_url || self.keys.allows(&row.id, url)).then_some(key)
    }

    /// The key a listing request to `url` may carry (same rule as a model request).
    /// `user_url`: the URL was given on the command line (the user's own choice).
    pub fn key_for_listing(
        &self,
        row: &ProviderRow,
        url: &str,
        user_url: bool,
    ) -> Option<strata_provider::ApiKey> {
        self.key_for(row, url, None, user_url)
    }

    /// The row to build the adapter from and the stream options for `model_id`: retries, the
    /// flags' key and base URL when given, else the row's. A key is only sent to a host the
    /// user configured for the row outside the project; otherwise the row loses its key
    /// variables and the run stops with a missing-key error naming why.
    fn stream_options(
        &self,
        row: &ProviderRow,
        model_id: &str,
        flag_key: Option<&str>,
        flag_url: Option<String>,
    ) -> anyhow::Result<(ProviderRow, StreamOptions)> {
        let url = flag_url
            .clone()
            .unwrap_or_else(|| row.endpoint(model_id).base_url);
        if flag_url.is_none() && !self.keys.fills_placeholders(&row.id, &url) {
            anyhow::bail!(
                "{}'s base URL `{url}` names an environment variable, but it comes from {}: only your own configuration fills variables in a URL (set it in ~/.config/strata/config.toml, or pass --base-url)",
                row.id,
                self.trust.project_dir.join(".strata/config.toml").display(),
            );
        }
        let mut row = row.clone();
        let api_key = self.key_for(&row, &url, flag_key, flag_url.is_some());
        let allowed = flag_key.is_some() || flag_url.is_some() || self.keys.allows(&row.id, &url);
        let configured = self
            .config
            .providers
            .get(&row.id)
            .and_then(|p| p.api_key.as_deref())
            .or_else(|| self.keys.pi_key(&row.id));
        if !allowed && factory::api_key(None, configured, &row).is_some() {
            warn(&format!(
                "not sending {}'s key to {}: that URL comes from {}, not from your own configuration; set the base URL in ~/.config/strata/config.toml (or pass --base-url) to allow it",
                row.id,
                crate::rows::host_of(&url),
                self.trust.project_dir.join(".strata/config.toml").display(),
            ));
            row.auth_env.clear();
        }
        let options = StreamOptions {
            max_retries: self.config.max_retries,
            api_key,
            base_url: flag_url,
            ..StreamOptions::default()
        };
        Ok((row, options))
    }

    /// What a served-model row's server says about `id` (its list and the window).
    fn ask_server(
        &self,
        row: &ProviderRow,
        id: &str,
        flag_url: Option<&str>,
        flag_key: Option<&str>,
    ) -> ServerAnswer {
        let url = flag_url.map_or_else(|| row.base_url.clone(), str::to_owned);
        if flag_url.is_none() && !self.keys.fills_placeholders(&row.id, &url) {
            return ServerAnswer::default();
        }
        let key = self.key_for(row, &url, flag_key, flag_url.is_some());
        let Some(discovery) = strata_provider::discovery::Discovery::new(row, &url, key.as_ref())
        else {
            return ServerAnswer::default();
        };
        let id = id.to_owned();
        // A thread of its own: callers may already be inside the async runtime.
        std::thread::scope(|scope| {
            scope
                .spawn(move || {
                    let Ok(runtime) = tokio::runtime::Builder::new_current_thread()
                        .enable_all()
                        .build()
                    else {
                        return ServerAnswer::default();
                    };
                    runtime.block_on(async {
                        let listed = discovery
                            .list()
                            .await
                            .map(|models| models.into_iter().map(|m| m.id).collect())
                            .map_err(|e| e.to_string());
                        let (window, window_error) = match discovery.context_window(&id).await {
                            Ok(window) => (window, None),
                            Err(e) => (None, Some(e.to_string())),
                        };
                        ServerAnswer {
                            listed: Some(listed),
                            window,
                            window_error,
                        }
                    })
                })
                .join()
                .unwrap_or_default()
        })
    }

    /// `[compaction] compaction_model = "provider/id"`: the adapter and options for summaries.
    fn summary_model(&self) -> anyhow::Result<Option<ModelRoute>> {
        let Some(name) = &self.config.compaction.compaction_model else {
            return Ok(None);
        };
        let choice = parse_model(name, None).context("compaction.compaction_model")?;
        let row = self.catalog.provider(&choice.provider).with_context(|| {
            format!(
                "compaction.compaction_model: unknown provider `{}`",
                choice.provider
            )
        })?;
        let (model, warning) = resolve_model(&self.catalog, &choice, &|row, id| {
            self.ask_server(row, id, None, None)
        })
        .context("compaction.compaction_model")?;
        let model: Model = model;
        if let Some(warning) = warning {
            warn(&format!("compaction.compaction_model: {warning}"));
        }
        // --api-key and --base-url belong to the session's model; this one uses its own settings.
        let (row, stream) = self.stream_options(row, &model.id, None, None)?;
        let protocol = row.endpoint(&model.id).protocol;
        let provider = provider_for(&row, protocol, self.config.max_retries, None)?;
        Ok(Some(ModelRoute {
            provider,
            capabilities: row.capabilities(&model.id),
            protocol,
            model,
            stream,
        }))
    }
}

/// What a tool process (a tool command, an MCP server) may inherit: credentials (every
/// provider row's key variables and `*_API_KEY`-like names) are kept from it, except those the
/// user's `tool_env_allow` names.
pub fn credential_filter(catalog: &Catalog, config: &Config) -> ToolEnvironment {
    let provider_keys = catalog
        .providers()
        .flat_map(|row| row.auth_env.iter().cloned());
    ToolEnvironment::default()
        .drop_names(provider_keys)
        .allow(config.tool_env_allow.iter().cloned())
}

/// A warning on stderr, before any screen is drawn or between print-mode lines.
pub fn warn(text: &str) {
    eprintln!("strata: warning: {text}");
}

/// Errors on a tool name strata does not have, listing the ones it has.
pub fn check_tool_names(names: &[&str]) -> anyhow::Result<()> {
    for name in names {
        if strata_tools::builtin(name).is_none() {
            anyhow::bail!(
                "unknown tool `{name}` (known: {})",
                strata_tools::ALL_TOOL_NAMES.join(", ")
            );
        }
    }
    Ok(())
}

/// Opens `path` for appending, or creates it for `cwd`, passing each problem found while
/// reading the file to `report`.
fn open_or_create_with(
    path: &Path,
    cwd: &str,
    mut report: impl FnMut(&strata_session::Diagnostic),
) -> anyhow::Result<Session> {
    let options = WriteOptions::default();
    if path.exists() {
        let opened = Session::open_writable(path, options)
            // The session's errors name the file already: said once.
            .context("opening the session")?;
        for diagnostic in &opened.diagnostics {
            report(diagnostic);
        }
        Ok(opened.session)
    } else {
        Session::create(path, cwd, options).context("creating the session")
    }
}

fn home() -> anyhow::Result<PathBuf> {
    std::env::var_os("HOME")
        .map(PathBuf::from)
        .context("HOME is not set; set sessions_dir in config.toml")
}

/// Appends `model_change` / `thinking_level_change` when they differ from the session's. A
/// new session starts at `default` (config's `thinking`) unless a level was named; one that
/// goes on keeps its own.
fn record_model(
    agent: &mut Agent,
    thinking: Option<&str>,
    default: Option<&str>,
) -> anyhow::Result<()> {
    if let Some(level) = default
        && !crate::model::THINKING_LEVELS.contains(&level)
    {
        anyhow::bail!(
            "config: thinking = `{level}` is not a level (one of {})",
            crate::model::THINKING_LEVELS.join(", ")
        );
    }
    let model = agent.config().model.clone();
    // The agent's own assembler: the context built here is the one its first request extends.
    let context = agent.context()?;
    let same_model = context
        .model
        .as_ref()
        .is_some_and(|m| m.provider == model.provider && m.model_id == model.id);
    let current = context.thinking_level.clone();
    let empty = context.leaf.is_none();
    // A new session starts at the configured level, else medium where the model reasons; a
    // resumed one keeps its level (as Pi restores it), so resuming never changes what the
    // next request asks for.
    let wanted = match (thinking, default) {
        (Some(level), _) => level,
        (None, Some(level)) if empty => level,
        (None, _) if empty && current == "off" && model.reasoning => "medium",
        (None, _) => &current,
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

/// What the row's own tool search shows of a deferred MCP tool before it is found: Anthropic
/// nothing, OpenAI its name and description (strata_mcp::exposure).
pub fn mcp_searchable(api: &str) -> strata_mcp::Searchable {
    if api == strata_provider::Protocol::AnthropicMessages.as_str() {
        strata_mcp::Searchable::Nothing
    } else {
        strata_mcp::Searchable::NameAndDescription
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_session_starts_at_the_configured_thinking_level_and_a_resumed_one_keeps_its_own() {
        let runtime = tokio::runtime::Runtime::new().unwrap();
        let _guard = runtime.enter();
        let dir = tempfile::tempdir().unwrap();
        let catalog = Catalog::builtin().unwrap();
        let mut setup = Setup::in_process(
            catalog,
            "anthropic/claude-sonnet-4-5",
            "http://127.0.0.1:9".into(),
            dir.path(),
            None,
        );
        setup.config.sessions_dir = Some(dir.path().join("sessions"));
        setup.config.thinking = Some("low".into());
        let mut built = setup.build_agent().unwrap();
        assert_eq!(built.agent.thinking().unwrap().as_str(), "low");
        built.agent.set_thinking_level("high").unwrap();
        setup.run.session = Some(built.agent.session().path().to_path_buf());
        drop(built);
        let mut again = setup.build_agent().unwrap();
        assert_eq!(again.agent.thinking().unwrap().as_str(), "high");
        drop(again);
        setup.config.thinking = Some("lots".into());
        let error = format!("{:#}", setup.build_agent().err().unwrap());
        assert!(
            error.contains("thinking = `lots` is not a level"),
            "{error}"
        );
    }
}

#[cfg(test)]
mod path_once_tests {
    use super::*;

    #[test]
    fn a_session_that_cannot_be_opened_names_its_path_once() {
        let dir = tempfile::tempdir().unwrap();
        let not_a_file = dir.path().join("a-directory.jsonl");
        std::fs::create_dir(&not_a_file).unwrap();
        let error = format!(
            "{:#}",
            open_or_create_with(&not_a_file, "/x", |_| {}).unwrap_err()
        );
        let shown = not_a_file.display().to_string();
        assert_eq!(error.matches(&shown).count(), 1, "{error}");
    }
}

/// The runtime's [`strata_runtime::Router`] over a [`Setup`]: the keys, configuration and
/// catalog the setup holds turn the models operations name into routes. A front end that
/// changes its setup (a key stored by `/login`) hands the router the new one.
pub struct SetupRouter {
    setup: std::sync::RwLock<Setup>,
    retries: Option<RetryObserver>,
}

impl SetupRouter {
    /// Routes through `setup`, reporting retries to `retries` where given.
    pub fn new(setup: Setup, retries: Option<RetryObserver>) -> Self {
        Self {
            setup: std::sync::RwLock::new(setup),
            retries,
        }
    }

    /// Routes through `setup` from now on.
    pub fn update(&self, setup: Setup) {
        *self
            .setup
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = setup;
    }

    fn setup(&self) -> std::sync::RwLockReadGuard<'_, Setup> {
        // A panic elsewhere while the setup was replaced leaves a whole setup: still usable.
        self.setup
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl strata_runtime::Router for SetupRouter {
    fn route(
        &self,
        model: &strata_runtime::ModelRef,
    ) -> Result<strata_runtime::ModelRoute, String> {
        self.setup()
            .model_route(&ModelChoice::of(model), self.retries.clone())
            .map_err(|e| format!("{e:#}"))
    }

    fn session_route(
        &self,
        model: &strata_runtime::ModelRef,
    ) -> Option<strata_runtime::ModelRoute> {
        self.setup().session_route(model, self.retries.clone())
    }
}
