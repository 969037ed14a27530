//! Model switch, fork, switch session, compaction, keep-warm, abort mid-tool, queues.

use pretty_assertions::assert_eq;
use strata_accounting::{RequestKind, records};
use strata_agent::{AgentEvent, CacheSettings};
use strata_provider::{CacheRetention, ThinkingLevel};
use strata_runtime::{
    Answer, Disposition, ModelRef, Op, OpName, Query, QueueMode, RunEnd, RuntimeEvent,
};
use strata_session::{AgentMessage, Entry, Session};

use crate::support::{final_texts, run_end, start, start_with};

const TWO_ANSWERS: &str = r#"
[[turn]]
text = "First answer."
[[turn]]
text = "Second answer."
[[turn]]
text = "Third answer."
"#;

fn haiku() -> ModelRef {
    ModelRef::new("anthropic", "claude-3-5-haiku-latest")
}

/// Long enough that a request passes the model's 1,024-token cache minimum.
fn long(text: &str) -> String {
    format!("{text} ").repeat(400)
}

#[tokio::test]
async fn a_model_without_reasoning_runs_thinking_off_and_the_way_back_restores_the_level() {
    let mut run = start(TWO_ANSWERS).await;
    run.send(Op::SetThinking(ThinkingLevel::High));
    run.send(Op::SetModel(haiku()));
    run.send(Op::SetModel(ModelRef::new(
        "anthropic",
        "claude-sonnet-4-5",
    )));
    let seen = run.until(
        |e| matches!(e, RuntimeEvent::ModelChanged { model, .. } if model == "claude-sonnet-4-5"),
    )
    .await;
    let changes: Vec<(String, ThinkingLevel)> = seen
        .iter()
        .filter_map(|e| match e {
            RuntimeEvent::ThinkingChanged { level } => Some(("thinking".to_owned(), *level)),
            RuntimeEvent::ModelChanged {
                model, thinking, ..
            } => Some((model.clone(), *thinking)),
            _ => None,
        })
        .collect();
    assert_eq!(
        changes,
        vec![
            ("thinking".to_owned(), ThinkingLevel::High),
            ("claude-3-5-haiku-latest".to_owned(), ThinkingLevel::Off),
            ("claude-sonnet-4-5".to_owned(), ThinkingLevel::High),
        ]
    );
    let mut agent = run.stop().await;
    // The session says so in Pi's entries, in order.
    let levels: Vec<String> = agent
        .session()
        .tree()
        .iter()
        .filter_map(|e| match e.entry().unwrap() {
            Entry::ThinkingLevelChange(t) => Some(t.thinking_level),
            _ => None,
        })
        .collect();
    assert_eq!(levels, ["high", "off", "high"]);
    assert_eq!(agent.thinking().unwrap(), ThinkingLevel::High);
}

#[tokio::test]
async fn a_fork_appends_to_a_new_file_holding_the_path_and_switching_back_finds_the_old() {
    let mut run = start(TWO_ANSWERS).await;
    run.send(Op::Prompt("one".into()));
    run.settled().await;
    let first = run.handle.status();
    let first_answer = first.leaf.clone().unwrap();
    run.send(Op::Prompt("two".into()));
    run.settled().await;
    totals_match_the_file(&mut run).await;

    run.send(Op::Fork {
        leaf: Some(first_answer.clone()),
    });
    let (forked, _) = run.session_changed().await;
    assert_ne!(forked, first.session_path);
    run.send(Op::Prompt("three".into()));
    assert_eq!(run_end(&run.settled().await), RunEnd::Stop);
    totals_match_the_file(&mut run).await;
    let fork = Session::open(&forked).unwrap().session;
    let texts = user_texts(&fork);
    assert_eq!(
        texts,
        ["one", "three"],
        "the path to the fork point, then the new prompt"
    );
    assert_eq!(
        fork.header().parent_session.as_deref(),
        Some(first.session_path.to_str().unwrap())
    );

    run.send(Op::SwitchSession {
        path: first.session_path.clone(),
        follow_model: false,
    });
    run.session_changed().await;
    totals_match_the_file(&mut run).await;
    run.send(Op::NewSession { parent: None });
    run.session_changed().await;
    let agent = run.stop().await;
    let fresh = agent.session().path().to_path_buf();
    assert!(fresh != first.session_path && fresh != forked);
    assert_eq!(
        user_texts(&Session::open(&first.session_path).unwrap().session),
        ["one", "two"],
        "the first file is as it was"
    );
    assert_eq!(user_texts(agent.session()), Vec::<String>::new());
}

