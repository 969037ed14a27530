//! The strata agent: the loop that turns a prompt into work.
//!
//! [`Agent::prompt`] appends the user message, then repeats: build the context at the
//! session's leaf (strata-context), render it for the provider's capabilities, stream the
//! answer, append it, run the tool calls (independent ones concurrently, results in call
//! order), append their results, deliver queued steering messages — until the model stops.
//! Every step is an [`AgentEvent`] on a channel.
//!
//! The system prompt is a set of named sections ([`prompt`]) stored in the session: the first
//! request stores the snapshot, and a later change (a tool enabled, AGENTS.md edited) is
//! stored as a patch holding only what changed ([`system_sync`]). Resuming a session therefore
//! sends the bytes it sent before, and a change found on disk arrives at the end.

mod adopt;
mod agent;
pub mod convert;
mod error;
mod event;
pub mod keep_warm;
pub mod policy;
pub mod prompt;
pub mod resources;
mod route;
pub mod rules;
pub mod system_sync;
pub mod tool_share;

pub use adopt::dialect as adopted_dialect;
pub use agent::hooks::{
    ExtensionProblems, HOOK_CUSTOM_TYPE, HookNotice, MAX_STOP_CONTINUATIONS, Notice, NoticeSource,
};
pub use agent::memory::{
    COMPACTION, FORGETTING, INGRESS_FILTER, MEMORY_CUSTOM_TYPE, MemoryPlays, PRECOMPUTE,
};
pub use agent::{Agent, AgentConfig, Control, RetryEvents, RunSummary};
pub use error::AgentError;
pub use event::AgentEvent;
pub use keep_warm::{CacheSettings, KEEP_WARM_CUSTOM_TYPE, KeepWarmPlan};
pub use route::ModelRoute;
pub use rules::{FILES_RESTORED_CUSTOM_TYPE, PERMISSION_DETAILS_KEY, ToolRules};
pub use tool_share::{DEFAULT_TOOL_SHARE, RefusedTool};
