//! Observation masking from the loop: a finished task's outputs become stubs as the next task
//! starts, priced against the cache in use, and free to write once the prefix has expired.

use std::time::Duration;

use serde_json::json;
use strata_compaction::{CompactionSettings, MaskingSettings, STUB_OPENING};
use strata_provider::Request;
use strata_session::{Session, WriteOptions};

use crate::scripted::{
    Scripted, Turn, agent_with_capabilities, five_minute_cache, holds, json_of, model,
};

fn big_file(dir: &std::path::Path, name: &str) {
    let text: String = (0..300)
        .map(|i| format!("line {i:04} of {name}, a long file\n"))
        .collect();
    std::fs::write(dir.join(name), text).unwrap();
}

/// Three tasks, each reading its own large file and answering.
fn three_reads() -> Vec<Turn> {
    let mut turns = Vec::new();
    for (file, answer) in [
        ("a.txt", "Read a."),
        ("b.txt", "Read b."),
        ("c.txt", "Read c."),
    ] {
        turns.push(Turn::Calls(vec![("read", json!({ "path": file }))]));
        turns.push(Turn::Text(answer));
    }
    turns
}

fn masked(request: &Request) -> usize {
    request
        .messages
        .iter()
        .filter(|message| json_of(message).contains(STUB_OPENING))
        .count()
}

/// The first request of each task (the one right after its prompt).
fn task_starts(requests: &[Request]) -> Vec<&Request> {
    requests
        .iter()
        .filter(|request| {
            request
                .messages
                .last()
                .is_some_and(|m| m.text().starts_with("task "))
        })
        .collect()
}

async fn run(keep_recent_tasks: usize, pause: Option<Duration>) -> Vec<Request> {
    let dir = tempfile::tempdir().unwrap();
    for name in ["a.txt", "b.txt", "c.txt"] {
        big_file(dir.path(), name);
    }
    let provider = Scripted::new(three_reads());
    let session =
        Session::create(dir.path().join("s.jsonl"), "/x", WriteOptions::default()).unwrap();
    let settings = CompactionSettings {
        // Masking alone: with folding (the default) the finished tasks would fold instead
        // (tests/all/folding.rs).
        masking: MaskingSettings {
            keep_recent_tasks,
            fold_tasks: false,
            ..MaskingSettings::default()
        },
        ..CompactionSettings::default()
    };
    let mut agent = agent_with_capabilities(
        session,
        provider.clone(),
        dir.path(),
        None,
        model(),
        settings,
        five_minute_cache(),
    );
    for prompt in ["task one", "task two", "task three"] {
        if let Some(pause) = pause {
            tokio::time::advance(pause).await;
        }
        assert_eq!(agent.prompt(prompt).await.unwrap().reason, "stop");
    }
    provider.requests()
}

#[tokio::test(start_paused = true)]
async fn a_finished_tasks_output_becomes_a_stub_as_the_next_task_starts() {
    let requests = run(1, None).await;
    let starts = task_starts(&requests);
    assert_eq!(starts.len(), 3);
    // Task two's first request: task one's read is a stub, only the prompt follows it.
    assert_eq!(masked(starts[1]), 1);
    assert!(!holds(starts[1], "of a.txt"));
    // Task three's: both earlier reads are stubs; the current task's own read, sent next,
    // is never masked.
    assert_eq!(masked(starts[2]), 2);
    let last = requests.last().unwrap();
    assert!(holds(last, "of c.txt"), "the current task's result stays");
}

#[tokio::test(start_paused = true)]
async fn a_warm_prefix_keeps_what_the_rewrite_would_cost_more_than_it_saves() {
    // Keeping two tasks, task one's read is masked in task three with task two's whole read
    // after it: rewriting that costs more than the two requests' reads it saves.
    let requests = run(2, None).await;
    let starts = task_starts(&requests);
    assert_eq!(masked(starts[2]), 0);
    assert!(holds(starts[2], "of a.txt"));
}

#[tokio::test(start_paused = true)]
async fn after_a_pause_longer_than_the_lifetime_masking_is_free() {
    // Ten minutes idle before each task: the 5-minute prefix has expired, the next request
    // writes everything anyway, so the same stub that did not pay warm is written now.
    let requests = run(2, Some(Duration::from_secs(600))).await;
    let starts = task_starts(&requests);
    assert_eq!(masked(starts[2]), 1);
    assert!(!holds(starts[2], "of a.txt"));
    assert!(holds(starts[2], "of b.txt"), "the kept task stays");
}
