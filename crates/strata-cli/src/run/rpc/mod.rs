//! `--mode rpc`: Pi's RPC protocol, so Pi's RPC clients drive strata unchanged.
//!
//! Commands arrive as JSON lines on stdin (optional `id` echoed in the response); responses
//! (`{"type":"response","command","success","data"|"error"}`) and Pi's agent events go to
//! stdout as JSON lines. A prompt is answered at once and runs in its own task, which owns
//! the agent; meanwhile the loop here serves steer, follow_up, abort, bash and the read-only
//! commands from [`state::Shared`], and holds commands that change the agent (set_model,
//! compact, new_session, …) until the run ends — compact, new_session, switch_session, fork
//! and clone abort the run first, as Pi does.
//!
//! Supported: prompt (images included; streamingBehavior steer/followUp while running;
//! `/skill:name` expanded), steer and follow_up (with images), abort, new_session, get_state, get_messages, set_model,
//! cycle_model, get_available_models, set_thinking_level, cycle_thinking_level,
//! set_steering_mode, set_follow_up_mode, compact, set_auto_compaction, set_auto_retry, bash,
//! abort_bash, get_session_stats, export_html, switch_session, fork, clone,
//! get_fork_messages, get_last_assistant_text, set_session_name, get_commands (skills).
//! Refused with an error: abort_retry (retries live in the transport; `abort` stops them
//! with the run).
//! `extension_ui_response` is accepted and ignored: strata has no extensions that ask.

mod bash;
mod commands;
mod entries;
mod events;
mod jobs;
mod mcp;
mod protocol;
mod sessions;
mod skills;
mod state;

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use anyhow::Context as _;
use serde_json::{Value, json};
use std::io::BufRead as _;
use strata_agent::{Agent, Control, RetryEvents};
use strata_provider::Model;
use strata_session::{AgentMessage, BashExecutionMessage, ImageContent};
use strata_tools::CancellationToken;
use tokio::sync::mpsc::{UnboundedSender, unbounded_channel};
use tokio::task::JoinHandle;

use super::Setup;
use super::model::{ModelChoice, THINKING_LEVELS};
use commands::{Command, Request, StreamingBehavior};
use jobs::{JobContext, JobEnd, lock, refresh};
use protocol::{Id, Out, failure, success};
use state::Shared;
use strata_runtime::{QueueMode, UserInput};

/// Thinking levels `cycle_thinking_level` steps through (`xhigh` only when asked for by name:
/// few models take it).
const CYCLED_LEVELS: [&str; 5] = ["off", "minimal", "low", "medium", "high"];

/// Serves RPC commands from stdin until it closes.
pub async fn serve(setup: Setup) -> anyhow::Result<()> {
    let built = setup.build_agent()?;
    let (inputs, mut received) = unbounded_channel();
    let mut server = Server::new(setup, built.agent, built.temp, inputs.clone());
    std::thread::spawn(move || read_stdin(inputs));
    let mut job: Option<Job> = None;
    loop {
        // Idle with a session whose cache would expire: ping it as the TUI does (a running job
        // holds the agent, so there is none to ask then).
        let ping_due = server.agent.as_deref().map(Agent::keep_warm_due);
        let step = tokio::select! {
            input = received.recv() => Step::Input(input),
            done = wait(&mut job) => Step::Done(done),
            () = keep_warm_due(ping_due) => Step::KeepWarm,
        };
        match step {
            Step::KeepWarm => server.keep_warm().await,
            Step::Input(Some(Input::Line(line))) => server.handle_line(&line, &mut job),
            Step::Input(Some(Input::BashDone { id, message })) => {
                server.bash_done(&id, *message);
            }
            Step::Input(Some(Input::Closed) | None) => break,
            Step::Done(done) => {
                job = None;
                let end = done.context("the agent task failed")?;
                server.job_finished(end, &mut job);
            }
        }
    }
    // stdin closed: stop a running job and wait for it, so the session ends well-formed.
    if let Some(running) = job.take() {
        server.control.abort();
        let _ = running.handle.await;
    }
    // Stdio MCP servers (and what they started) end with the session.
    server.setup.mcp_manager().shutdown().await;
    Ok(())
}

