//! Delegation to child agents that share the parent's cache.
//!
//! The model calls the `task` tool ([`Subagents::tool`]); each call runs a child agent as a
//! session of its own — a Pi-compatible file whose header names the parent file
//! (`parentSession`) and the spawning entry (`spawnedBy`) — and only the child's final answer
//! returns, as the tool result. How the child starts is chosen by price ([`pricing`]): a
//! **fork** starts from the parent's exact prefix (same tools, same system chapter, the
//! conversation up to the spawning call) and reads it from the cache the parent wrote; a
//! **fresh** child writes a small prefix of its own. Agent definitions ([`definition`]) are the
//! Markdown files Claude Code and pi-subagents use.

pub mod definition;
mod event;
pub mod pricing;
mod spawn;
mod tool;

pub use definition::{AgentDefinition, AgentFolders, DefinitionError, Loaded, Scope, load, parse};
pub use event::{CHILD_RECORD_TYPE, ChildEvent, ChildEventKind};
pub use pricing::{CacheModel, Decision, SpawnInputs, SpawnMode, Start, choose};
pub use spawn::{
    FORK_PREAMBLE, FORK_RESULT, SIBLING_RESULT, SPAWNED_BY_FIELD, STATUS_DONE, STATUS_FAILED,
    STATUS_RUNNING,
};
pub use tool::{Budget, ModelRouter, ParentSetup, SubagentSettings, Subagents, TOOL_NAME};
