//! What the agent reports while it works, for every front end (TUI, print, json, rpc).

use serde::{Deserialize, Serialize};
use serde_json::Value;
use strata_context::render::Divergence;
use strata_provider::{Cost, Usage};
use strata_session::{AgentMessage, EntryId};

/// One thing that happened. Sent on an unbounded channel; a slow reader never blocks the loop.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum AgentEvent {
    /// A run (one prompt and every turn it takes) started.
    AgentStart,
    /// A turn (one request and the tools it calls) started.
    TurnStart {
        /// 1-based turn number within the run.
        turn: usize,
    },
    /// A request is about to be sent.
    RequestStart {
        /// Bytes of the tools, system and messages chapters in the render's canonical form.
        chapter_bytes: [usize; 3],
        /// Where this request first differs from the previous one the agent sent (`None` for
        /// the first request): `extends` keeps the whole cached prefix, `at` names the chapter
        /// where the cache breaks.
        divergence: Option<Divergence>,
    },
    /// A piece of answer text.
    TextDelta {
        /// The text.
        text: String,
    },
    /// A piece of reasoning.
    ThinkingDelta {
        /// The text.
        text: String,
    },
    /// The model began a tool call.
    ToolCallStart {
        /// Call id.
        id: String,
        /// Tool name.
        name: String,
    },
    /// More argument text of a tool call, and the arguments parsed so far.
    ToolCallDelta {
        /// Position of the call in the message.
        index: usize,
        /// Raw argument text received so far.
        arguments: String,
    },
    /// Tokens and cost of the request just finished.
    Usage {
        /// Normalized token counts.
        usage: Usage,
        /// Cost at the model's prices.
        cost: Cost,
    },
    /// A keep-warm request re-read the cached prefix while idle (recorded in the session).
    KeepWarm {
        /// Normalized token counts.
        usage: Usage,
        /// Cost at the model's prices.
        cost: Cost,
    },
    /// A message was appended to the session.
    MessageEnd {
        /// The entry written.
        entry_id: EntryId,
        /// The message (boxed: messages are large, most events small).
        message: Box<AgentMessage>,
    },
    /// A tool started.
    ToolStart {
        /// Call id.
        id: String,
        /// Tool name.
        name: String,
        /// Its arguments.
        arguments: Value,
    },
    /// A tool reported partial output.
    ToolUpdate {
        /// Call id.
        id: String,
        /// Output so far.
        text: String,
        /// The update's structured facts (`Null` when none): a delegation call's child status
        /// and cost (`details.subagent`), for views that show more than the text.
        details: Value,
    },
    /// A tool finished.
    ToolEnd {
        /// Call id.
        id: String,
        /// Tool name.
        name: String,
        /// Whether it failed.
        is_error: bool,
    },
    /// The system prompt or tool set changed and was stored.
    SystemUpdate {
        /// The `system` entry written.
        entry_id: EntryId,
        /// Whether it is the chain's first (the snapshot).
        snapshot: bool,
        /// Sections it rewrites.
        sections: Vec<String>,
        /// Tools added.
        tools_added: Vec<String>,
        /// Tools removed.
        tools_removed: Vec<String>,
        /// Tools kept out of the ledger as too large, each a message naming its server (see
        /// [`crate::RefusedTool`]); a tool already declared is among `tools_removed` too.
        tools_refused: Vec<String>,
        /// The system message written (boxed: it holds every section and tool definition).
        message: Box<AgentMessage>,
    },
    /// A request failed before its first byte and is sent again after a wait.
    Retry {
        /// The failed attempt (1 = the first send).
        attempt: u32,
        /// Milliseconds until the next send.
        wait_ms: u64,
        /// Why it failed.
        error: String,
    },
    /// A compaction started.
    CompactionStart {
        /// `threshold`, `overflow` or `manual`.
        reason: String,
    },
    /// A compaction ended.
    CompactionEnd {
        /// The compaction entry written (`None` when it failed or had nothing to do).
        entry_id: Option<EntryId>,
        /// Estimated context tokens it replaced.
        tokens_before: u64,
        /// Tokens of the summary request(s) that were answered, also when it failed
        /// (`None`: none was).
        usage: Option<Usage>,
        /// Cost of the summary request(s).
        cost: Option<Cost>,
        /// Why it failed.
        error: Option<String>,
    },
    /// Queued steering messages were delivered after a tool batch.
    SteeringDelivered {
        /// How many.
        count: usize,
    },
    /// A turn ended: after its answer and the results of the tools it called.
    TurnEnd {
        /// 1-based turn number.
        turn: usize,
    },
    /// The run ended.
    AgentEnd {
        /// Why: `stop`, `aborted`, `error`, `length`.
        reason: String,
    },
}