enum Step {
    Input(Option<Input>),
    Done(Result<JobEnd, tokio::task::JoinError>),
    KeepWarm,
}

/// When the idle agent's next keep-warm ping is due; never without an idle agent.
async fn keep_warm_due(due: Option<impl Future<Output = ()>>) {
    match due {
        Some(due) => due.await,
        None => std::future::pending().await,
    }
}

/// What the command loop reacts to besides a finished job.
enum Input {
    /// One command line (LF-framed, a trailing CR removed).
    Line(String),
    /// stdin reached its end.
    Closed,
    /// A `bash` command finished.
    BashDone {
        /// The command's id.
        id: Id,
        /// The message to record.
        message: Box<BashExecutionMessage>,
    },
}

/// Reads LF-terminated records on a thread of its own (stdin blocks); U+2028 and U+2029 stay
/// inside records, as the protocol says.
fn read_stdin(inputs: UnboundedSender<Input>) {
    let mut stdin = std::io::stdin().lock();
    let mut buffer = Vec::new();
    loop {
        buffer.clear();
        match stdin.read_until(b'\n', &mut buffer) {
            Ok(0) | Err(_) => break,
            Ok(_) => {
                let mut line = String::from_utf8_lossy(&buffer).into_owned();
                if line.ends_with('\n') {
                    line.pop();
                }
                if line.ends_with('\r') {
                    line.pop();
                }
                if line.trim().is_empty() {
                    continue;
                }
                if inputs.send(Input::Line(line)).is_err() {
                    return;
                }
            }
        }
    }
    let _ = inputs.send(Input::Closed);
}

/// A task holding the agent.
struct Job {
    handle: JoinHandle<JobEnd>,
    kind: JobKind,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum JobKind {
    Prompt,
    Compact,
}

async fn wait(job: &mut Option<Job>) -> Result<JobEnd, tokio::task::JoinError> {
    match job {
        Some(job) => (&mut job.handle).await,
        None => std::future::pending().await,
    }
}

/// The command loop's state.
struct Server {
    setup: Setup,
    out: Out,
    shared: Arc<Mutex<Shared>>,
    /// `None` while a job holds it, or after a rebuild failed (`broken` says why).
    agent: Option<Box<Agent>>,
    broken: Option<String>,
    control: Control,
    /// `--no-session`'s directory, deleted when the server ends.
    _temp: Option<tempfile::TempDir>,
    inputs: UnboundedSender<Input>,
    /// Commands that change the agent, held while a job runs.
    deferred: VecDeque<Request>,
    /// `abort` answers, sent once the aborted job has ended (Pi answers when idle).
    abort_replies: Vec<Value>,
    /// `bash` results that finished during a run, recorded once the agent is back.
    pending_bash: Vec<BashExecutionMessage>,
    bash_cancel: Option<CancellationToken>,
    /// The configured retry limit (`set_auto_retry false` sets 0, `true` restores this).
    max_retries: u32,
}

impl Server {
    fn new(
        setup: Setup,
        agent: Agent,
        temp: Option<tempfile::TempDir>,
        inputs: UnboundedSender<Input>,
    ) -> Self {
        let control = agent.control();
        let max_retries = setup.config.max_retries;
        let mut server = Self {
            setup,
            out: Out,
            shared: Arc::new(Mutex::new(Shared::default())),
            agent: Some(Box::new(agent)),
            broken: None,
            control,
            _temp: temp,
            inputs,
            deferred: VecDeque::new(),
            abort_replies: Vec::new(),
            pending_bash: Vec::new(),
            bash_cancel: None,
            max_retries,
        };
        server.refresh();
        server
    }

    fn handle_line(&mut self, line: &str, job: &mut Option<Job>) {
        match commands::parse(line) {
            Ok(request) => self.dispatch(request, job),
            Err(refused) => self
                .out
                .send(&failure(&refused.id, &refused.kind, refused.error)),
        }
    }

