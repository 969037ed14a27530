//! Task folding on a real session: the planner's folds written as Pi 1.x context edits (calls
//! and results left out, the answer replaced by the note), read back through the context
//! builder.

use serde_json::{Value, json};
use strata_compaction::{
    FOLD_OPENING, FoldPlan, MaskingOutlook, MaskingSettings, fold_replacement, mask_entries,
    plan_folding,
};
use strata_session::{AgentMessage, ContextAction};

use crate::support::{
    TestSession, assistant, context, fact_file, opus, tool_call, tool_result, user,
};

fn folding() -> MaskingSettings {
    MaskingSettings {
        fold_tasks: true,
        ..MaskingSettings::default()
    }
}

/// The folding plan for `context` on Opus prices, with masking's entries of it.
fn fold_plan(
    context: &strata_context::Context,
    settings: &MaskingSettings,
    outlook: MaskingOutlook,
) -> Option<FoldPlan> {
    plan_folding(context, &mask_entries(context), settings, &opus(), outlook)
}

fn file_body(n: usize) -> String {
    fact_file(n, 60)
}

/// Four finished tasks (a read, a short lookup, an answer), then the prompt of the next.
fn session() -> TestSession {
    let mut s = TestSession::new();
    for n in 0..4 {
        s.push(user(&format!("Task {n}")));
        s.push(tool_call(
            &format!("read-{n}"),
            "read",
            json!({"path": format!("src/f{n}.rs")}),
            0,
        ));
        s.push(tool_result(&format!("read-{n}"), "read", &file_body(n)));
        s.push(tool_call(
            &format!("sum-{n}"),
            "get_sum",
            json!({"a": n, "b": 3}),
            0,
        ));
        s.push(tool_result(
            &format!("sum-{n}"),
            "get_sum",
            &format!("The sum of {n} and 3 is {}.", n + 3),
        ));
        s.push(assistant(&format!("Task {n} is done."), 0));
    }
    s.push(user("Task 4"));
    s
}

fn apply(s: &mut TestSession, plan: &strata_compaction::FoldPlan) {
    for task in &plan.tasks {
        s.session
            .append_context_edit(task.omitted.clone(), ContextAction::Exclude)
            .expect("omit");
        s.session
            .append_context_replacement(&task.answer, fold_replacement(task))
            .expect("replace");
    }
}

fn texts(context: &strata_context::Context) -> Vec<String> {
    context
        .messages
        .iter()
        .map(|m| serde_json::to_string(m.message.as_ref()).expect("json"))
        .collect()
}

