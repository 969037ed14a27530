//! The loop: user message → context → request → stream → tools → results → repeat.

mod compaction;
mod control;
pub(crate) mod hooks;
pub(crate) mod memory;
mod navigate;
mod system;
mod tool_batch;

pub use control::{Control, RetryEvents};

use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use futures::StreamExt;
use serde_json::Map;
use strata_compaction::{CompactionReason, CompactionSettings, OverflowRecovery, SummaryMode};
use strata_context::{Assembler, Context, RenderOptions, RenderPolicy, RenderReport, Renderer};
use strata_provider::{
    Capabilities, Cost, Event, Message, MessageAssembler, Model, Provider, ProviderError, Request,
    StreamOptions, ThinkingLevel, Usage,
};
use strata_session::{
    AgentMessage, ContentBlock, EntryId, ImageContent, MessageContent, PlannedEdit, Replacement,
    Session, StopReason, TextContent, ToolCall, UserMessage,
};
use strata_tools::{ToolSet, ToolSettings, ToolSource};
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender, unbounded_channel};
use tokio_util::sync::CancellationToken;

use crate::convert::{self, Origin};
use crate::error::AgentError;
use crate::event::AgentEvent;
use crate::keep_warm::{self, CacheSettings, KeepWarmPlan};
use crate::route::ModelRoute;

/// What the agent needs besides the session, the provider and the tools.
#[derive(Clone)]
pub struct AgentConfig {
    /// The working directory tools run in.
    pub cwd: PathBuf,
    /// The model requests go to.
    pub model: Model,
    /// What the provider accepts, for render.
    pub capabilities: Capabilities,
    /// Protocol name recorded on assistant messages (Pi's `api`), e.g. `anthropic-messages`.
    pub api: String,
    /// Output cap per request (`None`: the model's maximum).
    pub max_tokens: Option<u32>,
    /// Global config dir holding AGENTS.md and `skills/` (`~/.config/strata`).
    pub global_dir: Option<PathBuf>,
    /// Replaces the built-in intro section.
    pub custom_intro: Option<String>,
    /// Appended to the rules section.
    pub append_system_prompt: Option<String>,
    /// Base URL, key and retry limit for the provider.
    pub stream: StreamOptions,
    /// How changes to the system prompt and tools are laid into requests (strata's by default;
    /// others exist for comparisons).
    pub render_policy: RenderPolicy,
    /// When and how to compact.
    pub compaction: CompactionSettings,
    /// A separate (cheaper) model for summaries; `None` uses the session's model. Another model
    /// cannot read the session's cache, so its summary requests take the transcript form.
    pub summary_model: Option<ModelRoute>,
    /// Cache lifetime asked for, and keeping the cache warm while idle.
    pub cache: CacheSettings,
    /// Limits, environment and temp dir of tool calls.
    pub tool_settings: ToolSettings,
}

impl std::fmt::Debug for AgentConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentConfig")
            .field("cwd", &self.cwd)
            .field("model", &self.model.qualified_id())
            .field("api", &self.api)
            .finish_non_exhaustive()
    }
}

/// A renderer with no previous request, for the configured capabilities and policy; the
/// cache key is the session id unless one is shared ([`Agent::share_cache_key`]).
fn renderer_for(config: &AgentConfig, session: &Session, cache_key: Option<&str>) -> Renderer {
    let options = RenderOptions {
        policy: config.render_policy,
        cache_key: Some(cache_key.map_or_else(|| session.header().id.clone(), str::to_owned)),
        max_tokens: config.max_tokens,
        ttl: config.capabilities.cache_ttl(config.cache.retention),
        // Set before each render from the session's prompt (Agent::render).
        dialect: strata_provider::Dialect::Strata,
    };
    Renderer::new(config.capabilities.clone(), options)
}

/// How a run ended.
#[derive(Debug, Clone, PartialEq)]
pub struct RunSummary {
    /// Requests sent.
    pub turns: usize,
    /// `stop`, `length`, `aborted` or `error`.
    pub reason: String,
    /// Text of the last assistant message.
    pub final_text: String,
}