    fn dispatch(&mut self, request: Request, job: &mut Option<Job>) {
        let Request { id, kind, command } = request;
        let busy = job.as_ref().map(|j| j.kind);
        if busy.is_some() && command.waits_for_idle() {
            if command.aborts_run() {
                // Pi aborts the run first; the command runs once the agent is back.
                self.control.abort();
            }
            self.deferred.push_back(Request { id, kind, command });
            return;
        }
        let reply = match command {
            Command::Prompt {
                message,
                images,
                streaming_behavior,
            } => return self.prompt(&id, message, images, streaming_behavior, job),
            Command::Steer { message, images } => self.queue(&message, images.as_ref(), true),
            Command::FollowUp { message, images } => {
                self.queue(&message, images.as_ref(), false)
            }
            Command::Abort => {
                if busy.is_some() {
                    self.control.abort();
                    self.abort_replies.push(success(&id, "abort", None));
                    return;
                }
                Ok(None)
            }
            Command::GetState => Ok(Some(lock(&self.shared).state())),
            Command::GetMessages => Ok(Some(
                json!({"messages": lock(&self.shared).snapshot.messages}),
            )),
            Command::GetSessionStats => Ok(Some(lock(&self.shared).stats())),
            Command::ClearQueue => Ok(Some(self.clear_queue())),
            Command::GetEntries { since } => self
                .session_file()
                .and_then(|file| entries::entries(&file, since.as_deref()).map(Some)),
            Command::GetTree => self
                .session_file()
                .and_then(|file| entries::tree(&file).map(Some)),
            Command::GetLastAssistantText => Ok(Some(
                json!({"text": lock(&self.shared).last_assistant_text()}),
            )),
            Command::GetForkMessages => self.fork_messages(),
            Command::GetAvailableModels => {
                Ok(Some(json!({"models": self.available_models_json()})))
            }
            Command::GetCommands => Ok(Some(json!({"commands": self.commands()}))),
            Command::SetSteeringMode { mode } => self.set_mode(&mode, true),
            Command::SetFollowUpMode { mode } => self.set_mode(&mode, false),
            Command::Bash {
                command,
                exclude_from_context,
            } => return self.bash(command, exclude_from_context, id),
            Command::AbortBash => {
                if let Some(cancel) = self.bash_cancel.take() {
                    cancel.cancel();
                }
                Ok(None)
            }
            Command::AbortRetry => Err(
                "abort_retry is not supported: strata retries inside the transport, where only `abort` (which ends the run) stops a retry"
                    .to_owned(),
            ),
            Command::ExportHtml { output_path } => self.export_html(output_path.as_deref()),
            Command::GetMcpServers => Ok(Some(self.mcp_servers())),
            Command::McpReconnect { server } => self.mcp_reconnect(server.as_deref()),
            Command::McpSetEnabled { server, enabled } => {
                self.mcp_set_enabled(server.as_deref(), enabled)
            }
            Command::Compact {
                custom_instructions,
            } => return self.compact(custom_instructions, id, job),
            Command::NewSession { parent_session } => self.new_session(parent_session),
            Command::SwitchSession { session_path } => self.switch_session(&session_path),
            Command::Fork { entry_id } => self.fork(&entry_id),
            Command::Clone => self.clone_session(),
            Command::SetModel { provider, model_id } => self.set_model(&provider, &model_id),
            Command::CycleModel => self.cycle_model(),
            Command::SetThinkingLevel { level } => self.set_thinking_level(&level),
            Command::CycleThinkingLevel => self.cycle_thinking_level(),
            Command::SetAutoCompaction { enabled } => self.set_auto_compaction(enabled),
            Command::SetAutoRetry { enabled } => self.set_auto_retry(enabled),
            Command::SetSessionName { name } => self.set_session_name(&name),
            // strata has no extensions asking questions; a stray answer has nobody to reach.
            Command::ExtensionUiResponse => return,
            // Pi 1.6's answer, under the name the client sent.
            Command::Unknown => Err(format!("Unknown command: {kind}")),
        };
        let response = match reply {
            Ok(data) => success(&id, &kind, data),
            Err(error) => failure(&id, &kind, error),
        };
        self.out.send(&response);
    }

    // ---------------------------------------------------------------- prompting

