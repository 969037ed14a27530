//! Children started with `run_in_background`: they hold a parallel slot while they run, their
//! budget stops them and the parent hears why, and the parent's abort or its runtime's end
//! stops them, leaving their files whole.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use serde_json::{Value, json};
use strata_mock::MockServer;
use strata_provider::Catalog;
use strata_runtime::{ModelRef, ModelRoute, Op, Router, Routing as _, RuntimeEvent};
use strata_session::{AgentMessage, Entry, Session, StopReason};
use strata_subagents::{
    Budget, ChildEvent, ChildEventKind, SPAWNED_BY_FIELD, SpawnMode, SubagentSettings,
};
use strata_tools::{Access, Posted, Tool, ToolCall, ToolContext, ToolOutput, UpdateSender};
use tokio::sync::Notify;
use tokio::sync::mpsc::UnboundedReceiver;

use crate::spawn::{Harness, child_files, harness, long_prompt, settings, tool_results};

/// Long enough for any test here, short enough that a hang fails it rather than CI.
const PATIENCE: Duration = Duration::from_secs(10);

/// Routes every model to the mock (the runtime asks only on a model switch).
struct ToMock(String);

impl Router for ToMock {
    fn route(&self, model: &ModelRef) -> Result<ModelRoute, String> {
        let catalog = Catalog::builtin().map_err(|e| e.to_string())?;
        ModelRoute::to_base_url(&catalog, &model.provider, &model.model, &self.0, "test-key")
            .map_err(|e| e.to_string())
    }
}

fn router(server: &MockServer) -> Arc<dyn Router> {
    Arc::new(ToMock(server.base_url()))
}

/// The next child event that `accept` takes; fails after [`PATIENCE`].
async fn next_child_event(
    events: &mut UnboundedReceiver<ChildEvent>,
    accept: impl Fn(&ChildEvent) -> bool,
) -> ChildEvent {
    loop {
        let event = tokio::time::timeout(PATIENCE, events.recv())
            .await
            .expect("no such child event in time")
            .expect("the child events ended");
        if accept(&event) {
            return event;
        }
    }
}

fn is_request_start(event: &ChildEvent) -> bool {
    matches!(
        event.kind,
        ChildEventKind::Agent(strata_agent::AgentEvent::RequestStart { .. })
    )
}

/// The final texts of the next `n` runs to end.
async fn run_ends(events: &mut UnboundedReceiver<RuntimeEvent>, n: usize) -> Vec<String> {
    let mut ends = Vec::new();
    while ends.len() < n {
        let event = tokio::time::timeout(PATIENCE, events.recv())
            .await
            .expect("no run ended in time")
            .expect("the runtime ended");
        if let RuntimeEvent::RunEnded { final_text, .. } = event {
            ends.push(final_text);
        }
    }
    ends
}

/// Every line of `file` is one JSON object, and strata-session opens it with no diagnostic.
fn assert_whole(file: &Path) -> Session {
    let text = std::fs::read_to_string(file).unwrap();
    assert!(text.ends_with('\n'), "{} ends mid-line", file.display());
    for (n, line) in text.lines().enumerate() {
        let value: Value = serde_json::from_str(line)
            .unwrap_or_else(|e| panic!("{} line {}: {e}: {line}", file.display(), n + 1));
        assert!(value.is_object(), "line {}: {line}", n + 1);
    }
    let opened = Session::open(file).unwrap();
    assert!(
        opened.diagnostics.is_empty(),
        "{}: {:?}",
        file.display(),
        opened.diagnostics
    );
    opened.session
}

/// The child's file names its parent's file and session, and its last entry is an answer the
/// abort cut short.
fn assert_linked_and_aborted(child: &Session, parent: &Session) {
    let header = child.header();
    assert_eq!(
        header.parent_session.as_deref(),
        Some(parent.path().to_str().unwrap())
    );
    assert_eq!(
        header.extra[SPAWNED_BY_FIELD]["session"],
        parent.header().id.as_str()
    );
    let leaf = child.leaf().unwrap().clone();
    match child.tree().entry(&leaf).unwrap() {
        Entry::Message(m) => match m.message.into_message() {
            AgentMessage::Assistant(a) => assert_eq!(a.stop_reason, StopReason::Aborted),
            other => panic!("the child's last entry: {other:?}"),
        },
        other => panic!("the child's last entry: {other:?}"),
    }
}