/// The orchestrator: owns the session and the live tool set, talks to one provider.
pub struct Agent {
    session: Session,
    provider: Arc<dyn Provider>,
    tools: ToolSet,
    /// Tools beside `tools` that come and go (MCP servers): read before each prompt.
    tool_source: Option<Arc<dyn ToolSource>>,
    /// Whether skills under the project's `.strata/skills` and `.agents/skills` are offered
    /// (false until the user trusts the project; see [`Agent::set_project_skills`]).
    project_skills: bool,
    config: AgentConfig,
    assembler: Assembler,
    events: Option<UnboundedSender<AgentEvent>>,
    control: Control,
    retry_events: RetryEvents,
    /// Keeps the previous request's bytes, so a request after an append serializes only the
    /// new messages.
    renderer: Renderer,
    /// Requests sent since the last compaction (or since this agent started): the cost
    /// trigger's estimate of the requests still to come.
    requests_since_compaction: u64,
    /// The context's estimated tokens at the first request of this epoch (since the last
    /// compaction, or since this agent started): with the requests since, the growth per
    /// request the cost trigger weighs.
    epoch_start_tokens: Option<u64>,
    /// A threshold compaction replacing no more than this many tokens is not tried: the
    /// last one that tried came back with a summary not smaller than what it replaced (twice
    /// that summary; 0 until then). Folded and masked history can leave a cut with little to
    /// summarize however large the context.
    threshold_floor_tokens: u64,
    /// The last request a turn sent (what a keep-warm ping re-sends) and the pings since.
    last_sent: Option<Request>,
    pings_since_request: u32,
    /// When the provider last read the cached prefix: the last request or ping was sent.
    cache_used_at: Option<tokio::time::Instant>,
    /// The thinking level last asked for (`None`: the session's). A model without reasoning
    /// runs `off`; switching back to one that reasons restores this.
    wanted_thinking: Option<String>,
    /// The cache-routing key requests carry instead of the session id: a forked child sends
    /// its parent's, so a cache keyed by it finds the prefix the parent wrote.
    shared_cache_key: Option<String>,
    /// The permission gate, the bash sandbox and file checkpoints (crate::rules).
    pub(crate) rules: crate::rules::ToolRules,
    /// Keep another harness's prompt on a session it started (crate::adopt).
    adopt_foreign_prompt: bool,
    /// Command hooks (`None`: none run).
    hooks: Option<strata_hooks::HookRunner>,
    /// What hooks said for the user, not yet taken.
    hook_notices: Vec<hooks::HookNotice>,
    /// Where the extensions' problems wait (agent::hooks).
    extension_problems: Option<Arc<dyn hooks::ExtensionProblems>>,
    /// The extensions' operations, until the session runtime takes them (agent::hooks);
    /// shared by clones, taken once.
    extension_ops: Arc<Mutex<Option<tokio::sync::mpsc::Receiver<strata_hooks::OpCall>>>>,
    /// Where tool work that outlives its call posts to the conversation, once a driver
    /// opened the inbox ([`Agent::open_mailbox`]).
    mailbox: Option<strata_tools::Mailbox>,
    /// Context `PreToolUse` hooks added, appended after the batch's results.
    pending_hook_context: Vec<hooks::HookText>,
    /// The `SessionStart` source due at the next prompt (`startup`, `resume`, `clear`);
    /// `compact` runs right after a compaction.
    session_start_due: Option<&'static str>,
    /// A hook's `continue: false`, ending the run at the next step.
    hook_stop: Option<String>,
    /// Extensions filling memory slots, whether their claims were made, refused claims for
    /// the user, a summary prepared while idle (agent::memory).
    memory: Option<Arc<dyn memory::MemoryPlays>>,
    memory_claimed: bool,
    memory_notices: Vec<String>,
    precomputed: memory::PrecomputeCell,
}

impl Agent {
    /// An agent appending to `session` (opened for writing).
    pub fn new(
        session: Session,
        provider: Arc<dyn Provider>,
        tools: ToolSet,
        config: AgentConfig,
    ) -> Self {
        let renderer = renderer_for(&config, &session, None);
        let session_start_due = Some(if session.leaf().is_some() {
            "resume"
        } else {
            "startup"
        });
        Self {
            session_start_due,
            session,
            provider,
            tools,
            tool_source: None,
            project_skills: true,
            config,
            assembler: Assembler::new(),
            events: None,
            control: Control::default(),
            retry_events: RetryEvents::new(),
            renderer,
            requests_since_compaction: 0,
            epoch_start_tokens: None,
            threshold_floor_tokens: 0,
            last_sent: None,
            pings_since_request: 0,
            cache_used_at: None,
            wanted_thinking: None,
            shared_cache_key: None,
            rules: crate::rules::ToolRules::default(),
            adopt_foreign_prompt: true,
            hooks: None,
            hook_notices: Vec::new(),
            extension_problems: None,
            extension_ops: Arc::default(),
            mailbox: None,
            pending_hook_context: Vec::new(),
            hook_stop: None,
            memory: None,
            memory_claimed: false,
            memory_notices: Vec::new(),
            precomputed: Default::default(),
        }
    }