/// The totals in the runtime's state and its stats (counted on as entries are appended) are
/// those of one pass over the file it is on.
async fn totals_match_the_file(run: &mut crate::support::Running) {
    let Answer::State(state) = run.query(Query::State).await else {
        panic!("not a state");
    };
    let Answer::Stats(stats) = run.query(Query::Stats).await else {
        panic!("not stats");
    };
    let file = Session::open(&state.session_path).unwrap().session;
    let counted = strata_accounting::Totals::of(&records(file.tree()));
    assert!(counted.requests > 0, "{}", state.session_path.display());
    assert_eq!(state.totals, counted, "{}", state.session_path.display());
    assert_eq!(*stats, strata_runtime::read_model::stats(&file));
}

fn user_texts(session: &Session) -> Vec<String> {
    session
        .tree()
        .iter()
        .filter_map(|e| match e.entry().unwrap() {
            Entry::Message(m) => match &*m.message {
                AgentMessage::User(u) => Some(u.content.text_joined("")),
                _ => None,
            },
            _ => None,
        })
        .collect()
}

/// The 1-hour lifetime asked for: the answers, the compaction's summary request and the
/// keep-warm ping are accounted with their 1-hour writes, each priced at the hour's rate —
/// what the footer, `strata stats` and rpc `get_session_stats` all read.
#[tokio::test]
async fn compaction_and_keep_warm_at_the_hour_rate_are_accounted_at_the_hour_rate() {
    let cache = CacheSettings {
        retention: CacheRetention::Long,
        ..CacheSettings::default()
    };
    let mut run = start_with(TWO_ANSWERS, cache).await;
    let prices = run.sonnet.model.prices;
    run.send(Op::Prompt(long("first").as_str().into()));
    run.settled().await;
    run.send(Op::Prompt(long("second").as_str().into()));
    run.settled().await;
    run.send(Op::Compact { focus: None });
    let seen = run
        .until(|e| {
            matches!(
                e,
                RuntimeEvent::Agent {
                    event: AgentEvent::CompactionEnd { .. }
                }
            )
        })
        .await;
    let Some(RuntimeEvent::Agent {
        event: AgentEvent::CompactionEnd {
            entry_id, error, ..
        },
    }) = seen.last()
    else {
        unreachable!()
    };
    assert!(entry_id.is_some(), "compacted: {error:?}");
    // The operation's own outcome names the entry the agent reported.
    let said = run
        .until(|e| matches!(e, RuntimeEvent::Compacted { .. }))
        .await;
    assert_eq!(
        said.last(),
        Some(&RuntimeEvent::Compacted {
            entry: entry_id.clone()
        })
    );
    run.send(Op::Prompt("third".into()));
    run.settled().await;
    run.send(Op::KeepWarm);
    // The ping's stored `usage` entry is announced (Pi 1.6's `entry_appended`).
    let pinged = run
        .until(|e| matches!(e, RuntimeEvent::EntryAppended { .. }))
        .await;
    assert!(pinged.iter().any(|e| matches!(
        e,
        RuntimeEvent::Agent {
            event: AgentEvent::KeepWarm { .. }
        }
    )));
    let Some(RuntimeEvent::EntryAppended { entry }) = pinged.last() else {
        unreachable!()
    };
    let Entry::Usage(usage) = entry else {
        panic!("not a usage entry: {entry:?}");
    };
    assert_eq!(usage.kind, "cache_warm");
    let agent = run.stop().await;

    let reopened = Session::open(agent.session().path()).unwrap().session;
    let all = records(reopened.tree());
    let kinds: Vec<RequestKind> = all.iter().map(|r| r.kind).collect();
    assert_eq!(
        kinds,
        [
            RequestKind::Answer,
            RequestKind::Answer,
            RequestKind::Compaction,
            RequestKind::Answer,
            RequestKind::KeepWarm
        ]
    );
    // Every write was asked for with the hour's lifetime and is recorded as such.
    for record in &all {
        assert_eq!(record.usage.cache_write_5m, 0, "{record:?}");
    }
    let first = &all[0];
    assert!(first.usage.cache_write_1h > 0, "{:?}", first.usage);
    for record in &all {
        let at_its_rates = record.usage.cost(&prices).total();
        assert!(
            (record.cost - at_its_rates).abs() < 1e-12,
            "{record:?} costs {at_its_rates} at its own rates"
        );
    }
    // What the 5-minute rate would have said is less: the hour's premium is not lost.
    let at_five_minutes = strata_provider::Usage {
        cache_write_5m: first.usage.cache_write(),
        cache_write_1h: 0,
        ..first.usage
    }
    .cost(&prices)
    .total();
    assert!(first.cost > at_five_minutes);
    // The summary and the ping read the prefix the answers wrote.
    assert!(all[2].usage.cache_read > 0 && all[4].usage.cache_read > 0);
    let totals = strata_accounting::Totals::of(&all);
    assert_eq!((totals.requests, totals.pings), (5, 1));
}

