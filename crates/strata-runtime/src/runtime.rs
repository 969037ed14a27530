//! The session runtime: one task owns the agent; operations arrive on a queue, events leave on
//! a stream, and a status snapshot is published whenever the runtime is idle.

use std::collections::{HashMap, VecDeque};
use std::path::PathBuf;
use std::sync::Arc;

use strata_accounting::Totals;
use strata_agent::{Agent, AgentEvent, RunSummary};
use strata_compaction::CompactionReason;
use strata_provider::ThinkingLevel;
use strata_session::{EntryId, EntryKind, Session};
use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;

use crate::error::RuntimeError;
use crate::event::{Disposition, RunEnd, RuntimeEvent};
use crate::op::{Op, OpName, UserInput, WhileRunning};
use crate::query::Query;
use crate::queue::MessageQueue;
use crate::read_model::Counting;
use crate::route::{ModelRef, Router};
use crate::sessions;
use crate::shell::UserShell;

/// What a front end may read at any time: the state as of the last time the runtime was idle
/// (`running` says whether a run goes on now); also the answer to [`crate::Query::State`].
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Status {
    /// The session file.
    pub session_path: PathBuf,
    /// The session id.
    pub session_id: String,
    /// The session's name, when set.
    pub session_name: Option<String>,
    /// The session's leaf.
    pub leaf: Option<EntryId>,
    /// Provider id of the model.
    pub provider: String,
    /// Model id.
    pub model: String,
    /// The wire protocol (Pi's `api`).
    pub api: String,
    /// The model reasons (thinking levels other than `off` apply).
    pub reasoning: bool,
    /// The model's context window in tokens.
    pub context_window: u64,
    /// The model's prices.
    pub prices: strata_provider::Prices,
    /// The thinking level in effect.
    pub thinking: ThinkingLevel,
    /// Whether automatic compaction is on.
    pub auto_compaction: bool,
    /// Where tools run.
    pub cwd: PathBuf,
    /// The live tools, by name.
    pub tools: Vec<String>,
    /// The provider honours mid-conversation system messages.
    pub mid_conversation_system: bool,
    /// Without them, changes are said as a reminder with the next user message.
    pub system_reminders: bool,
    /// The provider adds tools without rewriting the tools chapter.
    pub tool_addition: bool,
    /// The provider takes deferred tool definitions.
    pub deferred_tools: bool,
    /// The permission mode (`None`: no rules gate).
    pub permission_mode: Option<strata_permissions::Mode>,
    /// A run goes on.
    pub running: bool,
    /// Steering and follow-up messages waiting.
    pub queued: usize,
    /// Every request the session file records, added up (as far as counted: see `counting`).
    pub totals: Totals,
    /// A long session's first count runs beside the runtime; `totals` follow when it ends
    /// (the status is published again then).
    #[serde(default)]
    pub counting: bool,
}

/// The front end's side: send operations, read the status.
#[derive(Debug, Clone)]
pub struct RuntimeHandle {
    ops: mpsc::UnboundedSender<Op>,
    status: watch::Receiver<Status>,
}

/// The runtime's task ended; no operation reaches it any more.
#[derive(Debug, thiserror::Error)]
#[error("the session runtime has ended")]
pub struct RuntimeClosed;

impl RuntimeHandle {
    /// Queues `op`.
    pub fn send(&self, op: Op) -> Result<(), RuntimeClosed> {
        self.ops.send(op).map_err(|_| RuntimeClosed)
    }

    /// The latest status.
    pub fn status(&self) -> Status {
        self.status.borrow().clone()
    }

    /// A receiver notified at every status change.
    pub fn watch_status(&self) -> watch::Receiver<Status> {
        self.status.clone()
    }
}

/// Starts the runtime on `agent` (its events are taken over: do not subscribe elsewhere),
/// making routes of the models operations name with `router`. Returns the handle, the event
/// stream and the task, which gives the agent back after [`Op::Shutdown`] or once every
/// handle is dropped. The operations of the agent's extensions
/// ([`Agent::set_extension_ops`]) are checked and queued beside the front end's.
pub fn spawn(
    mut agent: Agent,
    router: Arc<dyn Router>,
) -> (
    RuntimeHandle,
    mpsc::UnboundedReceiver<RuntimeEvent>,
    JoinHandle<Agent>,
) {
    let (ops_tx, ops_rx) = mpsc::unbounded_channel();
    let (events_tx, events_rx) = mpsc::unbounded_channel();
    if let Some(calls) = agent.take_extension_ops() {
        tokio::spawn(crate::extension_ops::forward(calls, ops_tx.downgrade()));
    }
    let mut runtime = SessionRuntime::new(agent, router, events_tx);
    let (status_tx, status_rx) = watch::channel(runtime.status(false));
    runtime.status_tx = Some(status_tx);
    let task = tokio::spawn(runtime.run(ops_rx));
    (
        RuntimeHandle {
            ops: ops_tx,
            status: status_rx,
        },
        events_rx,
        task,
    )
}

