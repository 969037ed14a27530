use pretty_assertions::assert_eq;
use serde_json::json;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use strata_tools::{Access, Tool, ToolCall, ToolContext, ToolOutput, ToolSet, UpdateSender};

use crate::common::{Env, text};

fn call(id: &str, name: &str, args: serde_json::Value) -> ToolCall {
    ToolCall::new(id, name, args)
}

/// A test tool: waits at a shared barrier, for another call to finish, or `ms` milliseconds;
/// records when it finished.
struct Probe {
    access: Access,
    barrier: Arc<tokio::sync::Barrier>,
    finished: Arc<Mutex<Vec<String>>>,
}

#[async_trait]
impl Tool for Probe {
    fn name(&self) -> &str {
        "probe"
    }
    fn description(&self) -> &str {
        "test probe"
    }
    fn parameters(&self) -> serde_json::Value {
        json!({"type": "object"})
    }
    fn access(&self, _arguments: &serde_json::Value, _ctx: &ToolContext) -> Access {
        self.access.clone()
    }
    async fn execute(
        &self,
        call: ToolCall,
        _ctx: &ToolContext,
        _u: Option<UpdateSender>,
    ) -> ToolOutput {
        if call.arguments["barrier"] == true {
            self.barrier.wait().await;
        }
        if let Some(other) = call.arguments["after"].as_str() {
            while !self.finished.lock().unwrap().iter().any(|id| id == other) {
                tokio::time::sleep(std::time::Duration::from_millis(5)).await;
            }
        }
        let ms = call.arguments["ms"].as_u64().unwrap_or(0);
        tokio::time::sleep(std::time::Duration::from_millis(ms)).await;
        self.finished.lock().unwrap().push(call.id.clone());
        ToolOutput::text(call.id)
    }
}

fn probe_set(access: Access, parties: usize) -> (ToolSet, Arc<Mutex<Vec<String>>>) {
    let finished = Arc::new(Mutex::new(Vec::new()));
    let mut set = ToolSet::new();
    set.insert(Arc::new(Probe {
        access,
        barrier: Arc::new(tokio::sync::Barrier::new(parties)),
        finished: finished.clone(),
    }));
    (set, finished)
}

#[tokio::test]
async fn independent_calls_run_concurrently() {
    let env = Env::new();
    let (set, _) = probe_set(Access::None, 3);
    // Each call waits at a barrier for all three: the batch completes only if they overlap.
    let calls = (0..3)
        .map(|i| call(&i.to_string(), "probe", json!({"barrier": true})))
        .collect();
    let results = tokio::time::timeout(
        std::time::Duration::from_secs(30),
        set.run_batch(calls, &env.ctx),
    )
    .await
    .expect("independent calls did not run concurrently");
    assert_eq!(
        results.iter().map(text).collect::<Vec<_>>(),
        vec!["0", "1", "2"]
    );
}

#[tokio::test]
async fn results_are_in_call_order_even_when_later_calls_finish_first() {
    let env = Env::new();
    let (set, finished) = probe_set(Access::None, 1);
    let calls = vec![
        call("slow", "probe", json!({"after": "fast"})),
        call("fast", "probe", json!({})),
    ];
    let results = set.run_batch(calls, &env.ctx).await;
    assert_eq!(
        results.iter().map(text).collect::<Vec<_>>(),
        vec!["slow", "fast"]
    );
    assert_eq!(*finished.lock().unwrap(), vec!["fast", "slow"]);
}

#[tokio::test]
async fn conflicting_calls_run_one_after_another_in_call_order() {
    let env = Env::new();
    let (set, finished) = probe_set(Access::Exclusive, 1);
    let calls = vec![
        call("slow", "probe", json!({"ms": 300})),
        call("fast", "probe", json!({"ms": 0})),
    ];
    set.run_batch(calls, &env.ctx).await;
    assert_eq!(*finished.lock().unwrap(), vec!["slow", "fast"]);
}

#[tokio::test]
async fn a_shell_command_runs_before_a_later_conflicting_write() {
    let env = Env::new();
    let calls = vec![
        call("1", "bash", json!({"command": "sleep 0.3; cat target.txt"})),
        call("2", "write", json!({"path": "target.txt", "content": "x"})),
    ];
    let results = env.tools.run_batch(calls, &env.ctx).await;
    // The write waited for the shell, so the shell found no file.
    assert!(results[0].is_error, "{}", text(&results[0]));
    assert_eq!(
        text(&results[1]),
        "Successfully wrote 1 bytes to target.txt"
    );
}

#[tokio::test]
async fn a_read_runs_while_a_shell_command_waits() {
    let env = Env::new();
    env.write("a.txt", "A");
    // A read does not conflict with a shell command; updates carry the call's index.
    let (sender, mut receiver) = tokio::sync::mpsc::unbounded_channel();
    let calls = vec![
        call(
            "1",
            "bash",
            json!({"command": "echo started; sleep 0.5; echo done"}),
        ),
        call("2", "read", json!({"path": "a.txt"})),
    ];
    let results = env
        .tools
        .run_batch_with_updates(calls, &env.ctx, Some(sender))
        .await;
    assert_eq!(text(&results[0]), "started\ndone\n");
    assert_eq!(text(&results[1]), "A");
    let (index, _) = receiver.recv().await.unwrap();
    assert_eq!(index, 0);
}

