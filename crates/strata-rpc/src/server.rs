//! The server: Pi's RPC protocol over the session runtime, so Pi's RPC clients drive strata
//! unchanged.
//!
//! Commands arrive as JSON lines on the input (optional `id` echoed in the response);
//! responses (`{"type":"response","command","success","data"|"error"}`) and Pi's events go
//! to the output as JSON lines. This module is a view: each command becomes runtime operations
//! ([`strata_runtime::Op`]) and the runtime's events become Pi's ([`EventMapper`]
//! for the agent loop's). What happens during a run (steering, follow-ups, commands that
//! wait for it or abort it first, keep-warm while idle) is the runtime's behaviour.
//!
//! A command that changes the agent is answered once the runtime has run its operations:
//! the view sends them followed by [`Op::Query`]s for the runtime's state (and what the
//! command reads), and answers when the last comes back (after every event the operations
//! caused). `get_state`, `get_messages`, `get_session_stats` and `get_last_assistant_text`
//! during a run are answered at once from the last state read plus the run's messages; the
//! session's other reads (`get_entries`, `get_tree`, `get_fork_messages`, `get_extensions`,
//! `get_hooks`) are the runtime's answers, after the run. `bash` is the runtime's
//! [`Op::Bash`]: it starts at once, its output streams as `bash_execution_update`, and it is
//! answered when the runtime reports its end.
//!
//! Supported: prompt (images included; streamingBehavior steer/followUp while running;
//! `/skill:name` expanded), steer and follow_up (with images), abort, clear_queue,
//! new_session, get_state, get_messages, get_entries, get_tree, set_model, cycle_model,
//! get_available_models, set_thinking_level, cycle_thinking_level, set_steering_mode,
//! set_follow_up_mode, compact, set_auto_compaction, set_auto_retry, bash, abort_bash,
//! get_session_stats, export_html, switch_session, fork, clone, get_fork_messages,
//! get_last_assistant_text, set_session_name, get_commands (skills, extensions' commands), strata's MCP commands.
//! Refused with an error: abort_retry (retries live in the transport; `abort` stops them
//! with the run). strata's own: `set_permission_mode {mode}`, `rewind_files {entryId?, dryRun?}`
//! (answered after a `strata_files_restored` record); a permission question is Pi's
//! `extension_ui_request` (`select`, then `input` for a refusal's reason) answered by
//! `extension_ui_response` (server/permissions.rs).

mod ext_commands;
mod extension_ui;
mod mcp;
mod permissions;

pub use permissions::rules_record;

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use serde_json::{Value, json};
use strata_runtime::{
    Agent, AgentEvent, Answer, EntryId, ImageContent, Model, ModelRef, ModelRoute, Op, OpName,
    Query as Read, QueueMode, RetryEvents, RetryObserver, Router, RunEnd, RuntimeEvent,
    RuntimeHandle, ThinkingLevel, UserInput,
};
use tokio::io::{AsyncBufReadExt as _, AsyncRead, AsyncWrite, BufReader};
use tokio::sync::mpsc::{UnboundedSender, unbounded_channel};

use crate::commands::{self, Command, Request, StreamingBehavior};
use crate::events::{EventMapper, Origin, compaction_json, notice_record};
use crate::protocol::{Id, Out, failure, success};
use crate::skills;
use crate::state::{self, Snapshot, View, bash_result, read_json};

/// Thinking levels `set_thinking_level` takes (Pi's names, lowest first).
const THINKING_LEVELS: [&str; 6] = ["off", "minimal", "low", "medium", "high", "xhigh"];

/// Thinking levels `cycle_thinking_level` steps through (`xhigh` only when asked for by name:
/// few models take it).
const CYCLED_LEVELS: [&str; 5] = ["off", "minimal", "low", "medium", "high"];

/// What the server asks of the program that embeds it: which models it can reach and how.
/// Keys, configuration and the model catalog stay with the host.
pub trait Host: Send + 'static {
    /// The models `get_available_models` lists and `set_model` / `cycle_model` choose from.
    fn available_models(&self) -> Vec<Model>;
    /// The model `provider`/`model_id`, for Pi's `Model` object of the session's model.
    fn model(&self, provider: &str, model_id: &str) -> Option<Model>;
    /// The protocol name (Pi's `api`) and base URL requests to `model` go to; `None` where
    /// its provider is unknown.
    fn endpoint(&self, model: &Model) -> Option<(String, String)>;
    /// A route to `provider`/`model_id` at the current retry limit, reporting retries to
    /// `retries`.
    fn route(
        &self,
        provider: &str,
        model_id: &str,
        retries: RetryObserver,
    ) -> Result<ModelRoute, String>;
    /// The route to the model a session file names, for `switch_session` (`None` keeps the
    /// current model).
    fn session_route(
        &self,
        provider: &str,
        model_id: &str,
        retries: RetryObserver,
    ) -> Option<ModelRoute> {
        self.route(provider, model_id, retries).ok()
    }
    /// The retry limit routes built from now on use (`set_auto_retry`).
    fn set_max_retries(&mut self, limit: u32);
    /// Automatic compaction was turned on or off (`set_auto_compaction`), for agents the host
    /// builds later.
    fn set_auto_compaction(&mut self, enabled: bool) {
        let _ = enabled;
    }
    /// Writes the session file as HTML (`export_html`) to `output` or a default path, and
    /// says where.
    fn export_html(&self, session_file: &Path, output: Option<&Path>) -> Result<PathBuf, String> {
        let _ = (session_file, output);
        Err("export_html is not available in this program".to_owned())
    }
}