/// The parent starts two children in the background in one message; the first child's
/// request is never answered.
const TWO_IN_BACKGROUND_FIRST_HANGS: &str = r#"
playback = "sequence"
[[turn]]
text = "Delegating twice."
[[turn.tool_call]]
tool = "task"
args = { description = "one", prompt = "Task one.", run_in_background = true }
[[turn.tool_call]]
tool = "task"
args = { description = "two", prompt = "Task two.", run_in_background = true }
[[turn]]
text = "never sent"
fault = { kind = "hang" }
"#;

#[tokio::test]
async fn a_background_spawn_over_the_parallel_limit_waits_and_the_parents_abort_ends_the_wait() {
    let mut h = harness(
        TWO_IN_BACKGROUND_FIRST_HANGS,
        SubagentSettings {
            mode: SpawnMode::Fresh,
            max_parallel: 1,
            ..SubagentSettings::default()
        },
    )
    .await;
    let mut inbox = h.parent.open_mailbox();
    let mut events = h.subagents.subscribe();
    let control = h.parent.control();
    let Harness {
        dir,
        server,
        subagents: _subagents,
        mut parent,
    } = h;
    let run = tokio::spawn(async move {
        let run = parent.prompt(long_prompt()).await;
        (parent, run)
    });
    // The first child holds the only slot and waits on its request.
    let first = next_child_event(&mut events, |e| {
        matches!(e.kind, ChildEventKind::Started { .. })
    })
    .await;
    next_child_event(&mut events, is_request_start).await;
    tokio::time::sleep(Duration::from_millis(400)).await;
    let mut started_meanwhile = Vec::new();
    while let Ok(event) = events.try_recv() {
        if let ChildEventKind::Started { description, .. } = event.kind {
            started_meanwhile.push(description);
        }
    }
    assert_eq!(
        started_meanwhile,
        Vec::<String>::new(),
        "the second child waits while the first runs"
    );
    assert_eq!(
        server.requests().len(),
        2,
        "the parent's request and the first child's, nothing from the second"
    );
    assert!(!run.is_finished(), "the parent's call waits for a slot");

    // The parent's abort ends both the wait and the running child: nothing hangs.
    control.abort();
    let (parent, result) = tokio::time::timeout(PATIENCE, run).await.unwrap().unwrap();
    assert_eq!(result.unwrap().reason, "aborted");
    let results = tool_results(parent.session());
    assert_eq!(results.len(), 2);
    assert!(!results[0].1, "the first started: {:?}", results[0]);
    assert!(
        results[0].0.contains("in the background"),
        "{}",
        results[0].0
    );
    assert!(
        results[1].1,
        "the waiting one is an error: {:?}",
        results[1]
    );
    assert_eq!(results[1].0, strata_tools::ABORTED_MESSAGE);
    let ended = next_child_event(&mut events, |e| {
        matches!(e.kind, ChildEventKind::Ended { .. })
    })
    .await;
    assert_eq!(ended.child, first.child);
    assert!(
        matches!(&ended.kind, ChildEventKind::Ended { outcome, .. } if outcome == "aborted"),
        "{ended:?}"
    );
    // The stopped child's end still reaches the parent, as a failure.
    let message = loop {
        match tokio::time::timeout(PATIENCE, inbox.recv()).await.unwrap() {
            Some(Posted::Message(text)) => break text,
            Some(_) => continue,
            None => panic!("the inbox closed without the child's message"),
        }
    };
    assert!(
        message.contains("(one) failed") && message.contains(strata_tools::ABORTED_MESSAGE),
        "{message}"
    );
    let files: Vec<_> = std::fs::read_dir(dir.path().join("parent.subagents"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(files.len(), 1, "the waiting child never started");
    let child = assert_whole(&files[0]);
    assert_linked_and_aborted(&child, parent.session());
}

/// Two children in the background; past the script everything answers `Done.`, in whichever
/// order the parent's and the second child's requests arrive.
const TWO_IN_BACKGROUND: &str = r#"
playback = "sequence"
[[turn]]
text = "Delegating twice."
[[turn.tool_call]]
tool = "task"
args = { description = "one", prompt = "Task one.", run_in_background = true }
[[turn.tool_call]]
tool = "task"
args = { description = "two", prompt = "Task two.", run_in_background = true }
[[turn]]
text = "Answer one."
[[turn]]
text = "Done."
[[turn]]
text = "Done."
"#;

#[tokio::test]
async fn a_background_child_holds_its_slot_until_it_ends_then_the_next_starts() {
    let mut h = harness(
        TWO_IN_BACKGROUND,
        SubagentSettings {
            mode: SpawnMode::Fresh,
            max_parallel: 1,
            ..SubagentSettings::default()
        },
    )
    .await;
    let mut inbox = h.parent.open_mailbox();
    let mut events = h.subagents.subscribe();
    let run = tokio::time::timeout(PATIENCE, h.parent.prompt(long_prompt()))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(run.final_text, "Done.");
    // Starts and ends in order: the second child started only once the first had ended.
    let mut order = Vec::new();
    while order.len() < 4 {
        let event = next_child_event(&mut events, |e| {
            matches!(
                e.kind,
                ChildEventKind::Started { .. } | ChildEventKind::Ended { .. }
            )
        })
        .await;
        order.push(match event.kind {
            ChildEventKind::Started { description, .. } => format!("start {description}"),
            ChildEventKind::Ended { outcome, .. } => format!("end {outcome}"),
            ChildEventKind::Agent(_) => unreachable!(),
        });
    }
    assert_eq!(order, ["start one", "end stop", "start two", "end stop"]);
    let mut messages = Vec::new();
    while messages.len() < 2 {
        match tokio::time::timeout(PATIENCE, inbox.recv()).await.unwrap() {
            Some(Posted::Message(text)) => messages.push(text),
            Some(_) => {}
            None => panic!("the inbox closed early"),
        }
    }
    assert!(messages[0].contains("(one) completed") && messages[0].contains("Answer one."));
    assert!(messages[1].contains("(two) completed") && messages[1].contains("Done."));
    assert_eq!(inbox.pending(), 0, "nothing more is promised");
    assert_eq!(child_files(&h).len(), 2);
}

/// A background child that would read a file and go on; the parent goes on meanwhile. The
/// parent's and the child's requests race, so both get the same turns: two reads, then
/// answers.
const BACKGROUND_READER: &str = r#"
playback = "sequence"
[[turn]]
text = "Delegating."
[[turn.tool_call]]
tool = "task"
args = { description = "reader", prompt = "Read a.txt.", run_in_background = true }
[[turn]]
text = "Reading."
[[turn.tool_call]]
tool = "read"
args = { path = "a.txt" }
[[turn]]
text = "Reading."
[[turn.tool_call]]
tool = "read"
args = { path = "a.txt" }
[[turn]]
text = "Done."
[[turn]]
text = "Done."
[[turn]]
text = "Done."
[[turn]]
text = "Done."
"#;

#[tokio::test]
async fn a_background_childs_budget_stops_it_and_the_parent_hears_why() {
    for (budget, said) in [
        (
            Budget {
                max_turns: Some(1),
                ..Budget::default()
            },
            "budget (1 turns)",
        ),
        (
            Budget {
                max_tokens: Some(100),
                ..Budget::default()
            },
            "budget (100 tokens)",
        ),
        (
            Budget {
                max_cost: Some(0.000_001),
                ..Budget::default()
            },
            "budget ($0.000001)",
        ),
    ] {
        let h = harness(
            BACKGROUND_READER,
            SubagentSettings {
                mode: SpawnMode::Fresh,
                budget,
                ..SubagentSettings::default()
            },
        )
        .await;
        std::fs::write(h.dir.path().join("a.txt"), "alpha").unwrap();
        let Harness {
            dir,
            server,
            subagents,
            parent,
        } = h;
        let mut children = subagents.subscribe();
        // Through the runtime, as a session runs: the child's end wakes the parent with it.
        let (handle, mut events, task) = strata_runtime::spawn(parent, router(&server));
        handle
            .send(Op::Prompt(long_prompt().as_str().into()))
            .unwrap();
        handle.send(Op::AwaitBackground).unwrap();
        handle.send(Op::Shutdown).unwrap();
        // The message arrives within the parent's run (at a turn boundary) or wakes it after.
        tokio::time::timeout(PATIENCE, async { while events.recv().await.is_some() {} })
            .await
            .unwrap_or_else(|_| panic!("{said}: the session hung"));
        let parent = task.await.unwrap();
        let ended = next_child_event(&mut children, |e| {
            matches!(e.kind, ChildEventKind::Ended { .. })
        })
        .await;
        assert!(
            matches!(&ended.kind, ChildEventKind::Ended { outcome, is_error: true, .. } if outcome == "budget"),
            "{said}: {ended:?}"
        );
        // The message the parent's last run began with: the child failed, and why.
        let tree = parent.session().tree();
        let notification = tree
            .path_from_root(parent.session().leaf().unwrap())
            .into_iter()
            .filter_map(|id| match tree.entry(id).unwrap() {
                Entry::Message(m) => match m.message.into_message() {
                    AgentMessage::User(user) => Some(serde_json::to_string(&user.content).unwrap()),
                    _ => None,
                },
                _ => None,
            })
            .find(|text| text.contains("<task-notification>"))
            .unwrap_or_else(|| panic!("{said}: no notification in the parent"));
        assert!(
            notification.contains("(reader) failed") && notification.contains(said),
            "{said}: {notification}"
        );
        let files: Vec<_> = std::fs::read_dir(dir.path().join("parent.subagents"))
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        assert_eq!(files.len(), 1);
        assert_whole(&files[0]);
    }
}

/// Holds the parent's tool batch until the test opens it: the background child's first
/// request reaches the mock before the parent's next one, so each takes its scripted turn.
struct Gate(Arc<Notify>);

#[async_trait]
impl Tool for Gate {
    fn name(&self) -> &str {
        "gate"
    }
    fn description(&self) -> &str {
        "Waits."
    }
    fn parameters(&self) -> Value {
        json!({"type": "object", "properties": {}})
    }
    fn access(&self, _arguments: &Value, _ctx: &ToolContext) -> Access {
        Access::Read(Vec::new())
    }
    async fn execute(
        &self,
        _call: ToolCall,
        ctx: &ToolContext,
        _updates: Option<UpdateSender>,
    ) -> ToolOutput {
        tokio::select! {
            () = self.0.notified() => ToolOutput::text("open"),
            () = ctx.cancel.cancelled() => ToolOutput::error("aborted"),
        }
    }
}

/// The parent starts one child in the background beside the gate; the child's request is
/// never answered; the parent's next request is answered with `then`.
fn background_hangs(then: &str) -> String {
    format!(
        r#"
playback = "sequence"
[[turn]]
text = "Delegating."
[[turn.tool_call]]
tool = "task"
args = {{ description = "slow", prompt = "Search everything.", run_in_background = true }}
[[turn.tool_call]]
tool = "gate"
args = {{}}
[[turn]]
text = "never sent"
fault = {{ kind = "hang" }}
{then}
"#
    )
}

/// A harness for [`background_hangs`]: the parent also has the gate; the test opens it once
/// the child's request is out.
async fn gated(then: &str) -> (Harness, Arc<Notify>) {
    let mut h = harness(&background_hangs(then), settings(SpawnMode::Fresh)).await;
    let gate = Arc::new(Notify::new());
    let mut tools = h.parent.tools().clone();
    tools.insert(Arc::new(Gate(Arc::clone(&gate))));
    h.parent.set_tools(tools);
    (h, gate)
}

#[tokio::test]
async fn aborting_the_idle_parent_stops_its_background_child_and_keeps_the_files_whole() {
    let (h, gate) = gated(
        "[[turn]]\ntext = \"Parent: meanwhile, done.\"\n\
         [[turn]]\ntext = \"Parent: the child was stopped.\"",
    )
    .await;
    let Harness {
        dir: _dir,
        server,
        subagents,
        parent,
    } = h;
    let parent_path = parent.session().path().to_path_buf();
    let mut children = subagents.subscribe();
    let (handle, mut events, task) = strata_runtime::spawn(parent, router(&server));
    handle
        .send(Op::Prompt(long_prompt().as_str().into()))
        .unwrap();
    next_child_event(&mut children, is_request_start).await;
    gate.notify_one();
    // The parent's run ends while its child waits on its request: the session is idle.
    let ends = run_ends(&mut events, 1).await;
    assert_eq!(ends, ["Parent: meanwhile, done."]);
    handle.send(Op::Abort).unwrap();
    let ended = next_child_event(&mut children, |e| {
        matches!(e.kind, ChildEventKind::Ended { .. })
    })
    .await;
    assert!(
        matches!(&ended.kind, ChildEventKind::Ended { outcome, .. } if outcome == "aborted"),
        "{ended:?}"
    );
    // Its failure wakes the parent as a run of its own.
    assert_eq!(
        run_ends(&mut events, 1).await,
        ["Parent: the child was stopped."]
    );
    handle.send(Op::Shutdown).unwrap();
    let parent = tokio::time::timeout(PATIENCE, task).await.unwrap().unwrap();
    let last_request = server.requests().last().unwrap().body.clone().unwrap();
    let woken_by = last_request["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .to_string();
    assert!(
        woken_by.contains("(slow) failed") && woken_by.contains("aborted"),
        "{woken_by}"
    );
    let parent_file = assert_whole(&parent_path);
    assert_eq!(parent_file.header().id, parent.session().header().id);
    let files: Vec<_> = std::fs::read_dir(parent_path.with_extension("subagents"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(files.len(), 1);
    let child = assert_whole(&files[0]);
    assert_linked_and_aborted(&child, &parent_file);
}

#[tokio::test]
async fn a_dropped_parent_runtime_stops_its_background_child_and_loses_nothing() {
    let (h, gate) = gated("[[turn]]\ntext = \"never sent\"\nfault = { kind = \"hang\" }").await;
    let Harness {
        dir: _dir,
        server,
        subagents,
        parent,
    } = h;
    let parent_path = parent.session().path().to_path_buf();
    let mut children = subagents.subscribe();
    let (handle, _events, task) = strata_runtime::spawn(parent, router(&server));
    handle
        .send(Op::Prompt(long_prompt().as_str().into()))
        .unwrap();
    next_child_event(&mut children, is_request_start).await;
    gate.notify_one();
    tokio::time::timeout(PATIENCE, async {
        while server.requests().len() < 3 {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("the parent's next request");
    // Mid-run (the parent's own request is waiting too): the runtime goes away as a crashed
    // front end's would.
    task.abort();
    assert!(task.await.is_err_and(|e| e.is_cancelled()));
    let ended = next_child_event(&mut children, |e| {
        matches!(e.kind, ChildEventKind::Ended { .. })
    })
    .await;
    assert!(
        matches!(&ended.kind, ChildEventKind::Ended { outcome, .. } if outcome == "aborted"),
        "{ended:?}"
    );
    let requests = server.requests().len();
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(
        server.requests().len(),
        requests,
        "the child sends nothing more"
    );

    let parent_file = assert_whole(&parent_path);
    // Nothing lost in the parent: its spawning call and the calls' results are there.
    let results = tool_results(&parent_file);
    assert_eq!(results.len(), 2);
    assert!(
        results[0].0.contains("in the background"),
        "{}",
        results[0].0
    );
    let files: Vec<_> = std::fs::read_dir(parent_path.with_extension("subagents"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(files.len(), 1);
    let child = assert_whole(&files[0]);
    assert_linked_and_aborted(&child, &parent_file);
    // Nothing lost in the child: its task, then the answer the abort cut short.
    let text = std::fs::read_to_string(&files[0]).unwrap();
    assert!(
        text.contains("Search everything."),
        "the task is in the file"
    );
}

/// What the child in `file` spent itself: its answers that are not the parent's (a fork's file
/// opens with a copy of the parent's path, ids and all).
fn own_cost(file: &Path, parent: &Session) -> f64 {
    let child = Session::open(file).unwrap().session;
    let tree = child.tree();
    tree.iter()
        .filter(|entry| parent.tree().entry(entry.id()).is_err())
        .filter_map(|entry| match entry.entry().unwrap() {
            Entry::Message(m) => match m.message.into_message() {
                AgentMessage::Assistant(a) => Some(a.usage.cost.total),
                _ => None,
            },
            _ => None,
        })
        .sum()
}

#[tokio::test]
async fn a_resumed_sessions_stats_count_what_its_background_children_cost() {
    for mode in [SpawnMode::Fresh, SpawnMode::Fork] {
        let h = harness(
            TWO_IN_BACKGROUND,
            SubagentSettings {
                mode,
                max_parallel: 1,
                ..SubagentSettings::default()
            },
        )
        .await;
        let Harness {
            dir,
            server,
            subagents: _subagents,
            parent,
        } = h;
        let parent_path = parent.session().path().to_path_buf();
        let (handle, mut events, task) = strata_runtime::spawn(parent, router(&server));
        handle
            .send(Op::Prompt(long_prompt().as_str().into()))
            .unwrap();
        handle.send(Op::AwaitBackground).unwrap();
        handle.send(Op::Shutdown).unwrap();
        tokio::time::timeout(PATIENCE, async { while events.recv().await.is_some() {} })
            .await
            .expect("the session hung");
        task.await.unwrap();

        let resumed = Session::open(&parent_path).unwrap().session;
        let children: Vec<_> = std::fs::read_dir(dir.path().join("parent.subagents"))
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        assert_eq!(children.len(), 2);
        let spent: f64 = children.iter().map(|file| own_cost(file, &resumed)).sum();
        assert!(spent > 0.0, "{mode:?}: the children made priced requests");
        // Their delegation results carry no cost (they only say the child started)...
        let from_results: f64 = strata_session::delegation_results(resumed.tree())
            .iter()
            .map(|decision| decision.cost)
            .sum();
        assert_eq!(from_results, 0.0);
        // ...so the stats of the reopened session read it from the files their ends name,
        // a fork's copy of the parent's requests left out.
        let stats = strata_runtime::read_model::stats(&resumed);
        assert!(
            (stats.children_cost - spent).abs() < 1e-12,
            "{mode:?}: {} against {spent}",
            stats.children_cost
        );
    }
}