#[tokio::test]
async fn an_abort_mid_tool_ends_the_run_with_every_call_answered() {
    let mut run = start(
        r#"
[[turn]]
[[turn.tool_call]]
tool = "bash"
args = { command = "sleep 20" }
[[turn]]
text = "after"
"#,
    )
    .await;
    run.send(Op::Prompt("run it".into()));
    run.tool_started().await;
    let started = std::time::Instant::now();
    run.send(Op::Abort);
    let seen = run.settled().await;
    assert_eq!(run_end(&seen), RunEnd::Aborted);
    assert!(started.elapsed().as_secs() < 10, "the sleep was stopped");
    let agent = run.stop().await;
    let reopened = Session::open(agent.session().path()).unwrap().session;
    let results: Vec<bool> = reopened
        .tree()
        .iter()
        .filter_map(|e| match e.entry().unwrap() {
            Entry::Message(m) => match &*m.message {
                AgentMessage::ToolResult(r) => Some(r.is_error),
                _ => None,
            },
            _ => None,
        })
        .collect();
    assert_eq!(results.len(), 1, "the call has its result");
}

#[tokio::test]
async fn a_follow_up_sent_during_a_run_runs_after_it_and_steering_joins_it() {
    let mut run = start(
        r#"
[[turn]]
[[turn.tool_call]]
tool = "bash"
args = { command = "sleep 1" }
[[turn]]
text = "done with the first"
[[turn]]
text = "done with the follow-up"
"#,
    )
    .await;
    run.send(Op::Prompt("first".into()));
    run.tool_started().await;
    run.send(Op::Steer("also this".into()));
    run.send(Op::FollowUp("then that".into()));
    let seen = run.settled().await;
    let dispositions: Vec<Disposition> = seen
        .iter()
        .filter_map(|e| match e {
            RuntimeEvent::Accepted { disposition, .. } => Some(*disposition),
            _ => None,
        })
        .collect();
    assert_eq!(
        dispositions,
        [
            Disposition::Steered,
            Disposition::Queued,
            Disposition::Started
        ]
    );
    assert_eq!(
        final_texts(&seen),
        ["done with the first", "done with the follow-up"]
    );
    let agent = run.stop().await;
    assert_eq!(
        user_texts(agent.session()),
        ["first", "also this", "then that"]
    );
}

