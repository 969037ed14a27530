//! The delegation tool (`task`) and the shared state its calls draw on: the parent's setup,
//! the agent definitions, the settings and the slots for parallel children.

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use serde_json::{Value, json};
use strata_agent::AgentConfig;
use strata_provider::Provider;
use strata_runtime::ModelRoute;
use strata_tools::{Access, Tool, ToolContext, ToolOutput, ToolSet, UpdateSender};
use tokio::sync::Semaphore;
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender, unbounded_channel};

use crate::definition::Loaded;
use crate::event::ChildEvent;
use crate::pricing::SpawnMode;

/// The tool's name, as Claude Code's models know delegation (`Task`) in strata's lowercase.
pub const TOOL_NAME: &str = "task";

/// Limits on one child.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Budget {
    /// Most turns (requests with their tool calls); an agent file's `maxTurns` wins.
    pub max_turns: Option<u32>,
    /// Most tokens over all its requests (prompt and output).
    pub max_tokens: Option<u64>,
    /// Most dollars over all its requests.
    pub max_cost: Option<f64>,
}

/// How delegation behaves (`[subagents]` in configuration).
#[derive(Debug, Clone, PartialEq)]
pub struct SubagentSettings {
    /// How children start unless an agent file says (`auto` by default).
    pub mode: SpawnMode,
    /// Children running at once (over all depths); more of the parent's calls wait for a
    /// slot, a child's own are refused (it holds a slot: waiting could never end).
    pub max_parallel: usize,
    /// Depth of delegation: 1 lets the parent's children run but not delegate further.
    pub max_depth: u32,
    /// Each child's limits.
    pub budget: Budget,
    /// Requests a child is expected to make, for the `auto` estimate.
    pub expected_requests: u64,
}

impl Default for SubagentSettings {
    fn default() -> Self {
        Self {
            mode: SpawnMode::Auto,
            max_parallel: 4,
            max_depth: 1,
            budget: Budget {
                max_turns: Some(30),
                max_tokens: None,
                max_cost: None,
            },
            expected_requests: 6,
        }
    }
}

/// What a child inherits from the parent: the adapter, the configuration (model, working
/// directory, prompt settings) and the tools (without the delegation tool, added per depth).
/// A fork is byte-identical only when this is what the parent itself runs with.
#[derive(Clone)]
pub struct ParentSetup {
    /// The parent's adapter.
    pub provider: Arc<dyn Provider>,
    /// The parent's configuration.
    pub config: AgentConfig,
    /// The parent's tools, in order, without [`TOOL_NAME`].
    pub tools: ToolSet,
    /// Whether the project's skills are offered (the parent's setting).
    pub project_skills: bool,
    /// The run's rules layer (permission gate, bash sandbox, checkpoints): a child is held to
    /// the same gate as its parent, so an answer given for the session holds for it too.
    pub rules: strata_agent::ToolRules,
}

impl std::fmt::Debug for ParentSetup {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ParentSetup")
            .field("config", &self.config)
            .field("tools", &self.tools)
            .finish_non_exhaustive()
    }
}

impl ParentSetup {
    /// The same setup on `route`'s model: what a child on another model, or the children of
    /// a parent that switched model, run with.
    pub fn on_route(mut self, route: &ModelRoute) -> Self {
        self.provider = route.provider.clone();
        self.config.model = route.model.clone();
        self.config.capabilities = route.capabilities.clone();
        self.config.api = route.protocol.as_str().to_owned();
        self.config.stream = route.stream.clone();
        self
    }
}

/// Finds the route to a model an agent file names (`provider/id`, an id, an alias).
pub trait ModelRouter: Send + Sync {
    /// The route, or why there is none.
    fn route(&self, model: &str) -> Result<ModelRoute, String>;
}

impl<F> ModelRouter for F
where
    F: Fn(&str) -> Result<ModelRoute, String> + Send + Sync,
{
    fn route(&self, model: &str) -> Result<ModelRoute, String> {
        self(model)
    }
}

/// Delegation for one parent session: build it, put [`Subagents::tool`] last in the parent's
/// tool set, and keep [`Subagents::set_parent`] in step with model switches.
pub struct Subagents {
    pub(crate) parent: Mutex<ParentSetup>,
    pub(crate) agents: Loaded,
    pub(crate) settings: SubagentSettings,
    pub(crate) router: Option<Arc<dyn ModelRouter>>,
    pub(crate) slots: Arc<Semaphore>,
    pub(crate) events: Mutex<Option<UnboundedSender<ChildEvent>>>,
    /// The parent's mailbox (from its calls): every child's events go out through it as
    /// `strata_child` records, so rpc and `--mode json` carry them.
    pub(crate) records: Mutex<Option<strata_tools::Mailbox>>,
    description: String,
}

impl std::fmt::Debug for Subagents {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Subagents")
            .field("settings", &self.settings)
            .field("agents", &self.agents.agents.keys().collect::<Vec<_>>())
            .finish_non_exhaustive()
    }
}

impl Subagents {
    /// Delegation for a parent running with `parent`, offering `agents`.
    pub fn new(parent: ParentSetup, agents: Loaded, settings: SubagentSettings) -> Arc<Self> {
        let description = describe(&agents);
        Arc::new(Self {
            parent: Mutex::new(parent),
            agents,
            slots: Arc::new(Semaphore::new(settings.max_parallel.max(1))),
            settings,
            router: None,
            events: Mutex::new(None),
            records: Mutex::new(None),
            description,
        })
    }

