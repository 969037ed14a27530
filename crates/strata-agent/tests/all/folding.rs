//! Task folding from the loop, on the defaults: a finished task becomes its prompt and a note
//! as a later task starts, written as Pi 1.x context edits, and the request keeps its prefix
//! up to the folded task.

use serde_json::{Value, json};
use strata_compaction::{CompactionSettings, FOLD_OPENING};
use strata_session::{Session, WriteOptions};

use crate::scripted::{
    Scripted, Turn, agent_with_capabilities, five_minute_cache, holds, json_of, model,
};

fn files(dir: &std::path::Path) {
    for name in ["a.txt", "b.txt", "c.txt"] {
        let mut text = format!("version: {name}-7\n");
        for i in 0..300 {
            text.push_str(&format!("line {i:04} of {name}, a long file\n"));
        }
        std::fs::write(dir.join(name), text).unwrap();
    }
}

/// Three tasks, each reading its own file, listing the folder and answering.
fn turns() -> Vec<Turn> {
    let mut turns = Vec::new();
    for (file, answer) in [
        ("a.txt", "Read a."),
        ("b.txt", "Read b."),
        ("c.txt", "Read c."),
    ] {
        turns.push(Turn::Calls(vec![("read", json!({ "path": file }))]));
        turns.push(Turn::Calls(vec![("ls", json!({ "path": "." }))]));
        turns.push(Turn::Text(answer));
    }
    turns
}

#[tokio::test(start_paused = true)]
async fn a_finished_task_folds_to_its_prompt_and_a_note_as_the_next_task_starts() {
    let dir = tempfile::tempdir().unwrap();
    files(dir.path());
    let provider = Scripted::new(turns());
    let path = dir.path().join("s.jsonl");
    let session = Session::create(&path, "/x", WriteOptions::default()).unwrap();
    let mut agent = agent_with_capabilities(
        session,
        provider.clone(),
        dir.path(),
        None,
        model(),
        CompactionSettings::default(),
        five_minute_cache(),
    );
    for prompt in ["task one", "task two", "task three"] {
        assert_eq!(agent.prompt(prompt).await.unwrap().reason, "stop");
    }
    let requests = provider.requests();
    assert_eq!(requests.len(), 9);

    // Task two's first request: task one is its prompt and the note (the read's key line,
    // the listing's length, the answer); its calls and outputs are gone.
    let second_start = &requests[3];
    assert_eq!(second_start.messages.len(), 3);
    assert!(holds(second_start, FOLD_OPENING));
    assert!(holds(second_start, "version: a.txt-7"));
    assert!(holds(second_start, "Read a."));
    assert!(!holds(second_start, "line 0001 of a.txt"));
    // The request up to the folded task is the one task one sent: the prefix still reads.
    assert_eq!(
        json_of(&second_start.messages[0]),
        json_of(&requests[0].messages[0])
    );
    // Task three: both earlier tasks folded; the current task's own outputs stay whole.
    let last = requests.last().unwrap();
    assert_eq!(
        last.messages
            .iter()
            .filter(|m| json_of(m).contains(FOLD_OPENING))
            .count(),
        2
    );
    assert!(holds(last, "line 0001 of c.txt"));

    // The file keeps every output; the folds are Pi 1.x context edits.
    let file = std::fs::read_to_string(&path).unwrap();
    assert!(file.contains("line 0299 of a.txt") && file.contains("line 0299 of b.txt"));
    let edits: Vec<Value> = file
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|entry| entry["type"] == "context_edit")
        .collect();
    // Per folded task: its two calls and two results left out, its answer replaced.
    assert_eq!(edits.len(), 2 * 5);
    assert_eq!(
        edits.iter().filter(|e| e["replacement"].is_null()).count(),
        2 * 4
    );
}