/// What the server needs besides the host: where commands run and what they may read.
#[derive(Debug, Clone, Default)]
pub struct ServeOptions {
    /// The working directory project skills are found from (`bash` commands run in the
    /// agent's, with its tools' settings).
    pub cwd: PathBuf,
    /// The user's config directory (global skills).
    pub global_dir: Option<PathBuf>,
    /// Whether the project's own skills apply.
    pub project_trusted: bool,
    /// The configured retry limit (`set_auto_retry true` restores it).
    pub max_retries: u32,
    /// The MCP servers strata's MCP commands act on (none when `None`).
    pub mcp: Option<strata_host::mcp::McpManager>,
    /// The extensions and hooks `get_extensions` and `get_hooks` list (none when `None`).
    pub loaded: Option<strata_host::Loaded>,
    /// Extensions' UI requests, put to the client as `extension_ui_request`s.
    pub extension_ui: strata_host::extensions::ExtensionUi,
}

/// Why the server stopped other than by its input ending.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// The session runtime's task failed.
    #[error("the session runtime failed: {0}")]
    Runtime(#[from] tokio::task::JoinError),
    /// The host could not start the session (configuration, model, session file).
    #[error("{0}")]
    Setup(String),
}

/// Serves Pi's RPC commands read from `input` (JSON lines) on `agent`, writing responses and
/// events to `output`, until `input` ends; then stops a run going on, lets the runtime
/// finish (the session ends well-formed) and returns the agent.
pub async fn serve<R, W, H>(
    input: R,
    output: W,
    agent: Agent,
    retries: RetryEvents,
    host: H,
    options: ServeOptions,
) -> Result<Agent, ServeError>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
    H: Host,
{
    let (inputs, mut received) = unbounded_channel();
    let (out, writer) = Out::new(output);
    let writing = tokio::spawn(writer.run());
    let host = Arc::new(Mutex::new(host));
    let router = Arc::new(HostRouter {
        host: host.clone(),
        retries: retries.clone(),
    });
    let (handle, mut events, task) = strata_runtime::spawn(agent, router);
    let mut server = Server::new(host, options, out, handle, inputs.clone());
    // Commands read the model and session from the view: it holds them before the first.
    server.refresh();
    while !server.in_flight.is_empty() {
        match events.recv().await {
            Some(event) => server.on_event(event),
            None => break,
        }
    }
    // Extensions' UI requests join the command loop's inputs.
    let asking = server.options.extension_ui.take().map(|mut calls| {
        let inputs = inputs.clone();
        tokio::spawn(async move {
            while let Some(call) = calls.recv().await {
                if inputs.send(Input::ExtensionUi(call)).is_err() {
                    break;
                }
            }
        })
    });
    let reading = tokio::spawn(read_input(input, inputs));
    loop {
        tokio::select! {
            biased;
            Some(event) = events.recv() => server.on_event(event),
            input = received.recv() => match input {
                Some(Input::Line(line)) => server.handle_line(&line),
                Some(Input::TooLong(bytes)) => server.out.send(&failure(
                    &None,
                    "parse",
                    format!(
                        "the command line is {bytes} bytes, over the {MAX_LINE_BYTES} an rpc line may hold; it was skipped"
                    ),
                )),
                Some(Input::ExtensionUi(call)) => server.ask_extension(call),
                Some(Input::NotACommand(request)) => server.dispatch_checked(*request),
                Some(Input::CommandDone { request, result }) => server.command_done(&request, result),
                Some(Input::Closed) | None => break,
            },
        }
    }
    reading.abort();
    if let Some(asking) = asking {
        asking.abort();
    }
    // The input ended: stop a run going on and let the runtime finish, so the session ends
    // well-formed.
    let _ = server.handle.send(Op::Abort);
    let _ = server.handle.send(Op::Shutdown);
    drop(events);
    let agent = task.await?;
    server.out.close();
    // Whatever was answered is written before the server returns.
    let _ = writing.await;
    Ok(agent)
}

/// The runtime's router: the host's routes, with retries reported to the agent's events.
struct HostRouter<H> {
    host: Arc<Mutex<H>>,
    retries: RetryEvents,
}

impl<H: Host> HostRouter<H> {
    fn host(&self) -> MutexGuard<'_, H> {
        lock(&self.host)
    }
}

/// The host, whoever holds it (a panic while it was held leaves a host still usable).
fn lock<H>(host: &Mutex<H>) -> MutexGuard<'_, H> {
    host.lock().unwrap_or_else(PoisonError::into_inner)
}

impl<H: Host> Router for HostRouter<H> {
    fn route(&self, model: &ModelRef) -> Result<ModelRoute, String> {
        let observer = self.retries.observer();
        self.host().route(&model.provider, &model.model, observer)
    }

    fn session_route(&self, model: &ModelRef) -> Option<ModelRoute> {
        let observer = self.retries.observer();
        self.host()
            .session_route(&model.provider, &model.model, observer)
    }
}

/// What the command loop reacts to besides the runtime.
enum Input {
    /// One command line (LF-framed, a trailing CR removed).
    Line(String),
    /// A line over [`MAX_LINE_BYTES`] was skipped; its length.
    TooLong(usize),
    /// The input reached its end.
    Closed,
    /// An extension asks the client (or tells it something).
    ExtensionUi(strata_host::extensions::UiCall),
    /// A `prompt` naming no extension's command, to prompt the model with now.
    NotACommand(Box<Request>),
    /// An extension's command run from a `prompt` finished.
    CommandDone {
        /// The `prompt`.
        request: Box<Request>,
        /// Its text, or why it failed.
        result: Result<strata_host::loaded::CommandOutput, String>,
    },
}

