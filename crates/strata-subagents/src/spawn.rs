//! One delegation call: choose how the child starts, write its session file, drive it as an
//! agent of its own under its budget and the parent's abort, and hand back its final answer.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde::Deserialize;
use serde_json::{Map, Value, json};
use strata_agent::{Agent, AgentEvent, convert};
use strata_context::{RenderOptions, Renderer};
use strata_runtime::ModelRoute;
use strata_session::{AgentMessage, Entry, EntryId, Session, WriteOptions};
use strata_tools::{
    CallerSession, Mailbox, Posting, ToolContext, ToolOutput, ToolSet, UpdateSender,
};
use tokio::sync::mpsc::UnboundedReceiver;
use tokio_util::sync::CancellationToken;

use crate::definition::AgentDefinition;
use crate::event::{ChildEvent, ChildEventKind};
use crate::pricing::{CacheModel, SpawnInputs, Start, choose};
use crate::tool::{Budget, ParentSetup, Subagents, TOOL_NAME};

/// The header field of a child's file naming where it was spawned (Pi keeps unknown header
/// fields and reads none of them).
pub const SPAWNED_BY_FIELD: &str = strata_session::SPAWNED_BY_FIELD;

/// The result a forked child reads for its own delegation call, before its task.
pub const FORK_RESULT: &str = "Running in a child agent: your task follows.";

/// The result a forked child reads for a sibling's delegation call in the same message.
pub const SIBLING_RESULT: &str = "Running in another child agent.";

/// The first words of a forked child's task message.
pub const FORK_PREAMBLE: &str = "You are a child agent forked from the conversation above at \
     your delegation call. Do only the task below; your last message is the answer the parent \
     receives, so make it complete and self-contained.";

/// Tokens assumed for a system prompt that could not be rendered (no parent file).
const FALLBACK_SYSTEM_TOKENS: u64 = 2_000;

#[derive(Debug, Deserialize)]
struct TaskArgs {
    description: String,
    prompt: String,
    // Claude Code's models call it `subagent_type`.
    #[serde(default, alias = "subagent_type")]
    agent: Option<String>,
    // Claude Code's name; `background` as pi-subagents' models may say it.
    #[serde(default, alias = "background")]
    run_in_background: bool,
}

/// Runs one delegation call to its tool result; every failure is an error result.
pub(crate) async fn run(
    subagents: &Arc<Subagents>,
    depth: u32,
    call: strata_tools::ToolCall,
    ctx: &ToolContext,
    updates: Option<UpdateSender>,
) -> ToolOutput {
    match run_child(subagents, depth, &call, ctx, updates).await {
        Ok(output) => output,
        Err(message) => ToolOutput::error(message),
    }
}

/// Where the parent stands at the spawning call, read from its session file.
struct ParentPoint {
    session: Session,
    entry: EntryId,
    calls: Vec<strata_session::ToolCall>,
    prefix_tokens: u64,
    age: Duration,
    fixed_tokens: u64,
}