    /// Sends `key` as the cache-routing key instead of the session id (a forked child sends
    /// its parent's, so a provider that routes by it reads the parent's prefix).
    pub fn share_cache_key(&mut self, key: impl Into<String>) {
        self.shared_cache_key = Some(key.into());
        self.renderer = renderer_for(
            &self.config,
            &self.session,
            self.shared_cache_key.as_deref(),
        );
    }

    /// Sets the share of the context window one tool definition may take (0 < share ≤ 1;
    /// anything else declares every tool). A larger definition is not declared, and one
    /// already declared is withdrawn at the next sync: the session's history is kept.
    /// It starts as the config's `compaction.max_tool_share`.
    pub fn set_tool_share(&mut self, share: f64) {
        self.config.compaction.max_tool_share = share;
    }

    /// The live tools whose definitions are too large to declare, each naming its server.
    pub fn refused_tools(&self) -> Vec<crate::RefusedTool> {
        self.desired_system_and_refusals().2
    }

    /// Reports the retries of the provider's client (built with `retries.observer()`) as
    /// [`AgentEvent::Retry`].
    pub fn with_retry_events(mut self, retries: RetryEvents) -> Self {
        retries.attach(self.events.clone());
        self.retry_events = retries;
        self
    }

    /// A receiver of every event from now on (replaces an earlier subscriber).
    pub fn subscribe(&mut self) -> UnboundedReceiver<AgentEvent> {
        let (sender, receiver) = unbounded_channel();
        self.retry_events.attach(Some(sender.clone()));
        self.events = Some(sender);
        receiver
    }

    /// Lets tool work outlive its call (a background child agent): its messages arrive in the
    /// returned inbox, for the caller to deliver at the end of the conversation. Without it
    /// such work runs within its call. Replaces an earlier inbox.
    pub fn open_mailbox(&mut self) -> strata_tools::Inbox {
        let (mailbox, inbox) = strata_tools::Mailbox::channel();
        self.mailbox = Some(mailbox);
        inbox
    }

    /// The steering queue and abort switch, to hand to a front end.
    pub fn control(&self) -> Control {
        self.control.clone()
    }

    /// The session.
    pub fn session(&self) -> &Session {
        &self.session
    }

    /// The session, for navigation (moving the leaf, labels). The agent rebuilds its context
    /// from the tree on the next request.
    pub fn session_mut(&mut self) -> &mut Session {
        &mut self.session
    }

    /// The live tool set.
    pub fn tools(&self) -> &ToolSet {
        &self.tools
    }

    /// Replaces the live tool set. The change is stored as one `system` patch before the next
    /// request (render decides what the provider sees).
    pub fn set_tools(&mut self, tools: ToolSet) {
        self.tools = tools;
    }

    /// Whether the project's skills (`.strata/skills`, `.agents/skills` in the working
    /// directory and its parents) are offered; on by default. A front end turns it off for a
    /// project the user has not trusted: a skill's text is an instruction to the model.
    pub fn set_project_skills(&mut self, offered: bool) {
        self.project_skills = offered;
    }

    /// Whether a session another harness started keeps its own prompt and tool definitions
    /// (the default: its cached prefix stays valid) or takes strata's (crate::adopt).
    pub fn set_adopt_foreign_prompt(&mut self, adopt: bool) {
        self.adopt_foreign_prompt = adopt;
    }

    /// Whose shapes the next request takes: Pi's while a session Pi started keeps Pi's prompt
    /// (its cached prefix is then read), strata's otherwise (crate::adopt).
    pub fn dialect(&mut self) -> Result<strata_provider::Dialect, AgentError> {
        let adopting = self.adopt_foreign_prompt;
        Ok(crate::adopt::dialect(self.context()?, adopting))
    }

    /// Adds tools that come and go beside the set (MCP servers). Before each prompt the agent
    /// waits (bounded) for the source to settle and declares its live tools after the set's;
    /// what changed since the last prompt becomes one ledger patch.
    pub fn set_tool_source(&mut self, source: Option<Arc<dyn ToolSource>>) {
        self.tool_source = source;
    }

