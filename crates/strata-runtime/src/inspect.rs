//! The agent's next request as it would be rendered now, for views that show it (the TUI's
//! `/context` and status line) without rendering it their own way.

use strata_agent::Agent;
use strata_context::render::RenderReport;
use strata_context::{RenderOptions, Rendered};

use crate::error::RuntimeError;

/// The next request, its chapter report and the policies that shape it.
#[derive(Debug)]
pub struct NextRequest {
    /// The request as the agent's renderer would build it, with its chapter bytes.
    pub rendered: Rendered,
    /// Chapter sizes and hashes (no previous request to compare with).
    pub report: RenderReport,
    /// The thinking level the session records.
    pub thinking_level: String,
    /// The compaction policy and the system-change rule, one line each.
    pub policy: Vec<String>,
}

impl NextRequest {
    /// Approximate tokens of the tools, system and messages chapters (bytes / 4).
    pub fn chapter_tokens(&self) -> [u64; 3] {
        let bytes = &self.rendered.bytes;
        [bytes.tools.len(), bytes.system.len(), bytes.messages.len()].map(|n| n as u64 / 4)
    }
}

/// The render options the agent's own requests use (policy, the session id as cache key,
/// the output limit, the cache lifetime its retention asks for, the dialect of the session's
/// prompt).
pub fn render_options(agent: &mut Agent) -> Result<RenderOptions, RuntimeError> {
    let dialect = agent.dialect()?;
    let config = agent.config();
    Ok(RenderOptions {
        policy: config.render_policy,
        cache_key: Some(agent.session().header().id.clone()),
        max_tokens: config.max_tokens,
        ttl: config.capabilities.cache_ttl(config.cache.retention),
        dialect,
    })
}

/// Renders the request the agent would send next from the session as it stands.
pub fn next_request(agent: &mut Agent) -> Result<NextRequest, RuntimeError> {
    let capabilities = agent.config().capabilities.clone();
    let options = render_options(agent)?;
    let model = &agent.config().model;
    let settings = agent
        .config()
        .compaction
        .for_model(&model.provider, &model.id);
    let policy = strata_agent::policy::explain_compaction(&settings)
        .into_iter()
        .chain([strata_agent::policy::explain_system_changes(&capabilities)])
        .collect();
    let context = agent.context()?;
    let rendered = strata_context::render_with(context, &capabilities, &options);
    let report = rendered.report(None);
    Ok(NextRequest {
        thinking_level: context.thinking_level.clone(),
        rendered,
        report,
        policy,
    })
}