async fn run_child(
    subagents: &Arc<Subagents>,
    depth: u32,
    call: &strata_tools::ToolCall,
    ctx: &ToolContext,
    updates: Option<UpdateSender>,
) -> Result<ToolOutput, String> {
    let args: TaskArgs = serde_json::from_value(call.arguments.clone())
        .map_err(|error| format!("invalid arguments for `{TOOL_NAME}`: {error}"))?;
    let settings = subagents.settings.clone();
    if depth >= settings.max_depth {
        return Err(format!(
            "delegation depth limit reached: an agent at depth {depth} may not delegate \
             (subagents.max_depth = {}); do the task yourself",
            settings.max_depth
        ));
    }
    let definition: Option<AgentDefinition> = match &args.agent {
        None => None,
        Some(name) => Some(subagents.agents.get(name).cloned().ok_or_else(|| {
            let known: Vec<&str> = subagents.agents.agents.keys().map(String::as_str).collect();
            format!(
                "unknown agent `{name}`; known: {}",
                if known.is_empty() {
                    "none".to_owned()
                } else {
                    known.join(", ")
                }
            )
        })?),
    };
    let setup = subagents
        .parent
        .lock()
        .map_err(|_| "delegation state poisoned".to_owned())?
        .clone();
    // The parent switched model since delegation was set up: its children follow (a fork
    // must run on the model whose cache it reads).
    let setup = match (ctx.caller.as_ref(), subagents.router.as_ref()) {
        (Some(caller), Some(router)) if caller.model != setup.config.model.qualified_id() => {
            match router.route(&caller.model) {
                Ok(route) => setup.on_route(&route),
                Err(_) => setup,
            }
        }
        _ => setup,
    };

    // Another model never shares the parent's cache: such a child starts fresh.
    let other_model = match definition.as_ref().and_then(|d| d.model.as_deref()) {
        Some(model) if !names_model(model, &setup.config.model) => {
            let router = subagents.router.as_ref().ok_or_else(|| {
                format!("agent names model `{model}`, but no model router is configured")
            })?;
            Some(router.route(model)?)
        }
        _ => None,
    };
    let point = parent_point(ctx.caller.as_ref(), &setup);
    let fork_blocked = match (&other_model, &point) {
        (Some(route), _) => Some(format!(
            "the agent runs on {}, the parent on {}",
            route.model.qualified_id(),
            setup.config.model.qualified_id()
        )),
        (None, Err(why)) => Some(why.clone()),
        (None, Ok(_)) => None,
    };
    let task_tokens = (args.prompt.len() + args.description.len()) as u64 / 4;
    let body_tokens = definition.as_ref().map_or(0, |d| d.prompt.len() as u64 / 4);
    let fixed_tokens = match &point {
        Ok(point) => point.fixed_tokens,
        Err(_) => tool_tokens(&setup.tools) + FALLBACK_SYSTEM_TOKENS,
    };
    // A fresh child on the parent's model, tools and system prompt sends the parent's tools and
    // system chapters byte for byte: with the parent's cache route it reads them from the cache
    // the parent wrote.
    let shares_head = other_model.is_none()
        && point.is_ok()
        && definition
            .as_ref()
            .is_none_or(|d| d.prompt.is_empty() && d.tools.is_none());
    let inputs = SpawnInputs {
        fresh_shared_tokens: if shares_head { fixed_tokens } else { 0 },
        parent_prefix_tokens: point.as_ref().map_or(0, |p| p.prefix_tokens),
        parent_prefix_age: point.as_ref().map_or(Duration::ZERO, |p| p.age),
        fresh_prefix_tokens: fixed_tokens + task_tokens + body_tokens,
        expected_requests: definition
            .as_ref()
            .and_then(|d| d.max_turns)
            .map_or(settings.expected_requests, |turns| {
                settings.expected_requests.min(u64::from(turns))
            }),
        fork_blocked,
    };
    let cache = CacheModel::for_model(
        &setup.config.capabilities,
        &setup.config.model,
        setup.config.cache.retention,
    );
    let mode = definition
        .as_ref()
        .and_then(|d| d.mode)
        .unwrap_or(settings.mode);
    let decision = choose(mode, &inputs, &cache);

    // The parent waits for a slot (its abort ends the wait). A child holds a slot of its
    // own, so it does not wait: children all waiting on each other's slots would never end.
    let _slot = if depth == 0 {
        tokio::select! {
            biased;
            () = ctx.cancel.cancelled() => return Err(strata_tools::ABORTED_MESSAGE.to_owned()),
            permit = Arc::clone(&subagents.slots).acquire_owned() => {
                permit.map_err(|_| "delegation slots closed".to_owned())?
            }
        }
    } else {
        Arc::clone(&subagents.slots)
            .try_acquire_owned()
            .map_err(|_| {
                format!(
                    "no delegation slot is free (subagents.max_parallel = {}, all held by \
                     running children, this one included); do the task yourself",
                    settings.max_parallel
                )
            })?
    };

    let path = child_path(ctx.caller.as_ref(), &call.id);
    let mut spawned_by = Map::new();
    spawned_by.insert(
        "session".into(),
        ctx.caller
            .as_ref()
            .map_or(Value::Null, |c| Value::String(c.id.clone())),
    );
    spawned_by.insert(
        "entryId".into(),
        ctx.caller
            .as_ref()
            .and_then(|c| c.entry_id.clone())
            .map_or(Value::Null, Value::String),
    );
    spawned_by.insert("toolCallId".into(), Value::String(call.id.clone()));
    spawned_by.insert(
        "agent".into(),
        definition
            .as_ref()
            .map_or(Value::Null, |d| Value::String(d.name.clone())),
    );
    spawned_by.insert(
        "start".into(),
        Value::String(decision.start.as_str().into()),
    );
    spawned_by.insert("depth".into(), json!(depth + 1));
    spawned_by.insert(
        "description".into(),
        Value::String(args.description.clone()),
    );
    // Why it started this way, readable from the child's file alone (the listings, the export).
    spawned_by.insert("reason".into(), Value::String(decision.reason.clone()));
    let mut fields = Map::new();
    fields.insert(SPAWNED_BY_FIELD.into(), Value::Object(spawned_by));

    let (session, forked) = match (&decision.start, point) {
        (Start::Fork, Ok(point)) => (fork_session(&point, &path, fields, &call.id)?, true),
        _ => {
            let mut header = strata_session::new_header(
                &setup.config.cwd.display().to_string(),
                ctx.caller.as_ref().map(|c| c.path.display().to_string()),
            );
            header.extra = fields;
            let session = Session::create_with_header(&path, header, WriteOptions::default())
                .map_err(|error| format!("cannot create the child's session file: {error}"))?;
            (session, false)
        }
    };

    let mut agent = build_agent(
        subagents,
        depth,
        session,
        &setup,
        other_model.as_ref(),
        definition.as_ref(),
        forked,
    );
    if (forked || shares_head)
        && let Some(caller) = &ctx.caller
    {
        agent.share_cache_key(caller.id.clone());
    }
    let task = task_text(&args, definition.as_ref(), forked);
    let budget = Budget {
        max_turns: definition
            .as_ref()
            .and_then(|d| d.max_turns)
            .or(settings.budget.max_turns),
        ..settings.budget
    };
    let events = agent.subscribe();
    // In the background only where the parent's driver delivers later messages (a child's
    // own children run within their call: nobody wakes a child that has ended).
    let background = match (&ctx.mailbox, args.run_in_background) {
        (Some(mailbox), true) => {
            let fallback = notification(
                &call.id,
                &args.description,
                &path,
                &ToolOutput::error("the child agent ended without an answer (it was stopped)"),
            );
            Some((mailbox, mailbox.promise(fallback)))
        }
        _ => None,
    };
    // A background child's progress outlives the call: it goes out through the mailbox.
    let updates = match &background {
        Some((mailbox, _)) => Some(forward_updates((*mailbox).clone(), call.id.clone())),
        None => updates,
    };
    let progress = Progress {
        sender: updates,
        start: decision.start.as_str(),
        description: args.description.clone(),
        reason: decision.reason.clone(),
        session: path.clone(),
    };
    progress.send(STATUS_RUNNING, "started", &Watched::default());
    subagents.emit(ChildEvent {
        child: call.id.clone(),
        session: path.clone(),
        depth: depth + 1,
        kind: ChildEventKind::Started {
            agent: definition.as_ref().map(|d| d.name.clone()),
            start: decision.start.as_str(),
            reason: decision.reason.clone(),
            description: args.description.clone(),
        },
    });
    let running = Running {
        subagents: Arc::clone(subagents),
        agent,
        task,
        events,
        budget,
        cancel: ctx.cancel.child_token(),
        progress,
        call_id: call.id.clone(),
        path,
        description: args.description,
        agent_name: definition.map(|d| d.name),
        start: decision.start.as_str(),
        reason: decision.reason,
        depth: depth + 1,
        _slot,
    };
    match background {
        None => Ok(running.finish().await),
        Some((_, posting)) => Ok(running.in_background(posting)),
    }
}