    /// [`Subagents::new`] with a router for agent files that name another model.
    pub fn with_router(
        parent: ParentSetup,
        agents: Loaded,
        settings: SubagentSettings,
        router: Arc<dyn ModelRouter>,
    ) -> Arc<Self> {
        let description = describe(&agents);
        Arc::new(Self {
            parent: Mutex::new(parent),
            agents,
            slots: Arc::new(Semaphore::new(settings.max_parallel.max(1))),
            settings,
            router: Some(router),
            events: Mutex::new(None),
            records: Mutex::new(None),
            description,
        })
    }

    /// The delegation tool for the parent (depth 0).
    pub fn tool(self: &Arc<Self>) -> Arc<dyn Tool> {
        Arc::new(TaskTool {
            subagents: Arc::clone(self),
            depth: 0,
        })
    }

    /// The tool a child at `depth` declares: the same definition (so a fork's tools array
    /// stays the parent's), refusing once the depth limit is reached.
    pub(crate) fn tool_at(self: &Arc<Self>, depth: u32) -> Arc<dyn Tool> {
        Arc::new(TaskTool {
            subagents: Arc::clone(self),
            depth,
        })
    }

    /// What children inherit from now on (after the parent switched model or tools).
    pub fn set_parent(&self, parent: ParentSetup) {
        if let Ok(mut slot) = self.parent.lock() {
            *slot = parent;
        }
    }

    /// Every child's events from now on, tagged by child (replaces an earlier subscriber).
    pub fn subscribe(&self) -> UnboundedReceiver<ChildEvent> {
        let (sender, receiver) = unbounded_channel();
        if let Ok(mut slot) = self.events.lock() {
            *slot = Some(sender);
        }
        receiver
    }

    /// The settings.
    pub fn settings(&self) -> &SubagentSettings {
        &self.settings
    }

    /// The agent definitions offered.
    pub fn agents(&self) -> &Loaded {
        &self.agents
    }

    pub(crate) fn emit(&self, event: ChildEvent) {
        if let Ok(slot) = self.records.lock()
            && let Some(mailbox) = slot.as_ref()
        {
            mailbox.record(event.record());
        }
        if let Ok(slot) = self.events.lock()
            && let Some(sender) = slot.as_ref()
        {
            let _ = sender.send(event);
        }
    }
}

/// The tool's description: what delegation is for, and the agents on offer. Fixed for the
/// session (it is part of the cached prefix).
fn describe(agents: &Loaded) -> String {
    let mut text = String::from(
        "Hand a self-contained piece of work (an exploration, a search across many files, a \
         review) to a child agent with its own context. Only its final answer comes back, so \
         what it reads along the way does not fill this conversation. Several calls in one \
         message run in parallel. The child may start from this conversation or from nothing: \
         say in `prompt` everything it must know and what its answer should contain.",
    );
    if !agents.agents.is_empty() {
        text.push_str("\n\nAgents (`agent`):");
        for (name, definition) in &agents.agents {
            text.push_str(&format!("\n- {name}: {}", definition.description));
        }
    }
    text
}

/// The delegation tool at one depth.
pub(crate) struct TaskTool {
    pub(crate) subagents: Arc<Subagents>,
    pub(crate) depth: u32,
}

#[async_trait]
impl Tool for TaskTool {
    fn name(&self) -> &str {
        TOOL_NAME
    }

    fn description(&self) -> &str {
        &self.subagents.description
    }

    fn parameters(&self) -> Value {
        let mut properties = json!({
            "description": {
                "type": "string",
                "description": "A short (3-5 word) description of the task"
            },
            "prompt": {
                "type": "string",
                "description": "The task for the child agent, with everything it needs to know"
            },
            "run_in_background": {
                "type": "boolean",
                "description": "Run the child in the background: the call returns at once and \
                    its answer arrives later as a message; meanwhile go on with other work"
            }
        });
        if !self.subagents.agents.agents.is_empty()
            && let Some(map) = properties.as_object_mut()
        {
            let names: Vec<&String> = self.subagents.agents.agents.keys().collect();
            map.insert(
                "agent".into(),
                json!({
                    "type": "string",
                    "enum": names,
                    "description": "Which agent definition to use (default: a general-purpose child)"
                }),
            );
        }
        json!({
            "type": "object",
            "properties": properties,
            "required": ["description", "prompt"],
            "additionalProperties": false
        })
    }

    fn prompt_snippet(&self) -> Option<&str> {
        Some("Delegate a self-contained task to a child agent; only its answer comes back")
    }

    fn access(&self, _arguments: &Value, _ctx: &ToolContext) -> Access {
        // Children run side by side (their own tools order their file access), and each of
        // their calls meets the parent's gate.
        Access::Delegate
    }

    async fn execute(
        &self,
        call: strata_tools::ToolCall,
        ctx: &ToolContext,
        updates: Option<UpdateSender>,
    ) -> ToolOutput {
        // The parent's calls carry its mailbox; its children's calls (deeper) do not.
        if let Some(mailbox) = &ctx.mailbox
            && let Ok(mut slot) = self.subagents.records.lock()
        {
            *slot = Some(mailbox.clone());
        }
        crate::spawn::run(&self.subagents, self.depth, call, ctx, updates).await
    }
}