#[tokio::test]
async fn queue_modes_decide_how_waiting_messages_are_handed_over() {
    let mut run = start(
        r#"
[[turn]]
[[turn.tool_call]]
tool = "bash"
args = { command = "sleep 1" }
[[turn]]
text = "done with the first"
[[turn]]
text = "done with both follow-ups"
"#,
    )
    .await;
    run.send(Op::SetFollowUpMode(QueueMode::All));
    run.send(Op::Prompt("first".into()));
    run.tool_started().await;
    run.send(Op::FollowUp("one".into()));
    run.send(Op::FollowUp("two".into()));
    let seen = run.settled().await;
    // Every change of the queue is said with the texts waiting.
    let queues: Vec<Vec<String>> = seen
        .iter()
        .filter_map(|e| match e {
            RuntimeEvent::QueueChanged { texts } => Some(texts.follow_up.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(
        queues,
        [
            vec!["one".to_owned()],
            vec!["one".into(), "two".into()],
            vec![]
        ]
    );
    assert_eq!(
        final_texts(&seen),
        ["done with the first", "done with both follow-ups"]
    );
    // `all`: both follow-ups went as one message, in order.
    run.send(Op::FollowUp("left".into()));
    run.send(Op::ClearQueue);
    let agent = run.stop().await;
    assert_eq!(
        user_texts(agent.session())[..2],
        ["first".to_owned(), "one\n\ntwo".to_owned()]
    );
}

#[tokio::test]
async fn messages_sent_while_idle_wait_for_the_next_prompt_and_continue_its_run() {
    let mut run = start(TWO_ANSWERS).await;
    run.send(Op::FollowUp("later".into()));
    let queued = run
        .until(|e| matches!(e, RuntimeEvent::QueueChanged { .. }))
        .await;
    assert!(queued.iter().any(|e| matches!(
        e,
        RuntimeEvent::Accepted {
            disposition: Disposition::Queued,
            pending: 1
        }
    )));
    assert!(run.server.requests().is_empty(), "queued, not run");
    run.send(Op::Prompt("now".into()));
    let seen = run.settled().await;
    let ends: Vec<(String, bool)> = seen
        .iter()
        .filter_map(|e| match e {
            RuntimeEvent::RunEnded {
                final_text,
                continues,
                ..
            } => Some((final_text.clone(), *continues)),
            _ => None,
        })
        .collect();
    assert_eq!(
        ends,
        [
            ("First answer.".to_owned(), true),
            ("Second answer.".to_owned(), false)
        ]
    );
    let agent = run.stop().await;
    assert_eq!(user_texts(agent.session()), ["now", "later"]);
}

#[tokio::test]
async fn a_switch_with_the_sessions_route_takes_up_its_model_and_writes_nothing_to_it() {
    let mut run = start(TWO_ANSWERS).await;
    run.send(Op::Prompt("one".into()));
    run.settled().await;
    let first = run.handle.status().session_path;
    run.send(Op::NewSession { parent: None });
    run.send(Op::SetModel(haiku()));
    run.until(
        |e| matches!(e, RuntimeEvent::ModelChanged { model, .. } if model == "claude-3-5-haiku-latest"),
    )
    .await;
    let before = std::fs::read(&first).unwrap();
    run.router.asked.lock().unwrap().clear();
    run.send(Op::SwitchSession {
        path: first.clone(),
        follow_model: true,
    });
    let (_, seen) = run.session_changed().await;
    assert!(
        seen.iter().any(
            |e| matches!(e, RuntimeEvent::ModelChanged { model, .. } if model == "claude-sonnet-4-5")
        ),
        "{seen:?}"
    );
    // The switch asked for the model the first file names.
    assert_eq!(
        *run.router.asked.lock().unwrap(),
        [ModelRef::new("anthropic", "claude-sonnet-4-5")]
    );
    let agent = run.stop().await;
    assert_eq!(agent.config().model.id, "claude-sonnet-4-5");
    assert_eq!(
        std::fs::read(&first).unwrap(),
        before,
        "the file already names its model and level: nothing is appended"
    );
}

#[tokio::test]
async fn a_label_goes_on_the_last_real_entry_and_a_second_label_replaces_it() {
    let mut run = start(TWO_ANSWERS).await;
    run.send(Op::LabelLeaf(Some("too early".into())));
    let seen = run
        .until(|e| matches!(e, RuntimeEvent::Failed { .. }))
        .await;
    assert!(
        matches!(seen.last(), Some(RuntimeEvent::Failed { op: OpName::LabelLeaf, error }) if error == "nothing to label yet"),
        "{seen:?}"
    );
    run.send(Op::Prompt("one".into()));
    run.settled().await;
    let answer = run.handle.status().leaf.unwrap();
    run.send(Op::LabelLeaf(Some("first".into())));
    // The leaf now stands on a label entry: the next label passes over it to the answer.
    run.send(Op::LabelLeaf(Some("checkpoint".into())));
    let seen = run
        .until(|e| matches!(e, RuntimeEvent::Labelled { label: Some(l), .. } if l == "checkpoint"))
        .await;
    let targets: Vec<_> = seen
        .iter()
        .filter_map(|e| match e {
            RuntimeEvent::Labelled { target, .. } => Some(target.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(targets, [answer.clone(), answer.clone()]);
    let agent = run.stop().await;
    let reopened = Session::open(agent.session().path()).unwrap().session;
    assert_eq!(reopened.tree().label_of(&answer), Some("checkpoint"));
}

/// An extension's state (`append_custom`, Pi's `appendEntry`) is kept in the session, announced,
/// and never reaches the model: the next request is the one without it.
#[tokio::test]
async fn a_custom_entry_is_kept_in_the_session_and_never_sent() {
    let mut run = start(TWO_ANSWERS).await;
    run.send(Op::Prompt("one".into()));
    run.settled().await;
    run.send(Op::AppendCustom {
        custom_type: "sticky-note".into(),
        data: Some(serde_json::json!({"goal": "keep the tests green"})),
    });
    let seen = run
        .until(|e| {
            matches!(
                e,
                RuntimeEvent::EntryAppended {
                    entry: Entry::Custom(_)
                }
            )
        })
        .await;
    let Some(RuntimeEvent::EntryAppended {
        entry: Entry::Custom(custom),
    }) = seen.last()
    else {
        panic!("{seen:?}");
    };
    assert_eq!(custom.custom_type, "sticky-note");
    run.send(Op::Prompt("two".into()));
    run.settled().await;
    let sent = run.server.requests()[1].body.clone().unwrap().to_string();
    assert!(!sent.contains("keep the tests green"), "{sent}");
    let agent = run.stop().await;
    let reopened = Session::open(agent.session().path()).unwrap().session;
    let kept: Vec<_> = reopened
        .tree()
        .iter()
        .filter_map(|e| match e.entry() {
            Ok(Entry::Custom(c)) => Some((c.custom_type, c.data)),
            _ => None,
        })
        .collect();
    assert_eq!(
        kept,
        [(
            "sticky-note".to_owned(),
            Some(serde_json::json!({"goal": "keep the tests green"}))
        )]
    );
}

#[tokio::test]
async fn the_next_request_is_rendered_with_the_sessions_retention_and_history() {
    let cache = CacheSettings {
        retention: CacheRetention::Long,
        ..CacheSettings::default()
    };
    let mut run = start_with(TWO_ANSWERS, cache).await;
    run.send(Op::Prompt("one".into()));
    run.settled().await;
    let Answer::NextRequest(next) = run.query(Query::NextRequest).await else {
        panic!("no report of the next request");
    };
    assert_eq!(next.messages, 2, "the prompt and its answer");
    assert!(
        next.tools >= strata_tools::ToolSet::default_set().names().len(),
        "every default tool, and what the agent adds: {}",
        next.tools
    );
    assert!(!next.breakpoints.is_empty());
    assert!(
        next.breakpoints.iter().all(|bp| bp.ends_with("(1h)")),
        "the hour retention asks for one-hour entries: {:?}",
        next.breakpoints
    );
    let [tools, system, messages] = next.chapter_tokens();
    assert!(tools > 0 && system > 0 && messages > 0);
    let names: Vec<&str> = next.chapters.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names[..3], ["tools", "system", "messages"]);
    run.stop().await;
}