/// A child built and started, to be driven to its end.
struct Running {
    subagents: Arc<Subagents>,
    agent: Agent,
    task: String,
    events: UnboundedReceiver<AgentEvent>,
    budget: Budget,
    /// The parent's abort (a child of its token, so a background child can also be stopped
    /// alone when the parent's session ends).
    cancel: CancellationToken,
    progress: Progress,
    call_id: String,
    path: PathBuf,
    description: String,
    agent_name: Option<String>,
    start: &'static str,
    reason: String,
    depth: u32,
    /// Its place among the parallel children, held until it ends.
    _slot: tokio::sync::OwnedSemaphorePermit,
}

impl Running {
    /// Runs it in a task of its own: the call returns at once, naming the child; its answer
    /// (or its error) is posted to the parent's conversation when it ends, and its progress
    /// goes out as the call's updates meanwhile.
    fn in_background(self, posting: Posting) -> ToolOutput {
        let line = format!(
            "Started child agent `{}` ({}) in the background: {}. Its session: {}. Its answer \
             will arrive later as a message in this conversation; go on with other work \
             meanwhile and do not wait for it.",
            self.call_id,
            self.start,
            self.description,
            self.path.display()
        );
        let details = json!({
            "subagent": {
                "session": self.path.display().to_string(),
                "description": self.description,
                "agent": self.agent_name,
                "start": self.start,
                "reason": self.reason,
                "depth": self.depth,
                "background": true,
                "status": STATUS_RUNNING,
                "outcome": "background",
            }
        });
        tokio::spawn(async move {
            let call_id = self.call_id.clone();
            let description = self.description.clone();
            let session = self.path.clone();
            let cancel = self.cancel.clone();
            let drive = self.finish();
            tokio::pin!(drive);
            // The parent's session ended: nobody will read the answer; stop the child (its
            // file stays as written).
            let output = tokio::select! {
                done = &mut drive => done,
                () = posting.closed() => {
                    cancel.cancel();
                    drive.await
                }
            };
            posting.post(notification(&call_id, &description, &session, &output));
        });
        ToolOutput::text(line).with_details(details)
    }

