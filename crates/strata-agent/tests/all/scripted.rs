//! A provider that plays scripted turns and records every request it gets.

use std::collections::VecDeque;
use std::path::Path;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use futures::StreamExt;
use serde_json::Value;
use strata_agent::{Agent, AgentConfig};
use strata_provider::{
    Capabilities, ContentBlock, Event, EventStream, Message, Model, Prices, Protocol, Provider,
    ProviderError, Request, Role, StopReason, StreamOptions, Usage,
};
use strata_session::Session;
use strata_tools::ToolSet;

/// One scripted answer.
pub enum Turn {
    /// Text, then stop.
    Text(&'static str),
    /// Tool calls `(name, arguments)`, then stop with tool use.
    Calls(Vec<(&'static str, Value)>),
    /// Some text, then the stream never ends (until cancelled).
    Hang(&'static str),
    /// The provider refuses the request as too long for the window.
    Overflow,
    /// Some text as a delta, then the stream breaks; the error event's partial message holds
    /// that text and a signed thinking block (which the adapter saw; no delta carried it).
    Cut(&'static str),
}

#[derive(Clone, Default)]
pub struct Scripted {
    turns: Arc<Mutex<VecDeque<Turn>>>,
    pub requests: Arc<Mutex<Vec<Request>>>,
    /// Replaces the summary the model writes.
    summary: Arc<Mutex<Option<String>>>,
}

impl Scripted {
    pub fn new(turns: Vec<Turn>) -> Self {
        Self {
            turns: Arc::new(Mutex::new(turns.into())),
            requests: Arc::default(),
            summary: Arc::default(),
        }
    }

    /// Summary requests get `text` from now on.
    pub fn set_summary(&self, text: String) {
        *self.summary.lock().unwrap() = Some(text);
    }

    pub fn requests(&self) -> Vec<Request> {
        self.requests.lock().unwrap().clone()
    }
}

fn done(content: Vec<ContentBlock>, stop: StopReason, prompt_tokens: u64) -> Event {
    Event::Done {
        stop_reason: stop,
        message: Message {
            role: Role::Assistant,
            content,
        },
        usage: Usage {
            input: prompt_tokens,
            output: 10,
            ..Usage::default()
        },
    }
}

#[async_trait]
impl Provider for Scripted {
    fn protocol(&self) -> Protocol {
        Protocol::AnthropicMessages
    }

    async fn stream(
        &self,
        _model: &Model,
        request: &Request,
        options: &StreamOptions,
    ) -> Result<EventStream, ProviderError> {
        self.requests.lock().unwrap().push(request.clone());
        let prompt_tokens = serde_json::to_string(request).unwrap().len() as u64 / 4;
        if is_summary_request(request) {
            let text = self.summary.lock().unwrap().clone().unwrap_or_else(|| {
                "## Goal\nRead big.txt twice.\n\n## Progress\n### Done\n- [x] read big.txt".into()
            });
            return Ok(futures::stream::iter(vec![done(
                vec![ContentBlock::text(text)],
                StopReason::EndTurn,
                prompt_tokens,
            )])
            .boxed());
        }
        let turn = self
            .turns
            .lock()
            .unwrap()
            .pop_front()
            .unwrap_or(Turn::Text("(script ended)"));
        let events: Vec<Event> = match turn {
            Turn::Overflow => {
                return Err(ProviderError::ContextOverflow {
                    status: 400,
                    request_id: None,
                    body: "prompt is too long".into(),
                });
            }
            Turn::Text(text) => vec![
                Event::TextDelta {
                    index: 0,
                    text: text.to_owned(),
                },
                done(
                    vec![ContentBlock::text(text)],
                    StopReason::EndTurn,
                    prompt_tokens,
                ),
            ],
            Turn::Calls(calls) => {
                let mut events = Vec::new();
                let mut content = Vec::new();
                for (index, (name, arguments)) in calls.into_iter().enumerate() {
                    let id = format!("call_{}_{index}", self.requests.lock().unwrap().len());
                    events.push(Event::ToolCallStart {
                        index,
                        id: id.clone(),
                        name: name.to_owned(),
                    });
                    events.push(Event::ToolCallDelta {
                        index,
                        arguments: arguments.to_string(),
                    });
                    events.push(Event::ToolCallEnd {
                        index,
                        id: id.clone(),
                        name: name.to_owned(),
                        arguments: arguments.clone(),
                    });
                    content.push(ContentBlock::ToolCall {
                        id,
                        name: name.to_owned(),
                        arguments,
                    });
                }
                events.push(done(content, StopReason::ToolUse, prompt_tokens));
                events
            }
            Turn::Cut(text) => vec![
                Event::TextDelta {
                    index: 1,
                    text: text.to_owned(),
                },
                Event::Error {
                    error: ProviderError::Transport {
                        message: "connection reset".into(),
                    },
                    partial: Some(Message {
                        role: Role::Assistant,
                        content: vec![
                            ContentBlock::Thinking {
                                text: "plan".into(),
                                signature: Some("sig-1".into()),
                                redacted: false,
                            },
                            ContentBlock::text(text),
                        ],
                    }),
                },
            ],
            Turn::Hang(text) => {
                let cancel = options.cancel.clone();
                let head = futures::stream::iter(vec![Event::TextDelta {
                    index: 0,
                    text: text.to_owned(),
                }]);
                let tail = futures::stream::once(async move {
                    cancel.cancelled().await;
                    Event::error(ProviderError::Cancelled)
                });
                return Ok(head.chain(tail).boxed());
            }
        };
        Ok(futures::stream::iter(events).boxed())
    }
}

/// A compaction's summary request ends with a user message asking for Pi's sections.
pub fn is_summary_request(request: &Request) -> bool {
    request.messages.last().is_some_and(|m| {
        m.role == Role::User
            && (m.text().contains("## Goal") || m.text().contains("## Original Request"))
    })
}

pub fn model() -> Model {
    Model {
        provider: "anthropic".into(),
        id: "claude-sonnet-4-5".into(),
        name: "Claude Sonnet 4.5".into(),
        context_window: 200_000,
        max_output: 64_000,
        input: Vec::new(),
        reasoning: true,
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

/// Capabilities of a model that accepts mid-conversation system messages and tool changes.
pub fn appending_capabilities() -> Capabilities {
    Capabilities {
        mid_conversation_system: true,
        tool_addition: true,
        tool_removal: true,
        ..Capabilities::default()
    }
}

pub fn agent(session: Session, provider: Scripted, cwd: &Path, global: Option<&Path>) -> Agent {
    agent_with(
        session,
        provider,
        cwd,
        global,
        model(),
        strata_compaction::CompactionSettings::default(),
    )
}

/// [`appending_capabilities`] of a provider with a prompt cache (explicit breakpoints).
pub fn cached_capabilities() -> Capabilities {
    Capabilities {
        cache_style: strata_provider::CacheStyle::ExplicitBreakpoints,
        max_breakpoints: 4,
        ..appending_capabilities()
    }
}

pub fn agent_with(
    session: Session,
    provider: Scripted,
    cwd: &Path,
    global: Option<&Path>,
    model: Model,
    compaction: strata_compaction::CompactionSettings,
) -> Agent {
    agent_with_capabilities(
        session,
        provider,
        cwd,
        global,
        model,
        compaction,
        appending_capabilities(),
    )
}

pub fn agent_with_capabilities(
    session: Session,
    provider: Scripted,
    cwd: &Path,
    global: Option<&Path>,
    model: Model,
    compaction: strata_compaction::CompactionSettings,
    capabilities: Capabilities,
) -> Agent {
    let config = AgentConfig {
        cwd: cwd.to_path_buf(),
        model,
        capabilities,
        api: "anthropic-messages".into(),
        max_tokens: Some(1024),
        global_dir: global.map(Path::to_path_buf),
        custom_intro: None,
        append_system_prompt: None,
        stream: StreamOptions::default(),
        render_policy: strata_context::RenderPolicy::Strata,
        compaction,
        summary_model: None,
        cache: strata_agent::CacheSettings::default(),
        tool_settings: strata_tools::ToolSettings::default(),
    };
    Agent::new(session, Arc::new(provider), ToolSet::default_set(), config)
}

pub fn json_of(value: &impl serde::Serialize) -> String {
    serde_json::to_string(value).unwrap()
}

/// [`cached_capabilities`] with only Anthropic's 5-minute lifetime on offer.
pub fn five_minute_cache() -> Capabilities {
    Capabilities {
        ttl_options: vec![strata_provider::CacheTtl::FiveMinutes],
        ..cached_capabilities()
    }
}

/// Whether any message of `request` holds `text` in its JSON.
pub fn holds(request: &Request, text: &str) -> bool {
    request
        .messages
        .iter()
        .any(|message| json_of(message).contains(text))
}