#[test]
fn finished_tasks_fold_to_their_prompt_and_a_note_and_the_file_keeps_everything() {
    let mut s = session();
    let before = context(&s);
    let plan = fold_plan(&before, &folding(), MaskingOutlook::warm(100)).expect("folding pays");
    // The four finished tasks; the current one (kept) stays whole.
    assert_eq!(plan.tasks.len(), 4);
    assert!(plan.saved_usd > plan.rewrite_usd);
    for task in &plan.tasks {
        assert_eq!(task.omitted.len(), 4, "two calls and two results");
    }
    let note = &plan.tasks[1].note;
    assert!(note.starts_with(FOLD_OPENING), "{note}");
    // A line a call: what it was called with and what it showed — a short output whole, a
    // long one by its length and the line that sets a value — then the answer itself.
    assert!(note.contains(r#"read {"path":"src/f1.rs"}"#), "{note}");
    assert!(note.contains("61 lines"), "{note}");
    assert!(note.contains("fact-1: value-1"), "{note}");
    assert!(!note.contains("some content to read"), "{note}");
    assert!(
        note.contains(r#"get_sum {"a":1,"b":3} → The sum of 1 and 3 is 4."#),
        "{note}"
    );
    assert!(note.ends_with("\n\nTask 1 is done."), "{note}");

    let lines_before = std::fs::read_to_string(s.session.path())
        .expect("file")
        .lines()
        .count();
    apply(&mut s, &plan);
    let file = std::fs::read_to_string(s.session.path()).expect("file");
    // Appended edits only (one per omitted message, one per note), in Pi 1.x's shape; every
    // output is still in the file.
    assert_eq!(file.lines().count(), lines_before + 4 * 5);
    let edits: Vec<Value> = file
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|entry| entry["type"] == "context_edit")
        .collect();
    assert_eq!(
        edits
            .iter()
            .filter(|edit| edit["replacement"].is_null())
            .count(),
        16
    );
    assert!(edits.iter().all(|edit| edit["targetId"].is_string()));
    for n in 0..4 {
        assert!(
            file.contains(&format!("line 59 of file {n}")),
            "output {n} kept"
        );
    }

    // Each finished task is now its prompt and one assistant message, the current prompt
    // last.
    let after = context(&s);
    assert_eq!(after.messages.len(), 4 * 2 + 1);
    let texts = texts(&after);
    for n in 0..4 {
        assert!(texts[2 * n].contains(&format!("Task {n}")));
        assert!(
            texts[2 * n + 1].contains(FOLD_OPENING),
            "{}",
            texts[2 * n + 1]
        );
        assert!(matches!(
            after.messages[2 * n + 1].message.as_ref(),
            AgentMessage::Assistant(_)
        ));
    }
    assert!(texts[8].contains("Task 4"));

    // Folded tasks are not folded again.
    assert_eq!(
        fold_plan(&after, &folding(), MaskingOutlook::warm(100)),
        None
    );
}

#[test]
fn folding_waits_until_it_pays_and_is_off_by_setting() {
    let s = session();
    let context = context(&s);
    // One request left: the reads it saves do not pay the rewrite.
    assert_eq!(
        fold_plan(&context, &folding(), MaskingOutlook::warm(1)),
        None
    );
    // A cold prefix is written again anyway: then any saving pays.
    let cold = MaskingOutlook {
        prefix_cold: true,
        ..MaskingOutlook::warm(1)
    };
    assert!(fold_plan(&context, &folding(), cold).is_some());
    // Mid-task, a warm prefix waits for the next task's start (the rewrite would take the
    // current task's messages too); a cold one folds at once.
    let mut s = session();
    s.push(tool_call("read-4", "read", json!({"path": "src/f4.rs"}), 0));
    s.push(tool_result("read-4", "read", &file_body(4)));
    let mid_task = crate::support::context(&s);
    assert_eq!(
        fold_plan(&mid_task, &folding(), MaskingOutlook::warm(100)),
        None
    );
    assert!(fold_plan(&mid_task, &folding(), cold).is_some());
    let off = MaskingSettings {
        fold_tasks: false,
        ..folding()
    };
    assert_eq!(fold_plan(&context, &off, MaskingOutlook::warm(100)), None);
    // Keeping every task folds none.
    let keep_all = MaskingSettings {
        keep_recent_tasks: 5,
        ..folding()
    };
    assert_eq!(
        fold_plan(&context, &keep_all, MaskingOutlook::warm(100)),
        None
    );
}

#[test]
fn a_task_that_did_not_end_in_an_answer_or_holds_other_messages_stays_whole() {
    let mut s = TestSession::new();
    // Task 0 stopped at a tool call (aborted): no answer to keep.
    s.push(user("Task 0"));
    s.push(tool_call("c0", "read", json!({"path": "a"}), 0));
    s.push(tool_result("c0", "read", &file_body(0)));
    // Task 1 answered with no call at all: nothing to fold.
    s.push(user("Task 1"));
    s.push(assistant("Nothing to do.", 0));
    // Task 2 is a normal finished task.
    s.push(user("Task 2"));
    s.push(tool_call("c2", "read", json!({"path": "b"}), 0));
    s.push(tool_result("c2", "read", &file_body(2)));
    s.push(assistant("Task 2 is done.", 0));
    s.push(user("Task 3"));
    let plan =
        fold_plan(&context(&s), &folding(), MaskingOutlook::warm(100)).expect("task 2 folds");
    assert_eq!(plan.tasks.len(), 1);
    assert!(plan.tasks[0].note.ends_with("Task 2 is done."));
    // A task whose assistant carried a provider's own item (a hosted tool search's output,
    // kept whole) stays whole: the next request must carry it.
    let mut s = TestSession::new();
    s.push(user("Task 0"));
    let mut searched = tool_call("c0", "read", json!({"path": "a"}), 0);
    if let AgentMessage::Assistant(message) = &mut searched {
        let mut item = serde_json::Map::new();
        item.insert("type".into(), json!("tool_search_output"));
        item.insert("tools".into(), json!([]));
        message
            .content
            .insert(0, strata_session::ContentBlock::Unknown(item));
    }
    s.push(searched);
    s.push(tool_result("c0", "read", &file_body(0)));
    s.push(assistant("Task 0 is done.", 0));
    s.push(user("Task 1"));
    assert_eq!(
        fold_plan(&context(&s), &folding(), MaskingOutlook::warm(100)),
        None
    );
    // The error of a failed call is noted by its first line.
    let mut s = TestSession::new();
    s.push(user("Task 0"));
    s.push(tool_call("c0", "read", json!({"path": "missing"}), 0));
    let trace: String = (0..40)
        .map(|n| format!("\n    at frame {n} (lib/fs.js)"))
        .collect();
    let mut failed = tool_result("c0", "read", &format!("ENOENT: no such file{trace}"));
    if let AgentMessage::ToolResult(result) = &mut failed {
        result.is_error = true;
    }
    s.push(failed);
    s.push(assistant("The file is missing.", 0));
    s.push(user("Task 1"));
    let plan = fold_plan(&context(&s), &folding(), MaskingOutlook::warm(100)).expect("folds");
    assert!(
        plan.tasks[0]
            .note
            .contains(r#"read {"path":"missing"} → error: ENOENT: no such file"#),
        "{}",
        plan.tasks[0].note
    );
}
