//! Tool work that outlives its call (a background child agent) posts its message through the
//! mailbox: the runtime delivers it at the end of the conversation, waking an idle session,
//! and an abort while idle stops the work, whose message still arrives.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use serde_json::{Value, json};
use strata_agent::{Agent, CacheSettings};
use strata_runtime::{Op, RuntimeEvent};
use strata_tools::{Access, Tool, ToolCall, ToolContext, ToolOutput, ToolSet, UpdateSender};

use crate::support::{final_texts, session, start_agent};

/// Returns at once; posts `done` after `delay`, or `stopped` when the call's abort fires;
/// notes in `closed` that its inbox went away (the session it belonged to was left).
struct Later {
    delay: Duration,
    closed: Arc<AtomicBool>,
}

#[async_trait]
impl Tool for Later {
    fn name(&self) -> &str {
        "later"
    }
    fn description(&self) -> &str {
        "Starts work that answers later."
    }
    fn parameters(&self) -> Value {
        json!({"type": "object", "properties": {}})
    }
    fn access(&self, _arguments: &Value, _ctx: &ToolContext) -> Access {
        Access::Delegate
    }
    async fn execute(
        &self,
        _call: ToolCall,
        ctx: &ToolContext,
        _updates: Option<UpdateSender>,
    ) -> ToolOutput {
        let Some(mailbox) = &ctx.mailbox else {
            return ToolOutput::error("no mailbox");
        };
        let posting = mailbox.promise("dropped");
        let (cancel, delay, closed) = (ctx.cancel.clone(), self.delay, self.closed.clone());
        tokio::spawn(async move {
            tokio::select! {
                () = tokio::time::sleep(delay) => posting.post("done: the work's answer"),
                () = cancel.cancelled() => posting.post("stopped: the work was aborted"),
                () = posting.closed() => closed.store(true, Ordering::SeqCst),
            }
        });
        ToolOutput::text("started")
    }
}

/// The parent calls `later`, then ends its run; past the script the mock echoes.
const SCENARIO: &str = r#"
[[turn]]
[[turn.tool_call]]
tool = "later"
args = {}

[[turn]]
text = "meanwhile, nothing else to do"
"#;

fn with_later(
    delay: Duration,
) -> impl FnOnce(&strata_runtime::ModelRoute, &std::path::Path) -> Agent {
    with_later_noting(delay, Arc::default())
}

fn with_later_noting(
    delay: Duration,
    closed: Arc<AtomicBool>,
) -> impl FnOnce(&strata_runtime::ModelRoute, &std::path::Path) -> Agent {
    move |route, dir| {
        let mut tools = ToolSet::new();
        tools.insert(Arc::new(Later { delay, closed }));
        let config = strata_agent::AgentConfig {
            cache: CacheSettings::default(),
            ..route.agent_config(dir)
        };
        Agent::new(session(dir), route.provider.clone(), tools, config)
    }
}

/// The text of the last message of the `index`th request.
fn last_message(r: &crate::support::Running, index: usize) -> String {
    let requests = r.server.requests();
    let body = requests[index].body.clone().unwrap();
    body["messages"].as_array().unwrap().last().unwrap()["content"].to_string()
}

#[tokio::test]
async fn work_that_outlives_its_call_wakes_the_idle_session_with_its_message_at_the_end() {
    let mut r = start_agent(SCENARIO, with_later(Duration::from_millis(300))).await;
    r.send(Op::Prompt("start it".into()));
    let first = r.settled().await;
    assert_eq!(final_texts(&first), ["meanwhile, nothing else to do"]);
    assert_eq!(r.server.requests().len(), 2, "the call returned at once");
    // Later, with nothing sent: the message runs as a prompt of its own.
    let woken = r.settled().await;
    assert_eq!(final_texts(&woken), ["done: the work's answer"]);
    assert_eq!(r.server.requests().len(), 3);
    assert!(last_message(&r, 2).contains("done: the work's answer"));
    r.stop().await;
}

#[tokio::test]
async fn an_abort_while_idle_stops_pending_work_and_its_message_still_arrives() {
    let mut r = start_agent(SCENARIO, with_later(Duration::from_secs(600))).await;
    r.send(Op::Prompt("start it".into()));
    r.settled().await;
    r.send(Op::Abort);
    let seen = r
        .until(|e| matches!(e, RuntimeEvent::RunEnded { .. }))
        .await;
    assert_eq!(final_texts(&seen), ["stopped: the work was aborted"]);
    assert!(last_message(&r, 2).contains("stopped: the work was aborted"));
    r.stop().await;
}

#[tokio::test]
async fn await_background_runs_each_answer_before_the_ops_after_it() {
    let mut r = start_agent(SCENARIO, with_later(Duration::from_millis(300))).await;
    r.send(Op::Prompt("start it".into()));
    r.send(Op::AwaitBackground);
    r.send(Op::Shutdown);
    let mut ends = Vec::new();
    while let Some(event) = r.events.recv().await {
        if let RuntimeEvent::RunEnded { final_text, .. } = event {
            ends.push(final_text);
        }
    }
    assert_eq!(
        ends,
        ["meanwhile, nothing else to do", "done: the work's answer"]
    );
}

#[tokio::test]
async fn leaving_the_session_stops_its_background_work_and_nothing_lands_in_the_next() {
    let closed = Arc::new(AtomicBool::new(false));
    let make = with_later_noting(Duration::from_millis(400), closed.clone());
    let mut r = start_agent(SCENARIO, make).await;
    r.send(Op::Prompt("start it".into()));
    r.settled().await;
    r.send(Op::NewSession { parent: None });
    r.session_changed().await;
    tokio::time::sleep(Duration::from_millis(800)).await;
    assert!(
        closed.load(Ordering::SeqCst),
        "the work heard its session end"
    );
    assert_eq!(r.server.requests().len(), 2, "no run started for it");
    r.stop().await;
}