    /// Drives the child to its end: its result for the parent, with the run's facts in the
    /// details.
    async fn finish(self) -> ToolOutput {
        let Self {
            subagents,
            mut agent,
            task,
            events,
            budget,
            cancel,
            progress,
            call_id,
            path,
            description,
            agent_name,
            start,
            reason,
            depth,
            _slot,
        } = self;
        let watcher = tokio::spawn(watch(
            events,
            agent.control(),
            cancel,
            budget,
            Tag {
                subagents: Arc::clone(&subagents),
                child: call_id.clone(),
                session: path.clone(),
                depth,
            },
            progress,
        ));
        let result = agent.prompt(task).await;
        // The loop's event channel closes with the agent: the watcher ends.
        drop(agent);
        let (watched, progress) = watcher.await.unwrap_or_default();

        let (output, outcome) = match (result, &watched.stop) {
            (_, Some(Stop::Budget(limit))) => (
                Err(format!(
                    "the child agent stopped at its budget ({limit}); its session: {}",
                    path.display()
                )),
                "budget",
            ),
            (_, Some(Stop::Parent)) => (Err(strata_tools::ABORTED_MESSAGE.to_owned()), "aborted"),
            (Err(error), None) => (
                Err(format!(
                    "the child agent failed: {error}; its session: {}",
                    path.display()
                )),
                "error",
            ),
            (Ok(summary), None) if summary.reason == "stop" => (Ok(summary.final_text), "stop"),
            (Ok(summary), None) => (
                Err(format!(
                    "the child agent ended with `{}`{}; its session: {}",
                    summary.reason,
                    if summary.final_text.is_empty() {
                        String::new()
                    } else {
                        format!(" after writing: {}", summary.final_text)
                    },
                    path.display()
                )),
                if summary.reason == "aborted" {
                    "aborted"
                } else {
                    "error"
                },
            ),
        };
        // The last update says how it ended, so a front end that shows running children from
        // the updates alone sees the child's final state before the result arrives.
        if let Some(progress) = &progress {
            let status = if output.is_ok() {
                STATUS_DONE
            } else {
                STATUS_FAILED
            };
            progress.send(status, outcome, &watched);
        }
        let details = json!({
            "subagent": {
                "session": path.display().to_string(),
                "description": description,
                "agent": agent_name,
                "start": start,
                "reason": reason,
                "depth": depth,
                "outcome": outcome,
                "turns": watched.turns,
                "requests": watched.requests,
                "usage": {
                    "input": watched.input,
                    "output": watched.output,
                    "cacheRead": watched.cache_read,
                    "cacheWrite": watched.cache_write,
                    "cost": watched.cost,
                },
                "firstRequest": watched.first.map(|(prompt, read)| json!({
                    "prompt": prompt,
                    "cacheRead": read,
                })),
            }
        });
        subagents.emit(ChildEvent {
            child: call_id,
            session: path,
            depth,
            kind: ChildEventKind::Ended {
                is_error: output.is_err(),
                outcome: outcome.to_owned(),
                cost: watched.cost,
            },
        });
        match output {
            Ok(text) => ToolOutput::text(text).with_details(details),
            Err(message) => ToolOutput::error(message).with_details(details),
        }
    }
}

