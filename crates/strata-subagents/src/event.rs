//! What front ends hear about children: their start, every event of their loop, their end —
//! each tagged by the child (the delegation call's id) and its session file.

use std::path::PathBuf;

use strata_agent::AgentEvent;

/// One child's event.
#[derive(Debug, Clone, PartialEq)]
pub struct ChildEvent {
    /// The id of the delegation call that spawned it (unique in the parent's conversation).
    pub child: String,
    /// The child's session file.
    pub session: PathBuf,
    /// 1 for the parent's children, 2 for theirs, …
    pub depth: u32,
    /// What happened.
    pub kind: ChildEventKind,
}

/// What happened to a child.
#[derive(Debug, Clone, PartialEq)]
pub enum ChildEventKind {
    /// It started.
    Started {
        /// The agent definition used, if any.
        agent: Option<String>,
        /// `fork` or `fresh`.
        start: &'static str,
        /// Why (the price comparison).
        reason: String,
        /// The task's short description.
        description: String,
    },
    /// An event of its loop.
    Agent(AgentEvent),
    /// It ended.
    Ended {
        /// Whether the parent sees an error result.
        is_error: bool,
        /// `stop`, `aborted`, `budget`, `error`, `length`.
        outcome: String,
        /// Its requests' cost in dollars.
        cost: f64,
    },
}
