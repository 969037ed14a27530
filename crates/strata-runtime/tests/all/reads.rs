//! Pi's session reads answered from the session in memory (entries paged by id, the tree they
//! form, the user messages a fork may start before), the forks that go with them, and the
//! user's own shell command run and recorded by the runtime.

use pretty_assertions::assert_eq;
use serde_json::Value;
use strata_runtime::{Answer, EntryNode, Op, OpName, Query, RuntimeEvent};
use strata_session::{AgentMessage, Entry, EntryId, Session};

use crate::support::{Running, start};

const THREE_ANSWERS: &str = r#"
[[turn]]
text = "First answer."
[[turn]]
text = "Second answer."
[[turn]]
text = "Third answer."
"#;

async fn entries(run: &mut Running, since: Option<EntryId>) -> Result<Vec<Entry>, String> {
    match run.query(Query::Entries { since }).await {
        Answer::Entries { entries, leaf } => {
            assert_eq!(leaf, run.handle.status().leaf, "the leaf comes with them");
            Ok(entries)
        }
        Answer::Failed { error } => Err(error),
        other => panic!("{other:?}"),
    }
}

fn user_texts(session: &Session) -> Vec<String> {
    let tree = session.tree();
    let branch = session.leaf().map(|leaf| tree.branch(leaf.as_str()));
    branch
        .into_iter()
        .flatten()
        .filter_map(|entry| match entry.entry().ok()? {
            Entry::Message(message) => match &*message.message {
                AgentMessage::User(user) => Some(user.content.text_joined("")),
                _ => None,
            },
            _ => None,
        })
        .collect()
}

fn count(nodes: &[EntryNode], parent: Option<&EntryId>) -> usize {
    nodes
        .iter()
        .map(|node| {
            assert_eq!(node.entry.parent_id(), parent, "a child names its parent");
            1 + count(&node.children, Some(node.entry.id()))
        })
        .sum()
}

#[tokio::test]
async fn entries_are_the_files_lines_paged_by_id_nested_as_a_tree_and_forked_before_a_message() {
    let mut run = start(THREE_ANSWERS).await;
    run.send(Op::Prompt("one".into()));
    run.settled().await;
    run.send(Op::Prompt("two".into()));
    run.settled().await;
    let first = run.handle.status().session_path;

    // Every entry in Pi's shape: each is its line of the file, the header left out.
    let all = entries(&mut run, None).await.unwrap();
    let file = std::fs::read_to_string(&first).unwrap();
    let lines: Vec<Value> = file
        .lines()
        .skip(1)
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    let read: Vec<Value> = all
        .iter()
        .map(|entry| serde_json::to_value(entry).unwrap())
        .collect();
    assert_eq!(read, lines);
    // A cursor returns what is strictly after it; an unknown one is Pi's error.
    let page = entries(&mut run, Some(all[1].id().clone())).await.unwrap();
    assert_eq!(page[..], all[2..]);
    assert_eq!(
        entries(&mut run, Some(EntryId::new("nope"))).await,
        Err("Entry not found: nope".to_owned())
    );

    let Answer::EntryTree { roots, leaf } = run.query(Query::EntryTree).await else {
        panic!("no tree");
    };
    assert_eq!(roots.len(), 1);
    assert_eq!(
        count(&roots, None),
        all.len(),
        "the tree holds every entry once"
    );
    assert_eq!(leaf.as_ref(), Some(all[all.len() - 1].id()));

    let Answer::UserMessages { messages } = run.query(Query::UserMessages).await else {
        panic!("no user messages");
    };
    let texts: Vec<&str> = messages.iter().map(|m| m.text.as_str()).collect();
    assert_eq!(texts, ["one", "two"]);
    assert_eq!(
        serde_json::to_value(&messages[0]).unwrap(),
        serde_json::json!({"entryId": messages[0].entry_id, "text": "one"}),
        "Pi's shape"
    );

    // A fork before the second prompt keeps the first exchange; one before an answer fails
    // with Pi's words and stays on the session.
    let answer = all[all.len() - 1].id().clone();
    run.send(Op::ForkBefore {
        entry: answer.clone(),
    });
    let failed = run
        .until(|e| matches!(e, RuntimeEvent::Failed { .. }))
        .await;
    let Some(RuntimeEvent::Failed { op, error }) = failed.last() else {
        unreachable!()
    };
    assert_eq!(*op, OpName::ForkBefore);
    assert_eq!(
        error,
        &format!("Invalid entry ID for forking: {answer} is not a user message")
    );
    run.send(Op::ForkBefore {
        entry: messages[1].entry_id.clone(),
    });
    let (forked, _) = run.session_changed().await;
    assert_ne!(forked, first);
    assert_eq!(
        user_texts(&Session::open(&forked).unwrap().session),
        ["one"]
    );

    // A clone holds the branch to the leaf, in a file of its own.
    let before = entries(&mut run, None).await.unwrap();
    run.send(Op::Clone);
    let (cloned, _) = run.session_changed().await;
    assert_ne!(cloned, forked);
    let after = entries(&mut run, None).await.unwrap();
    let ids = |entries: &[Entry]| entries.iter().map(|e| e.id().clone()).collect::<Vec<_>>();
    assert_eq!(ids(&after)[..before.len()], ids(&before)[..]);
    run.stop().await;
}

