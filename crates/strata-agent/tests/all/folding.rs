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

/// Every tool result answers a call of the assistant message before it, and every call is
/// answered: what Anthropic and OpenAI check before they accept a request.
fn assert_paired(request: &strata_provider::Request, what: &str) {
    use strata_provider::{ContentBlock, Role};
    let mut open: Vec<String> = Vec::new();
    for message in &request.messages {
        for block in &message.content {
            match block {
                ContentBlock::ToolCall { id, .. } => {
                    assert_eq!(message.role, Role::Assistant, "{what}");
                    open.push(id.clone());
                }
                ContentBlock::ToolResult { tool_call_id, .. } => {
                    let at = open.iter().position(|id| id == tool_call_id);
                    assert!(at.is_some(), "{what}: result {tool_call_id} has no call");
                    open.retain(|id| id != tool_call_id);
                }
                _ => {}
            }
        }
        if message.role == Role::Assistant {
            continue;
        }
        // A user turn after the results: nothing may still wait for its result.
        if message
            .content
            .iter()
            .all(|block| !matches!(block, ContentBlock::ToolResult { .. }))
        {
            assert!(open.is_empty(), "{what}: calls {open:?} unanswered");
        }
    }
    assert!(open.is_empty(), "{what}: calls {open:?} unanswered");
}

/// A fold is several lines; a kill or a full disk may stop it after any byte. Every such
/// prefix, opened to resume (masking off: the context as written), renders a request whose
/// calls and results pair up, and the resumed file only grew.
#[tokio::test(start_paused = true)]
async fn a_fold_cut_at_any_byte_resumes_into_paired_calls_and_results() {
    let dir = tempfile::tempdir().unwrap();
    files(dir.path());
    let mut script = turns();
    script.truncate(6);
    let provider = Scripted::new(script);
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
    for prompt in ["task one", "task two"] {
        assert_eq!(agent.prompt(prompt).await.unwrap().reason, "stop");
    }
    drop(agent);
    let bytes = std::fs::read(&path).unwrap();
    // The fold's lines: the first run of context edits.
    let mut offset = 0;
    let mut start = None;
    let mut end = None;
    for line in bytes.split_inclusive(|&b| b == b'\n') {
        let edit = line.starts_with(br#"{"type":"context_edit""#);
        match (edit, start) {
            (true, None) => start = Some(offset),
            (false, Some(_)) if end.is_none() => end = Some(offset),
            _ => {}
        }
        offset += line.len();
    }
    let (start, end) = (start.unwrap(), end.unwrap());
    let fold = &bytes[start..end];
    assert_eq!(fold.iter().filter(|&&b| b == b'\n').count(), 5);

    let capabilities = five_minute_cache();
    let whole = {
        let cut = dir.path().join("whole.jsonl");
        std::fs::write(&cut, &bytes[..end]).unwrap();
        let opened = Session::open(&cut).unwrap();
        let tree = opened.session.tree();
        strata_context::build(tree, tree.leaf()).unwrap()
    };
    for cut_at in 0..=fold.len() {
        let cut = dir.path().join(format!("cut-{cut_at}.jsonl"));
        let prefix = [&bytes[..start], &fold[..cut_at]].concat();
        std::fs::write(&cut, &prefix).unwrap();
        let what = format!("cut after {cut_at} of {} bytes", fold.len());
        {
            // A reader that does not repair already sees the fold whole or not at all.
            let opened = Session::open(&cut).unwrap();
            let tree = opened.session.tree();
            let context = strata_context::build(tree, tree.leaf()).unwrap();
            assert_paired(&strata_context::render(&context, &capabilities), &what);
        }
        let opened = Session::open_writable(&cut, WriteOptions::default()).unwrap();
        let tree = opened.session.tree();
        let context = strata_context::build(tree, tree.leaf()).unwrap();
        assert_paired(&strata_context::render(&context, &capabilities), &what);
        let resumed = std::fs::read(&cut).unwrap();
        assert!(
            resumed.starts_with(&prefix),
            "{what}: the file was rewritten"
        );
        // Once the first line is whole, resuming completes the fold as planned.
        let first_line = fold.iter().position(|&b| b == b'\n').unwrap() + 1;
        if cut_at >= first_line {
            assert_eq!(
                json_of(&context.messages),
                json_of(&whole.messages),
                "{what}"
            );
        }
    }
}
