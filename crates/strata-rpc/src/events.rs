//! strata's [`AgentEvent`]s as Pi 1.x's agent events: `agent_start`, `turn_start`,
//! `message_start` / `message_update` (an `assistantMessageEvent` delta and the usage so far;
//! no cumulative message, as Pi 1.x sends it) / `message_end`, `tool_execution_*`,
//! `turn_end`, `agent_end`, `agent_settled`, `compaction_*` and `auto_retry_*`.
//!
//! The two event grammars differ in order: strata reports the user message before
//! `turn_start` and ends a turn before its tools run; Pi opens the turn first and closes it
//! after the tool results. The mapper keeps enough state to emit Pi's order.

use std::collections::HashMap;
use std::path::PathBuf;
use std::time::Instant;

use serde_json::{Map, Value, json};
use strata_runtime::{
    AgentEvent, AgentMessage, Entry, EntryId, NoticeSource, Session, parse_partial,
};

/// The kind of the content block being streamed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Block {
    Text,
    Thinking,
    ToolCall,
}

/// Which model the partial assistant message names (Pi's `api`, `provider`, `model`).
#[derive(Debug, Clone, Default)]
pub struct Origin {
    /// Protocol name, e.g. `anthropic-messages`.
    pub api: String,
    /// Provider id.
    pub provider: String,
    /// Model id.
    pub model: String,
}

/// Turns one agent's events into Pi's, for the length of one run (follow-ups included).
#[derive(Debug)]
pub struct EventMapper {
    origin: Origin,
    max_retries: u32,
    session_file: PathBuf,
    turn_open: bool,
    turn_end_pending: bool,
    turn_message: Option<Value>,
    turn_results: Vec<Value>,
    run_messages: Vec<Value>,
    partial: Option<Map<String, Value>>,
    block: Option<Block>,
    raw_arguments: String,
    tools: HashMap<String, (String, Value)>,
    tool_errors: HashMap<String, bool>,
    /// When each running tool started, for `durationMs`.
    tool_started: HashMap<String, Instant>,
    /// System messages stored before the turn they belong to opened.
    pending_system: Vec<Value>,
    retry_attempt: Option<u32>,
    compaction_reason: String,
    /// A compaction's summary requests are going (their retries are Pi's
    /// `summarization_retry_*`, not `auto_retry_*`).
    summarizing: bool,
    /// A summary retry scheduled whose attempt has not been reported started yet.
    summary_retry_pending: bool,
    /// A summary request was retried during this compaction.
    summary_retried: bool,
    skip_agent_start: bool,
}

impl EventMapper {
    /// A mapper for an agent on `origin`'s model appending to `session_file` (read back for
    /// compaction summaries); `max_retries` is reported as `maxAttempts`.
    pub fn new(origin: Origin, max_retries: u32, session_file: PathBuf) -> Self {
        Self {
            origin,
            max_retries,
            session_file,
            turn_open: false,
            turn_end_pending: false,
            turn_message: None,
            turn_results: Vec::new(),
            run_messages: Vec::new(),
            partial: None,
            block: None,
            raw_arguments: String::new(),
            tools: HashMap::new(),
            tool_errors: HashMap::new(),
            tool_started: HashMap::new(),
            pending_system: Vec::new(),
            retry_attempt: None,
            compaction_reason: "manual".to_owned(),
            summarizing: false,
            summary_retry_pending: false,
            summary_retried: false,
            skip_agent_start: false,
        }
    }

