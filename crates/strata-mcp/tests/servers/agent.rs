//! MCP tools through the agent: what the rendered requests hold when a server restarts with
//! the same tools, and when a server changes its tools mid-conversation.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use futures::StreamExt;
use serde_json::{Value, json};
use strata_agent::{Agent, AgentConfig};
use strata_provider::{
    CacheStyle, Capabilities, ContentBlock, Event, EventStream, Message, Model, Protocol, Provider,
    ProviderError, Request, Role, StopReason, StreamOptions, Usage,
};
use strata_session::{Session, WriteOptions};
use strata_tools::ToolSet;

use crate::python::{churn, churn_manager};

/// The tool calls of one scripted turn (none: answer "ok").
type Calls = Vec<(String, Value)>;

/// A provider that answers from a script and records each request.
#[derive(Clone, Default)]
struct Scripted {
    turns: Arc<Mutex<VecDeque<Calls>>>,
    requests: Arc<Mutex<Vec<Request>>>,
}

impl Scripted {
    /// Each turn is the tool calls to make (none: answer "ok").
    fn new(turns: Vec<Vec<(&str, Value)>>) -> Self {
        let turns = turns
            .into_iter()
            .map(|calls| calls.into_iter().map(|(n, a)| (n.to_owned(), a)).collect())
            .collect();
        Self {
            turns: Arc::new(Mutex::new(turns)),
            requests: Arc::default(),
        }
    }

    fn requests(&self) -> Vec<Request> {
        self.requests.lock().unwrap().clone()
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
        _options: &StreamOptions,
    ) -> Result<EventStream, ProviderError> {
        let count = {
            let mut requests = self.requests.lock().unwrap();
            requests.push(request.clone());
            requests.len()
        };
        let calls = self.turns.lock().unwrap().pop_front().unwrap_or_default();
        let (content, stop) = if calls.is_empty() {
            (vec![ContentBlock::text("ok")], StopReason::EndTurn)
        } else {
            let content = calls
                .into_iter()
                .enumerate()
                .map(|(index, (name, arguments))| ContentBlock::ToolCall {
                    id: format!("call_{count}_{index}"),
                    name,
                    arguments,
                })
                .collect();
            (content, StopReason::ToolUse)
        };
        let done = Event::Done {
            stop_reason: stop,
            message: Message {
                role: Role::Assistant,
                content,
            },
            usage: Usage {
                input: 100,
                output: 10,
                ..Usage::default()
            },
        };
        Ok(futures::stream::iter(vec![done]).boxed())
    }
}

/// A row with mid-conversation system messages, tool addition and removal, and deferred
/// tools with the placeholder (Anthropic's newest models).
fn full_row() -> Capabilities {
    Capabilities {
        mid_conversation_system: true,
        tool_addition: true,
        tool_removal: true,
        deferred_tools: true,
        deferred_tool_placeholder: true,
        cache_style: CacheStyle::ExplicitBreakpoints,
        max_breakpoints: 4,
        ..Capabilities::default()
    }
}

fn agent(dir: &std::path::Path, provider: Scripted, capabilities: Capabilities) -> Agent {
    let session = Session::create(dir.join("s.jsonl"), "/x", WriteOptions::default()).unwrap();
    let config = AgentConfig {
        cwd: dir.to_path_buf(),
        model: Model {
            provider: "anthropic".into(),
            id: "claude-sonnet-4-5".into(),
            name: "Claude Sonnet 4.5".into(),
            context_window: 200_000,
            max_output: 64_000,
            input: Vec::new(),
            reasoning: false,
            prices: Default::default(),
        },
        capabilities,
        api: "anthropic-messages".into(),
        max_tokens: Some(1024),
        global_dir: None,
        custom_intro: None,
        append_system_prompt: None,
        stream: StreamOptions::default(),
        render_policy: strata_context::RenderPolicy::Strata,
        compaction: Default::default(),
        summary_model: None,
        cache: Default::default(),
        tool_settings: strata_tools::ToolSettings::default(),
    };
    Agent::new(session, Arc::new(provider), ToolSet::default_set(), config)
}

fn json<T: serde::Serialize + ?Sized>(value: &T) -> String {
    serde_json::to_string(value).unwrap()
}

#[tokio::test]
async fn a_restarted_server_with_the_same_tools_changes_no_byte_before_the_new_messages() {
    let Some(manager) = churn_manager(Duration::from_secs(30)).await else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let provider = Scripted::new(vec![
        vec![("mcp__churn__alpha", json!({"text": "hi"}))],
        vec![],
        vec![],
    ]);
    let mut agent = agent(dir.path(), provider.clone(), full_row());
    agent.set_tool_source(Some(Arc::new(manager.clone())));
    agent.prompt("first").await.unwrap();
    // The server process is stopped and started again: same tools, same bytes.
    manager.reconnect("churn").await.unwrap();
    agent.prompt("second").await.unwrap();

    let requests = provider.requests();
    assert_eq!(requests.len(), 3);
    let (before, after) = (&requests[1], &requests[2]);
    assert!(
        before.tools.iter().any(|t| t.name == "mcp__churn__alpha"),
        "MCP tools declared from the first request"
    );
    assert_eq!(json(&before.tools), json(&after.tools));
    assert_eq!(json(&before.system), json(&after.system));
    assert_eq!(
        json(&before.messages),
        json(&after.messages[..before.messages.len()]),
        "the earlier messages are byte-identical"
    );
    let new_roles: Vec<Role> = after.messages[before.messages.len()..]
        .iter()
        .map(|m| m.role)
        .collect();
    assert_eq!(
        new_roles,
        [Role::Assistant, Role::User],
        "only the new turn"
    );
    // The tool result of the MCP call reached the model.
    let result = json(&before.messages);
    assert!(result.contains("alpha:hi"), "{result}");
    manager.shutdown().await;
}