#[tokio::test]
async fn a_clone_of_an_empty_session_fails_with_pis_words() {
    let mut run = start(THREE_ANSWERS).await;
    run.send(Op::Clone);
    let seen = run
        .until(|e| matches!(e, RuntimeEvent::Failed { .. }))
        .await;
    let Some(RuntimeEvent::Failed { op, error }) = seen.last() else {
        unreachable!()
    };
    assert_eq!(*op, OpName::Clone);
    assert_eq!(error, "Cannot clone session: no current entry selected");
    run.stop().await;
}

/// Waits for the user's command to end; its streamed output and its record.
async fn bash_ended(run: &mut Running) -> (String, strata_runtime::BashRecord) {
    let seen = run
        .until(|e| matches!(e, RuntimeEvent::BashEnded { .. }))
        .await;
    let streamed = seen
        .iter()
        .filter_map(|e| match e {
            RuntimeEvent::BashOutput { delta } => Some(delta.as_str()),
            _ => None,
        })
        .collect();
    let Some(RuntimeEvent::BashEnded { record }) = seen.last() else {
        unreachable!()
    };
    (streamed, (**record).clone())
}

#[tokio::test]
async fn the_users_command_streams_ends_and_is_in_the_session_for_the_next_operation() {
    let mut run = start(THREE_ANSWERS).await;
    run.send(Op::Bash {
        command: "echo out; echo err >&2; exit 3".into(),
        exclude: false,
    });
    let (streamed, record) = bash_ended(&mut run).await;
    assert_eq!(streamed, "out\nerr\n");
    assert_eq!(record.output, "out\nerr");
    assert_eq!(record.exit_code, Some(3));
    assert!(!record.cancelled && !record.truncated && !record.exclude_from_context);
    // Sent after the end, a read finds it recorded, as Pi's `bashExecution` message.
    let Answer::Messages { messages } = run.query(Query::Messages).await else {
        panic!("no messages");
    };
    let last = messages.last().unwrap();
    assert_eq!(last["role"], "bashExecution");
    assert_eq!(last["command"], "echo out; echo err >&2; exit 3");
    assert_eq!(last["exitCode"], 3);

    // Aborted: killed at once, no exit code; `!!` keeps it out of the context.
    run.send(Op::Bash {
        command: "echo begun; sleep 30".into(),
        exclude: true,
    });
    run.until(|e| matches!(e, RuntimeEvent::BashOutput { .. }))
        .await;
    let started = std::time::Instant::now();
    run.send(Op::AbortBash);
    let (_, record) = bash_ended(&mut run).await;
    assert!(started.elapsed() < std::time::Duration::from_secs(10));
    assert!(record.cancelled && record.exclude_from_context);
    assert_eq!((record.exit_code, record.output.as_str()), (None, "begun"));
    let agent = run.stop().await;
    let last = agent
        .session()
        .tree()
        .iter()
        .last()
        .unwrap()
        .entry()
        .unwrap();
    let Entry::Message(message) = last else {
        panic!("{last:?}");
    };
    let AgentMessage::BashExecution(bash) = &*message.message else {
        panic!("{message:?}");
    };
    assert_eq!(bash.exclude_from_context, Some(true));
    assert!(bash.cancelled);
}

