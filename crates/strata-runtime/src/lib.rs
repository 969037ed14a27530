//! One strata session as a task, under every front end.
//!
//! [`spawn`] takes an [`strata_agent::Agent`] and runs it as an actor in the style of
//! codex-rs: a front end sends [`Op`]s (prompt, steer, follow-up, abort, compact, navigate,
//! fork, new or switched session, model, thinking level, tools, keep-warm …) and reads
//! [`RuntimeEvent`]s (the agent loop's events and the runtime's own: accepted messages, run
//! ends with a typed [`RunEnd`], model and thinking changes, session changes, settled). What a
//! terminal UI, an rpc server or a print mode does differently is only how it maps keys or
//! lines to operations and events to output; the behaviour is this crate's.
//!
//! [`adapter_for`] is the one registry from a provider row and protocol to an adapter, and
//! [`ModelRoute`] (strata-agent's, built here through [`Routing`]) the one value saying where
//! requests (and summaries) go. Operations name
//! models by [`ModelRef`]; the [`Router`] the front end gives [`spawn`] makes routes of them,
//! so [`Op`], [`Query`] and [`Answer`] are plain data (serde both ways).
//!
//! Reads go through the runtime too: [`Op::Query`] is answered by
//! [`RuntimeEvent::Answered`] from the one [`read_model`], in queue order.
//!
//! ```no_run
//! # async fn demo(agent: strata_agent::Agent) -> Result<(), strata_runtime::RuntimeClosed> {
//! use strata_runtime::{Op, RuntimeEvent, spawn};
//! let (handle, mut events, _task) = spawn(agent, std::sync::Arc::new(strata_runtime::NoRoutes));
//! handle.send(Op::Prompt("fix the failing test".into()))?;
//! while let Some(event) = events.recv().await {
//!     if let RuntimeEvent::RunEnded { end, .. } = event {
//!         println!("run ended: {}", end.as_str());
//!         break;
//!     }
//! }
//! # Ok(()) }
//! ```

mod adapter;
mod error;
mod event;
mod extension_ops;
mod op;
mod query;
pub mod queue;
pub mod read_model;
mod route;
mod runtime;
pub mod sessions;
mod shell;

pub use adapter::{
    AdapterError, AdapterOptions, BedrockAuth, adapter_for, adapter_with, use_learned_capabilities,
};
pub use error::RuntimeError;
pub use event::{Disposition, RunEnd, RuntimeEvent};
pub use op::{BashRecord, Op, OpName, UserInput};
pub use query::{
    Answer, ChapterSize, ContextReport, EntryNode, Query, RoleCounts, RowKind, SessionStats,
    ToolCallItem, TranscriptItem, TreeRow, UserMessage,
};
pub use queue::{MessageQueue, QueueMode, QueuedTexts};
pub use route::{Endpoint, ModelRef, ModelRoute, NoRoutes, RouteError, Router, Routing};
pub use runtime::{RuntimeClosed, RuntimeHandle, Status, spawn};
/// What logs on disk paid (`strata stats`): the accounting's one reading of session files,
/// their delegated sessions and Claude Code logs.
pub use strata_accounting::logs;
/// The accounting vocabulary the runtime's answers, status and logs carry.
pub use strata_accounting::{
    Attribution, BreakCause, CacheBreak, CacheReport, Disagreement, Totals, attribution_lines,
};
/// Who a [`RuntimeEvent::Notice`] is from.
pub use strata_agent::NoticeSource;
/// The boundary's vocabulary: the agent [`spawn`] takes and the events it forwards, the
/// models, levels and usage the operations, status and answers carry, the session's entries
/// and messages the answers and events carry, so a front end needs no crate below the runtime.
pub use strata_agent::{Agent, AgentEvent, RetryEvents};
/// The rules layer the runtime's permission Ops and events carry (modes, answers, questions,
/// the sandbox helper's entry point), for front ends that depend on the runtime alone.
pub use strata_permissions as permissions;
/// Retries reported by a route's transport ([`RetryEvents::observer`]), and the lenient parse
/// of a tool call's arguments while they stream.
pub use strata_provider::transport::{RetryObserver, parse_partial};
/// Models and their catalog (routes are built from it), levels, usage and money.
pub use strata_provider::{CacheDiagnosis, Catalog, Cost, Model, Prices, ThinkingLevel, Usage};
/// The session's entries and messages as the answers and events carry them.
pub use strata_session::{
    AgentMessage, BashExecutionMessage, CompactionEntry, ContentBlock, Diagnostic, EditEffect,
    Entry, EntryId, ImageContent, MessageContent, Session, SessionHeader, StopReason, join_text,
    now_unix_millis,
};
/// What a prompt's `@file` image is ([`UserInput`] carries images), the environment the
/// tools' processes get (the variables passed on), and the stop of every process the tools
/// started (a front end's exit on a signal).
pub use strata_tools::{ToolEnvironment, image_mime_type, processes::kill_all_tool_processes};
