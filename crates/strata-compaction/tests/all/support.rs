//! Session builders and a scripted in-memory provider.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use serde_json::{Value, json};
use strata_provider::{
    Completion, ContentBlock, EventStream, Message, Model, Prices, Protocol, Provider,
    ProviderError, Request, Role, StopReason, StreamOptions, Usage,
};
use strata_session::{AgentMessage, EntryId, Session, WriteOptions};
use tempfile::TempDir;

/// A writable session in a temporary directory (kept alive with it).
pub struct TestSession {
    pub session: Session,
    _dir: TempDir,
}

impl TestSession {
    pub fn new() -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        let session = Session::create(dir.path().join("s.jsonl"), "/work", WriteOptions::default())
            .expect("session");
        Self { session, _dir: dir }
    }

    pub fn push(&mut self, message: AgentMessage) -> EntryId {
        self.session.append_message(message).expect("append")
    }

    pub fn leaf(&self) -> EntryId {
        self.session.leaf().cloned().expect("leaf")
    }
}

fn parse(value: Value) -> AgentMessage {
    serde_json::from_value(value).expect("message")
}

pub fn user(text: &str) -> AgentMessage {
    parse(json!({"role": "user", "content": [{"type": "text", "text": text}], "timestamp": 1}))
}

fn usage_json(total: u64) -> Value {
    json!({"input": total, "output": 0, "cacheRead": 0, "cacheWrite": 0, "totalTokens": total,
           "cost": {"input": 0.0, "output": 0.0, "cacheRead": 0.0, "cacheWrite": 0.0, "total": 0.0}})
}

pub fn assistant(text: &str, total_tokens: u64) -> AgentMessage {
    parse(
        json!({"role": "assistant", "content": [{"type": "text", "text": text}],
        "api": "anthropic-messages", "provider": "anthropic", "model": "claude-sonnet-4-5",
        "usage": usage_json(total_tokens), "stopReason": "stop", "timestamp": 2}),
    )
}

pub fn tool_call(id: &str, name: &str, args: Value, total_tokens: u64) -> AgentMessage {
    parse(
        json!({"role": "assistant", "content": [{"type": "toolCall", "id": id, "name": name, "arguments": args}],
        "api": "anthropic-messages", "provider": "anthropic", "model": "claude-sonnet-4-5",
        "usage": usage_json(total_tokens), "stopReason": "toolUse", "timestamp": 2}),
    )
}

pub fn tool_result(id: &str, name: &str, text: &str) -> AgentMessage {
    parse(
        json!({"role": "toolResult", "toolCallId": id, "toolName": name,
        "content": [{"type": "text", "text": text}], "isError": false, "timestamp": 3}),
    )
}

pub fn model(id: &str) -> Model {
    Model {
        provider: "anthropic".into(),
        id: id.into(),
        name: id.into(),
        context_window: 200_000,
        max_output: 64_000,
        input: Vec::new(),
        reasoning: false,
        prices: Prices {
            input: 3.0,
            output: 15.0,
            cache_read: 0.3,
            cache_write_5m: 3.75,
            cache_write_1h: 6.0,
            cache_storage: 0.0,
        },
    }
}

type Responder = dyn Fn(&Request) -> Result<(String, StopReason), ProviderError> + Send + Sync;

/// A provider that answers from a closure and records every request. With `rendezvous`, each
/// call waits until that many calls are in flight at once (a sequential caller times out).
pub struct ScriptedProvider {
    pub requests: Mutex<Vec<Request>>,
    responder: Box<Responder>,
    rendezvous: Option<Arc<tokio::sync::Barrier>>,
}

impl ScriptedProvider {
    pub fn new(
        responder: impl Fn(&Request) -> Result<(String, StopReason), ProviderError>
        + Send
        + Sync
        + 'static,
    ) -> Self {
        Self {
            requests: Mutex::new(Vec::new()),
            responder: Box::new(responder),
            rendezvous: None,
        }
    }

    pub fn answering(text: &str) -> Self {
        let text = text.to_owned();
        Self::new(move |_| Ok((text.clone(), StopReason::EndTurn)))
    }

    pub fn concurrent(mut self, calls: usize) -> Self {
        self.rendezvous = Some(Arc::new(tokio::sync::Barrier::new(calls)));
        self
    }

    pub fn requests(&self) -> Vec<Request> {
        self.requests.lock().expect("lock").clone()
    }
}

#[async_trait]
impl Provider for ScriptedProvider {
    fn protocol(&self) -> Protocol {
        Protocol::AnthropicMessages
    }