#[tokio::test]
async fn writes_to_one_file_apply_in_call_order() {
    let env = Env::new();
    let calls: Vec<ToolCall> = (0..20)
        .map(|i| {
            call(
                &i.to_string(),
                "write",
                json!({"path": "same.txt", "content": format!("v{i}")}),
            )
        })
        .chain(std::iter::once(call(
            "r",
            "read",
            json!({"path": "./same.txt"}),
        )))
        .collect();
    let results = env.tools.run_batch(calls, &env.ctx).await;
    assert_eq!(text(&results[20]), "v19");
    assert_eq!(env.read("same.txt"), "v19");
}

#[tokio::test]
async fn edits_after_a_write_see_the_written_content() {
    let env = Env::new();
    let calls = vec![
        call(
            "1",
            "write",
            json!({"path": "f.txt", "content": "hello world"}),
        ),
        call(
            "2",
            "edit",
            json!({"path": "f.txt", "edits": [{"oldText": "world", "newText": "batch"}]}),
        ),
        call("3", "bash", json!({"command": "cat f.txt"})),
    ];
    let results = env.tools.run_batch(calls, &env.ctx).await;
    assert!(results.iter().all(|r| !r.is_error), "{results:?}");
    assert_eq!(text(&results[2]), "hello batch");
}

#[tokio::test]
async fn unknown_tools_and_bad_arguments_become_error_results() {
    let env = Env::new();
    let calls = vec![
        call("1", "teleport", json!({})),
        call("2", "read", json!({"path": 42})),
        call("3", "read", json!({})),
        call(
            "4",
            "bash",
            json!({"command": "echo ok", "timeout": "soon"}),
        ),
    ];
    let results = env.tools.run_batch(calls, &env.ctx).await;
    assert_eq!(text(&results[0]), "Tool teleport not found");
    assert_eq!(
        text(&results[1]),
        "Invalid arguments for read: field `path`: invalid type: integer `42`, expected a string"
    );
    assert_eq!(
        text(&results[2]),
        "Invalid arguments for read: missing field `path`"
    );
    assert_eq!(
        text(&results[3]),
        "Invalid arguments for bash: field `timeout`: expected a non-negative number"
    );
    assert!(results.iter().all(|r| r.is_error));
}

#[tokio::test]
async fn a_cancelled_batch_returns_one_aborted_result_per_call() {
    let env = Env::new();
    env.write("a.txt", "A");
    env.ctx.cancel.cancel();
    let calls = vec![
        call("1", "read", json!({"path": "a.txt"})),
        call("2", "bash", json!({"command": "echo hi"})),
        call(
            "3",
            "edit",
            json!({"path": "a.txt", "edits": [{"oldText": "A", "newText": "B"}]}),
        ),
    ];
    let results = env.tools.run_batch(calls, &env.ctx).await;
    assert_eq!(results.len(), 3);
    assert!(results.iter().all(|r| r.is_error));
    assert_eq!(text(&results[0]), "Operation aborted");
    assert_eq!(text(&results[1]), "Command aborted");
    assert_eq!(env.read("a.txt"), "A");
}

#[tokio::test]
async fn cancelling_during_a_batch_stops_the_running_shell() {
    let env = Env::new();
    let cancel = env.ctx.cancel.clone();
    let calls = vec![
        call("1", "bash", json!({"command": "sleep 100"})),
        call("2", "bash", json!({"command": "echo never"})),
    ];
    let (results, ()) = tokio::join!(env.tools.run_batch(calls, &env.ctx), async {
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
        cancel.cancel();
    });
    assert_eq!(text(&results[0]), "Command aborted");
    assert_eq!(text(&results[1]), "Command aborted");
}

struct Panicky;

#[async_trait]
#[expect(clippy::panic, reason = "panicking is what this test tool is for")]
impl Tool for Panicky {
    fn name(&self) -> &str {
        "panicky"
    }
    fn description(&self) -> &str {
        "always panics"
    }
    fn parameters(&self) -> serde_json::Value {
        json!({"type": "object"})
    }
    async fn execute(
        &self,
        _c: ToolCall,
        _ctx: &ToolContext,
        _u: Option<UpdateSender>,
    ) -> ToolOutput {
        panic!("boom")
    }
}

#[tokio::test]
async fn a_panicking_tool_becomes_an_error_result_and_the_batch_goes_on() {
    let env = Env::new();
    env.write("a.txt", "A");
    let mut set = ToolSet::default_set();
    set.insert(Arc::new(Panicky));
    let calls = vec![
        call("1", "panicky", json!({})),
        call("2", "read", json!({"path": "a.txt"})),
    ];
    let results = set.run_batch(calls, &env.ctx).await;
    assert!(results[0].is_error);
    assert_eq!(text(&results[0]), "Tool panicky failed unexpectedly: boom");
    assert_eq!(text(&results[1]), "A");
}

#[test]
fn the_default_set_is_read_bash_edit_write_and_all_adds_grep_find_ls() {
    assert_eq!(
        ToolSet::default_set().names(),
        vec!["read", "bash", "edit", "write"]
    );
    assert_eq!(
        ToolSet::all().names(),
        vec!["read", "bash", "edit", "write", "grep", "find", "ls"]
    );
    let set = ToolSet::all();
    assert_eq!(set.get("grep").map(|t| t.name()), Some("grep"));
    assert!(set.get("nope").is_none());
}