/// The longest command line read (a prompt with several large images fits); a longer one is
/// answered with an error and never held in memory whole.
pub const MAX_LINE_BYTES: usize = 64 * 1024 * 1024;

/// One record read with at most `limit` bytes kept.
enum Record {
    /// A line (its newline included), or the last bytes before the end.
    Line,
    /// A line longer than the limit was skipped; its length.
    TooLong(usize),
    /// The input ended.
    End,
}

/// Reads the next LF-terminated record into `buffer`, keeping at most `limit` bytes.
async fn read_record<R: AsyncRead + Unpin>(
    input: &mut BufReader<R>,
    buffer: &mut Vec<u8>,
    limit: usize,
) -> Record {
    let mut skipped = 0usize;
    loop {
        let available = match input.fill_buf().await {
            Ok(available) => available,
            Err(_) => return Record::End,
        };
        if available.is_empty() {
            return match (skipped, buffer.is_empty()) {
                (0, true) => Record::End,
                (0, false) => Record::Line,
                (n, _) => Record::TooLong(n),
            };
        }
        let newline = available.iter().position(|&b| b == b'\n');
        let take = newline.map_or(available.len(), |at| at + 1);
        if skipped > 0 || buffer.len() + take > limit {
            skipped += buffer.len() + take;
            buffer.clear();
        } else {
            buffer.extend_from_slice(&available[..take]);
        }
        input.consume(take);
        if newline.is_some() {
            return if skipped > 0 {
                Record::TooLong(skipped)
            } else {
                Record::Line
            };
        }
    }
}

/// Reads LF-terminated records; U+2028 and U+2029 stay inside records, as the protocol says.
async fn read_input<R: AsyncRead + Unpin>(input: R, inputs: UnboundedSender<Input>) {
    read_input_bounded(input, inputs, MAX_LINE_BYTES).await;
}