struct SessionRuntime {
    agent: Agent,
    /// Makes routes of the models operations name.
    router: Arc<dyn Router>,
    agent_events: mpsc::UnboundedReceiver<AgentEvent>,
    out: mpsc::UnboundedSender<RuntimeEvent>,
    status_tx: Option<watch::Sender<Status>>,
    /// Steering and follow-up messages waiting.
    queue: MessageQueue,
    /// Operations that arrived during a run and wait for it to end.
    deferred: VecDeque<Op>,
    /// A run happened since the runtime last said it settled.
    unsettled: bool,
    /// Permission questions from the gate, and the answers they wait for.
    asks: mpsc::UnboundedReceiver<strata_permissions::PendingAsk>,
    waiting: HashMap<String, tokio::sync::oneshot::Sender<strata_permissions::Answer>>,
    /// Messages from tool work that outlived its call (a background child's answer).
    inbox: strata_tools::Inbox,
    /// Arrivals a run ended before delivering: each runs next, as a follow-up would.
    arrived: VecDeque<String>,
    /// The session's stats as of the entries counted so far (a long first pass beside).
    counting: Counting,
    /// The user's own shell command.
    shell: UserShell,
}

impl SessionRuntime {
    fn new(
        mut agent: Agent,
        router: Arc<dyn Router>,
        out: mpsc::UnboundedSender<RuntimeEvent>,
    ) -> Self {
        let agent_events = agent.subscribe();
        // Background work posts here; dropping the runtime closes it, which stops that work.
        let inbox = agent.open_mailbox();
        // The gate's questions come here and leave as events.
        let (ask_tx, asks) = mpsc::unbounded_channel();
        if let Some(gate) = &agent.tool_rules().gate {
            gate.set_asker(Some(ask_tx));
        }
        let shell = UserShell::new(
            agent.config().tool_settings.clone(),
            agent.config().cwd.clone(),
        );
        Self {
            shell,
            agent,
            router,
            agent_events,
            out,
            status_tx: None,
            queue: MessageQueue::default(),
            deferred: VecDeque::new(),
            unsettled: false,
            asks,
            waiting: HashMap::new(),
            inbox,
            arrived: VecDeque::new(),
            counting: Counting::default(),
        }
    }

    async fn run(mut self, mut ops: mpsc::UnboundedReceiver<Op>) -> Agent {
        loop {
            let op = match self.deferred.pop_front() {
                Some(op) => Some(op),
                None => {
                    self.publish(false);
                    if std::mem::take(&mut self.unsettled) {
                        self.emit(RuntimeEvent::Settled);
                    }
                    let ping_due = self.agent.keep_warm_due();
                    // Idle: a background child's answer wakes the session as a prompt.
                    match self.arrived.pop_front() {
                        Some(text) => Some(Op::Prompt(UserInput::text(text))),
                        None => tokio::select! {
                            biased;
                            // Before the next operation: one sent after the command's end
                            // finds it in the session.
                            Some(message) = self.shell.ended.recv() => {
                                self.record_bash(message);
                                continue;
                            }
                            op = ops.recv() => op,
                            () = ping_due => Some(Op::KeepWarm),
                            // A long first count ended: published at the loop's top.
                            () = self.counting.passed() => continue,
                            Some(posted) = self.inbox.recv() => match self.posted(posted) {
                                Some(text) => Some(Op::Prompt(UserInput::text(text))),
                                None => continue,
                            },
                        },
                    }
                }
            };
            // An extension that died while the runtime waited is reported before the next
            // operation's events, not only after it.
            self.emit_notices();
            match op {
                None | Some(Op::Shutdown) => break,
                Some(op) => self.handle(op, &mut ops).await,
            }
            // Commands that ended during the operation (a run) join the session after it.
            while let Ok(message) = self.shell.ended.try_recv() {
                self.record_bash(message);
            }
            self.forward_agent_events();
            self.emit_notices();
        }
        self.publish(false);
        self.agent
    }