    /// The tool set requests declare: the set, then the source's live tools (a name the set
    /// already has stays the set's).
    pub fn active_tools(&self) -> ToolSet {
        let mut tools = self.tools.clone();
        if let Some(source) = &self.tool_source {
            for tool in source.tools() {
                if tools.get(tool.name()).is_none() {
                    tools.insert(tool);
                }
            }
        }
        tools
    }

    /// Sends requests to another model (and possibly another provider) from now on. The change
    /// is recorded as a `model_change` entry when it differs from the session's model; the
    /// renderer starts afresh because a new model never shares the old one's cache. The
    /// thinking level asked for is kept: `off` on a model without reasoning, restored on one
    /// with it (recorded when that changes the level in effect).
    pub fn set_model(&mut self, switch: ModelRoute) -> Result<(), AgentError> {
        let wanted = self.wanted_thinking()?;
        // A model change is recorded unless the session already names the new model (taking
        // up a resumed session's own model writes nothing).
        let named =
            self.context()?.model.as_ref().is_some_and(|m| {
                m.provider == switch.model.provider && m.model_id == switch.model.id
            });
        let changed = !named
            && (self.config.model.provider != switch.model.provider
                || self.config.model.id != switch.model.id);
        self.provider = switch.provider;
        self.config.capabilities = switch.capabilities;
        self.config.api = switch.protocol.as_str().to_owned();
        self.config.stream = switch.stream;
        self.config.model = switch.model;
        self.renderer = renderer_for(
            &self.config,
            &self.session,
            self.shared_cache_key.as_deref(),
        );
        // The new model shares nothing with what the old one cached.
        self.last_sent = None;
        if changed {
            let model = &self.config.model;
            self.session
                .append_model_change(&model.provider, &model.id)?;
        }
        self.set_thinking_level(&wanted)?;
        Ok(())
    }

    /// Records a thinking level (`off`, `minimal`, `low`, `medium`, `high`, `xhigh`) for the
    /// next requests; models without reasoning keep `off`. Returns the level in effect.
    pub fn set_thinking_level(&mut self, level: &str) -> Result<String, AgentError> {
        self.wanted_thinking = Some(level.to_owned());
        let wanted = if self.config.model.reasoning {
            level
        } else {
            "off"
        };
        if self.context()?.thinking_level != wanted {
            self.session.append_thinking_level_change(wanted)?;
        }
        Ok(wanted.to_owned())
    }

    /// The thinking level last asked for, else the one at the session's leaf.
    pub fn wanted_thinking(&mut self) -> Result<String, AgentError> {
        match self.wanted_thinking.clone() {
            Some(level) => Ok(level),
            None => Ok(self.context()?.thinking_level.clone()),
        }
    }

    /// [`Agent::set_thinking_level`] with the typed level; returns the level in effect (`Off`
    /// on a model without reasoning).
    pub fn set_thinking(&mut self, level: ThinkingLevel) -> Result<ThinkingLevel, AgentError> {
        let set = self.set_thinking_level(level.as_str())?;
        Ok(set.parse().unwrap_or(ThinkingLevel::Off))
    }

    /// The thinking level at the session's leaf (`Off` when the session names one strata does
    /// not know).
    pub fn thinking(&mut self) -> Result<ThinkingLevel, AgentError> {
        let level = self.context()?.thinking_level.clone();
        Ok(level.parse().unwrap_or(ThinkingLevel::Off))
    }

    /// Appends to `session` from now on, with the same model, tools and settings; returns the
    /// session it appended to before. Nothing of the old session's cache is worth keeping warm.
    pub fn switch_session(&mut self, session: Session) -> Session {
        let old = std::mem::replace(&mut self.session, session);
        // An empty session is `/new` (Claude Code's `/clear`); one with entries is taken up.
        self.session_start_due = Some(if self.session.leaf().is_some() {
            "resume"
        } else {
            "clear"
        });
        self.assembler = Assembler::new();
        self.renderer = renderer_for(
            &self.config,
            &self.session,
            self.shared_cache_key.as_deref(),
        );
        self.requests_since_compaction = 0;
        self.epoch_start_tokens = None;
        self.last_sent = None;
        self.pings_since_request = 0;
        self.cache_used_at = None;
        old
    }