#[tokio::test]
async fn tools_changing_mid_conversation_keep_the_tools_chapter_and_are_said_at_the_end() {
    let Some(manager) = churn_manager(Duration::from_secs(30)).await else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let provider = Scripted::new(vec![vec![], vec![]]);
    let mut agent = agent(dir.path(), provider.clone(), full_row());
    agent.set_tool_source(Some(Arc::new(manager.clone())));
    agent.prompt("first").await.unwrap();
    churn(&manager, "add_gamma").await;
    churn(&manager, "remove_beta").await;
    agent.prompt("second").await.unwrap();

    let requests = provider.requests();
    let (before, after) = (&requests[0], &requests[1]);
    assert_eq!(
        json(&before.tools),
        json(&after.tools[..before.tools.len()]),
        "the tools chapter is kept; beta stays declared"
    );
    let added: Vec<_> = after.tools[before.tools.len()..].iter().collect();
    assert_eq!(added.len(), 1);
    assert_eq!(added[0].name, "mcp__churn__gamma");
    assert!(
        added[0].defer_loading,
        "a tool arriving later is deferred on this row"
    );
    assert_eq!(json(&before.system), json(&after.system));
    assert_eq!(
        json(&before.messages),
        json(&after.messages[..before.messages.len()])
    );
    // The change is said at the end: tool_addition and tool_removal after the new prompt.
    let tail: Vec<&ContentBlock> = after.messages[before.messages.len()..]
        .iter()
        .filter(|m| m.role == Role::System)
        .flat_map(|m| &m.content)
        .collect();
    assert!(
        tail.iter().any(|b| matches!(b, ContentBlock::ToolAddition { tools } if tools[0].name == "mcp__churn__gamma")),
        "{tail:?}"
    );
    assert!(
        tail.iter().any(
            |b| matches!(b, ContentBlock::ToolRemoval { names } if names == &["mcp__churn__beta"])
        ),
        "{tail:?}"
    );
    manager.shutdown().await;
}

fn churn_config(python: &std::path::Path) -> strata_mcp::ServerConfig {
    crate::deps::server(
        "churn",
        crate::deps::stdio(python, &[crate::deps::churn_script().to_str().unwrap()]),
    )
}

#[tokio::test]
async fn the_first_request_waits_for_a_starting_server_and_a_late_one_is_an_addition() {
    let Some(python) = crate::deps::python() else {
        return;
    };
    // Waited for: the first request already declares the server's tools.
    let dir = tempfile::tempdir().unwrap();
    let provider = Scripted::new(vec![vec![]]);
    let waiting = strata_mcp::McpManager::new(vec![churn_config(&python)], Duration::from_secs(60));
    let mut waited = agent(dir.path(), provider.clone(), full_row());
    waited.set_tool_source(Some(Arc::new(waiting.clone())));
    waited.prompt("first").await.unwrap();
    let first = &provider.requests()[0];
    assert!(
        first
            .tools
            .iter()
            .any(|t| t.name == "mcp__churn__alpha" && !t.defer_loading),
        "declared from the start"
    );
    waiting.shutdown().await;

    // Not waited for (no startup wait): its tools arrive later as additions, never a rewrite.
    let dir = tempfile::tempdir().unwrap();
    let provider = Scripted::new(vec![vec![], vec![]]);
    let late = strata_mcp::McpManager::new(vec![churn_config(&python)], Duration::ZERO);
    let mut raced = agent(dir.path(), provider.clone(), full_row());
    raced.set_tool_source(Some(Arc::new(late.clone())));
    raced.prompt("first").await.unwrap();
    late.wait_ready().await;
    let mut generation = late.subscribe();
    while late.status()[0].state == strata_mcp::ServerState::Connecting {
        crate::deps::changed(&mut generation).await;
    }
    raced.prompt("second").await.unwrap();
    let requests = provider.requests();
    let (before, after) = (&requests[0], &requests[1]);
    assert!(!before.tools.iter().any(|t| t.name.starts_with("mcp__")));
    assert_eq!(
        json(&before.tools),
        json(&after.tools[..before.tools.len()])
    );
    let added: Vec<&str> = after.tools[before.tools.len()..]
        .iter()
        .map(|t| t.name.as_str())
        .collect();
    assert_eq!(
        added,
        [
            "mcp__churn__alpha",
            "mcp__churn__beta",
            "mcp__churn__churn",
            "mcp__churn__slow"
        ]
    );
    assert_eq!(json(&before.system), json(&after.system));
    late.shutdown().await;
}