    async fn handle(&mut self, op: Op, ops: &mut mpsc::UnboundedReceiver<Op>) {
        let name = op.name();
        let result = match op {
            Op::Prompt(input) => {
                self.run_prompts(input, ops).await;
                Ok(())
            }
            // Nothing runs: queued for the next prompt's run, as Pi queues them.
            Op::Steer(input) => {
                self.queue.steer(input, None);
                self.queued();
                Ok(())
            }
            Op::FollowUp(input) => {
                self.queue.follow_up(input);
                self.queued();
                Ok(())
            }
            Op::ClearQueue => {
                let texts = self.queue.clear(&self.agent.control());
                self.emit(RuntimeEvent::QueueCleared { texts });
                Ok(())
            }
            Op::SetSteeringMode(mode) => {
                self.queue.steering_mode = mode;
                Ok(())
            }
            Op::SetFollowUpMode(mode) => {
                self.queue.follow_up_mode = mode;
                Ok(())
            }
            // No run to stop; background children still running are the session's to stop.
            Op::Abort => {
                if self.inbox.pending() > 0 {
                    self.agent.control().abort();
                }
                Ok(())
            }
            Op::Compact { focus } => self
                .agent
                .compact(CompactionReason::Manual, focus.as_deref())
                .await
                .map(|entry| {
                    self.forward_agent_events();
                    self.emit(RuntimeEvent::Compacted { entry });
                })
                .map_err(RuntimeError::from),
            Op::Navigate {
                target,
                summarize,
                instructions,
            } => self
                .agent
                .navigate(target.as_ref(), summarize, instructions.as_deref())
                .await
                .map(|entry| self.emit(RuntimeEvent::Navigated { entry }))
                .map_err(RuntimeError::from),
            Op::Fork { leaf } => sessions::fork(self.agent.session(), leaf.as_ref())
                .and_then(|s| self.adopt(s, false)),
            Op::ForkBefore { entry } => crate::read_model::fork_point(self.agent.session(), &entry)
                .map_err(RuntimeError::ForkPoint)
                .and_then(|(leaf, _)| sessions::fork(self.agent.session(), leaf.as_ref()))
                .and_then(|s| self.adopt(s, false)),
            Op::Clone => match self.agent.session().leaf().cloned() {
                Some(leaf) => sessions::fork(self.agent.session(), Some(&leaf))
                    .and_then(|s| self.adopt(s, false)),
                None => Err(RuntimeError::NothingToClone),
            },
            Op::NewSession { parent } => {
                let dir = sessions::dir_of(self.agent.session());
                let cwd = self.agent.config().cwd.display().to_string();
                sessions::create(&dir, &cwd, parent).and_then(|s| self.adopt(s, false))
            }
            Op::SwitchSession { path, follow_model } => {
                sessions::open(&path).and_then(|s| self.adopt(s, follow_model))
            }
            Op::SetModel(model) => self.set_model(&model),
            Op::SetSummaryModel(model) => self.set_summary_model(model.as_ref()),
            Op::SetThinking(level) => self.set_thinking(level),
            Op::SetTools(names) => self.set_tools(&names),
            Op::SetAutoCompaction(enabled) => {
                self.agent.set_auto_compaction(enabled);
                Ok(())
            }
            Op::SetSessionName(name) => self
                .agent
                .session_mut()
                .append_session_info(&name)
                .map(|_| self.emit(RuntimeEvent::SessionNamed { name }))
                .map_err(RuntimeError::from),
            Op::LabelLeaf(label) => self.label_leaf(label),
            Op::AppendCustom { custom_type, data } => self
                .agent
                .session_mut()
                .append_custom(&custom_type, data)
                .map(|_| self.announce_last_entry())
                .map_err(RuntimeError::from),
            Op::KeepWarm => self
                .agent
                .keep_warm()
                .await
                .map(|pinged| {
                    if pinged.is_some() {
                        self.forward_agent_events();
                        self.announce_last_entry();
                    }
                })
                .map_err(RuntimeError::from),
            Op::SetPermissionMode(mode) => self.set_permission_mode(mode),
            Op::AnswerPermission { id, .. } => Err(RuntimeError::NoQuestion(id)),
            Op::RewindFiles { target } => self
                .agent
                .rewind_files(target.as_ref())
                .map(|report| self.emit(RuntimeEvent::FilesRestored { report }))
                .map_err(RuntimeError::from),
            Op::Query { id, query } => {
                self.forward_agent_events();
                // Their totals are whole: a first count under way is waited for (the
                // published status says it is under way instead).
                if matches!(query, Query::Stats | Query::State) {
                    self.counting.settle().await;
                }
                let queued = self.queue.len();
                let answer = crate::read_model::answer(
                    &mut self.agent,
                    query,
                    &mut self.counting,
                    |agent, counting| status_of(agent, false, queued, counting),
                );
                self.emit(RuntimeEvent::Answered { id, answer });
                Ok(())
            }
            Op::Bash { command, exclude } => {
                self.shell.start(command, exclude, self.out.clone());
                Ok(())
            }
            Op::AbortBash => {
                self.shell.abort();
                Ok(())
            }
            Op::RecordBash(record) => self
                .agent
                .session_mut()
                .append_message(strata_session::AgentMessage::BashExecution(
                    (*record).into(),
                ))
                .map(|_| ())
                .map_err(RuntimeError::from),
            Op::AwaitBackground => {
                self.await_background(ops).await;
                Ok(())
            }
            Op::Shutdown => Ok(()),
        };
        if let Err(error) = result {
            self.forward_agent_events();
            self.emit(RuntimeEvent::Failed {
                op: name,
                error: error.to_string(),
            });
        }
    }

