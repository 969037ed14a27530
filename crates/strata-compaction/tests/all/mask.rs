//! Observation masking on a real session: the planner's stubs written as Pi 1.x context edits
//! with a replacement, read back through the context builder.

use serde_json::{Value, json};
use strata_compaction::{
    MaskEntryKind, MaskingOutlook, MaskingSettings, STUB_OPENING, mask_entries, plan_masking,
};

use crate::support::{TestSession, assistant, fact_file, opus, tool_call, tool_result, user};

fn masking() -> MaskingSettings {
    MaskingSettings {
        enabled: true,
        keep_recent_tasks: 1,
        min_output_tokens: 200,
        fold_tasks: false,
    }
}

fn file_body(n: usize) -> String {
    fact_file(n, 200)
}

/// Six tasks, each reading a large file; the last (current) task reads file 0 again, as a
/// model re-fetching a fact does, and has not answered yet.
fn session() -> TestSession {
    let mut s = TestSession::new();
    for n in 0..5 {
        s.push(user(&format!("Task {n}")));
        let id = format!("call-{n}");
        s.push(tool_call(
            &id,
            "read",
            json!({"path": format!("src/f{n}.rs")}),
            0,
        ));
        s.push(tool_result(&id, "read", &file_body(n)));
        s.push(assistant(&format!("Task {n} is done."), 0));
    }
    s.push(user("Task 5"));
    s.push(tool_call("call-5", "read", json!({"path": "src/f0.rs"}), 0));
    s.push(tool_result("call-5", "read", &file_body(0)));
    s
}

fn context(s: &TestSession) -> strata_context::Context {
    strata_context::build(s.session.tree(), Some(&s.leaf())).expect("context")
}

fn text_of(message: &strata_session::AgentMessage) -> String {
    serde_json::to_value(message).expect("json")["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

#[test]
fn stubs_are_context_edits_the_file_keeps_every_full_output_and_the_current_task_is_untouched() {
    let mut s = session();
    let before = context(&s);
    let entries = mask_entries(&before);
    let plan = plan_masking(&entries, &masking(), &opus(), MaskingOutlook::warm(100))
        .expect("masking pays");
    assert_eq!(plan.stubs.len(), 5, "the five earlier tasks' reads");
    let lines_before = std::fs::read_to_string(s.session.path())
        .expect("file")
        .lines()
        .count();
    for (target, stub) in &plan.stubs {
        s.session
            .append_context_replacement(target, Value::String(stub.clone()))
            .expect("edit");
    }

    // An edit, not a rewrite: the file only grew by one context_edit line per stub, and every
    // full output is still in it.
    let file = std::fs::read_to_string(s.session.path()).expect("file");
    assert_eq!(file.lines().count(), lines_before + plan.stubs.len());
    for n in 0..5 {
        assert!(
            file.contains(&format!("fact-{n}: value-{n}")),
            "output {n} kept"
        );
    }
    let edits: Vec<Value> = file
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|entry| entry["type"] == "context_edit")
        .collect();
    assert_eq!(edits.len(), 5);
    assert!(edits.iter().all(|edit| {
        edit["replacement"]["content"]
            .as_str()
            .is_some_and(|text| text.starts_with(STUB_OPENING))
    }));

    // The context: earlier reads are stubs that name the call to repeat; the current task's
    // read (the fact the model is about to use) is whole.
    let after = context(&s);
    let results: Vec<String> = after
        .messages
        .iter()
        .filter(|m| {
            matches!(
                m.message.as_ref(),
                strata_session::AgentMessage::ToolResult(_)
            )
        })
        .map(|m| text_of(&m.message))
        .collect();
    assert_eq!(results.len(), 6);
    for (n, text) in results[..5].iter().enumerate() {
        assert!(text.starts_with(STUB_OPENING), "{text}");
        assert!(text.contains(&format!("src/f{n}.rs")), "{text}");
        // The stub keeps what a note would (the one named value and the length), not the
        // 200 lines of content.
        assert!(text.contains(&format!("fact-{n}: value-{n}")), "{text}");
        assert!(text.contains("201 lines"), "{text}");
        assert!(!text.contains("some content to read"), "{text}");
    }
    assert!(results[5].contains("fact-0: value-0"), "{}", results[5]);

    // Planning again finds the stubs already masked and nothing new to mask.
    let again = mask_entries(&after);
    assert_eq!(
        again
            .iter()
            .filter(|e| e.kind == MaskEntryKind::Masked)
            .count(),
        5
    );
    assert_eq!(
        plan_masking(&again, &masking(), &opus(), MaskingOutlook::warm(100)),
        None
    );
}

#[test]
fn the_latest_results_are_never_masked_however_much_masking_would_save() {
    let s = session();
    let entries = mask_entries(&context(&s));
    let last_prompt = entries
        .iter()
        .rposition(|e| e.kind == MaskEntryKind::UserPrompt)
        .expect("a prompt");
    for keep in [0, 1, 2] {
        let settings = MaskingSettings {
            keep_recent_tasks: keep,
            ..masking()
        };
        let plan = plan_masking(
            &entries,
            &settings,
            &opus(),
            MaskingOutlook::warm(1_000_000),
        );
        // Keeping two tasks, the two reads before them are too small a batch for the
        // rewrite after them (a later batch takes them along); fewer kept, it is due.
        let Some(plan) = plan else {
            assert_eq!(keep, 2, "keep {keep}: a batch was due");
            continue;
        };
        for (target, _) in &plan.stubs {
            let at = entries.iter().position(|e| &e.id == target).expect("found");
            assert!(
                at < last_prompt,
                "keep {keep}: entry {at} is the current task's"
            );
        }
    }
    // Few requests left: the rewrite costs more than the reads saved, nothing is masked.
    assert_eq!(
        plan_masking(&entries, &masking(), &opus(), MaskingOutlook::warm(1)),
        None
    );
}