/// A deferred server's manager (the churn server with `exposure = "deferred"`), started.
async fn deferred_churn(native: bool) -> Option<strata_mcp::McpManager> {
    let python = crate::deps::python()?;
    let mut config = churn_config(&python);
    config.exposure = strata_mcp::config::Exposure::Deferred;
    let manager = crate::deps::started(vec![config]).await;
    manager.set_native_deferral(native);
    Some(manager)
}

#[tokio::test]
async fn a_deferred_server_is_declared_with_defer_loading_from_the_first_request() {
    let Some(manager) = deferred_churn(true).await else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let provider = Scripted::new(vec![
        vec![("mcp__churn__alpha", json!({"text": "hi"}))],
        vec![],
        vec![],
    ]);
    let mut agent = agent(dir.path(), provider.clone(), full_row());
    agent.set_tool_source(Some(Arc::new(manager.clone())));
    agent.prompt("first").await.unwrap();
    agent.prompt("second").await.unwrap();
    let requests = provider.requests();
    let first = &requests[0];
    let names: Vec<&str> = first.tools.iter().map(|t| t.name.as_str()).collect();
    let search = names
        .iter()
        .position(|n| *n == strata_provider::TOOL_SEARCH_TOOL)
        .expect("the provider's tool search is declared");
    let placeholder = names
        .iter()
        .position(|n| *n == strata_context::render::DEFERRED_PLACEHOLDER)
        .expect("the placeholder is declared");
    let alpha = names
        .iter()
        .position(|n| *n == "mcp__churn__alpha")
        .unwrap();
    assert!(search < placeholder && placeholder < alpha, "{names:?}");
    for tool in &first.tools {
        // The built-ins are declared as always; the server's tools are deferred; nothing
        // goes behind the client-side search.
        let mcp = tool.name.starts_with("mcp__churn__");
        assert_eq!(
            tool.defer_loading,
            mcp || tool.name == strata_context::render::DEFERRED_PLACEHOLDER,
            "{}",
            tool.name
        );
        assert_ne!(tool.name, "mcp_tool_search");
    }
    assert!(
        names.iter().take(search).all(|n| !n.starts_with("mcp")),
        "{names:?}"
    );
    // The call reached the server, and the tools chapter did not move afterwards.
    assert!(json(&requests[1].messages).contains("alpha:hi"));
    assert_eq!(json(&first.tools), json(&requests[2].tools));

    // On the wire: Anthropic's regex tool search stands where the renderer put it, each
    // deferred tool carries `defer_loading`; OpenAI's hosted `tool_search` goes there instead.
    let caps = full_row();
    let model = strata_provider::Model {
        provider: "anthropic".into(),
        id: "claude-sonnet-4-5".into(),
        name: "Claude Sonnet 4.5".into(),
        context_window: 200_000,
        max_output: 64_000,
        input: Vec::new(),
        reasoning: false,
        prices: Default::default(),
    };
    let body = strata_anthropic::build_body(first, &model, &caps);
    let wire = body["tools"].as_array().unwrap();
    assert_eq!(wire[search]["type"], "tool_search_tool_regex_20251119");
    assert_eq!(wire[alpha]["defer_loading"], true);
    assert!(
        wire[..search]
            .iter()
            .all(|t| t.get("defer_loading").is_none())
    );
    let built = strata_openai_responses::build_request(
        &model,
        first,
        &caps,
        strata_openai_responses::SystemPlacement::Instructions,
        None,
    );
    let wire = built.body["tools"].as_array().unwrap();
    let kinds: Vec<&str> = wire.iter().map(|t| t["type"].as_str().unwrap()).collect();
    assert_eq!(
        kinds.iter().filter(|k| **k == "tool_search").count(),
        1,
        "{kinds:?}"
    );
    assert_eq!(wire[search]["type"], "tool_search");
    assert_eq!(wire.len(), first.tools.len());
    assert!(
        wire.iter()
            .all(|t| t.get("name").and_then(Value::as_str)
                != Some(strata_provider::TOOL_SEARCH_TOOL))
    );
    manager.shutdown().await;
}

#[tokio::test]
async fn without_native_deferral_a_deferred_server_stays_behind_the_client_search() {
    let Some(manager) = deferred_churn(false).await else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let provider = Scripted::new(vec![vec![]]);
    let mut agent = agent(dir.path(), provider.clone(), full_row());
    agent.set_tool_source(Some(Arc::new(manager.clone())));
    agent.prompt("first").await.unwrap();
    let first = &provider.requests()[0];
    let names: Vec<&str> = first.tools.iter().map(|t| t.name.as_str()).collect();
    assert!(names.contains(&"mcp_tool_search"), "{names:?}");
    assert!(
        !names.iter().any(|n| n.starts_with("mcp__churn__")),
        "{names:?}"
    );
    assert!(
        !names.contains(&strata_provider::TOOL_SEARCH_TOOL),
        "{names:?}"
    );
    manager.shutdown().await;
}