    /// Runs every background arrival as it comes until no background work is pending.
    async fn await_background(&mut self, ops: &mut mpsc::UnboundedReceiver<Op>) {
        loop {
            let next = match self.arrived.pop_front() {
                Some(text) => text,
                None if self.inbox.is_idle() => return,
                // Something is pending: its posting (or its drop) sends a message.
                None => match self.inbox.recv().await {
                    Some(posted) => match self.posted(posted) {
                        Some(text) => text,
                        None => continue,
                    },
                    None => return,
                },
            };
            self.run_prompts(UserInput::text(next), ops).await;
        }
    }

    /// A background posting while idle: a message to run (returned), or progress to pass on.
    fn posted(&mut self, posted: strata_tools::Posted) -> Option<String> {
        match posted {
            strata_tools::Posted::Message(text) => Some(text),
            strata_tools::Posted::Update { id, output } => {
                self.emit(RuntimeEvent::Agent {
                    event: tool_update(id, output),
                });
                None
            }
            strata_tools::Posted::Record(record) => {
                self.emit(RuntimeEvent::Record { record });
                None
            }
        }
    }

    /// Runs `first`, then each follow-up queued meanwhile, one run each, until one ends other
    /// than with `stop` or none is left.
    async fn run_prompts(&mut self, first: UserInput, ops: &mut mpsc::UnboundedReceiver<Op>) {
        let mut next = Some(first);
        while let Some(input) = next.take() {
            self.emit(RuntimeEvent::Accepted {
                disposition: Disposition::Started,
                pending: self.queue.len(),
            });
            self.publish(true);
            let result = self.one_run(input, ops).await;
            self.forward_agent_events();
            // Before the run's end: print mode exits on it.
            self.emit_notices();
            let end = match &result {
                Ok(summary) => RunEnd::from_reason(&summary.reason),
                Err(_) => RunEnd::Error,
            };
            // A run that finished continues with the queued follow-ups (before operations
            // that arrived meanwhile, none of which stopped it); one that did not leaves them
            // queued for the next prompt.
            // Background answers that came after the run's last turn boundary run next.
            self.arrived.extend(self.agent.control().take_arrivals());
            if end == RunEnd::Stop {
                next = self.queue.next_follow_up();
            }
            if next.is_none() && end == RunEnd::Stop {
                next = self.arrived.pop_front().map(UserInput::text);
            }
            self.emit(RuntimeEvent::RunEnded {
                end,
                final_text: result
                    .as_ref()
                    .map(|s| s.final_text.clone())
                    .unwrap_or_default(),
                error: result.err().map(|e| e.to_string()),
                continues: next.is_some(),
            });
            if next.is_some() {
                self.emit(RuntimeEvent::QueueChanged {
                    texts: self.queue.texts(),
                });
            }
        }
        self.unsettled = true;
    }