    fn prompt(
        &mut self,
        id: &Id,
        message: String,
        images: Option<Value>,
        streaming_behavior: Option<StreamingBehavior>,
        job: &mut Option<Job>,
    ) {
        let parsed = match parse_images(images.as_ref()) {
            Ok(parsed) => parsed,
            Err(error) => return self.out.send(&failure(id, "prompt", error)),
        };
        match job.as_ref().map(|j| j.kind) {
            Some(JobKind::Compact) => self.deferred.push_back(Request {
                id: id.clone(),
                kind: "prompt".to_owned(),
                command: Command::Prompt {
                    message,
                    images,
                    streaming_behavior,
                },
            }),
            Some(JobKind::Prompt) => {
                let queued = UserInput {
                    text: self.expand(&message),
                    images: parsed,
                };
                let reply = match streaming_behavior {
                    Some(StreamingBehavior::Steer) => self.enqueue(queued, true),
                    Some(StreamingBehavior::FollowUp) => self.enqueue(queued, false),
                    None => Err("Agent is already processing. Specify streamingBehavior ('steer' or 'followUp') to queue the message.".to_owned()),
                };
                let response = match reply {
                    Ok(()) => success(id, "prompt", Some(json!({"disposition": "queued"}))),
                    Err(error) => failure(id, "prompt", error),
                };
                self.out.send(&response);
            }
            None => {
                let text = self.expand(&message);
                if let Err(error) = self.start_prompt(text, parsed, id, job) {
                    self.out.send(&failure(id, "prompt", error));
                }
            }
        }
    }

    fn start_prompt(
        &mut self,
        text: String,
        images: Vec<ImageContent>,
        id: &Id,
        job: &mut Option<Job>,
    ) -> Result<(), String> {
        self.flush_bash()?;
        let agent = self.take_agent()?;
        {
            let mut shared = lock(&self.shared);
            shared.streaming = true;
            shared.queue.feed(&self.control);
        }
        // Pi answers once the prompt is accepted, before its events.
        self.out.send(&success(
            id,
            "prompt",
            Some(json!({"disposition": "started"})),
        ));
        let handle = tokio::spawn(jobs::prompt(agent, text, images, self.job_context()));
        *job = Some(Job {
            handle,
            kind: JobKind::Prompt,
        });
        Ok(())
    }

    /// `steer` / `follow_up` (text and optional images): queued for the run going on, or for
    /// the next one.
    fn queue(
        &mut self,
        message: &str,
        images: Option<&Value>,
        steer: bool,
    ) -> Result<Option<Value>, String> {
        let images = parse_images(images)?;
        let text = self.expand(message);
        self.enqueue(UserInput { text, images }, steer)?;
        Ok(Some(json!({"disposition": "queued"})))
    }

    /// `clear_queue`: drops the steering and follow-up messages not yet delivered and returns
    /// their text, for the client's editor.
    fn clear_queue(&mut self) -> Value {
        let mut shared = lock(&self.shared);
        let texts = shared.queue.clear(&self.control);
        self.out.send(&shared.queue_update());
        json!({"steering": texts.steering, "followUp": texts.follow_up})
    }

    fn enqueue(&mut self, queued: UserInput, steer: bool) -> Result<(), String> {
        let mut shared = lock(&self.shared);
        if steer {
            let running = shared.streaming.then_some(&self.control);
            shared.queue.steer(queued, running);
        } else {
            shared.queue.follow_up(queued);
        }
        self.out.send(&shared.queue_update());
        Ok(())
    }

    fn expand(&self, text: &str) -> String {
        if !text.starts_with("/skill:") {
            return text.to_owned();
        }
        let found = skills::find(self.setup.sources.global_dir.as_deref(), &self.setup.cwd);
        skills::expand(text, &found)
    }

    fn commands(&self) -> Vec<Value> {
        let global = self.setup.sources.global_dir.as_deref();
        skills::commands(&skills::find(global, &self.setup.cwd), global)
    }

    fn set_mode(&mut self, text: &str, steering: bool) -> Result<Option<Value>, String> {
        let mode = QueueMode::parse(text)
            .ok_or_else(|| format!("unknown mode `{text}` (expected `all` or `one-at-a-time`)"))?;
        let mut shared = lock(&self.shared);
        if steering {
            shared.queue.steering_mode = mode;
            if shared.streaming {
                shared.queue.feed(&self.control);
            }
        } else {
            shared.queue.follow_up_mode = mode;
        }
        Ok(None)
    }

    // ---------------------------------------------------------------- jobs