    /// Pi's events for one strata event (often none, sometimes several).
    pub fn handle(&mut self, event: AgentEvent) -> Vec<Value> {
        let mut out = Vec::new();
        match event {
            AgentEvent::AgentStart => {
                if self.skip_agent_start {
                    self.skip_agent_start = false;
                } else {
                    self.run_messages.clear();
                    out.push(json!({"type": "agent_start"}));
                }
            }
            AgentEvent::TurnStart { .. } => {
                self.close_turn(&mut out);
                self.open_turn(&mut out);
            }
            AgentEvent::RequestStart { .. } => {
                self.partial = None;
                self.block = None;
            }
            AgentEvent::TextDelta { text } => {
                self.retry_succeeded(&mut out);
                self.stream_text(Block::Text, &text, &mut out);
            }
            AgentEvent::ThinkingDelta { text } => {
                self.retry_succeeded(&mut out);
                self.stream_text(Block::Thinking, &text, &mut out);
            }
            AgentEvent::ToolCallStart { id, name } => {
                self.retry_succeeded(&mut out);
                self.start_partial(&mut out);
                self.close_block(&mut out);
                self.push_block(
                    json!({"type": "toolCall", "id": id, "name": name, "arguments": {}}),
                );
                self.block = Some(Block::ToolCall);
                self.raw_arguments.clear();
                out.push(
                    self.update(json!({"type": "toolcall_start", "id": id, "toolName": name})),
                );
            }
            AgentEvent::ToolCallDelta { arguments, .. } => {
                if self.block != Some(Block::ToolCall) {
                    return out;
                }
                let delta = arguments
                    .strip_prefix(self.raw_arguments.as_str())
                    .unwrap_or(&arguments)
                    .to_owned();
                self.raw_arguments = arguments;
                if let Some(parsed) = parse_partial(&self.raw_arguments)
                    && let Some(block) = self.last_block_mut()
                {
                    block.insert("arguments".into(), parsed);
                }
                out.push(self.update(json!({"type": "toolcall_delta", "delta": delta})));
            }
            AgentEvent::Usage { .. } => self.retry_succeeded(&mut out),
            // Pi has no such event; the session's `custom` entry records it.
            AgentEvent::KeepWarm { .. } => {}
            AgentEvent::MessageEnd { message, .. } => self.message_end(&message, &mut out),
            AgentEvent::ToolStart {
                id,
                name,
                arguments,
            } => {
                out.push(json!({
                    "type": "tool_execution_start",
                    "toolCallId": id,
                    "toolName": name,
                    "args": arguments,
                }));
                self.tool_started.insert(id.clone(), Instant::now());
                self.tools.insert(id, (name, arguments));
            }
            AgentEvent::ToolUpdate { id, text, details } => {
                let (name, args) = self.tools.get(&id).cloned().unwrap_or_default();
                // Pi's partial result carries the tool's details as they stand (an object).
                let details = if details.is_null() {
                    json!({})
                } else {
                    details
                };
                out.push(json!({
                    "type": "tool_execution_update",
                    "toolCallId": id,
                    "toolName": name,
                    "args": args,
                    "partialResult": {"content": [{"type": "text", "text": text}], "details": details},
                }));
            }
            AgentEvent::ToolEnd { id, is_error, .. } => {
                self.tool_errors.insert(id, is_error);
            }
            AgentEvent::Retry {
                attempt,
                wait_ms,
                error,
            } if self.summarizing => self.summary_retry(attempt, wait_ms, error, &mut out),
            AgentEvent::Retry {
                attempt,
                wait_ms,
                error,
            } => {
                self.retry_attempt = Some(attempt);
                out.push(json!({
                    "type": "auto_retry_start",
                    "attempt": attempt,
                    "maxAttempts": self.max_retries,
                    "delayMs": wait_ms,
                    "errorMessage": error,
                }));
            }
            AgentEvent::CompactionStart { reason } => {
                self.compaction_reason.clone_from(&reason);
                self.summarizing = true;
                out.push(json!({"type": "compaction_start", "reason": reason}));
            }
            AgentEvent::CompactionEnd {
                entry_id,
                tokens_before,
                error,
                ..
            } => {
                self.summary_retries_finished(&mut out);
                out.push(self.compaction_end(entry_id.as_ref(), tokens_before, error));
            }
            AgentEvent::TurnEnd { .. } => self.turn_end_pending = true,
            // Held until the run is over: a follow-up may continue it, and a failed run's
            // error is known only then.
            AgentEvent::AgentEnd { .. } => {}
            // Pi reports a system message (snapshot or patch) as a message of the turn it
            // starts; strata stores it before the turn opens.
            AgentEvent::SystemUpdate { message, .. } => {
                self.pending_system.push(message.to_json());
                if self.turn_open {
                    self.flush_system(&mut out);
                }
            }
            // strata's own bookkeeping: Pi has no event for this.
            AgentEvent::SteeringDelivered { .. } => {}
        }
        out
    }