    /// One prompt, serving the queue meanwhile.
    async fn one_run(
        &mut self,
        input: UserInput,
        ops: &mut mpsc::UnboundedReceiver<Op>,
    ) -> Result<RunSummary, strata_agent::AgentError> {
        let control = self.agent.control();
        let Self {
            agent,
            agent_events,
            out,
            queue,
            deferred,
            asks,
            waiting,
            inbox,
            shell,
            ..
        } = self;
        // Steering queued for this run (or left from the last) is handed over as it starts.
        queue.feed(&control);
        let gate = agent.tool_rules().gate.clone();
        let run = agent.prompt_with_images(input.text, input.images);
        tokio::pin!(run);
        let mut closed = false;
        loop {
            tokio::select! {
                biased;
                Some(event) = agent_events.recv() => {
                    let delivered = match &event {
                        AgentEvent::SteeringDelivered { count } => Some(*count),
                        _ => None,
                    };
                    let _ = out.send(RuntimeEvent::Agent { event });
                    if let Some(count) = delivered {
                        queue.delivered(count, &control);
                        let _ = out.send(RuntimeEvent::QueueChanged { texts: queue.texts() });
                    }
                }
                Some(ask) = asks.recv() => {
                    let request = ask.request;
                    waiting.insert(request.id.clone(), ask.reply);
                    let _ = out.send(RuntimeEvent::PermissionRequested { request });
                }
                result = &mut run => return result,
                // Delivered at the next turn boundary, after the user's steering.
                Some(posted) = inbox.recv() => match posted {
                    strata_tools::Posted::Message(text) => control.arrive(text),
                    strata_tools::Posted::Update { id, output } => {
                        let _ = out.send(RuntimeEvent::Agent { event: tool_update(id, output) });
                    }
                    strata_tools::Posted::Record(record) => {
                        let _ = out.send(RuntimeEvent::Record { record });
                    }
                },
                op = ops.recv(), if !closed => {
                    // Every handle dropped: nothing more will arrive; the run finishes.
                    let Some(op) = op else {
                        closed = true;
                        continue;
                    };
                    match op.while_running() {
                        WhileRunning::Steer(input) => {
                            queue.steer(input, Some(&control));
                            let _ = out.send(RuntimeEvent::Accepted {
                                disposition: Disposition::Steered,
                                pending: queue.len(),
                            });
                            let _ = out.send(RuntimeEvent::QueueChanged { texts: queue.texts() });
                        }
                        WhileRunning::FollowUp(input) => {
                            queue.follow_up(input);
                            let _ = out.send(RuntimeEvent::Accepted {
                                disposition: Disposition::Queued,
                                pending: queue.len(),
                            });
                            let _ = out.send(RuntimeEvent::QueueChanged { texts: queue.texts() });
                        }
                        WhileRunning::Abort => control.abort(),
                        WhileRunning::ClearQueue => {
                            let texts = queue.clear(&control);
                            let _ = out.send(RuntimeEvent::QueueCleared { texts });
                        }
                        WhileRunning::SetMode { steering, mode } => {
                            if steering {
                                queue.steering_mode = mode;
                                queue.feed(&control);
                            } else {
                                queue.follow_up_mode = mode;
                            }
                        }
                        WhileRunning::SetPermissionMode(mode) => {
                            // The agent is busy in the run: the gate is shared with it.
                            if let Some(gate) = &gate {
                                gate.set_mode(mode);
                                let _ = out.send(RuntimeEvent::PermissionModeChanged { mode });
                            } else {
                                let _ = out.send(RuntimeEvent::Failed {
                                    op: OpName::SetPermissionMode,
                                    error: RuntimeError::NoGate.to_string(),
                                });
                            }
                        }
                        WhileRunning::Answer { id, answer } => {
                            match waiting.remove(&id) {
                                Some(reply) => {
                                    let _ = reply.send(answer);
                                }
                                None => {
                                    let _ = out.send(RuntimeEvent::Failed {
                                        op: OpName::AnswerPermission,
                                        error: RuntimeError::NoQuestion(id).to_string(),
                                    });
                                }
                            }
                        }
                        WhileRunning::Bash { command, exclude } => {
                            shell.start(command, exclude, out.clone());
                        }
                        WhileRunning::AbortBash => shell.abort(),
                        WhileRunning::AbortThen(op) => {
                            control.abort();
                            deferred.push_back(op);
                        }
                        WhileRunning::After(op) => deferred.push_back(op),
                    }
                }
            }
        }
    }