    fn job_context(&self) -> JobContext {
        JobContext {
            out: self.out,
            shared: Arc::clone(&self.shared),
            control: self.control.clone(),
            max_retries: self.setup.config.max_retries,
        }
    }

    fn compact(&mut self, focus: Option<String>, id: Id, job: &mut Option<Job>) {
        let agent = match self.take_agent() {
            Ok(agent) => agent,
            Err(error) => return self.out.send(&failure(&id, "compact", error)),
        };
        lock(&self.shared).compacting = true;
        let handle = tokio::spawn(jobs::compact(agent, focus, id, self.job_context()));
        *job = Some(Job {
            handle,
            kind: JobKind::Compact,
        });
    }

    /// Re-sends the last request so its cache outlives the pause; a failure is reported on
    /// stderr (no command asked for it).
    /// A ping that went out is stored as a `usage` entry of kind `cache_warm`, which Pi 1.6's
    /// cache warmer announces as `entry_appended`.
    async fn keep_warm(&mut self) {
        let Some(agent) = self.agent.as_mut() else {
            return;
        };
        match agent.keep_warm().await {
            Ok(Some(_)) => {
                if let Some(entry) = agent.session().tree().iter().last()
                    && let Some(entry) = entries::entry_json(&entry)
                {
                    self.out
                        .send(&json!({"type": "entry_appended", "entry": entry}));
                }
                self.refresh();
            }
            Ok(None) => {}
            Err(error) => jobs::tracing_error(&format!("keeping the cache warm: {error}")),
        }
    }

    /// The agent is back: answer aborts, record bash output, run the held commands.
    fn job_finished(&mut self, end: JobEnd, job: &mut Option<Job>) {
        self.agent = Some(end.agent);
        self.out.send_all(&end.records);
        for reply in std::mem::take(&mut self.abort_replies) {
            self.out.send(&reply);
        }
        if let Err(error) = self.flush_bash() {
            jobs::tracing_error(&error);
        }
        self.refresh();
        while job.is_none() {
            let Some(request) = self.deferred.pop_front() else {
                break;
            };
            self.dispatch(request, job);
        }
    }

    // ---------------------------------------------------------------- bash

    fn bash(&mut self, line: String, exclude: bool, id: Id) {
        let cancel = CancellationToken::new();
        if let Some(previous) = self.bash_cancel.replace(cancel.clone()) {
            previous.cancel();
        }
        let cwd = self.setup.cwd.clone();
        let inputs = self.inputs.clone();
        let out = self.out;
        let update_id = id.clone();
        // Pi 1.x streams the output, tagged with the command's id when it has one.
        let sink: bash::OutputSink = Arc::new(move |delta: &str| {
            let mut update = json!({"type": "bash_execution_update", "delta": delta});
            if let Some(id) = &update_id {
                update["id"] = id.clone();
            }
            out.send(&update);
        });
        tokio::spawn(async move {
            let mut message = bash::run_streaming(&line, &cwd, cancel, Some(sink)).await;
            message.exclude_from_context = exclude.then_some(true);
            let _ = inputs.send(Input::BashDone {
                id,
                message: Box::new(message),
            });
        });
    }

    fn bash_done(&mut self, id: &Id, message: BashExecutionMessage) {
        let data = bash::result_json(&message);
        self.pending_bash.push(message);
        if self.agent.is_some() {
            if let Err(error) = self.flush_bash() {
                return self.out.send(&failure(id, "bash", error));
            }
            self.refresh();
        }
        self.out.send(&success(id, "bash", Some(data)));
    }

    /// Appends bash results to the session (they reach the model with the next prompt).
    fn flush_bash(&mut self) -> Result<(), String> {
        if self.pending_bash.is_empty() {
            return Ok(());
        }
        let pending = std::mem::take(&mut self.pending_bash);
        let agent = self.agent_mut()?;
        for message in pending {
            agent
                .session_mut()
                .append_message(AgentMessage::BashExecution(message))
                .map_err(|e| format!("recording the bash output: {e}"))?;
        }
        Ok(())
    }

    // ---------------------------------------------------------------- model and thinking