    /// The run goes on with a queued follow-up: Pi reports one run, so the next
    /// `agent_start` is swallowed and no `agent_end` is sent yet.
    pub fn continue_run(&mut self) {
        self.skip_agent_start = true;
    }

    /// `turn_end`, `agent_end` with every message of the run and `agent_settled` (`aborted`:
    /// the run ended because it was aborted), once the run is over.
    /// `error`: the run failed without storing an assistant message saying why (a request
    /// refused before its first byte); Pi always ends such a run with an assistant message
    /// whose `stopReason` is `error`, so one is reported.
    pub fn finish_run(&mut self, error: Option<&str>, aborted: bool) -> Vec<Value> {
        let mut out = Vec::new();
        if let Some(error) = error {
            let reported = self
                .run_messages
                .last()
                .is_some_and(|m| m["role"] == "assistant" && m["stopReason"] == "error");
            if !reported {
                self.open_turn(&mut out);
                self.turn_end_pending = true;
                self.start_partial(&mut Vec::new());
                if let Some(mut message) = self.partial.take() {
                    message.insert("stopReason".into(), json!("error"));
                    message.insert("errorMessage".into(), json!(error));
                    let message = Value::Object(message);
                    out.push(json!({"type": "message_start", "message": message}));
                    out.push(json!({"type": "message_end", "message": message}));
                    self.turn_message = Some(message.clone());
                    self.run_messages.push(message);
                }
            }
        }
        self.close_turn(&mut out);
        if let Some(attempt) = self.retry_attempt.take() {
            let final_error = error.map(str::to_owned).or_else(|| {
                self.run_messages
                    .iter()
                    .rev()
                    .find_map(|m| m.get("errorMessage").and_then(Value::as_str))
                    .map(str::to_owned)
            });
            match final_error {
                Some(final_error) => out.push(json!({
                    "type": "auto_retry_end",
                    "success": false,
                    "attempt": attempt,
                    "finalError": final_error,
                })),
                None => {
                    out.push(json!({"type": "auto_retry_end", "success": true, "attempt": attempt}))
                }
            }
        }
        out.push(json!({
            "type": "agent_end",
            "messages": std::mem::take(&mut self.run_messages),
            "willRetry": false,
        }));
        // Nothing follows on its own: retries, overflow recovery and follow-ups all ran
        // inside the run (Pi 1.x's `agent_settled`).
        out.push(json!({"type": "agent_settled", "aborted": aborted}));
        out
    }

    /// Pi 1.6's `summarization_retry_scheduled` for a summary request the transport retries.
    /// The transport reports a retry before its wait, and nothing when the attempt starts:
    /// the attempt is reported started once it is known to have run (at the next retry or
    /// the compaction's end), which keeps Pi's order.
    fn summary_retry(&mut self, attempt: u32, wait_ms: u64, error: String, out: &mut Vec<Value>) {
        self.summary_attempt_started(out);
        self.summary_retry_pending = true;
        self.summary_retried = true;
        out.push(json!({
            "type": "summarization_retry_scheduled",
            "attempt": attempt,
            "maxAttempts": self.max_retries,
            "delayMs": wait_ms,
            "errorMessage": error,
        }));
    }

    fn summary_attempt_started(&mut self, out: &mut Vec<Value>) {
        if std::mem::take(&mut self.summary_retry_pending) {
            out.push(json!({
                "type": "summarization_retry_attempt_start",
                "source": "compaction",
                "reason": self.compaction_reason,
            }));
        }
    }

    /// `summarization_retry_finished`, once, when the compaction that retried ends.
    fn summary_retries_finished(&mut self, out: &mut Vec<Value>) {
        self.summary_attempt_started(out);
        self.summarizing = false;
        if std::mem::take(&mut self.summary_retried) {
            out.push(json!({"type": "summarization_retry_finished"}));
        }
    }

    fn open_turn(&mut self, out: &mut Vec<Value>) {
        if !self.turn_open {
            self.turn_open = true;
            self.turn_message = None;
            self.turn_results.clear();
            out.push(json!({"type": "turn_start"}));
            self.flush_system(out);
        }
    }