    async fn stream(
        &self,
        _model: &Model,
        _request: &Request,
        _options: &StreamOptions,
    ) -> Result<EventStream, ProviderError> {
        Err(ProviderError::Cancelled)
    }

    async fn complete(
        &self,
        model: &Model,
        request: &Request,
        _options: &StreamOptions,
    ) -> Result<Completion, ProviderError> {
        self.requests.lock().expect("lock").push(request.clone());
        if let Some(barrier) = &self.rendezvous {
            tokio::time::timeout(Duration::from_secs(5), barrier.wait())
                .await
                .map_err(|_| ProviderError::Truncated {
                    reason: "the other summary request never ran alongside".into(),
                })?;
        }
        let (text, stop_reason) = (self.responder)(request)?;
        let usage = Usage {
            input: 1000,
            output: 100,
            ..Usage::default()
        };
        Ok(Completion {
            message: Message {
                role: Role::Assistant,
                content: vec![ContentBlock::text(text)],
            },
            stop_reason,
            cost: usage.cost(&model.prices),
            usage,
        })
    }
}

/// The last user text of a request (the summary instruction or transcript).
pub fn last_user_text(request: &Request) -> String {
    request
        .messages
        .last()
        .map(Message::text)
        .unwrap_or_default()
}

/// An Anthropic-like provider: explicit breakpoints, mid-conversation system messages.
pub fn anthropic_capabilities() -> strata_provider::Capabilities {
    strata_provider::Capabilities {
        cache_style: strata_provider::CacheStyle::ExplicitBreakpoints,
        max_breakpoints: 4,
        ttl_options: vec![strata_provider::CacheTtl::FiveMinutes],
        mid_conversation_system: true,
        tool_addition: true,
        tool_removal: true,
        ..strata_provider::Capabilities::default()
    }
}

/// A tool definition named `name` with a small schema.
pub fn tool(name: &str) -> strata_session::ToolDefinition {
    serde_json::from_value(json!({
        "name": name,
        "description": format!("The {name} tool."),
        "parameters": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
    }))
    .expect("tool")
}

/// The six sections of the system prompt, each with `tag` in its text.
pub fn sections(tag: &str) -> std::collections::BTreeMap<String, String> {
    ["intro", "tools", "rules", "docs", "skills", "cwd"]
        .iter()
        .map(|name| {
            (
                (*name).to_owned(),
                format!("<{name}>{tag} {}</{name}>", "s".repeat(200)),
            )
        })
        .collect()
}

/// The context at the session's leaf.
/// Claude Opus's prices as a 5-minute cache charges them.
pub fn opus() -> strata_compaction::CachePrices {
    strata_compaction::CachePrices::new(
        &Prices {
            input: 5.0,
            output: 25.0,
            cache_read: 0.5,
            cache_write_5m: 6.25,
            cache_write_1h: 10.0,
            cache_storage: 0.0,
        },
        false,
    )
}

/// A file body for task `n`: its fact's line (`fact-n: value-n`, a line that sets a value)
/// among `lines` lines of prose.
pub fn fact_file(n: usize, lines: usize) -> String {
    let mut text = format!("fact-{n}: value-{n}\n");
    for line in 0..lines {
        text.push_str(&format!("line {line} of file {n}: some content to read\n"));
    }
    text
}

pub fn context(session: &TestSession) -> strata_context::Context {
    let tree = session.session.tree();
    strata_context::build(tree, tree.leaf()).expect("context")
}

/// The preparation of `session`'s leaf under `settings`; a compaction must be due.
pub fn prepare_due(
    session: &TestSession,
    settings: &strata_compaction::CompactionSettings,
) -> strata_compaction::Preparation {
    strata_compaction::prepare(session.session.tree(), &session.leaf(), settings)
        .expect("prepare")
        .expect("due")
}

/// Prepares `session` under `settings` (a compaction must be due) and compacts it with
/// `provider` through the session's own request rendered for Anthropic: the path most tests
/// take before they look at the result.
pub async fn compact_session(
    session: &TestSession,
    settings: &strata_compaction::CompactionSettings,
    provider: &dyn Provider,
) -> Result<strata_compaction::CompactionResult, strata_compaction::CompactionError> {
    let preparation = prepare_due(session, settings);
    let main = strata_context::render(&context(session), &anthropic_capabilities());
    strata_compaction::compact(
        provider,
        &model(&main.model),
        &main,
        &preparation,
        settings,
        &StreamOptions::default(),
    )
    .await
}
