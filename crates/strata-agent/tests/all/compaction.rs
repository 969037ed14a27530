//! Compaction from the loop: triggered by the window, cache-friendly summary request, the
//! entry carries the folded system snapshot and live tools, and the run goes on after it.

use serde_json::json;
use strata_agent::AgentEvent;
use strata_provider::Role;
use strata_session::{Entry, Session, WriteOptions};

use crate::scripted::{Scripted, Turn, agent_with, is_summary_request, json_of, model};

#[tokio::test]
async fn the_window_triggers_a_cache_friendly_compaction_and_the_run_continues() {
    let dir = tempfile::tempdir().unwrap();
    let big: String = (0..300)
        .map(|i| format!("line {i:04} of a long file\n"))
        .collect();
    std::fs::write(dir.path().join("big.txt"), &big).unwrap();
    let provider = Scripted::new(vec![
        Turn::Calls(vec![("read", json!({"path": "big.txt"}))]),
        Turn::Text("It is a long file."),
        Turn::Calls(vec![("read", json!({"path": "big.txt"}))]),
        Turn::Text("Still long."),
        Turn::Calls(vec![("read", json!({"path": "big.txt"}))]),
        Turn::Text("Long again."),
    ]);
    let session =
        Session::create(dir.path().join("s.jsonl"), "/x", WriteOptions::default()).unwrap();
    let mut small = model();
    small.context_window = 6_000;
    let settings = strata_compaction::CompactionSettings {
        reserve_tokens: 1_000,
        keep_recent_tokens: 1_500,
        ..strata_compaction::CompactionSettings::default()
    };
    let mut agent = agent_with(session, provider.clone(), dir.path(), None, small, settings);
    let mut events = agent.subscribe();
    for prompt in ["read big.txt", "read it again", "and again"] {
        let summary = agent.prompt(prompt).await.unwrap();
        assert_eq!(summary.reason, "stop");
    }

    let compactions: Vec<_> = agent
        .session()
        .tree()
        .iter()
        .filter_map(|e| match e.entry().unwrap() {
            Entry::Compaction(c) => Some(c),
            _ => None,
        })
        .collect();
    assert!(!compactions.is_empty(), "the window forced a compaction");
    let first = &compactions[0];
    assert!(first.summary.starts_with("## Goal"));
    assert_eq!(
        first.tools.as_ref().map(Vec::len),
        Some(4),
        "live tools carried"
    );
    let sections = first.system.as_ref().unwrap();
    assert!(sections.contains_key("intro") && sections.contains_key("tools"));

    // The summary request was the session's request plus one instruction: same tools and
    // system bytes as the request before it, and it was not appended to the chain.
    let requests = provider.requests();
    let at = requests.iter().position(is_summary_request).unwrap();
    assert!(at > 0);
    assert_eq!(
        json_of(&requests[at].tools),
        json_of(&requests[at - 1].tools)
    );
    assert_eq!(
        json_of(&requests[at].system),
        json_of(&requests[at - 1].system)
    );
    let stored = agent
        .session()
        .tree()
        .iter()
        .filter(|e| e.raw_line().contains("## Original Request"))
        .count();
    assert_eq!(stored, 0, "the instruction is never stored");

    // After it, requests start with the summary and keep the tools and system chapters.
    let after = requests[at..]
        .iter()
        .find(|r| !is_summary_request(r))
        .unwrap();
    assert_eq!(after.messages[0].role, Role::User);
    assert!(
        after.messages[0].text().contains("compacted"),
        "{:?}",
        after.messages[0]
    );
    assert_eq!(json_of(&after.tools), json_of(&requests[at - 1].tools));
    assert_eq!(json_of(&after.system), json_of(&requests[at - 1].system));
    assert!(after.messages.len() < requests[at - 1].messages.len());

    let mut saw_end = false;
    while let Ok(event) = events.try_recv() {
        if let AgentEvent::CompactionEnd {
            entry_id,
            error,
            usage,
            ..
        } = event
        {
            assert!(entry_id.is_some() && error.is_none() && usage.is_some());
            saw_end = true;
        }
    }
    assert!(saw_end);
    // The file reopens cleanly with the compaction on the path.
    let reopened = Session::open(agent.session().path()).unwrap();
    assert!(reopened.diagnostics.is_empty());
    let context = strata_context::build(reopened.session.tree(), reopened.session.leaf()).unwrap();
    assert_eq!(context.messages[0].message.role(), "compactionSummary");
}

#[tokio::test]
async fn a_separate_summary_model_gets_the_transcript_form() {
    let dir = tempfile::tempdir().unwrap();
    let big: String = (0..300)
        .map(|i| format!("line {i:04} of a long file\n"))
        .collect();
    std::fs::write(dir.path().join("big.txt"), &big).unwrap();
    let turns = || {
        vec![
            Turn::Calls(vec![("read", json!({"path": "big.txt"}))]),
            Turn::Text("It is a long file."),
            Turn::Calls(vec![("read", json!({"path": "big.txt"}))]),
            Turn::Text("Still long."),
            Turn::Calls(vec![("read", json!({"path": "big.txt"}))]),
            Turn::Text("Long again."),
        ]
    };
    let main = Scripted::new(turns());
    let cheap = Scripted::new(Vec::new());
    let session =
        Session::create(dir.path().join("s.jsonl"), "/x", WriteOptions::default()).unwrap();
    let mut small = model();
    small.context_window = 6_000;
    let settings = strata_compaction::CompactionSettings {
        reserve_tokens: 1_000,
        keep_recent_tokens: 1_500,
        ..strata_compaction::CompactionSettings::default()
    };
    let mut agent = agent_with(
        session,
        main.clone(),
        dir.path(),
        None,
        small.clone(),
        settings,
    );
    let mut cheap_model = small;
    cheap_model.id = "claude-haiku-4-5".into();
    agent.set_summary_model(Some(strata_agent::SummaryModel {
        provider: std::sync::Arc::new(cheap.clone()),
        model: cheap_model,
        stream: strata_provider::StreamOptions::default(),
    }));
    for prompt in ["read big.txt", "read it again", "and again"] {
        agent.prompt(prompt).await.unwrap();
    }
    assert!(
        !main.requests().iter().any(is_summary_request),
        "summaries go elsewhere"
    );
    let summaries = cheap.requests();
    assert!(!summaries.is_empty());
    // Another model cannot read the session's cache: Pi's transcript form, no tools.
    assert!(
        summaries
            .iter()
            .all(|r| r.tools.is_empty() && r.messages.len() == 1)
    );
    assert!(summaries[0].messages[0].text().contains("<conversation>"));
}