    fn set_model(&mut self, provider: &str, model_id: &str) -> Result<Option<Value>, String> {
        let model = self
            .available_models()
            .into_iter()
            .find(|m| m.provider == provider && m.id == model_id)
            .ok_or_else(|| format!("Model not found: {provider}/{model_id}"))?;
        self.switch_model(&model)?;
        Ok(Some(self.model_json(&model)))
    }

    fn cycle_model(&mut self) -> Result<Option<Value>, String> {
        let models = self.available_models();
        if models.len() <= 1 {
            return Ok(Some(Value::Null));
        }
        let current = self.agent_mut()?.config().model.clone();
        let position = models
            .iter()
            .position(|m| m.provider == current.provider && m.id == current.id);
        let next = match position {
            Some(index) => models[(index + 1) % models.len()].clone(),
            None => models[0].clone(),
        };
        self.switch_model(&next)?;
        let thinking = lock(&self.shared).snapshot.thinking_level.clone();
        Ok(Some(json!({
            "model": self.model_json(&next),
            "thinkingLevel": thinking,
            "isScoped": false,
        })))
    }

    fn switch_model(&mut self, model: &Model) -> Result<(), String> {
        let choice = ModelChoice {
            provider: model.provider.clone(),
            id: model.id.clone(),
            thinking: None,
        };
        let retries = RetryEvents::new();
        let switch = self
            .setup
            .model_switch(&choice, Some(retries.observer()))
            .map_err(|e| format!("{e:#}"))?;
        let before = self.thinking_level();
        let agent = self.take_agent()?;
        let mut agent = Box::new((*agent).with_retry_events(retries));
        // The agent keeps the level asked for: off on a model without reasoning, back again
        // on one with it (the runtime's rule, shared by every front end).
        let result = agent.set_model(switch);
        self.agent = Some(agent);
        result.map_err(|e| e.to_string())?;
        self.refresh();
        self.thinking_changed(&before);
        Ok(())
    }

    fn set_thinking_level(&mut self, level: &str) -> Result<Option<Value>, String> {
        if !THINKING_LEVELS.contains(&level) {
            return Err(format!(
                "Invalid thinking level: {level} (expected one of {})",
                THINKING_LEVELS.join(", ")
            ));
        }
        let before = self.thinking_level();
        self.agent_mut()?
            .set_thinking_level(level)
            .map_err(|e| e.to_string())?;
        self.refresh();
        self.thinking_changed(&before);
        Ok(None)
    }

    fn thinking_level(&self) -> String {
        lock(&self.shared).snapshot.thinking_level.clone()
    }

    /// Pi 1.x's `thinking_level_changed`, when the level in effect is no longer `before`.
    fn thinking_changed(&self, before: &str) {
        let level = self.thinking_level();
        if level != before {
            self.out
                .send(&json!({"type": "thinking_level_changed", "level": level}));
        }
    }

    /// The session file commands read from disk (its entries are never rewritten, so a read
    /// during a run sees every line written so far).
    fn session_file(&self) -> Result<PathBuf, String> {
        let file = lock(&self.shared).snapshot.session_file.clone();
        if file.is_empty() {
            return Err(self.no_agent());
        }
        Ok(PathBuf::from(file))
    }

    fn cycle_thinking_level(&mut self) -> Result<Option<Value>, String> {
        let agent = self.agent_mut()?;
        if !agent.config().model.reasoning {
            return Ok(Some(Value::Null));
        }
        let current = agent
            .context()
            .map(|c| c.thinking_level.clone())
            .map_err(|e| e.to_string())?;
        let next = CYCLED_LEVELS
            .iter()
            .position(|l| *l == current)
            .map_or(CYCLED_LEVELS[0], |i| {
                CYCLED_LEVELS[(i + 1) % CYCLED_LEVELS.len()]
            });
        let level = agent.set_thinking_level(next).map_err(|e| e.to_string())?;
        self.refresh();
        self.thinking_changed(&current);
        Ok(Some(json!({"level": level})))
    }

    /// Models of providers strata has a key for (the command line's provider always).
    fn available_models(&self) -> Vec<Model> {
        let initial = self.setup.model_choice().ok().map(|c| c.provider);
        self.setup
            .catalog
            .providers()
            .filter(|row| {
                initial.as_deref() == Some(row.id.as_str()) || {
                    let configured = self.setup.config.providers.get(&row.id);
                    super::factory::api_key(
                        None,
                        configured.and_then(|p| p.api_key.as_deref()),
                        row,
                    )
                    .is_some()
                }
            })
            .flat_map(|row| self.setup.catalog.models_of(&row.id).cloned())
            .collect()
    }

