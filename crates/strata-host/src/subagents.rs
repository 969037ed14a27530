//! Delegation (`[subagents]`): the `task` tool offered when `tools` names it, with the agent
//! definitions the user (and a trusted project) keeps, children held to the run's rules gate,
//! and a router for agent files that name another model.

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use strata_agent::AgentConfig;
use strata_provider::Provider;
use strata_subagents::{
    AgentFolders, Budget, ParentSetup, SpawnMode, SubagentSettings, Subagents, load,
};
use strata_tools::ToolSet;

use crate::Setup;

/// A child's status in its delegation call's progress updates (`details.subagent.status`),
/// for views that show running children.
pub use strata_subagents::{STATUS_DONE, STATUS_FAILED, STATUS_RUNNING};

/// The tool name that turns delegation on in `tools` (`--tools read,bash,edit,write,task`).
pub const TASK_TOOL: &str = strata_subagents::TOOL_NAME;

/// `[subagents]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SubagentsConfig {
    /// How children start: `auto` (by price, the default), `fork` or `fresh`.
    pub mode: String,
    /// Children running at once; more calls wait for a slot.
    pub max_parallel: usize,
    /// 1: the parent's children may not delegate further.
    pub max_depth: u32,
    /// Most turns per child (an agent file's `maxTurns` wins).
    pub max_turns: Option<u32>,
    /// Most tokens per child over all its requests.
    pub max_tokens: Option<u64>,
    /// Most dollars per child.
    pub max_cost: Option<f64>,
    /// Requests a child is expected to make, for the `auto` estimate.
    pub expected_requests: u64,
}

impl Default for SubagentsConfig {
    fn default() -> Self {
        let settings = SubagentSettings::default();
        Self {
            mode: settings.mode.as_str().to_owned(),
            max_parallel: settings.max_parallel,
            max_depth: settings.max_depth,
            max_turns: settings.budget.max_turns,
            max_tokens: settings.budget.max_tokens,
            max_cost: settings.budget.max_cost,
            expected_requests: settings.expected_requests,
        }
    }
}

impl SubagentsConfig {
    /// The library's settings, or which field is wrong.
    pub fn settings(&self) -> anyhow::Result<SubagentSettings> {
        let mode = match self.mode.as_str() {
            "auto" => SpawnMode::Auto,
            "fork" => SpawnMode::Fork,
            "fresh" => SpawnMode::Fresh,
            other => {
                anyhow::bail!("subagents.mode: `{other}` is not a spawn mode (auto, fork or fresh)")
            }
        };
        if self.max_parallel == 0 {
            anyhow::bail!("subagents.max_parallel: at least 1 child must be able to run");
        }
        Ok(SubagentSettings {
            mode,
            max_parallel: self.max_parallel,
            max_depth: self.max_depth,
            budget: Budget {
                max_turns: self.max_turns,
                max_tokens: self.max_tokens,
                max_cost: self.max_cost,
            },
            expected_requests: self.expected_requests.max(1),
        })
    }
}

/// Whether the configuration offers delegation.
pub fn wanted(setup: &Setup) -> bool {
    setup.config.tools.iter().any(|name| name == TASK_TOOL)
}

/// The delegation for an agent about to be built with `config`, `provider` and `tools` (the
/// built-in tools, without `task`): children inherit exactly these, and the run's rules.
/// Agent files that could not be read are said once, as notices.
pub fn delegation(
    setup: &Setup,
    provider: Arc<dyn Provider>,
    config: &AgentConfig,
    tools: &ToolSet,
) -> anyhow::Result<Arc<Subagents>> {
    let settings = setup.config.subagents.settings()?;
    let home = std::env::var_os("HOME").map(std::path::PathBuf::from);
    let folders = AgentFolders::standard(
        home.as_deref(),
        setup.sources.global_dir.as_deref(),
        &setup.cwd,
        setup.trust.trusted,
    );
    let agents = load(&folders);
    if !setup.interactive() {
        for error in &agents.errors {
            crate::setup::warn(&format!("agent definition skipped: {error}"));
        }
    }
    let parent = ParentSetup {
        provider,
        config: config.clone(),
        tools: tools.clone(),
        project_skills: setup.trust.trusted,
        rules: setup.rules.clone(),
    };
    let router_setup = setup.clone();
    let router = move |model: &str| {
        let choice = router_setup
            .resolve_choice(model)
            .map_err(|error| format!("{error:#}"))?;
        router_setup
            .model_route(&choice, None)
            .map_err(|error| format!("{error:#}"))
    };
    Ok(Subagents::with_router(
        parent,
        agents,
        settings,
        Arc::new(router),
    ))
}

/// rpc `get_session_stats`'s fields for the children of the session at `path`, beside Pi's:
/// `children` (their requests, tokens and cost at every depth, and `cacheReadFromParent`, what
/// forked children read of the parent's prefix) and `withChildren` (the session's own
/// `totals` plus theirs). The figures `strata stats` prints, from the same reading
/// ([`strata_accounting::children`]); empty without children.
pub fn children_stats(
    path: impl AsRef<std::path::Path>,
    totals: &strata_accounting::Totals,
) -> serde_json::Map<String, serde_json::Value> {
    use serde_json::json;
    let mut fields = serde_json::Map::new();
    let Ok(catalog) = strata_provider::Catalog::builtin_shared() else {
        return fields;
    };
    let (children, _) = strata_accounting::children(path.as_ref(), catalog);
    if children.is_empty() {
        return fields;
    }
    let theirs = strata_accounting::ChildrenTotals::of(&children);
    let tokens = |t: &strata_accounting::Totals| {
        let u = &t.usage;
        json!({"input": u.input, "output": u.output, "cacheRead": u.cache_read,
            "cacheWrite": u.cache_write(), "total": u.input + u.output + u.cache_read + u.cache_write()})
    };
    let mut all = *totals;
    all.merge(&theirs.totals);
    fields.insert(
        "children".into(),
        json!({
            "sessions": children.len(),
            "requests": theirs.totals.requests,
            "tokens": tokens(&theirs.totals),
            "cost": theirs.totals.cost,
            "cacheReadFromParent": theirs.read_from_parents,
        }),
    );
    fields.insert(
        "withChildren".into(),
        json!({"requests": all.requests, "tokens": tokens(&all), "cost": all.cost}),
    );
    fields
}
