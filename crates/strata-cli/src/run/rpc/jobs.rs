//! Work that holds the agent for a while: a prompt run (follow-ups included) and a manual
//! compaction. Each runs in its own task, owning the agent, while the command loop keeps
//! serving steer, abort and state queries from [`Shared`].

use std::sync::{Arc, Mutex};

use serde_json::Value;
use strata_agent::{Agent, AgentEvent, Control};
use strata_compaction::CompactionReason;
use strata_session::ImageContent;
use tokio::sync::mpsc::UnboundedReceiver;

use super::events::{EventMapper, Origin, compaction_result};
use super::protocol::{Id, Out, failure, success};
use super::state::Shared;

/// What a job needs besides the agent.
#[derive(Clone)]
pub struct JobContext {
    /// Where records go.
    pub out: Out,
    /// Queues and the state snapshot.
    pub shared: Arc<Mutex<Shared>>,
    /// The agent's steering queue and abort switch.
    pub control: Control,
    /// Reported as `maxAttempts` of retries.
    pub max_retries: u32,
}

/// A finished job: the agent, and the records to send once the command loop holds it again
/// (so a client that reacts to `agent_end` or the response finds the agent idle).
pub struct JobEnd {
    /// The agent, back from the job.
    pub agent: Box<Agent>,
    /// `agent_end` (and what precedes it) or the command's response.
    pub records: Vec<Value>,
}

/// Runs `text` and then each queued follow-up, as one Pi run.
pub async fn prompt(
    mut agent: Box<Agent>,
    text: String,
    images: Vec<ImageContent>,
    job: JobContext,
) -> JobEnd {
    let mut events = agent.subscribe();
    let mut mapper = mapper_for(&agent, job.max_retries);
    let mut text = text;
    let mut images = images;
    loop {
        let result = {
            let run = agent.prompt_with_images(text, std::mem::take(&mut images));
            tokio::pin!(run);
            loop {
                tokio::select! {
                    result = &mut run => break result,
                    Some(event) = events.recv() => forward(event, &mut mapper, &job),
                }
            }
        };
        drain(&mut events, &mut mapper, &job);
        let (reason, error) = match &result {
            Ok(summary) => (summary.reason.clone(), None),
            Err(error) => ("error".to_owned(), Some(error.to_string())),
        };
        let next = if reason == "stop" {
            lock(&job.shared).queue.next_follow_up()
        } else {
            None
        };
        if let Some(next) = next {
            job.out.send(&lock(&job.shared).queue_update());
            mapper.continue_run();
            text = next.text;
            images = next.images;
            continue;
        }
        refresh(&mut agent, &job.shared);
        lock(&job.shared).streaming = false;
        return JobEnd {
            agent,
            records: mapper.finish_run(error.as_deref(), reason == "aborted"),
        };
    }
}

/// Compacts now (Pi's `compact` command); the records hold the command's response.
pub async fn compact(
    mut agent: Box<Agent>,
    focus: Option<String>,
    id: Id,
    job: JobContext,
) -> JobEnd {
    let mut events = agent.subscribe();
    let mut mapper = mapper_for(&agent, job.max_retries);
    let session_file = agent.session().path().to_path_buf();
    let result = {
        let run = agent.compact(CompactionReason::Manual, focus.as_deref());
        tokio::pin!(run);
        loop {
            tokio::select! {
                result = &mut run => break result,
                Some(event) = events.recv() => forward(event, &mut mapper, &job),
            }
        }
    };
    drain(&mut events, &mut mapper, &job);
    refresh(&mut agent, &job.shared);
    lock(&job.shared).compacting = false;
    let response = match result {
        Ok(Some(entry)) => match compaction_result(&session_file, &entry) {
            Some(data) => success(&id, "compact", Some(data)),
            None => failure(
                &id,
                "compact",
                "the compaction entry could not be read back",
            ),
        },
        Ok(None) => failure(&id, "compact", "Nothing to compact (session too small)"),
        Err(error) => failure(&id, "compact", format!("Compaction failed: {error}")),
    };
    JobEnd {
        agent,
        records: vec![response],
    }
}

fn mapper_for(agent: &Agent, max_retries: u32) -> EventMapper {
    let config = agent.config();
    EventMapper::new(
        Origin {
            api: config.api.clone(),
            provider: config.model.provider.clone(),
            model: config.model.id.clone(),
        },
        max_retries,
        agent.session().path().to_path_buf(),
    )
}

fn forward(event: AgentEvent, mapper: &mut EventMapper, job: &JobContext) {
    match &event {
        AgentEvent::SteeringDelivered { count } => {
            let mut shared = lock(&job.shared);
            shared.queue.delivered(*count, &job.control);
            job.out.send(&shared.queue_update());
        }
        AgentEvent::MessageEnd { message, .. } => {
            lock(&job.shared).snapshot.messages.push(message.to_json());
        }
        _ => {}
    }
    job.out.send_all(&mapper.handle(event));
}

fn drain(events: &mut UnboundedReceiver<AgentEvent>, mapper: &mut EventMapper, job: &JobContext) {
    while let Ok(event) = events.try_recv() {
        forward(event, mapper, job);
    }
}

/// Copies the agent's state into the snapshot commands read.
pub fn refresh(agent: &mut Agent, shared: &Mutex<Shared>) {
    let auto_compaction = agent.config().compaction.enabled;
    let file = agent.session().path().display().to_string();
    let id = agent.session().header().id.clone();
    let name = agent.session().tree().name().map(str::to_owned);
    let (messages, thinking) = match agent.context() {
        Ok(context) => (
            context
                .messages
                .iter()
                .map(|m| m.message.to_json())
                .collect::<Vec<Value>>(),
            context.thinking_level.clone(),
        ),
        Err(error) => {
            tracing_error(&format!("building the context: {error}"));
            return;
        }
    };
    let totals = strata_accounting::Totals::of(&strata_accounting::records(agent.session().tree()));
    let mut shared = lock(shared);
    let snapshot = &mut shared.snapshot;
    snapshot.totals = totals;
    snapshot.session_file = file;
    snapshot.session_id = id;
    snapshot.session_name = name;
    snapshot.auto_compaction = auto_compaction;
    snapshot.messages = messages;
    snapshot.thinking_level = thinking;
}

/// The shared state, even after a task panicked while holding it (the data stays usable).
pub fn lock(shared: &Mutex<Shared>) -> std::sync::MutexGuard<'_, Shared> {
    shared
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// stdout carries the protocol; problems outside any command's answer go to stderr.
pub fn tracing_error(message: &str) {
    eprintln!("strata rpc: {message}");
}