    /// Switches the model; the agent keeps the level asked for where the new model reasons.
    fn set_model(&mut self, model: &ModelRef) -> Result<(), RuntimeError> {
        let route = self.router.route(model).map_err(RuntimeError::Route)?;
        self.agent.set_model(route)?;
        let thinking = self.agent.thinking()?;
        let model = &self.agent.config().model;
        self.emit(RuntimeEvent::ModelChanged {
            provider: model.provider.clone(),
            model: model.id.clone(),
            thinking,
        });
        Ok(())
    }

    /// The tools named: those the agent holds that are not built-ins (built with it), else
    /// the built-in of that name.
    fn set_tools(&mut self, names: &[String]) -> Result<(), RuntimeError> {
        let mut tools = strata_tools::ToolSet::default();
        for name in names {
            let held = self
                .agent
                .tools()
                .iter()
                .find(|tool| tool.name() == name && strata_tools::builtin(name).is_none())
                .cloned();
            match held.or_else(|| strata_tools::builtin(name)) {
                Some(tool) => tools.insert(tool),
                None => return Err(RuntimeError::UnknownTool(name.clone())),
            }
        }
        self.agent.set_tools(tools);
        Ok(())
    }

    fn set_summary_model(&mut self, model: Option<&ModelRef>) -> Result<(), RuntimeError> {
        let route = match model {
            Some(model) => Some(self.router.route(model).map_err(RuntimeError::Route)?),
            None => None,
        };
        self.agent.set_summary_model(route);
        Ok(())
    }

    fn set_permission_mode(&mut self, mode: strata_permissions::Mode) -> Result<(), RuntimeError> {
        if !self.agent.set_permission_mode(mode) {
            return Err(RuntimeError::NoGate);
        }
        self.emit(RuntimeEvent::PermissionModeChanged { mode });
        Ok(())
    }

    fn label_leaf(&mut self, label: Option<String>) -> Result<(), RuntimeError> {
        let session = self.agent.session();
        let target = session
            .leaf()
            .and_then(|leaf| {
                session
                    .tree()
                    .walk_to_root(leaf.as_str())
                    .find(|entry| !matches!(entry.kind(), EntryKind::Label | EntryKind::Leaf))
                    .map(|entry| entry.id().clone())
            })
            .ok_or(RuntimeError::NothingToLabel)?;
        self.agent
            .session_mut()
            .append_label(&target, label.as_deref())?;
        self.emit(RuntimeEvent::Labelled { target, label });
        Ok(())
    }

    fn set_thinking(&mut self, level: ThinkingLevel) -> Result<(), RuntimeError> {
        let level = self.agent.set_thinking(level)?;
        self.emit(RuntimeEvent::ThinkingChanged { level });
        Ok(())
    }

    /// Appends to `session` from now on, recording the model and thinking level where they
    /// differ from what it names; the queue belonged to the old session. With `follow_model`
    /// the session's own model (where the router reaches it) and level are taken up instead.
    fn adopt(&mut self, session: Session, follow_model: bool) -> Result<(), RuntimeError> {
        // Without a route the level in effect goes with the user, not with the file.
        let mut wanted = self.agent.wanted_thinking()?;
        self.agent.switch_session(session);
        self.queue.clear(&self.agent.control());
        // Background work belonged to the file left: closing its inbox stops it (its files
        // stay as written), so no answer lands in another session.
        self.inbox = self.agent.open_mailbox();
        self.arrived.clear();
        // The file is read once: the model it names comes from the session just adopted.
        let named = match follow_model {
            true => self
                .agent
                .context()?
                .model
                .as_ref()
                .map(|named| ModelRef::new(named.provider.clone(), named.model_id.clone())),
            false => None,
        };
        // A model the router cannot reach keeps the current one, as before the switch.
        let route = named.and_then(|named| self.router.session_route(&named));
        let follows_file = route.is_some();
        if let Some(route) = route {
            wanted = self.agent.context()?.thinking_level.clone();
            self.agent.set_model(route)?;
        }
        let model = self.agent.config().model.clone();
        let context = self.agent.context()?;
        let same_model = context
            .model
            .as_ref()
            .is_some_and(|m| m.provider == model.provider && m.model_id == model.id);
        if !same_model {
            self.agent
                .session_mut()
                .append_model_change(&model.provider, &model.id)?;
        }
        self.agent.set_thinking_level(&wanted)?;
        if follows_file {
            let thinking = self.agent.thinking()?;
            let model = &self.agent.config().model;
            self.emit(RuntimeEvent::ModelChanged {
                provider: model.provider.clone(),
                model: model.id.clone(),
                thinking,
            });
        }
        let session = self.agent.session();
        self.emit(RuntimeEvent::SessionChanged {
            path: session.path().to_path_buf(),
            id: session.header().id.clone(),
        });
        Ok(())
    }