    /// `message_start` / `message_end` for the system messages stored since the last turn
    /// opened; they are messages of the run, as in Pi's `agent_end`.
    fn flush_system(&mut self, out: &mut Vec<Value>) {
        for message in std::mem::take(&mut self.pending_system) {
            out.push(json!({"type": "message_start", "message": message}));
            out.push(json!({"type": "message_end", "message": message}));
            self.run_messages.push(message);
        }
    }

    /// Sends the `turn_end` strata's `turn_end` announced, now that the tools ran.
    fn close_turn(&mut self, out: &mut Vec<Value>) {
        if self.turn_open && self.turn_end_pending {
            out.push(json!({
                "type": "turn_end",
                "message": self.turn_message.take().unwrap_or(Value::Null),
                "toolResults": std::mem::take(&mut self.turn_results),
            }));
            self.turn_open = false;
            self.turn_end_pending = false;
        }
    }

    fn retry_succeeded(&mut self, out: &mut Vec<Value>) {
        if let Some(attempt) = self.retry_attempt.take() {
            out.push(json!({"type": "auto_retry_end", "success": true, "attempt": attempt}));
        }
    }

    fn start_partial(&mut self, out: &mut Vec<Value>) {
        if self.partial.is_some() {
            return;
        }
        let mut partial = Map::new();
        partial.insert("role".into(), json!("assistant"));
        partial.insert("content".into(), json!([]));
        partial.insert("api".into(), json!(self.origin.api));
        partial.insert("provider".into(), json!(self.origin.provider));
        partial.insert("model".into(), json!(self.origin.model));
        partial.insert(
            "usage".into(),
            json!({
                "input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 0,
                "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0},
            }),
        );
        partial.insert("stopReason".into(), json!("stop"));
        partial.insert("timestamp".into(), json!(strata_runtime::now_unix_millis()));
        out.push(json!({"type": "message_start", "message": Value::Object(partial.clone())}));
        self.partial = Some(partial);
        self.block = None;
    }

    fn content(&mut self) -> Option<&mut Vec<Value>> {
        self.partial
            .as_mut()
            .and_then(|p| p.get_mut("content"))
            .and_then(Value::as_array_mut)
    }

    fn push_block(&mut self, block: Value) {
        if let Some(content) = self.content() {
            content.push(block);
        }
    }

    fn last_block_mut(&mut self) -> Option<&mut Map<String, Value>> {
        self.content()
            .and_then(|c| c.last_mut())
            .and_then(Value::as_object_mut)
    }

    fn content_index(&self) -> usize {
        self.partial
            .as_ref()
            .and_then(|p| p.get("content"))
            .and_then(Value::as_array)
            .map_or(0, |c| c.len().saturating_sub(1))
    }

    /// A `message_update` carrying `event` (given its `contentIndex`) and the usage so far.
    /// Pi 1.x sends deltas only: no cumulative `message`, no `partial` snapshot.
    fn update(&self, mut event: Value) -> Value {
        if let Value::Object(map) = &mut event
            && map.get("type").and_then(Value::as_str) != Some("start")
        {
            map.insert("contentIndex".into(), json!(self.content_index()));
        }
        let usage = self
            .partial
            .as_ref()
            .and_then(|partial| partial.get("usage"))
            .cloned()
            .unwrap_or(Value::Null);
        json!({"type": "message_update", "usage": usage, "assistantMessageEvent": event})
    }

    fn stream_text(&mut self, kind: Block, text: &str, out: &mut Vec<Value>) {
        self.start_partial(out);
        let key = if kind == Block::Text {
            "text"
        } else {
            "thinking"
        };
        if self.block != Some(kind) {
            self.close_block(out);
            self.push_block(json!({"type": key, key: ""}));
            self.block = Some(kind);
            out.push(self.update(json!({"type": format!("{key}_start")})));
        }
        if let Some(block) = self.last_block_mut() {
            let mut whole = block
                .get(key)
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_owned();
            whole.push_str(text);
            block.insert(key.into(), Value::String(whole));
        }
        out.push(self.update(json!({"type": format!("{key}_delta"), "delta": text})));
    }

