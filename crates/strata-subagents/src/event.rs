//! What front ends hear about children: their start, every event of their loop, their end —
//! each tagged by the child (the delegation call's id) and its session file.

use std::path::PathBuf;

use serde_json::{Value, json};
use strata_agent::AgentEvent;

/// The `type` of a child's event as a record for rpc and `--mode json` (a strata extension:
/// Pi has no children).
pub const CHILD_RECORD_TYPE: &str = "strata_child";

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

impl ChildEvent {
    /// The event as one record: `{"type": "strata_child", "child", "session", "depth",
    /// "event"}`, where `event` is `{"type": "started", …}`, `{"type": "ended", …}` or the
    /// child's agent event as strata serialises it (`text_delta`, `tool_start`, `usage`, …).
    pub fn record(&self) -> Value {
        let event = match &self.kind {
            ChildEventKind::Started {
                agent,
                start,
                reason,
                description,
            } => json!({"type": "started", "agent": agent, "start": start,
                "reason": reason, "description": description}),
            ChildEventKind::Agent(event) => serde_json::to_value(event).unwrap_or(Value::Null),
            ChildEventKind::Ended {
                is_error,
                outcome,
                cost,
            } => json!({"type": "ended", "isError": is_error, "outcome": outcome, "cost": cost}),
        };
        json!({
            "type": CHILD_RECORD_TYPE,
            "child": self.child,
            "session": self.session.display().to_string(),
            "depth": self.depth,
            "event": event,
        })
    }
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
