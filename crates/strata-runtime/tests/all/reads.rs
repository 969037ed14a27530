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