/// A command started during a run answers at once and joins the session after the run.
#[tokio::test]
async fn a_command_run_during_a_run_is_recorded_after_it() {
    let mut run = start(
        r#"
[[turn]]
[[turn.tool_call]]
tool = "bash"
args = { command = "sleep 1" }
[[turn]]
text = "Done."
"#,
    )
    .await;
    run.send(Op::Prompt("wait a second".into()));
    run.tool_started().await;
    run.send(Op::Bash {
        command: "echo meanwhile".into(),
        exclude: false,
    });
    let seen = run
        .until(|e| matches!(e, RuntimeEvent::BashEnded { .. } | RuntimeEvent::Settled))
        .await;
    assert!(
        matches!(seen.last(), Some(RuntimeEvent::BashEnded { .. })),
        "the command ended before the run: {seen:#?}"
    );
    run.settled().await;
    let Answer::Messages { messages } = run.query(Query::Messages).await else {
        panic!("no messages");
    };
    let roles: Vec<&str> = messages
        .iter()
        .map(|m| m["role"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(roles.last(), Some(&"bashExecution"), "{roles:?}");
    assert_eq!(roles.iter().filter(|r| **r == "bashExecution").count(), 1);
    run.stop().await;
}

const TOOL_TURNS: &str = r#"
[[turn]]
[[turn.tool_call]]
tool = "bash"
args = { command = "echo one" }
[[turn]]
text = "Ran one."
[[turn]]
[[turn.tool_call]]
tool = "bash"
args = { command = "echo two" }
[[turn]]
text = "Ran two."
"#;

async fn window(
    run: &mut Running,
    last: usize,
    before: Option<EntryId>,
) -> (Vec<strata_runtime::TranscriptItem>, usize, Option<EntryId>) {
    match run
        .query(Query::Transcript {
            after: None,
            last: Some(last),
            before,
        })
        .await
    {
        Answer::Transcript {
            items,
            earlier,
            first,
        } => (items, earlier, first),
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn the_transcripts_windows_read_back_to_the_whole_branch_and_keep_results_under_their_calls()
{
    let mut run = start(TOOL_TURNS).await;
    run.send(Op::Prompt("one".into()));
    run.settled().await;
    run.send(Op::Prompt("two".into()));
    run.settled().await;
    let whole = match run
        .query(Query::Transcript {
            after: None,
            last: None,
            before: None,
        })
        .await
    {
        Answer::Transcript { items, earlier, .. } => {
            assert_eq!(earlier, 0, "the whole branch has nothing before it");
            items
        }
        other => panic!("{other:?}"),
    };

    // An empty window reads nothing (a view's marker of where its operations finished).
    let (none, earlier, first) = window(&mut run, 0, None).await;
    assert!(none.is_empty());
    assert!(earlier > 0);
    assert_eq!(first, None);

    // The last entry alone is the final answer; scrolling up reads window after window.
    let (tail, earlier, first) = window(&mut run, 1, None).await;
    assert_eq!(tail, whole[whole.len() - 1..]);
    assert!(earlier > 0);
    let mut read = tail;
    let mut before = first;
    let mut left = earlier;
    while left > 0 {
        // Two entries can begin on a call's result: the window then takes the assistant
        // message that made the call, so the result shows under it.
        let (mut items, earlier, first) = window(&mut run, 2, before.clone()).await;
        for item in &items {
            if let strata_runtime::TranscriptItem::Tool(call) = item {
                assert!(
                    call.failed.is_some(),
                    "a call shown without its result: {call:?}"
                );
            }
        }
        assert!(earlier < left, "each window moves up");
        items.append(&mut read);
        read = items;
        before = first;
        left = earlier;
    }
    assert_eq!(read, whole, "the windows add up to the branch");
    let outputs: Vec<&str> = whole
        .iter()
        .filter_map(|item| match item {
            strata_runtime::TranscriptItem::Tool(call) => Some(call.output.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(outputs.len(), 2);
    assert!(
        outputs
            .iter()
            .all(|output| output.contains("one") || output.contains("two"))
    );
}

/// A session of `pairs` prompts and answers, each answer billed, written as Pi writes them.
fn long_session(path: &std::path::Path, pairs: usize) {
    use std::fmt::Write as _;
    let mut text = String::from(
        "{\"type\":\"session\",\"version\":3,\"id\":\"long\",\"timestamp\":\"2026-01-01T00:00:00.000Z\",\"cwd\":\"/\"}\n",
    );
    let mut parent = "null".to_owned();
    for n in 0..pairs * 2 {
        let id = format!("{n:08x}");
        let message = if n % 2 == 0 {
            format!("{{\"role\":\"user\",\"content\":\"question {n}\",\"timestamp\":{n}}}")
        } else {
            format!(
                "{{\"role\":\"assistant\",\"content\":[{{\"type\":\"text\",\"text\":\"answer {n}\"}}],\"api\":\"anthropic-messages\",\"provider\":\"anthropic\",\"model\":\"claude-sonnet-4-5\",\"usage\":{{\"input\":10,\"output\":5,\"cacheRead\":100,\"cacheWrite\":20,\"totalTokens\":135,\"cost\":{{\"input\":0,\"output\":0,\"cacheRead\":0,\"cacheWrite\":0,\"total\":0}}}},\"stopReason\":\"stop\",\"timestamp\":{n}}}"
            )
        };
        let _ = writeln!(
            text,
            "{{\"type\":\"message\",\"id\":\"{id}\",\"parentId\":{parent},\"timestamp\":\"2026-01-01T00:00:00.000Z\",\"message\":{message}}}"
        );
        parent = format!("\"{id}\"");
    }
    std::fs::write(path, text).unwrap();
}

#[tokio::test]
async fn a_long_sessions_first_count_runs_beside_and_its_totals_go_on_from_it() {
    let pairs = strata_runtime::read_model::COUNT_INLINE_ENTRIES; // twice as many entries
    let mut path = None;
    let mut run = crate::support::start_agent(THREE_ANSWERS, |route, dir| {
        let file = dir.join("long.jsonl");
        long_session(&file, pairs);
        path = Some(file.clone());
        let opened =
            strata_session::Session::open_writable(&file, strata_session::WriteOptions::default())
                .unwrap();
        let mut agent = crate::support::agent(route, dir, strata_agent::CacheSettings::default());
        agent.switch_session(opened.session);
        agent
    })
    .await;
    // The runtime has not run yet: its first status says the count is under way.
    let first = run.handle.status();
    assert!(first.counting, "{first:?}");
    assert_eq!(first.totals.requests, 0);

    // The state and the stats wait for the count, then are the whole file's, as one pass
    // over it says.
    let whole = strata_runtime::read_model::stats(
        &strata_session::Session::open(path.as_ref().unwrap())
            .unwrap()
            .session,
    );
    assert_eq!(whole.totals.requests, pairs);
    let Answer::Stats(stats) = run.query(Query::Stats).await else {
        panic!("no stats");
    };
    assert_eq!(*stats, whole);
    assert!(!run.handle.status().counting);
    assert_eq!(run.handle.status().totals, whole.totals);
    let Answer::State(state) = run.query(Query::State).await else {
        panic!("no state");
    };
    assert!(!state.counting);
    assert_eq!(state.totals, whole.totals);

    // The count goes on from where the pass stopped: a new answer adds one request.
    run.send(Op::Prompt("one more".into()));
    run.settled().await;
    let Answer::Stats(after) = run.query(Query::Stats).await else {
        panic!("no stats");
    };
    assert_eq!(after.totals.requests, pairs + 1);
    assert_eq!(after.messages.user, pairs + 1);
}