    fn queued(&self) {
        self.emit(RuntimeEvent::Accepted {
            disposition: Disposition::Queued,
            pending: self.queue.len(),
        });
        self.emit(RuntimeEvent::QueueChanged {
            texts: self.queue.texts(),
        });
    }

    /// Appends the user's command that ended; a failure is the `bash` operation's.
    fn record_bash(&mut self, message: strata_session::BashExecutionMessage) {
        let appended = self
            .agent
            .session_mut()
            .append_message(strata_session::AgentMessage::BashExecution(message));
        if let Err(error) = appended {
            self.emit(RuntimeEvent::Failed {
                op: OpName::Bash,
                error: error.to_string(),
            });
        }
    }

    /// [`RuntimeEvent::EntryAppended`] for the entry just written.
    fn announce_last_entry(&self) {
        let tree = self.agent.session().tree();
        if let Some(entry) = tree.iter().last()
            && let Ok(entry) = entry.entry()
        {
            self.emit(RuntimeEvent::EntryAppended { entry });
        }
    }

    fn forward_agent_events(&mut self) {
        while let Ok(event) = self.agent_events.try_recv() {
            let _ = self.out.send(RuntimeEvent::Agent { event });
        }
    }

    /// [`RuntimeEvent::Notice`] for each thing hooks and extensions said for the user since
    /// the last time.
    fn emit_notices(&mut self) {
        for notice in self.agent.take_notices() {
            self.emit(RuntimeEvent::Notice {
                source: notice.source,
                text: notice.text,
            });
        }
    }

    fn emit(&self, event: RuntimeEvent) {
        let _ = self.out.send(event);
    }

    fn status(&mut self, running: bool) -> Status {
        status_of(
            &mut self.agent,
            running,
            self.queue.len(),
            &mut self.counting,
        )
    }

    fn publish(&mut self, running: bool) {
        let status = self.status(running);
        if let Some(tx) = &self.status_tx {
            tx.send_replace(status);
        }
    }
}

/// The runtime's state: the agent's model, session and tools, with the run and queue state.
fn status_of(agent: &mut Agent, running: bool, queued: usize, counting: &mut Counting) -> Status {
    let totals = counting.totals(agent.session());
    let thinking = agent.thinking().unwrap_or(ThinkingLevel::Off);
    let permission_mode = agent.tool_rules().gate.as_ref().map(|gate| gate.mode());
    let config = agent.config();
    let session = agent.session();
    let model = &config.model;
    let capabilities = &config.capabilities;
    Status {
        session_path: session.path().to_path_buf(),
        session_id: session.header().id.clone(),
        session_name: session.tree().name().map(str::to_owned),
        leaf: session.leaf().cloned(),
        provider: model.provider.clone(),
        model: model.id.clone(),
        api: config.api.clone(),
        reasoning: model.reasoning,
        context_window: model.context_window,
        prices: model.prices,
        thinking,
        auto_compaction: config.compaction.enabled,
        cwd: config.cwd.clone(),
        tools: agent
            .tools()
            .names()
            .into_iter()
            .map(str::to_owned)
            .collect(),
        mid_conversation_system: capabilities.mid_conversation_system,
        system_reminders: capabilities.system_reminders,
        tool_addition: capabilities.tool_addition,
        deferred_tools: capabilities.deferred_tools,
        permission_mode,
        running,
        queued,
        counting: totals.is_none(),
        totals: totals.unwrap_or_default(),
    }
}

/// A background call's progress, as the call's own updates are.
fn tool_update(id: String, output: strata_tools::ToolOutput) -> AgentEvent {
    AgentEvent::ToolUpdate {
        id,
        text: output.text_content(),
        details: output.details,
    }
}