    /// Turns automatic compaction (threshold and overflow) on or off; `/compact` works either way.
    pub fn set_auto_compaction(&mut self, enabled: bool) {
        self.config.compaction.enabled = enabled;
    }

    /// Sends summary requests (compaction, branch summaries) to another model from now on.
    pub fn set_summary_model(&mut self, summary_model: Option<ModelRoute>) {
        self.config.summary_model = summary_model;
    }

    /// The configuration.
    pub fn config(&self) -> &AgentConfig {
        &self.config
    }

    /// The context at the session's leaf.
    pub fn context(&mut self) -> Result<&Context, AgentError> {
        let leaf = self.session.leaf().cloned();
        let (context, _) = self.assembler.context(self.session.tree(), leaf.as_ref())?;
        Ok(context)
    }

    /// Runs one prompt to the end: every turn until the model stops without tool calls and
    /// no steering message is queued, or until an abort or an error.
    pub async fn prompt(&mut self, text: impl Into<String>) -> Result<RunSummary, AgentError> {
        self.prompt_with_images(text, Vec::new()).await
    }

    /// [`Agent::prompt`] with images after the text in the user message (as Pi stores them).
    pub async fn prompt_with_images(
        &mut self,
        text: impl Into<String>,
        images: Vec<ImageContent>,
    ) -> Result<RunSummary, AgentError> {
        let cancel = self.control.start_run();
        self.emit(AgentEvent::AgentStart);
        if let Some(source) = self.tool_source.clone() {
            source.settle().await;
        }
        self.claim_memory_slots();
        self.sync_system()?;
        // Before the first prompt of a session (started, taken up, or new): what
        // `SessionStart` hooks add lands before the prompt, at the end.
        if let Some(source) = self.session_start_due.take() {
            self.session_start(source).await?;
        }
        let text = text.into();
        let context = match self.hooks_before_prompt(&text).await {
            hooks::PromptGate::Send(context) => context,
            hooks::PromptGate::Blocked(reason) => {
                self.emit(AgentEvent::AgentEnd {
                    reason: "blocked".into(),
                });
                return Ok(RunSummary {
                    turns: 0,
                    reason: "blocked".into(),
                    final_text: reason,
                });
            }
        };
        self.append_user(text, images)?;
        self.append_prompt_context(&context)?;
        let mut turns = 0;
        let mut final_text = String::new();
        let mut stop_continuations = 0;
        let mut overflow = OverflowRecovery::new();
        let reason = loop {
            if let Some(reason) = self.take_hook_stop() {
                tracing::info!("a hook ended the run: {reason}");
                break "stopped".to_owned();
            }
            // Masking first: where stubs pay, the context shrinks without a summary, and the
            // compaction check then sees the smaller context.
            if let Err(error) = self.forget_if_due(false).await {
                self.emit(AgentEvent::AgentEnd {
                    reason: "error".into(),
                });
                return Err(error);
            }
            match self.compact_if_due().await {
                // The messages are written again after a compaction: stubs in the kept tail
                // cost no rewrite now.
                Ok(Some(_)) => {
                    if let Err(error) = self.forget_if_due(true).await {
                        self.emit(AgentEvent::AgentEnd {
                            reason: "error".into(),
                        });
                        return Err(error);
                    }
                }
                Ok(None) => self.precompute_during_run(),
                Err(error) => {
                    self.emit(AgentEvent::AgentEnd {
                        reason: "error".into(),
                    });
                    return Err(error);
                }
            }
            turns += 1;
            self.emit(AgentEvent::TurnStart { turn: turns });
            let outcome = self.turn(&cancel).await;
            let (assistant, stop) = match outcome {
                Ok(pair) => pair,
                Err(AgentError::Provider(error))
                    if strata_compaction::is_context_overflow(&error)
                        && overflow.try_attempt(&self.compaction_settings()) =>
                {
                    self.emit(AgentEvent::TurnEnd { turn: turns });
                    // The window was exceeded: compact once and send the turn again.
                    tracing::warn!("context overflow: compacting and retrying once");
                    if let Err(error) = self.compact(CompactionReason::Overflow, None).await {
                        self.emit(AgentEvent::AgentEnd {
                            reason: "error".into(),
                        });
                        return Err(error);
                    }
                    continue;
                }
                Err(error) => {
                    self.emit(AgentEvent::TurnEnd { turn: turns });
                    self.emit(AgentEvent::AgentEnd {
                        reason: "error".into(),
                    });
                    return Err(error);
                }
            };
            // An answer came: a later overflow (the context grew again, or a steering message
            // was added) gets its own compact-and-retry, as in Pi.
            overflow.reset();
            final_text = assistant_text(&assistant);
            let early_end = match stop {
                StopReason::Aborted => Some("aborted"),
                StopReason::Error => Some("error"),
                StopReason::Length => Some("length"),
                _ => None,
            };
            if let Some(reason) = early_end {
                self.emit(AgentEvent::TurnEnd { turn: turns });
                break reason.to_owned();
            }
            let calls: Vec<ToolCall> = match &assistant {
                AgentMessage::Assistant(m) => m.tool_calls().cloned().collect(),
                _ => Vec::new(),
            };
            if !calls.is_empty() {
                // A turn is one request and the tools it calls: it ends after their results.
                let ran = self.run_tools(calls, &cancel).await;
                self.emit(AgentEvent::TurnEnd { turn: turns });
                ran?;
                if cancel.is_cancelled() {
                    break "aborted".to_owned();
                }
                self.deliver_steering()?;
                continue;
            }
            self.emit(AgentEvent::TurnEnd { turn: turns });
            if self.deliver_steering()? == 0 {
                if self.take_hook_stop().is_none()
                    && self.hooks_at_stop(&final_text, stop_continuations).await?
                {
                    stop_continuations += 1;
                    continue;
                }
                break "stop".to_owned();
            }
        };
        self.precompute_while_idle();
        self.emit(AgentEvent::AgentEnd {
            reason: reason.clone(),
        });
        Ok(RunSummary {
            turns,
            reason,
            final_text,
        })
    }