/// A sender whose outputs go out as updates of call `id` through `mailbox`.
fn forward_updates(mailbox: Mailbox, id: String) -> UpdateSender {
    let (sender, mut receiver) = tokio::sync::mpsc::unbounded_channel::<ToolOutput>();
    tokio::spawn(async move {
        while let Some(output) = receiver.recv().await {
            mailbox.update(id.clone(), output);
        }
    });
    sender
}

/// The message a background child's end posts to the parent (strata-session's
/// [`strata_session::task_notification`], which the read model also reads back to count the
/// child's cost from its file).
fn notification(call_id: &str, description: &str, session: &Path, output: &ToolOutput) -> String {
    strata_session::task_notification(
        call_id,
        description,
        output.is_error,
        session,
        &output.text_content(),
    )
}

/// Whether an agent file's `model` names the parent's model.
fn names_model(name: &str, model: &strata_provider::Model) -> bool {
    name == model.id || name == model.qualified_id()
}

/// Tokens of the tools chapter, from the definitions' JSON.
fn tool_tokens(tools: &ToolSet) -> u64 {
    tools
        .definitions()
        .iter()
        .map(|d| serde_json::to_string(d).map_or(0, |json| json.len() as u64))
        .sum::<u64>()
        / 4
}

/// Reads the parent's file at the spawning call: the prefix its last request sent (from that
/// answer's usage), how long ago, and what its tools and system chapters weigh.
fn parent_point(
    caller: Option<&CallerSession>,
    setup: &ParentSetup,
) -> Result<ParentPoint, String> {
    let caller = caller.ok_or("the call carries no parent session")?;
    let parent_model = setup.config.model.qualified_id();
    if caller.model != parent_model {
        return Err(format!(
            "the parent runs on {}, delegation was set up for {parent_model}",
            caller.model
        ));
    }
    let entry = EntryId::from(
        caller
            .entry_id
            .clone()
            .ok_or("the call names no spawning entry")?,
    );
    let session = Session::open(&caller.path)
        .map_err(|error| format!("cannot read the parent's session: {error}"))?
        .session;
    let message = match session.tree().entry(&entry) {
        Ok(Entry::Message(message)) => message.message.into_message(),
        Ok(_) => return Err("the spawning entry is not a message".into()),
        Err(error) => return Err(format!("cannot read the spawning entry: {error}")),
    };
    let AgentMessage::Assistant(assistant) = message else {
        return Err("the spawning entry is not an assistant message".into());
    };
    let calls: Vec<strata_session::ToolCall> = assistant.tool_calls().cloned().collect();
    let usage = &assistant.usage;
    let age_ms = strata_session::now_unix_millis().saturating_sub(assistant.timestamp);
    let context = strata_context::build(session.tree(), Some(&entry))
        .map_err(|error| format!("cannot build the parent's context: {error}"))?;
    let mut renderer = Renderer::new(setup.config.capabilities.clone(), RenderOptions::default());
    let (rendered, _) = renderer.render(&context);
    let fixed_tokens = (rendered.bytes.tools.len() + rendered.bytes.system.len()) as u64 / 4;
    let rendered_tokens = fixed_tokens + rendered.bytes.messages.len() as u64 / 4;
    let reported = usage.input + usage.cache_read + usage.cache_write;
    Ok(ParentPoint {
        session,
        entry,
        calls,
        prefix_tokens: if reported > 0 {
            reported
        } else {
            rendered_tokens
        },
        age: Duration::from_millis(u64::try_from(age_ms).unwrap_or(0)),
        fixed_tokens,
    })
}

/// `<parent dir>/<parent stem>.subagents/<millis>_<call id>.jsonl`; beside no parent, under
/// the temp dir.
fn child_path(caller: Option<&CallerSession>, call_id: &str) -> PathBuf {
    let dir = match caller {
        Some(caller) => strata_session::children_dir(&caller.path),
        None => std::env::temp_dir().join("strata-subagents"),
    };
    let id: String = call_id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    dir.join(format!("{}_{id}.jsonl", strata_session::now_unix_millis()))
}