async fn read_input_bounded<R: AsyncRead + Unpin>(
    input: R,
    inputs: UnboundedSender<Input>,
    limit: usize,
) {
    let mut input = BufReader::new(input);
    let mut buffer = Vec::new();
    loop {
        buffer.clear();
        match read_record(&mut input, &mut buffer, limit).await {
            Record::End => break,
            Record::TooLong(bytes) => {
                if inputs.send(Input::TooLong(bytes)).is_err() {
                    return;
                }
            }
            Record::Line => {
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

/// A command whose operations the runtime has not finished yet.
struct InFlight {
    id: Id,
    kind: String,
    /// How its answer is made once the state is read back.
    finish: Finish,
    /// The id of its last query: its answer completes the command.
    last_query: u64,
    /// The answers so far: the state, the messages, then what `finish` reads.
    answers: Vec<Answer>,
    /// The first failure its operations reported.
    failure: Option<String>,
    /// A manual compaction's outcome.
    compacted: Option<Option<EntryId>>,
}

/// How a command is answered.
enum Finish {
    /// With this data.
    Data(Option<Value>),
    /// `fork`: the message's text (read before it), and the files' differences when they
    /// differ.
    Fork,
    /// With the answer to the query sent as its operation, in Pi's shape.
    Read,
    /// `get_extensions` or `get_hooks`, with what each cost.
    Loaded {
        /// Extensions, else hooks.
        extensions: bool,
    },
    /// `rewind_files` with `dryRun`: what the restore would do.
    Preview(Option<EntryId>),
    /// `set_permission_mode`: the mode in effect (`mode` where there is no gate).
    PermissionMode(strata_runtime::permissions::Mode),
    /// Not at all (the view's own refresh).
    Silent,
    /// With a state query over the refreshed view.
    Query(Query),
    /// With the compaction's result.
    Compact,
    /// `cycle_model`: the model, and the level in effect on it.
    CycledModel(Value),
    /// `cycle_thinking_level`: the level in effect.
    CycledThinking,
}

/// The read-only commands over the view.
#[derive(Debug, Clone, Copy)]
enum Query {
    State,
    Messages,
    Stats,
    LastAssistantText,
}

/// The command loop's state.
struct Server<H> {
    /// Shared with the runtime's router.
    host: Arc<Mutex<H>>,
    options: ServeOptions,
    out: Out,
    handle: RuntimeHandle,
    /// The id of the last query sent to the runtime.
    next_query: u64,
    inputs: UnboundedSender<Input>,
    view: View,
    mapper: EventMapper,
    in_flight: VecDeque<InFlight>,
    /// `clear_queue` commands, answered by the runtime's `QueueCleared`, oldest first.
    clearing: VecDeque<Id>,
    /// `abort` answers, sent once the aborted run has ended (Pi answers when idle).
    abort_replies: Vec<Value>,
    /// `bash` commands not yet ended, oldest first (the runtime runs one at a time).
    bash_ids: VecDeque<Id>,
    /// The configured retry limit (`set_auto_retry false` sets 0, `true` restores this).
    max_retries: u32,
    /// The limit in effect (what `auto_retry_*` events count against).
    current_retries: u32,
    /// Permission questions sent as `extension_ui_request`s, waiting for their answers.
    permission_asks: std::collections::HashMap<String, permissions::Pending>,
    /// Extensions' questions sent as `extension_ui_request`s, waiting for their answers.
    extension_asks: std::collections::HashMap<String, strata_host::extensions::UiCall>,
    /// Extension UI requests sent so far (their ids count them).
    extension_asked: u64,
}

impl<H: Host> Server<H> {
    fn host(&self) -> MutexGuard<'_, H> {
        lock(&self.host)
    }

    fn new(
        host: Arc<Mutex<H>>,
        options: ServeOptions,
        out: Out,
        handle: RuntimeHandle,
        inputs: UnboundedSender<Input>,
    ) -> Self {
        let max_retries = options.max_retries;
        Self {
            mapper: EventMapper::new(Origin::default(), max_retries, PathBuf::new()),
            host,
            options,
            out,
            handle,
            next_query: 0,
            inputs,
            view: View::default(),
            in_flight: VecDeque::new(),
            clearing: VecDeque::new(),
            abort_replies: Vec::new(),
            bash_ids: VecDeque::new(),
            max_retries,
            current_retries: max_retries,
            permission_asks: std::collections::HashMap::new(),
            extension_asks: std::collections::HashMap::new(),
            extension_asked: 0,
        }
    }

    // ---------------------------------------------------------------- the runtime's side

    /// Sends `ops`, then the reads the view and `finish` need; the command is answered by
    /// [`Self::on_answer`] once the last read comes back.
    fn request(&mut self, id: Id, kind: &str, ops: Vec<Op>, finish: Finish) {
        let mut reads = vec![Read::State, Read::Messages];
        match &finish {
            Finish::Fork => reads.push(Read::RewindPreview { target: None }),
            Finish::Preview(target) => reads.push(Read::RewindPreview {
                target: target.clone(),
            }),
            Finish::Compact => reads.push(Read::Compaction { entry: None }),
            _ => {}
        }
        let mut sent = ops.into_iter().try_for_each(|op| self.handle.send(op));
        for query in reads {
            let op = self.read(query);
            sent = sent.and_then(|()| self.handle.send(op));
        }
        if let Err(error) = sent {
            if !matches!(finish, Finish::Silent) {
                self.out.send(&failure(&id, kind, error.to_string()));
            }
            return;
        }
        self.in_flight.push_back(InFlight {
            id,
            kind: kind.to_owned(),
            finish,
            last_query: self.next_query,
            answers: Vec::new(),
            failure: None,
            compacted: None,
        });
    }

    /// A query with the next id: its answer goes to the command that sends it.
    fn read(&mut self, query: Read) -> Op {
        self.next_query += 1;
        Op::Query {
            id: self.next_query,
            query,
        }
    }

    /// A command answered with what `query` reads (once the operations before it ran).
    fn read_command(&mut self, id: Id, kind: &str, query: Read) {
        let op = self.read(query);
        self.request(id, kind, vec![op], Finish::Read);
    }

    /// Reads the agent's state into the view (nothing is answered).
    fn refresh(&mut self) {
        self.request(None, "refresh", Vec::new(), Finish::Silent);
    }

    /// One of the reads of the oldest command in flight came back.
    fn answered(&mut self, id: u64, answer: Answer) {
        let Some(front) = self.in_flight.front_mut() else {
            return;
        };
        front.answers.push(answer);
        if id == front.last_query
            && let Some(done) = self.in_flight.pop_front()
        {
            self.on_answer(done);
        }
    }

    fn on_answer(&mut self, done: InFlight) {
        // The view's state and messages; the rest is what the command reads, in order.
        let (mut state, mut messages, mut reads) = (None, None, Vec::new());
        for answer in done.answers {
            match answer {
                Answer::State(read) if state.is_none() => state = Some(read),
                Answer::Messages { messages: read } if messages.is_none() => messages = Some(read),
                other => reads.push(other),
            }
        }
        match (state, messages) {
            (Some(state), Some(messages)) => {
                let mut snapshot = Snapshot::of(&state, messages);
                snapshot.model = self.model_json_of(&snapshot.provider, &snapshot.model_id);
                self.view.snapshot = snapshot;
            }
            (state, messages) => eprintln!("strata rpc: reading the state: {state:?} {messages:?}"),
        }
        let mut reads = reads.into_iter();
        let read = reads.next();
        if matches!(done.finish, Finish::Compact) {
            self.view.compacting = false;
        }
        let InFlight {
            id,
            kind,
            finish,
            failure: failed,
            compacted,
            ..
        } = done;
        let reply = match (failed, finish) {
            (_, Finish::Silent) => return,
            (Some(error), Finish::Compact) => Err(format!("Compaction failed: {error}")),
            (Some(error), _) => Err(error),
            (None, Finish::Compact) => match (compacted.flatten(), read) {
                (None, _) => Err("Nothing to compact (session too small)".to_owned()),
                (
                    Some(_),
                    Some(Answer::Compaction {
                        entry,
                        tokens_after,
                    }),
                ) => Ok(Some(compaction_json(&entry, tokens_after))),
                (Some(_), other) => Err(format!("reading the compaction back: {other:?}")),
            },
            (None, Finish::Read) => read_json(read).map(Some),
            (None, Finish::Loaded { extensions }) => match read {
                Some(Answer::Attributions { attributed }) => {
                    Ok(Some(self.loaded_json(extensions, &attributed)))
                }
                other => Err(format!("the runtime answered {other:?}")),
            },
            (None, Finish::Query(query)) => Ok(Some(self.query(query))),
            (None, Finish::CycledModel(model)) => Ok(Some(json!({
                "model": model,
                "thinkingLevel": self.view.snapshot.thinking_level,
                "isScoped": false,
            }))),
            (None, Finish::CycledThinking) => {
                Ok(Some(json!({"level": self.view.snapshot.thinking_level})))
            }
            (None, Finish::Data(data)) => Ok(data),
            (None, Finish::Fork) => match read {
                // The fork point read before the fork, then the files' state after it.
                Some(Answer::ForkPoint { text, .. }) => {
                    let mut data = json!({"text": text, "cancelled": false});
                    // The offer: the files differ from the fork point.
                    if let Some(Answer::RewindPreview(preview)) = reads.next()
                        && preview.changes_files()
                    {
                        data["filesDiffer"] = json!(preview);
                    }
                    Ok(Some(data))
                }
                other => Err(format!("the runtime answered {other:?}")),
            },
            (None, Finish::Preview(_)) => match read {
                Some(Answer::RewindPreview(preview)) => Ok(Some(json!(preview))),
                Some(Answer::Failed { error }) => Err(error),
                other => Err(format!("the runtime answered {other:?}")),
            },
            (None, Finish::PermissionMode(mode)) => {
                let current = self.view.snapshot.permission_mode.unwrap_or(mode);
                Ok(Some(json!({"mode": current})))
            }
        };
        self.out.send(&match reply {
            Ok(data) => success(&id, &kind, data),
            Err(error) => failure(&id, &kind, error),
        });
    }

    fn on_event(&mut self, event: RuntimeEvent) {
        match event {
            RuntimeEvent::Agent { event } => {
                if let AgentEvent::MessageEnd { message, .. } = &event {
                    self.view.snapshot.messages.push(message.to_json());
                }
                self.out.send_all(&self.mapper.handle(event));
            }
            RuntimeEvent::Accepted { .. } | RuntimeEvent::Settled => {}
            RuntimeEvent::BashOutput { delta } => {
                // Pi 1.x streams the output, tagged with the command's id when it has one.
                let mut update = json!({"type": "bash_execution_update", "delta": delta});
                if let Some(Some(id)) = self.bash_ids.front() {
                    update["id"] = id.clone();
                }
                self.out.send(&update);
            }
            RuntimeEvent::BashEnded { record } => {
                let id = self.bash_ids.pop_front().flatten();
                self.out
                    .send(&success(&id, "bash", Some(bash_result(&record))));
                if !self.view.streaming {
                    self.refresh();
                }
            }
            RuntimeEvent::Answered { id, answer } => self.answered(id, answer),
            RuntimeEvent::Notice { source, text } => self.out.send(&notice_record(&source, &text)),
            RuntimeEvent::Record { record } => self.out.send(&record),
            RuntimeEvent::PermissionRequested { request } => self.ask_permission(&request),
            RuntimeEvent::PermissionModeChanged { .. } | RuntimeEvent::FilesRestored { .. } => {
                self.out.send_all(rules_record(&event).as_slice());
            }
            RuntimeEvent::RunEnded {
                end,
                error,
                continues,
                ..
            } => {
                if continues {
                    // Pi reports the follow-up as part of the same run.
                    self.mapper.continue_run();
                    return;
                }
                let records = self
                    .mapper
                    .finish_run(error.as_deref(), end == RunEnd::Aborted);
                self.view.streaming = false;
                // The run's unanswered questions were refused with it (an abort).
                self.permission_asks.clear();
                self.out.send_all(&records);
                for reply in std::mem::take(&mut self.abort_replies) {
                    self.out.send(&reply);
                }
                self.refresh();
            }
            RuntimeEvent::QueueChanged { texts } => {
                self.view.queue = texts;
                self.out.send(&self.view.queue_update());
            }
            RuntimeEvent::QueueCleared { texts } => {
                self.view.queue = strata_runtime::QueuedTexts::default();
                self.out.send(&self.view.queue_update());
                let id = self.clearing.pop_front().flatten();
                self.out.send(&success(
                    &id,
                    "clear_queue",
                    Some(json!({"steering": texts.steering, "followUp": texts.follow_up})),
                ));
            }
            RuntimeEvent::ModelChanged { thinking, .. } => self.thinking_changed(thinking),
            RuntimeEvent::ThinkingChanged { level } => self.thinking_changed(level),
            RuntimeEvent::SessionNamed { name } => {
                self.view.snapshot.session_name = Some(name.clone());
                self.out
                    .send(&json!({"type": "session_info_changed", "name": name}));
            }
            RuntimeEvent::EntryAppended { entry } => {
                self.out
                    .send(&json!({"type": "entry_appended", "entry": entry}));
                self.refresh();
            }
            RuntimeEvent::Compacted { entry } => {
                if let Some(done) = self.in_flight.front_mut() {
                    done.compacted = Some(entry);
                }
            }
            RuntimeEvent::Failed { op, error } => match self.in_flight.front_mut() {
                Some(done) if !matches!(op, OpName::KeepWarm | OpName::Bash) => {
                    done.failure.get_or_insert(error);
                }
                _ => eprintln!("strata rpc: {op}: {error}"),
            },
            RuntimeEvent::SessionChanged { .. }
            | RuntimeEvent::Navigated { .. }
            | RuntimeEvent::Labelled { .. } => {}
        }
    }

    /// Pi 1.x's `thinking_level_changed`, when the level in effect is no longer the one known.
    fn thinking_changed(&mut self, level: ThinkingLevel) {
        let level = level.as_str();
        if self.view.snapshot.thinking_level != level {
            self.view.snapshot.thinking_level = level.to_owned();
            self.out
                .send(&json!({"type": "thinking_level_changed", "level": level}));
        }
    }

    // ---------------------------------------------------------------- commands

    fn handle_line(&mut self, line: &str) {
        match commands::parse(line) {
            Ok(request) => self.dispatch(request),
            Err(refused) => self
                .out
                .send(&failure(&refused.id, &refused.kind, refused.error)),
        }
    }

    fn dispatch(&mut self, request: Request) {
        if self.try_extension_command(&request) {
            return;
        }
        self.dispatch_checked(request);
    }

    /// [`Server::dispatch`] once a `prompt` is known to name no extension's command.
    fn dispatch_checked(&mut self, request: Request) {
        let Request { id, kind, command } = request;
        let busy = self.view.streaming || self.view.compacting;
        let reply = match command {
            Command::Prompt {
                message,
                images,
                streaming_behavior,
            } => self.prompt(&message, images.as_ref(), streaming_behavior),
            Command::Steer { message, images } => self.queue(&message, images.as_ref(), true),
            Command::FollowUp { message, images } => {
                self.queue(&message, images.as_ref(), false)
            }
            Command::Abort => {
                if self.view.streaming {
                    self.abort_replies.push(success(&id, "abort", None));
                    self.send(Op::Abort);
                    return;
                }
                self.send(Op::Abort);
                Ok(None)
            }
            Command::ClearQueue => {
                self.clearing.push_back(id);
                self.send(Op::ClearQueue);
                return;
            }
            Command::GetState => return self.query_command(id, &kind, Query::State, busy),
            Command::GetMessages => return self.query_command(id, &kind, Query::Messages, busy),
            Command::GetSessionStats => return self.query_command(id, &kind, Query::Stats, busy),
            Command::GetLastAssistantText => {
                return self.query_command(id, &kind, Query::LastAssistantText, busy);
            }
            Command::GetEntries { since } => {
                let since = since.map(EntryId::new);
                return self.read_command(id, &kind, Read::Entries { since });
            }
            Command::GetTree => return self.read_command(id, &kind, Read::EntryTree),
            Command::GetForkMessages => return self.read_command(id, &kind, Read::UserMessages),
            Command::GetAvailableModels => {
                Ok(Some(json!({"models": self.available_models_json()})))
            }
            Command::GetCommands => {
                let command = Command::GetCommands;
                return self.get_commands(Request { id, kind, command });
            }
            Command::SetSteeringMode { mode } => self.set_mode(&mode, true),
            Command::SetFollowUpMode { mode } => self.set_mode(&mode, false),
            Command::Bash {
                command,
                exclude_from_context,
            } => {
                // Answered when the runtime reports its end (one command at a time).
                self.bash_ids.push_back(id);
                let exclude = exclude_from_context;
                return self.send(Op::Bash { command, exclude });
            }
            Command::AbortBash => {
                self.send(Op::AbortBash);
                Ok(None)
            }
            Command::AbortRetry => Err(
                "abort_retry is not supported: strata retries inside the transport, where only `abort` (which ends the run) stops a retry"
                    .to_owned(),
            ),
            Command::ExportHtml { output_path } => self.export_html(output_path.as_deref()),
            Command::GetMcpServers => Ok(Some(self.mcp_servers())),
            Command::GetExtensions | Command::GetHooks => {
                let extensions = matches!(command, Command::GetExtensions);
                let op = self.read(Read::Attributions);
                return self.request(id, &kind, vec![op], Finish::Loaded { extensions });
            }
            Command::McpReconnect { server } => self.mcp_reconnect(server.as_deref()),
            Command::McpLogin { server } => return self.mcp_login(server.as_deref(), id),
            Command::McpLogout {
                server,
                forget_client,
            } => return self.mcp_logout(server.as_deref(), forget_client.unwrap_or(false), id),
            Command::McpSetEnabled { server, enabled } => {
                self.mcp_set_enabled(server.as_deref(), enabled)
            }
            Command::Compact {
                custom_instructions,
            } => {
                self.view.compacting = true;
                let compact = Op::Compact {
                    focus: custom_instructions,
                };
                return self.request(id, &kind, vec![compact], Finish::Compact);
            }
            Command::NewSession { parent_session } => {
                let op = Op::NewSession {
                    parent: parent_session,
                };
                return self.moved(id, &kind, op, json!({"cancelled": false}));
            }
            Command::SwitchSession { session_path } => {
                let path = PathBuf::from(session_path);
                if !path.exists() {
                    Err(format!("Session file not found: {}", path.display()))
                } else if !path.is_file() {
                    // `/dev/zero`, a directory, a FIFO: there, but never a session.
                    Err(format!(
                        "Not a session file (not a regular file): {}",
                        path.display()
                    ))
                } else {
                    let op = Op::SwitchSession {
                        path,
                        follow_model: true,
                    };
                    return self.moved(id, &kind, op, json!({"cancelled": false}));
                }
            }
            Command::Fork {
                entry_id,
                restore_files,
            } => {
                let entry = EntryId::new(entry_id);
                // The message's text is read before the fork, from the session it leaves.
                let mut ops = vec![
                    self.read(Read::ForkPoint {
                        entry: entry.clone(),
                    }),
                    Op::ForkBefore { entry },
                ];
                if restore_files == Some(true) {
                    ops.push(Op::RewindFiles { target: None });
                }
                return self.request(id, &kind, ops, Finish::Fork);
            }
            Command::Clone => {
                return self.moved(id, &kind, Op::Clone, json!({"cancelled": false}));
            }
            Command::SetModel { provider, model_id } => {
                return self.set_model(id, &kind, &provider, &model_id);
            }
            Command::CycleModel => return self.cycle_model(id, &kind),
            Command::SetThinkingLevel { level } => return self.set_thinking_level(id, &kind, &level),
            Command::CycleThinkingLevel => return self.cycle_thinking_level(id, &kind),
            Command::SetAutoCompaction { enabled } => {
                self.host().set_auto_compaction(enabled);
                let op = Op::SetAutoCompaction(enabled);
                return self.request(id, &kind, vec![op], Finish::Data(None));
            }
            Command::SetAutoRetry { enabled } => {
                let limit = if enabled { self.max_retries } else { 0 };
                self.host().set_max_retries(limit);
                self.current_retries = limit;
                return self.reroute(id, &kind);
            }
            Command::SetSessionName { name } => {
                let name = name.trim().to_owned();
                if name.is_empty() {
                    Err("Session name cannot be empty".to_owned())
                } else {
                    let op = Op::SetSessionName(name);
                    return self.request(id, &kind, vec![op], Finish::Data(None));
                }
            }
            // An extension's question, else a permission question; a stray answer has nobody
            // to reach.
            Command::ExtensionUiResponse {
                id,
                value,
                confirmed,
                cancelled,
            } => {
                let cancelled = cancelled.unwrap_or(false);
                if self.extension_response(id.as_deref(), value.clone(), confirmed, cancelled) {
                    return;
                }
                return self.permission_response(id, value, cancelled);
            }
            Command::RewindFiles {
                entry_id,
                dry_run: Some(true),
            } => {
                let target = entry_id.map(EntryId::new);
                return self.request(id, &kind, Vec::new(), Finish::Preview(target));
            }
            Command::RewindFiles { entry_id, .. } => {
                let op = Op::RewindFiles {
                    target: entry_id.map(EntryId::new),
                };
                return self.request(id, &kind, vec![op], Finish::Data(None));
            }
            Command::SetPermissionMode { mode } => {
                return self.set_permission_mode(id, &kind, &mode, busy);
            }
            // Pi 1.6's answer, under the name the client sent.
            Command::Unknown => Err(format!("Unknown command: {kind}")),
        };
        self.out.send(&match reply {
            Ok(data) => success(&id, &kind, data),
            Err(error) => failure(&id, &kind, error),
        });
    }

    fn send(&mut self, op: Op) {
        if let Err(error) = self.handle.send(op) {
            eprintln!("strata rpc: {error}");
        }
    }

    /// A read: at once from the view during a run or a compaction, else after the operations
    /// sent before it.
    fn query_command(&mut self, id: Id, kind: &str, query: Query, busy: bool) {
        if busy {
            let data = self.query(query);
            return self.out.send(&success(&id, kind, Some(data)));
        }
        self.request(id, kind, Vec::new(), Finish::Query(query));
    }

    fn query(&self, query: Query) -> Value {
        match query {
            Query::State => self.view.state(),
            Query::Messages => json!({"messages": self.view.snapshot.messages}),
            Query::Stats => self.view.stats(),
            Query::LastAssistantText => json!({"text": self.view.last_assistant_text()}),
        }
    }

    /// A command that moves to another session file: the queue belonged to the old one.
    fn moved(&mut self, id: Id, kind: &str, op: Op, data: Value) {
        self.request(id, kind, vec![op], Finish::Data(Some(data)));
    }

    // ---------------------------------------------------------------- prompting

    fn prompt(
        &mut self,
        message: &str,
        images: Option<&Value>,
        streaming_behavior: Option<StreamingBehavior>,
    ) -> Result<Option<Value>, String> {
        let images = parse_images(images)?;
        let input = UserInput {
            text: self.expand(message),
            images,
        };
        if self.view.streaming {
            let op = match streaming_behavior {
                Some(StreamingBehavior::Steer) => Op::Steer(input),
                Some(StreamingBehavior::FollowUp) => Op::FollowUp(input),
                None => {
                    return Err("Agent is already processing. Specify streamingBehavior ('steer' or 'followUp') to queue the message.".to_owned());
                }
            };
            self.send(op);
            return Ok(Some(json!({"disposition": "queued"})));
        }
        self.view.streaming = true;
        let snapshot = &self.view.snapshot;
        self.mapper = EventMapper::new(
            Origin {
                api: snapshot.api.clone(),
                provider: snapshot.provider.clone(),
                model: snapshot.model_id.clone(),
            },
            self.current_retries,
            PathBuf::from(&snapshot.session_file),
        );
        self.send(Op::Prompt(input));
        // Answered before its events: they are written when the loop next reads the runtime.
        Ok(Some(json!({"disposition": "started"})))
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
        let input = UserInput {
            text: self.expand(message),
            images,
        };
        self.send(if steer {
            Op::Steer(input)
        } else {
            Op::FollowUp(input)
        });
        Ok(Some(json!({"disposition": "queued"})))
    }

    fn expand(&self, text: &str) -> String {
        if !text.starts_with("/skill:") {
            return text.to_owned();
        }
        let found = skills::find(
            self.options.global_dir.as_deref(),
            &self.options.cwd,
            self.options.project_trusted,
        );
        skills::expand(text, &found)
    }

    fn commands(&self) -> Vec<Value> {
        let global = self.options.global_dir.as_deref();
        skills::commands(
            &skills::find(global, &self.options.cwd, self.options.project_trusted),
            global,
        )
    }

    fn set_mode(&mut self, text: &str, steering: bool) -> Result<Option<Value>, String> {
        let mode = QueueMode::parse(text)
            .ok_or_else(|| format!("unknown mode `{text}` (expected `all` or `one-at-a-time`)"))?;
        if steering {
            self.view.steering_mode = mode;
            self.send(Op::SetSteeringMode(mode));
        } else {
            self.view.follow_up_mode = mode;
            self.send(Op::SetFollowUpMode(mode));
        }
        Ok(None)
    }

    // ---------------------------------------------------------------- model and thinking

    fn set_model(&mut self, id: Id, kind: &str, provider: &str, model_id: &str) {
        let found = self
            .host()
            .available_models()
            .into_iter()
            .find(|m| m.provider == provider && m.id == model_id);
        let Some(model) = found else {
            let error = format!("Model not found: {provider}/{model_id}");
            return self.out.send(&failure(&id, kind, error));
        };
        let data = self.model_json(&model);
        self.switch_to(id, kind, &model, Finish::Data(Some(data)));
    }

    fn cycle_model(&mut self, id: Id, kind: &str) {
        let models = self.host().available_models();
        if models.len() <= 1 {
            return self.out.send(&success(&id, kind, Some(Value::Null)));
        }
        let snapshot = &self.view.snapshot;
        let position = models
            .iter()
            .position(|m| m.provider == snapshot.provider && m.id == snapshot.model_id);
        let next = match position {
            Some(index) => models[(index + 1) % models.len()].clone(),
            None => models[0].clone(),
        };
        let data = self.model_json(&next);
        self.switch_to(id, kind, &next, Finish::CycledModel(data));
    }

    /// Sends requests to `model` from now on (the runtime keeps the thinking level asked for
    /// where the model reasons, `off` where it does not).
    fn switch_to(&mut self, id: Id, kind: &str, model: &Model, finish: Finish) {
        let model = ModelRef::new(model.provider.clone(), model.id.clone());
        self.request(id, kind, vec![Op::SetModel(model)], finish);
    }

    /// The current model again, on a route built from the (changed) configuration.
    fn reroute(&mut self, id: Id, kind: &str) {
        let snapshot = &self.view.snapshot;
        let model = ModelRef::new(snapshot.provider.clone(), snapshot.model_id.clone());
        self.request(id, kind, vec![Op::SetModel(model)], Finish::Data(None));
    }

    fn set_thinking_level(&mut self, id: Id, kind: &str, level: &str) {
        let parsed = THINKING_LEVELS
            .contains(&level)
            .then(|| level.parse::<ThinkingLevel>().ok())
            .flatten();
        let Some(level) = parsed else {
            let error = format!(
                "Invalid thinking level: {level} (expected one of {})",
                THINKING_LEVELS.join(", ")
            );
            return self.out.send(&failure(&id, kind, error));
        };
        self.request(id, kind, vec![Op::SetThinking(level)], Finish::Data(None));
    }

    fn cycle_thinking_level(&mut self, id: Id, kind: &str) {
        if !self.view.snapshot.reasoning {
            return self.out.send(&success(&id, kind, Some(Value::Null)));
        }
        let current = self.view.snapshot.thinking_level.as_str();
        let next = CYCLED_LEVELS
            .iter()
            .position(|l| *l == current)
            .map_or(CYCLED_LEVELS[0], |i| {
                CYCLED_LEVELS[(i + 1) % CYCLED_LEVELS.len()]
            });
        let level = next.parse().unwrap_or(ThinkingLevel::Off);
        self.request(
            id,
            kind,
            vec![Op::SetThinking(level)],
            Finish::CycledThinking,
        );
    }

    // The host's lock is not held across these: `model_json` takes it again.
    fn available_models_json(&self) -> Vec<Value> {
        let models = self.host().available_models();
        models.iter().map(|m| self.model_json(m)).collect()
    }

    fn model_json_of(&self, provider: &str, model_id: &str) -> Value {
        let model = self.host().model(provider, model_id);
        model.map_or(Value::Null, |model| self.model_json(&model))
    }

    /// Pi's `Model` object, with the protocol and base URL requests would use.
    fn model_json(&self, model: &Model) -> Value {
        let (api, base_url) = self.host().endpoint(model).unwrap_or_default();
        state::model_json(model, &api, &base_url)
    }

    // ---------------------------------------------------------------- files

    /// The session file `export_html` writes out.
    fn session_file(&self) -> Result<PathBuf, String> {
        let file = &self.view.snapshot.session_file;
        if file.is_empty() {
            return Err("no session is open".to_owned());
        }
        Ok(PathBuf::from(file))
    }

    fn export_html(&mut self, output: Option<&str>) -> Result<Option<Value>, String> {
        let file = self.session_file()?;
        let output = output.map(Path::new);
        let path = self.host().export_html(&file, output)?;
        Ok(Some(json!({"path": path.display().to_string()})))
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

#[cfg(test)]
mod line_limit_tests {
    use super::*;

    async fn records(input: &[u8], limit: usize) -> Vec<Result<String, usize>> {
        let (sender, mut receiver) = tokio::sync::mpsc::unbounded_channel();
        read_input_bounded(input, sender, limit).await;
        let mut out = Vec::new();
        while let Ok(input) = receiver.try_recv() {
            match input {
                Input::Line(line) => out.push(Ok(line)),
                Input::TooLong(bytes) => out.push(Err(bytes)),
                Input::Closed
                | Input::ExtensionUi(_)
                | Input::NotACommand(_)
                | Input::CommandDone { .. } => {}
            }
        }
        out
    }

    #[tokio::test]
    async fn a_line_over_the_limit_is_skipped_and_counted_and_the_next_is_read() {
        let long = "x".repeat(100);
        let input = format!("{{\"type\":\"a\"}}\n{long}\n{{\"type\":\"b\"}}\r\n{long}");
        let got = records(input.as_bytes(), 50).await;
        assert_eq!(
            got,
            [
                Ok("{\"type\":\"a\"}".to_owned()),
                Err(101),
                Ok("{\"type\":\"b\"}".to_owned()),
                Err(100),
            ]
        );
        // Within the limit, nothing changes.
        let got = records(b"{}\n{\"type\":\"c\"}", 50).await;
        assert_eq!(
            got,
            [Ok("{}".to_owned()), Ok("{\"type\":\"c\"}".to_owned())]
        );
    }
}