    /// `text_end` / `thinking_end` / `toolcall_end` for the block being streamed.
    fn close_block(&mut self, out: &mut Vec<Value>) {
        let Some(kind) = self.block.take() else {
            return;
        };
        let block = self
            .content()
            .and_then(|c| c.last())
            .cloned()
            .unwrap_or(Value::Null);
        let event = match kind {
            Block::Text => json!({"type": "text_end", "content": block.get("text")}),
            Block::Thinking => json!({"type": "thinking_end", "content": block.get("thinking")}),
            Block::ToolCall => json!({"type": "toolcall_end", "toolCall": block}),
        };
        out.push(self.update(event));
    }

    fn message_end(&mut self, message: &AgentMessage, out: &mut Vec<Value>) {
        let value = message.to_json();
        match message {
            AgentMessage::Assistant(assistant) => {
                if assistant.stop_reason != strata_runtime::StopReason::Error {
                    self.retry_succeeded(out);
                }
                self.open_turn(out);
                self.close_block(out);
                if self.partial.take().is_none() {
                    out.push(json!({"type": "message_start", "message": value}));
                }
                out.push(json!({"type": "message_end", "message": value}));
                self.turn_message = Some(value.clone());
            }
            AgentMessage::ToolResult(result) => {
                let is_error = self
                    .tool_errors
                    .remove(&result.tool_call_id)
                    .unwrap_or(result.is_error);
                self.tools.remove(&result.tool_call_id);
                let mut end = json!({
                    "type": "tool_execution_end",
                    "toolCallId": result.tool_call_id,
                    "toolName": result.tool_name,
                    "result": {
                        "content": value.get("content").cloned().unwrap_or(json!([])),
                        "details": value.get("details").cloned().unwrap_or(json!({})),
                    },
                    "isError": is_error,
                });
                // Pi's `durationMs`: absent when the tool did not run. Timed here, from the
                // start event to the result, which is as close to the tool as a view gets.
                if let Some(started) = self.tool_started.remove(&result.tool_call_id) {
                    let ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
                    end["durationMs"] = json!(ms);
                }
                out.push(end);
                out.push(json!({"type": "message_start", "message": value}));
                out.push(json!({"type": "message_end", "message": value}));
                self.turn_results.push(value.clone());
            }
            _ => {
                // A prompt or steering message opens the next turn, as Pi reports it.
                self.close_turn(out);
                self.open_turn(out);
                out.push(json!({"type": "message_start", "message": value}));
                out.push(json!({"type": "message_end", "message": value}));
            }
        }
        self.run_messages.push(value);
    }

    fn compaction_end(
        &self,
        entry_id: Option<&EntryId>,
        tokens_before: u64,
        error: Option<String>,
    ) -> Value {
        let result = entry_id.and_then(|id| compaction_result(&self.session_file, id));
        let succeeded = result.is_some();
        let mut event = json!({
            "type": "compaction_end",
            "reason": self.compaction_reason,
            "result": result.unwrap_or(Value::Null),
            "aborted": false,
            "willRetry": succeeded && self.compaction_reason == "overflow",
        });
        if let Value::Object(map) = &mut event {
            if let Some(error) = error {
                map.insert("errorMessage".into(), json!(error));
            } else if !succeeded {
                map.insert(
                    "errorMessage".into(),
                    json!(format!(
                        "nothing to compact ({tokens_before} tokens in context)"
                    )),
                );
            }
        }
        event
    }
}

/// Pi's `CompactionResult` (`summary`, `firstKeptEntryId`, `tokensBefore`, `details`) of the
/// compaction entry `id`, read back from the session file (an automatic compaction is reported
/// while the run holds the session).
pub fn compaction_result(session_file: &std::path::Path, id: &EntryId) -> Option<Value> {
    let opened = Session::open(session_file).ok()?;
    let tree = opened.session.tree();
    let Entry::Compaction(entry) = tree.entry(id).ok()? else {
        return None;
    };
    let after = strata_runtime::read_model::tokens_after_compaction(tree, id);
    Some(compaction_json(&entry, after))
}