/// The parent's path up to the spawning message, copied byte for byte, then a result for each
/// of that message's calls (a provider refuses a call left without one).
fn fork_session(
    point: &ParentPoint,
    path: &Path,
    fields: Map<String, Value>,
    own_call: &str,
) -> Result<Session, String> {
    point
        .session
        .fork_with_header_fields(Some(&point.entry), path, fields)
        .map_err(|error| format!("cannot fork the parent's session: {error}"))?;
    let mut session = Session::open_writable(path, WriteOptions::default())
        .map_err(|error| format!("cannot open the child's session: {error}"))?
        .session;
    for call in &point.calls {
        let text = if call.id == own_call {
            FORK_RESULT
        } else {
            SIBLING_RESULT
        };
        session
            .append_message(convert::tool_result(
                call,
                &ToolOutput::text(text),
                strata_session::now_unix_millis(),
            ))
            .map_err(|error| format!("cannot write the child's session: {error}"))?;
    }
    Ok(session)
}

/// The child: the parent's configuration (or the agent's model), the tools the agent file
/// allows (a fork keeps the rest declared and is told of the removal, as for any tool
/// change), and the delegation tool one level down.
fn build_agent(
    subagents: &Arc<Subagents>,
    depth: u32,
    session: Session,
    setup: &ParentSetup,
    other_model: Option<&ModelRoute>,
    definition: Option<&AgentDefinition>,
    forked: bool,
) -> Agent {
    let setup = match other_model {
        Some(route) => setup.clone().on_route(route),
        None => setup.clone(),
    };
    let mut config = setup.config.clone();
    let provider = Arc::clone(&setup.provider);
    // A fresh child's system prompt opens with the agent's own instructions; a fork's system
    // chapter is the parent's, so they go into its task instead.
    if !forked && let Some(definition) = definition.filter(|d| !d.prompt.is_empty()) {
        config.custom_intro = Some(definition.prompt.clone());
    }
    let allowed = |name: &str| {
        definition
            .and_then(|d| d.tools.as_ref())
            .is_none_or(|tools| tools.iter().any(|t| t == name))
    };
    let mut tools = ToolSet::new();
    for tool in setup.tools.iter() {
        if tool.name() != TOOL_NAME && allowed(tool.name()) {
            tools.insert(Arc::clone(tool));
        }
    }
    if allowed(TOOL_NAME) {
        tools.insert(subagents.tool_at(depth + 1));
    }
    let mut agent = Agent::new(session, provider, tools, config);
    agent.set_project_skills(setup.project_skills);
    // The parent's gate: the mode, the rules and the answers given for the session hold for
    // its children (a child can do nothing its parent could not).
    agent.set_tool_rules(setup.rules.clone());
    agent
}

fn task_text(args: &TaskArgs, definition: Option<&AgentDefinition>, forked: bool) -> String {
    let mut text = String::new();
    if forked {
        text.push_str(FORK_PREAMBLE);
        text.push_str("\n\n");
        if let Some(definition) = definition.filter(|d| !d.prompt.is_empty()) {
            text.push_str(&format!(
                "Act as the `{}` agent:\n{}\n\n",
                definition.name, definition.prompt
            ));
        }
    }
    text.push_str(&format!("Task: {}\n\n{}", args.description, args.prompt));
    text
}

/// Why the watcher stopped the child.
#[derive(Debug, Clone, PartialEq)]
enum Stop {
    /// The parent was aborted.
    Parent,
    /// A limit of its budget, named.
    Budget(String),
}

/// What the watcher saw of the child's run.
#[derive(Debug, Default)]
struct Watched {
    turns: usize,
    /// Requests answered (the `Usage` events seen).
    requests: usize,
    input: u64,
    output: u64,
    cache_read: u64,
    cache_write: u64,
    cost: f64,
    /// The first request's prompt tokens and how many were read from the cache.
    first: Option<(u64, u64)>,
    stop: Option<Stop>,
}

/// How a child's events are tagged for front ends.
struct Tag {
    subagents: Arc<Subagents>,
    child: String,
    session: PathBuf,
    depth: u32,
}