    fn available_models_json(&self) -> Vec<Value> {
        self.available_models()
            .iter()
            .map(|m| self.model_json(m))
            .collect()
    }

    /// Pi's `Model` object, with the protocol and base URL requests would use.
    fn model_json(&self, model: &Model) -> Value {
        let Some(row) = self.setup.catalog.provider(&model.provider) else {
            return state::model_json(model, "", "");
        };
        let api = row.endpoint(&model.id).protocol.as_str();
        let initial = self.setup.model_choice().ok().map(|c| c.provider);
        let flag_url = self
            .setup
            .run
            .base_url
            .clone()
            .filter(|_| initial.as_deref() == Some(row.id.as_str()));
        let base_url = flag_url
            .or_else(|| {
                self.setup
                    .config
                    .providers
                    .get(&row.id)
                    .and_then(|p| p.base_url.clone())
            })
            .unwrap_or_else(|| row.base_url.clone());
        state::model_json(model, api, &base_url)
    }

    // ---------------------------------------------------------------- settings

    fn set_auto_compaction(&mut self, enabled: bool) -> Result<Option<Value>, String> {
        self.setup.config.compaction.enabled = enabled;
        self.rebuild(None)?;
        Ok(None)
    }

    fn set_auto_retry(&mut self, enabled: bool) -> Result<Option<Value>, String> {
        self.setup.config.max_retries = if enabled { self.max_retries } else { 0 };
        self.rebuild(None)?;
        Ok(None)
    }

    fn set_session_name(&mut self, name: &str) -> Result<Option<Value>, String> {
        let name = name.trim().to_owned();
        if name.is_empty() {
            return Err("Session name cannot be empty".to_owned());
        }
        self.agent_mut()?
            .session_mut()
            .append_session_info(&name)
            .map_err(|e| e.to_string())?;
        self.refresh();
        self.out
            .send(&json!({"type": "session_info_changed", "name": name}));
        Ok(None)
    }

    fn export_html(&mut self, output: Option<&str>) -> Result<Option<Value>, String> {
        let file = PathBuf::from(lock(&self.shared).snapshot.session_file.clone());
        let output = output.map(Path::new);
        let path = crate::export::export_html(&file, output, crate::export::Overwrite::Refuse)
            .map_err(|e| format!("{e:#}"))?;
        Ok(Some(json!({"path": path.display().to_string()})))
    }

    // ---------------------------------------------------------------- sessions

    fn new_session(&mut self, parent: Option<String>) -> Result<Option<Value>, String> {
        let dir = self.session_dir()?;
        let cwd = self.setup.cwd.display().to_string();
        let path = sessions::create(&dir, &cwd, parent).map_err(|e| format!("{e:#}"))?;
        self.clear_queues();
        self.rebuild(Some(path))?;
        Ok(Some(json!({"cancelled": false})))
    }

    fn switch_session(&mut self, path: &str) -> Result<Option<Value>, String> {
        let path = PathBuf::from(path);
        if !path.is_file() {
            return Err(format!("Session file not found: {}", path.display()));
        }
        self.clear_queues();
        self.rebuild(Some(path))?;
        Ok(Some(json!({"cancelled": false})))
    }

    fn fork(&mut self, entry_id: &str) -> Result<Option<Value>, String> {
        let agent = self.agent_mut()?;
        let (target, text) =
            sessions::fork_point(agent.session(), entry_id).map_err(|e| format!("{e:#}"))?;
        let path =
            sessions::fork(agent.session(), target.as_ref()).map_err(|e| format!("{e:#}"))?;
        self.clear_queues();
        self.rebuild(Some(path))?;
        Ok(Some(json!({"text": text, "cancelled": false})))
    }

    fn clone_session(&mut self) -> Result<Option<Value>, String> {
        let agent = self.agent_mut()?;
        let Some(leaf) = agent.session().leaf().cloned() else {
            return Err("Cannot clone session: no current entry selected".to_owned());
        };
        let path = sessions::fork(agent.session(), Some(&leaf)).map_err(|e| format!("{e:#}"))?;
        self.clear_queues();
        self.rebuild(Some(path))?;
        Ok(Some(json!({"cancelled": false})))
    }