/// Pi's `CompactionResult` of a compaction entry, with the context's estimate after it.
pub fn compaction_json(entry: &strata_runtime::CompactionEntry, after: Option<u64>) -> Value {
    let mut data = json!({
        "summary": entry.summary,
        "firstKeptEntryId": entry.first_kept_entry_id,
        "tokensBefore": entry.tokens_before,
        "estimatedTokensAfter": after,
        "details": entry.details.clone().unwrap_or(json!({})),
    });
    if let Some(usage) = &entry.usage {
        data["usage"] = serde_json::to_value(usage).unwrap_or(Value::Null);
    }
    data
}

/// A notice for the user as a record: an extension's problem as Pi's `extension_error`
/// (`extensionPath` is the name in `[extensions.NAME]`, `event` is `process`: the process
/// crashed, hung or broke the protocol), a hook's as strata's own `strata_notice` (Pi has
/// no command hooks; a refused slot claim likewise, with no event).
pub fn notice_record(source: &NoticeSource, text: &str) -> Value {
    match source {
        NoticeSource::Extension { name } => json!({
            "type": "extension_error",
            "extensionPath": name,
            "event": "process",
            "error": text,
        }),
        NoticeSource::Hook { event } => json!({
            "type": "strata_notice",
            "source": source.to_string(),
            "event": event,
            "text": text,
        }),
        NoticeSource::MemorySlots => json!({
            "type": "strata_notice",
            "source": source.to_string(),
            "text": text,
        }),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::Map;
    use strata_session::{
        AssistantMessage, ContentBlock, MessageContent, StopReason, TextContent, ToolCall,
        ToolResultMessage, Usage, UserMessage,
    };

    use super::*;

    fn mapper() -> EventMapper {
        EventMapper::new(
            Origin {
                api: "anthropic-messages".into(),
                provider: "anthropic".into(),
                model: "m".into(),
            },
            3,
            PathBuf::from("/nonexistent.jsonl"),
        )
    }

    fn user(text: &str) -> AgentEvent {
        message(AgentMessage::User(UserMessage {
            content: MessageContent::Blocks(vec![ContentBlock::Text(TextContent {
                text: text.into(),
                ..TextContent::default()
            })]),
            timestamp: 1,
            extra: Map::new(),
        }))
    }

    fn assistant(blocks: Vec<ContentBlock>, stop: StopReason) -> AgentEvent {
        message(AgentMessage::Assistant(AssistantMessage {
            content: blocks,
            api: "anthropic-messages".into(),
            provider: "anthropic".into(),
            model: "m".into(),
            usage: Usage::default(),
            stop_reason: stop,
            error_message: None,
            thinking_level: None,
            timestamp: 2,
            extra: Map::new(),
        }))
    }

    fn message(message: AgentMessage) -> AgentEvent {
        AgentEvent::MessageEnd {
            entry_id: EntryId::from("e1"),
            message: Box::new(message),
        }
    }

    fn run(mapper: &mut EventMapper, events: Vec<AgentEvent>) -> Vec<Value> {
        events.into_iter().flat_map(|e| mapper.handle(e)).collect()
    }

    fn kinds(events: &[Value]) -> Vec<String> {
        events
            .iter()
            .map(|e| match e["type"].as_str().unwrap() {
                "message_update" => format!(
                    "update:{}",
                    e["assistantMessageEvent"]["type"].as_str().unwrap()
                ),
                "message_start" | "message_end" => format!(
                    "{}:{}",
                    e["type"].as_str().unwrap(),
                    e["message"]["role"].as_str().unwrap()
                ),
                other => other.to_owned(),
            })
            .collect()
    }

    #[test]
    fn a_retried_summary_is_reported_as_pi_1_6_summarization_retries() {
        let mut mapper = mapper();
        let retry = |attempt| AgentEvent::Retry {
            attempt,
            wait_ms: 500,
            error: "overloaded".into(),
        };
        let events = run(
            &mut mapper,
            vec![
                AgentEvent::CompactionStart {
                    reason: "threshold".into(),
                },
                retry(1),
                retry(2),
                AgentEvent::CompactionEnd {
                    entry_id: None,
                    tokens_before: 10,
                    usage: None,
                    cost: None,
                    error: Some("gave up".into()),
                },
            ],
        );
        assert_eq!(
            kinds(&events),
            [
                "compaction_start",
                "summarization_retry_scheduled",
                "summarization_retry_attempt_start",
                "summarization_retry_scheduled",
                "summarization_retry_attempt_start",
                "summarization_retry_finished",
                "compaction_end",
            ]
        );
        assert_eq!(
            events[1],
            json!({"type": "summarization_retry_scheduled", "attempt": 1, "maxAttempts": 3,
                "delayMs": 500, "errorMessage": "overloaded"})
        );
        assert_eq!(
            events[2],
            json!({"type": "summarization_retry_attempt_start", "source": "compaction",
                "reason": "threshold"})
        );
        // A retry outside a compaction is the run's own.
        let after = run(&mut mapper, vec![retry(1)]);
        assert_eq!(kinds(&after), ["auto_retry_start"]);
    }

    /// The shared partial parser shows arguments as Pi's `parseStreamingJson` does for these
    /// prefixes (outputs taken from Pi 0.73); `None` keeps the last arguments shown.
    #[test]
    fn partial_arguments_show_what_pi_shows() {
        for (raw, pi) in [
            ("{\"path\":\"src/gr", json!({"path": "src/gr"})),
            ("{\"path\":", json!({})),
            ("{\"pa", json!({})),
            ("{\"a\":[1,2,", json!({"a": [1, 2]})),
            ("{\"a\":\"x\\", json!({"a": "x"})),
            ("{\"a\":{\"b\":\"}{\"", json!({"a": {"b": "}{"}})),
            ("{\"path\": \"a\\u00", json!({"path": "a"})),
        ] {
            assert_eq!(parse_partial(raw), Some(pi), "{raw:?}");
        }
        assert_eq!(parse_partial(""), None);
    }

    #[test]
    fn a_tool_turn_then_steering_comes_out_in_pis_order() {
        let mut mapper = mapper();
        let call = ToolCall {
            id: "c1".into(),
            name: "read".into(),
            arguments: json!({"path": "a"}),
            thought_signature: None,
            extra: Map::new(),
        };
        let mut out = run(
            &mut mapper,
            vec![
                AgentEvent::AgentStart,
                user("go"),
                AgentEvent::TurnStart { turn: 1 },
                AgentEvent::TextDelta {
                    text: "Reading".into(),
                },
                AgentEvent::ToolCallStart {
                    id: "c1".into(),
                    name: "read".into(),
                },
                AgentEvent::ToolCallDelta {
                    index: 1,
                    arguments: "{\"path\":".into(),
                },
                AgentEvent::ToolCallDelta {
                    index: 1,
                    arguments: "{\"path\":\"a\"}".into(),
                },
                assistant(
                    vec![
                        ContentBlock::Text(TextContent {
                            text: "Reading".into(),
                            ..TextContent::default()
                        }),
                        ContentBlock::ToolCall(call),
                    ],
                    StopReason::ToolUse,
                ),
                AgentEvent::TurnEnd { turn: 1 },
                AgentEvent::ToolStart {
                    id: "c1".into(),
                    name: "read".into(),
                    arguments: json!({"path": "a"}),
                },
                AgentEvent::ToolEnd {
                    id: "c1".into(),
                    name: "read".into(),
                    is_error: false,
                },
                message(AgentMessage::ToolResult(ToolResultMessage {
                    tool_call_id: "c1".into(),
                    tool_name: "read".into(),
                    content: vec![ContentBlock::Text(TextContent {
                        text: "file".into(),
                        ..TextContent::default()
                    })],
                    details: None,
                    is_error: false,
                    timestamp: 3,
                    extra: Map::new(),
                })),
                user("steer"),
                AgentEvent::SteeringDelivered { count: 1 },
                AgentEvent::TurnStart { turn: 2 },
                assistant(vec![], StopReason::Stop),
                AgentEvent::TurnEnd { turn: 2 },
                AgentEvent::AgentEnd {
                    reason: "stop".into(),
                },
            ],
        );
        out.extend(mapper.finish_run(None, false));
        assert_eq!(
            kinds(&out),
            [
                "agent_start",
                "turn_start",
                "message_start:user",
                "message_end:user",
                "message_start:assistant",
                "update:text_start",
                "update:text_delta",
                "update:text_end",
                "update:toolcall_start",
                "update:toolcall_delta",
                "update:toolcall_delta",
                "update:toolcall_end",
                "message_end:assistant",
                "tool_execution_start",
                "tool_execution_end",
                "message_start:toolResult",
                "message_end:toolResult",
                "turn_end",
                "turn_start",
                "message_start:user",
                "message_end:user",
                "message_start:assistant",
                "message_end:assistant",
                "turn_end",
                "agent_end",
                "agent_settled",
            ]
        );
        let deltas: Vec<&Value> = out
            .iter()
            .filter(|e| e["assistantMessageEvent"]["type"] == "toolcall_delta")
            .collect();
        assert_eq!(deltas[0]["assistantMessageEvent"]["delta"], "{\"path\":");
        assert_eq!(deltas[1]["assistantMessageEvent"]["delta"], "\"a\"}");
        assert_eq!(deltas[1]["assistantMessageEvent"]["contentIndex"], 1);
        // Deltas only (Pi 1.x): the parsed arguments arrive whole with the call's end.
        assert!(deltas[1].get("message").is_none(), "{}", deltas[1]);
        let call_end = out
            .iter()
            .find(|e| e["assistantMessageEvent"]["type"] == "toolcall_end")
            .unwrap();
        assert_eq!(
            call_end["assistantMessageEvent"]["toolCall"]["arguments"],
            json!({"path": "a"})
        );
        let turn_end = out.iter().find(|e| e["type"] == "turn_end").unwrap();
        assert_eq!(turn_end["toolResults"][0]["toolCallId"], "c1");
        let agent_end = &out[out.len() - 2];
        assert_eq!(agent_end["messages"].as_array().unwrap().len(), 5);
    }

    #[test]
    fn a_follow_up_continues_the_run_and_a_failure_is_reported_as_an_error_message() {
        let mut mapper = mapper();
        let mut out = run(
            &mut mapper,
            vec![
                AgentEvent::AgentStart,
                user("one"),
                AgentEvent::TurnStart { turn: 1 },
                assistant(vec![], StopReason::Stop),
                AgentEvent::TurnEnd { turn: 1 },
                AgentEvent::AgentEnd {
                    reason: "stop".into(),
                },
            ],
        );
        mapper.continue_run();
        out.extend(run(
            &mut mapper,
            vec![
                AgentEvent::AgentStart,
                user("two"),
                AgentEvent::TurnStart { turn: 1 },
                AgentEvent::Retry {
                    attempt: 1,
                    wait_ms: 10,
                    error: "overloaded".into(),
                },
                AgentEvent::TurnEnd { turn: 1 },
                AgentEvent::AgentEnd {
                    reason: "error".into(),
                },
            ],
        ));
        out.extend(mapper.finish_run(Some("provider: overloaded"), false));
        let kinds = kinds(&out);
        assert_eq!(kinds.iter().filter(|k| *k == "agent_start").count(), 1);
        assert_eq!(kinds.iter().filter(|k| *k == "agent_end").count(), 1);
        assert_eq!(
            &kinds[kinds.len() - 6..],
            [
                "message_start:assistant",
                "message_end:assistant",
                "turn_end",
                "auto_retry_end",
                "agent_end",
                "agent_settled"
            ]
        );
        let failed = &out[out.len() - 5]["message"];
        assert_eq!(failed["stopReason"], "error");
        assert_eq!(failed["errorMessage"], "provider: overloaded");
        let retry_end = &out[out.len() - 3];
        assert_eq!(
            *retry_end,
            json!({"type": "auto_retry_end", "success": false, "attempt": 1, "finalError": "provider: overloaded"})
        );
        let end = &out[out.len() - 2];
        let roles: Vec<&str> = end["messages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["role"].as_str().unwrap())
            .collect();
        assert_eq!(roles, ["user", "assistant", "user", "assistant"]);
    }
}