/// Follows the child's events: totals its usage, stops it at its budget or when the parent is
/// aborted, and forwards every event tagged by child.
async fn watch(
    mut events: UnboundedReceiver<AgentEvent>,
    control: strata_agent::Control,
    cancel: CancellationToken,
    budget: Budget,
    tag: Tag,
    progress: Progress,
) -> (Watched, Option<Progress>) {
    let mut watched = Watched::default();
    // An abort before the run starts would be lost: the run takes a fresh switch.
    let mut started = false;
    loop {
        tokio::select! {
            biased;
            () = cancel.cancelled(), if started && watched.stop.is_none() => {
                watched.stop = Some(Stop::Parent);
                control.abort();
            }
            event = events.recv() => {
                let Some(event) = event else { break };
                let mut exceeded = None;
                match &event {
                    AgentEvent::AgentStart => started = true,
                    AgentEvent::TurnStart { turn } => {
                        watched.turns = *turn;
                        if let Some(max) = budget.max_turns
                            && *turn > max as usize
                        {
                            exceeded = Some(format!("{max} turns"));
                        }
                    }
                    AgentEvent::Usage { usage, cost } => {
                        watched.requests += 1;
                        watched.input += usage.input;
                        watched.output += usage.output;
                        watched.cache_read += usage.cache_read;
                        watched.cache_write += usage.cache_write();
                        watched.cost += cost.total();
                        watched.first.get_or_insert((usage.prompt_tokens(), usage.cache_read));
                        let tokens = watched.input + watched.output + watched.cache_read
                            + watched.cache_write;
                        if let Some(max) = budget.max_tokens
                            && tokens > max
                        {
                            exceeded = Some(format!("{max} tokens"));
                        }
                        if let Some(max) = budget.max_cost
                            && watched.cost > max
                        {
                            exceeded = Some(format!("${max}"));
                        }
                    }
                    AgentEvent::ToolStart { name, .. } => {
                        progress.send(STATUS_RUNNING, &format!("turn {} · {name}", watched.turns), &watched);
                    }
                    _ => {}
                }
                match &event {
                    AgentEvent::TurnStart { turn } => {
                        progress.send(STATUS_RUNNING, &format!("turn {turn}"), &watched);
                    }
                    // The cost so far moves with each answered request.
                    AgentEvent::Usage { .. } => {
                        progress.send(STATUS_RUNNING, &format!("turn {}", watched.turns), &watched);
                    }
                    _ => {}
                }
                if let Some(limit) = exceeded
                    && watched.stop.is_none()
                {
                    watched.stop = Some(Stop::Budget(limit));
                    control.abort();
                }
                tag.subagents.emit(ChildEvent {
                    child: tag.child.clone(),
                    session: tag.session.clone(),
                    depth: tag.depth,
                    kind: ChildEventKind::Agent(event),
                });
            }
        }
    }
    (watched, Some(progress))
}

/// A child's status in its progress updates: still working.
pub const STATUS_RUNNING: &str = "running";
/// It ended and the parent gets its answer.
pub const STATUS_DONE: &str = "done";
/// It ended and the parent gets an error result (budget, abort, failure).
pub const STATUS_FAILED: &str = "failed";

/// The child's progress as the delegation call's partial output: one line a front end shows
/// while the call runs (Pi's `tool_execution_update`), tagged by the call like any tool's, and
/// in `details.subagent` the same facts as fields (the vocabulary of the result's details:
/// `session`, `description`, `start`, `reason`, `requests`, `usage.cost`), plus `status`
/// ([`STATUS_RUNNING`], [`STATUS_DONE`], [`STATUS_FAILED`]) and `activity`.
struct Progress {
    sender: Option<UpdateSender>,
    start: &'static str,
    description: String,
    reason: String,
    session: PathBuf,
}

impl Progress {
    fn send(&self, status: &str, activity: &str, watched: &Watched) {
        let Some(sender) = &self.sender else { return };
        let line = format!(
            "child ({}) {}: {status} · {activity} · {} requests · ${:.4} · {}",
            self.start,
            self.description,
            watched.requests,
            watched.cost,
            self.session.display()
        );
        let _ = sender.send(ToolOutput::text(line).with_details(json!({
            "subagent": {
                "session": self.session.display().to_string(),
                "description": self.description,
                "start": self.start,
                "reason": self.reason,
                "status": status,
                "activity": activity,
                "turns": watched.turns,
                "requests": watched.requests,
                "usage": { "cost": watched.cost },
            }
        })));
    }
}