    /// When to re-send the last request so its cached prefix outlives an idle pause, or `None`
    /// when there is nothing to keep (no request yet, keep-warm off, a cache that outlives the
    /// pause anyway, or the break-even number of pings already sent).
    pub fn keep_warm_plan(&self) -> Option<KeepWarmPlan> {
        let last = self.last_sent.as_ref()?;
        let thinking_on = last.thinking != strata_provider::ThinkingLevel::Off;
        keep_warm::plan(&self.config.capabilities, &self.config.cache, thinking_on)
            .filter(|plan| self.pings_since_request < plan.max_pings)
            .map(|mut plan| {
                // The Responses adapter raises a cap below the API's minimum of 16.
                if plan.output_tokens > 0 && self.config.api == "openai-responses" {
                    plan.output_tokens = plan.output_tokens.max(16);
                }
                plan
            })
    }

    /// Resolves when the next keep-warm ping is due: [`Self::keep_warm_plan`]'s interval after
    /// the last request or ping was sent (the provider restarts a prefix's lifetime when it
    /// reads it, not when the answer ends). Never resolves when no ping is planned. For a
    /// front end's idle loop, raced against the user's next command; it does not borrow the
    /// agent, so the agent stays free for that command.
    pub fn keep_warm_due(&self) -> impl Future<Output = ()> + Send + 'static {
        let due = self
            .keep_warm_plan()
            .zip(self.cache_used_at)
            .map(|(plan, used_at)| used_at + plan.interval);
        async move {
            match due {
                Some(due) => tokio::time::sleep_until(due).await,
                None => std::future::pending().await,
            }
        }
    }

    /// Re-sends the last request with a one-token answer, so the provider reads its prefix
    /// and restarts its lifetime; records the usage in the session. Call it when
    /// [`Self::keep_warm_due`] resolves with the user still idle (or, on a clock of one's own,
    /// when [`Self::keep_warm_plan`]'s interval has passed). Returns `None` when the plan says
    /// not to.
    pub async fn keep_warm(&mut self) -> Result<Option<(Usage, Cost)>, AgentError> {
        if self.keep_warm_plan().is_none() {
            return Ok(None);
        }
        let Some(mut request) = self.last_sent.clone() else {
            return Ok(None);
        };
        // The cheapest ping the row allows: no output where it warms without any.
        request.max_tokens = Some(self.config.capabilities.warm_up_max_tokens());
        let mut options = self.config.stream.clone();
        options.session_id = Some(self.session.header().id.clone());
        // Counted before it is sent: a ping that keeps failing must not be retried forever.
        self.pings_since_request += 1;
        self.cache_used_at = Some(tokio::time::Instant::now());
        let completion = self
            .provider
            .complete(&self.config.model, &request, &options)
            .await?;
        let model = &self.config.model;
        self.session.append_usage(
            strata_session::CACHE_WARM_KIND,
            &model.provider,
            &model.id,
            strata_compaction::session_usage(&completion.usage, &completion.cost),
        )?;
        self.emit(AgentEvent::KeepWarm {
            usage: completion.usage,
            cost: completion.cost,
        });
        Ok(Some((completion.usage, completion.cost)))
    }

    /// The request the session's leaf would be sent as now.
    pub fn request(&mut self) -> Result<Request, AgentError> {
        Ok(self.render()?.0)
    }

    /// Renders the context at the leaf, reusing the previous request's bytes, with the
    /// chapter report.
    fn render(&mut self) -> Result<(Request, RenderReport), AgentError> {
        let leaf = self.session.leaf().cloned();
        let (context, _) = self.assembler.context(self.session.tree(), leaf.as_ref())?;
        self.renderer
            .set_dialect(crate::adopt::dialect(context, self.adopt_foreign_prompt));
        let (rendered, report) = self.renderer.render(context);
        let mut request = rendered.request.clone();
        if request.model.is_empty() {
            // A new session names no model until its first answer: the request goes to the
            // configured one, and must say so (an empty model is refused, and caches by model).
            request.model.clone_from(&self.config.model.id);
        }
        Ok((request, report))
    }

    /// One request: render the context, stream the answer, append it.
    async fn turn(
        &mut self,
        cancel: &CancellationToken,
    ) -> Result<(AgentMessage, StopReason), AgentError> {
        let (request, report) = self.render()?;
        self.requests_since_compaction += 1;
        self.last_sent = Some(request.clone());
        self.pings_since_request = 0;
        self.cache_used_at = Some(tokio::time::Instant::now());
        self.emit(AgentEvent::RequestStart {
            chapter_bytes: [
                report.tools.bytes,
                report.system.bytes,
                report.messages.bytes,
            ],
            divergence: report.divergence.clone(),
        });
        let mut options = self.config.stream.clone();
        options.cancel = cancel.clone();
        options.session_id = Some(self.session.header().id.clone());

        let mut assembler = MessageAssembler::new();
        // The provider's own word on this request's cache reuse, kept with its usage.
        let mut diagnosis = None;
        let stream = tokio::select! {
            biased;
            () = cancel.cancelled() => Err(ProviderError::Cancelled),
            result = self.provider.stream(&self.config.model, &request, &options) => result,
        };
        let mut stream = match stream {
            Ok(stream) => stream,
            Err(ProviderError::Cancelled) => {
                return self.finish_partial(assembler.message(), StopReason::Aborted, None);
            }
            Err(error) => return Err(error.into()),
        };
        loop {
            let event = tokio::select! {
                biased;
                () = cancel.cancelled() => None,
                event = stream.next() => Some(event),
            };
            let Some(event) = event else {
                return self.finish_partial(assembler.message(), StopReason::Aborted, None);
            };
            let Some(event) = event else {
                let reason = "stream ended without a done event".to_owned();
                return self.finish_partial(assembler.message(), StopReason::Error, Some(reason));
            };
            assembler.push(&event);
            match event {
                Event::TextDelta { text, .. } if !text.is_empty() => {
                    self.emit(AgentEvent::TextDelta { text });
                }
                Event::ThinkingDelta { text, .. } if !text.is_empty() => {
                    self.emit(AgentEvent::ThinkingDelta { text });
                }
                Event::TextDelta { .. } | Event::ThinkingDelta { .. } => {}
                Event::ToolCallStart { id, name, .. } => {
                    self.emit(AgentEvent::ToolCallStart { id, name })
                }
                Event::ToolCallDelta { index, .. } => {
                    let arguments = assembler.partial_arguments(index).unwrap_or("").to_owned();
                    self.emit(AgentEvent::ToolCallDelta { index, arguments });
                }
                Event::Start { .. } | Event::ToolCallEnd { .. } | Event::Usage(_) => {}
                Event::CacheDiagnosis(d) => diagnosis = Some(d),
                Event::Done {
                    stop_reason,
                    message,
                    usage,
                } => {
                    let cost = usage.cost(&self.config.model.prices);
                    self.emit(AgentEvent::Usage { usage, cost });
                    let stop = convert::stop_reason(stop_reason);
                    let mut stored = convert::assistant(
                        &message,
                        stop.clone(),
                        convert::usage(&usage, &cost),
                        &self.origin(),
                        None,
                        strata_session::now_unix_millis(),
                    );
                    stored.thinking_level = self.requested_thinking_level();
                    if let Some(d) = &diagnosis {
                        strata_accounting::record_diagnosis(&mut stored.usage, d);
                    }
                    let message = AgentMessage::Assistant(stored);
                    self.append(message.clone())?;
                    return Ok((message, stop));
                }
                Event::Error { error, partial } => {
                    // The adapter's partial message holds what it assembled (signatures and
                    // all); without one, what the deltas here carried.
                    let partial = partial.unwrap_or_else(|| assembler.message());
                    if matches!(error, ProviderError::Cancelled) {
                        return self.finish_partial(partial, StopReason::Aborted, None);
                    }
                    // Tokens already arrived: keep them, marked as an error, never truncated silently.
                    let text = error.to_string();
                    self.finish_partial(partial, StopReason::Error, Some(text))?;
                    return Err(error.into());
                }
            }
        }
    }

    /// Stores what arrived before an abort or an error, so the session shows it (Pi persists
    /// such messages and leaves them out of later requests).
    fn finish_partial(
        &mut self,
        mut partial: Message,
        stop: StopReason,
        error: Option<String>,
    ) -> Result<(AgentMessage, StopReason), AgentError> {
        // Unfinished tool calls cannot run; drop them so no call is left without a result.
        partial
            .content
            .retain(|block| !matches!(block, strata_provider::ContentBlock::ToolCall { .. }));
        let mut stored = convert::assistant(
            &partial,
            stop.clone(),
            strata_session::Usage::default(),
            &self.origin(),
            error,
            strata_session::now_unix_millis(),
        );
        stored.thinking_level = self.requested_thinking_level();
        let message = AgentMessage::Assistant(stored);
        self.append(message.clone())?;
        Ok((message, stop))
    }

    /// Appends queued steering messages, then background work's arrivals, as user messages;
    /// returns how many.
    fn deliver_steering(&mut self) -> Result<usize, AgentError> {
        let queued = self.control.take_steering();
        let count = queued.len();
        for (text, images) in queued {
            self.append_user(text, images)?;
        }
        if count > 0 {
            self.emit(AgentEvent::SteeringDelivered { count });
        }
        // Background work's messages go after the user's: the run goes on for them too.
        let arrivals = self.control.take_arrivals();
        let arrived = arrivals.len();
        for text in arrivals {
            self.append_user(text, Vec::new())?;
        }
        Ok(count + arrived)
    }

    fn append_user(
        &mut self,
        text: String,
        images: Vec<ImageContent>,
    ) -> Result<EntryId, AgentError> {
        let mut blocks = vec![ContentBlock::Text(TextContent {
            text,
            ..TextContent::default()
        })];
        blocks.extend(images.into_iter().map(ContentBlock::Image));
        let message = AgentMessage::User(UserMessage {
            content: MessageContent::Blocks(blocks),
            timestamp: strata_session::now_unix_millis(),
            extra: Map::new(),
        });
        self.append(message)
    }

    fn append(&mut self, message: AgentMessage) -> Result<EntryId, AgentError> {
        let id = self.session.append_message(message.clone())?;
        self.emit(AgentEvent::MessageEnd {
            entry_id: id.clone(),
            message: Box::new(message),
        });
        Ok(id)
    }

    /// The thinking level the request just sent asked for (the leaf's, before the answer is
    /// appended), recorded on the assistant message as Pi 1.x does.
    fn requested_thinking_level(&mut self) -> Option<String> {
        self.context()
            .ok()
            .map(|context| context.thinking_level.clone())
    }

    fn origin(&self) -> Origin {
        Origin {
            api: self.config.api.clone(),
            provider: self.config.model.provider.clone(),
            model: self.config.model.id.clone(),
        }
    }

    fn emit(&self, event: AgentEvent) {
        if let Some(events) = &self.events {
            let _ = events.send(event);
        }
    }
}

fn assistant_text(message: &AgentMessage) -> String {
    match message {
        AgentMessage::Assistant(m) => m
            .content
            .iter()
            .filter_map(|b| match b {
                ContentBlock::Text(t) => Some(t.text.as_str()),
                _ => None,
            })
            .collect::<Vec<_>>()
            .join(""),
        _ => String::new(),
    }
}