    fn fork_messages(&self) -> Result<Option<Value>, String> {
        let file = PathBuf::from(lock(&self.shared).snapshot.session_file.clone());
        let messages = sessions::user_messages(&file).map_err(|e| format!("{e:#}"))?;
        Ok(Some(json!({"messages": messages})))
    }

    fn session_dir(&mut self) -> Result<PathBuf, String> {
        let agent = self.agent_mut()?;
        Ok(agent
            .session()
            .path()
            .parent()
            .map_or_else(|| PathBuf::from("."), Path::to_path_buf))
    }

    fn clear_queues(&mut self) {
        let mut shared = lock(&self.shared);
        shared.queue.clear(&self.control);
    }

    /// Builds a fresh agent on `path` (default: the current session), with the current
    /// model and thinking level, or the session's own model when switching to another file.
    fn rebuild(&mut self, path: Option<PathBuf>) -> Result<(), String> {
        let (current_path, mut choice) = match self.agent.as_mut() {
            Some(agent) => {
                let thinking = agent.context().ok().map(|c| c.thinking_level.clone());
                let model = &agent.config().model;
                (
                    Some(agent.session().path().to_path_buf()),
                    Some(ModelChoice {
                        provider: model.provider.clone(),
                        id: model.id.clone(),
                        thinking,
                    }),
                )
            }
            None => (None, None),
        };
        let target = path
            .or_else(|| current_path.clone())
            .ok_or_else(|| "no session is open".to_owned())?;
        // The session file is locked while an agent holds it.
        self.release_agent();
        if choice.is_none() {
            choice = self.setup.model_choice().ok();
        }
        let error = match sessions::open_agent(&self.setup, &target, choice.clone()) {
            Ok(agent) => {
                self.install(agent);
                return Ok(());
            }
            Err(error) => format!("{error:#}"),
        };
        // Keep serving the session we had rather than none.
        if let Some(previous) = current_path.filter(|p| *p != target)
            && let Ok(agent) = sessions::open_agent(&self.setup, &previous, choice)
        {
            self.install(agent);
            return Err(error);
        }
        self.broken = Some(error.clone());
        Err(error)
    }

    fn install(&mut self, agent: Agent) {
        self.control = agent.control();
        self.agent = Some(Box::new(agent));
        self.broken = None;
        self.refresh();
    }

    // ---------------------------------------------------------------- agent access

    fn release_agent(&mut self) {
        self.agent = None;
    }

    fn take_agent(&mut self) -> Result<Box<Agent>, String> {
        self.agent.take().ok_or_else(|| self.no_agent())
    }

    fn agent_mut(&mut self) -> Result<&mut Agent, String> {
        let missing = self.agent.is_none().then(|| self.no_agent());
        match (self.agent.as_deref_mut(), missing) {
            (Some(agent), _) => Ok(agent),
            (None, reason) => Err(reason.unwrap_or_default()),
        }
    }

    fn no_agent(&self) -> String {
        match &self.broken {
            Some(reason) => format!("no agent: {reason}"),
            None => "the agent is busy".to_owned(),
        }
    }

    fn refresh(&mut self) {
        let Some(agent) = self.agent.as_deref_mut() else {
            return;
        };
        refresh(agent, &self.shared);
        let model = agent.config().model.clone();
        let value = self.model_json(&model);
        let mut shared = lock(&self.shared);
        shared.snapshot.model = value;
        shared.snapshot.context_window = model.context_window;
    }
}

/// Pi's `images` field of a prompt: `[{type: "image", data, mimeType}]`.
fn parse_images(images: Option<&Value>) -> Result<Vec<ImageContent>, String> {
    let Some(images) = images else {
        return Ok(Vec::new());
    };
    let Some(images) = images.as_array() else {
        return Err("images: expected an array of {type, data, mimeType}".to_owned());
    };
    images
        .iter()
        .enumerate()
        .map(|(i, image)| {
            serde_json::from_value::<ImageContent>(image.clone())
                .map_err(|e| format!("images[{i}]: {e}"))
        })
        .collect()
}
