//! Compaction from the loop: triggered by the window, cache-friendly summary request, the
//! entry carries the folded system snapshot and live tools, and the run goes on after it.

use serde_json::json;
use strata_agent::AgentEvent;
use strata_provider::Role;
use strata_session::{AgentMessage, Entry, Session, WriteOptions};

use crate::scripted::{
    Scripted, Turn, agent_with, agent_with_capabilities, appending_capabilities,
    cached_capabilities, is_summary_request, json_of, model,
};

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
        // The window's compaction under test: masking (which stubs a finished task's read
        // as the next starts) would keep the context under it.
        masking: no_masking(),
        ..strata_compaction::CompactionSettings::default()
    };
    let mut agent = agent_with_capabilities(
        session,
        provider.clone(),
        dir.path(),
        None,
        small,
        settings,
        cached_capabilities(),
    );
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
    // Pi 1.x's checkpoint carries the live tools and every section.
    let checkpoint = first
        .system_message
        .as_ref()
        .expect("a systemMessage checkpoint");
    assert_eq!(checkpoint.tools_added().len(), 4, "live tools carried");
    let sections: Vec<&str> = checkpoint.section_changes().map(|(name, _)| name).collect();
    assert!(sections.contains(&"intro") && sections.contains(&"tools"));
    assert!(first.system.is_none() && first.tools.is_none());

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
        // The window's compaction under test: masking (which stubs a finished task's read
        // as the next starts) would keep the context under it.
        masking: no_masking(),
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
    agent.set_summary_model(Some(strata_agent::ModelRoute {
        provider: std::sync::Arc::new(cheap.clone()),
        capabilities: strata_provider::Capabilities::default(),
        protocol: strata_provider::Protocol::AnthropicMessages,
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

fn no_masking() -> strata_compaction::MaskingSettings {
    strata_compaction::MaskingSettings {
        enabled: false,
        ..strata_compaction::MaskingSettings::default()
    }
}

fn big_file(dir: &std::path::Path) {
    let big: String = (0..300)
        .map(|i| format!("line {i:04} of a long file\n"))
        .collect();
    std::fs::write(dir.join("big.txt"), &big).unwrap();
}

fn reads() -> Vec<Turn> {
    vec![
        Turn::Calls(vec![("read", json!({"path": "big.txt"}))]),
        Turn::Text("It is a long file."),
        Turn::Calls(vec![("read", json!({"path": "big.txt"}))]),
        Turn::Text("Still long."),
        Turn::Calls(vec![("read", json!({"path": "big.txt"}))]),
        Turn::Text("Long again."),
    ]
}

fn small_window() -> (
    strata_provider::Model,
    strata_compaction::CompactionSettings,
) {
    let mut small = model();
    small.context_window = 6_000;
    let settings = strata_compaction::CompactionSettings {
        reserve_tokens: 1_000,
        keep_recent_tokens: 1_500,
        // The window's compaction under test: masking (which stubs a finished task's read
        // as the next starts) would keep the context under it.
        masking: no_masking(),
        ..strata_compaction::CompactionSettings::default()
    };
    (small, settings)
}

#[tokio::test]
async fn a_provider_without_a_prompt_cache_gets_the_transcript_form() {
    let dir = tempfile::tempdir().unwrap();
    big_file(dir.path());
    let provider = Scripted::new(reads());
    let session =
        Session::create(dir.path().join("s.jsonl"), "/x", WriteOptions::default()).unwrap();
    let (small, settings) = small_window();
    // Same model, but the provider caches nothing: re-sending the whole context plus an
    // instruction would be paid in full, so the summary goes as a transcript.
    let mut agent = agent_with_capabilities(
        session,
        provider.clone(),
        dir.path(),
        None,
        small,
        settings,
        appending_capabilities(),
    );
    for prompt in ["read big.txt", "read it again", "and again"] {
        assert_eq!(agent.prompt(prompt).await.unwrap().reason, "stop");
    }
    let summaries: Vec<_> = provider
        .requests()
        .into_iter()
        .filter(is_summary_request)
        .collect();
    assert!(!summaries.is_empty(), "the window forced a compaction");
    for request in &summaries {
        assert!(request.tools.is_empty(), "{:?}", request.tools);
        assert_eq!(request.messages.len(), 1);
        assert!(request.messages[0].text().contains("<conversation>"));
    }
}

#[tokio::test]
async fn a_later_overflow_in_the_same_run_compacts_again() {
    let dir = tempfile::tempdir().unwrap();
    big_file(dir.path());
    let provider = Scripted::new(vec![
        Turn::Text("First answer."),
        Turn::Text("Second answer."),
        // Third prompt: refused, compacted, answered with a call; the context grows past the
        // window again after the result (and a steering message) and is refused again.
        Turn::Overflow,
        Turn::Calls(vec![("read", json!({"path": "big.txt"}))]),
        Turn::Overflow,
        Turn::Text("Done after two compactions."),
    ]);
    let session =
        Session::create(dir.path().join("s.jsonl"), "/x", WriteOptions::default()).unwrap();
    let settings = strata_compaction::CompactionSettings {
        keep_recent_tokens: 50,
        ..strata_compaction::CompactionSettings::default()
    };
    let mut agent = agent_with(
        session,
        provider.clone(),
        dir.path(),
        None,
        model(),
        settings,
    );
    let long = "a long request about the parser and its many odd corner cases ".repeat(20);
    agent.prompt(format!("one: {long}")).await.unwrap();
    agent.prompt(format!("two: {long}")).await.unwrap();
    // Queued before the run, delivered after its first tool batch: a steer sent from a task
    // watching `ToolStart` raced the batch's end, and when it lost, the second overflow found
    // nothing new to summarise (the tool result alone is not a valid cut).
    agent.control().steer("also check the tests");
    let summary = agent.prompt(format!("three: {long}")).await.unwrap();
    assert_eq!(summary.reason, "stop");
    assert_eq!(summary.final_text, "Done after two compactions.");
    let compactions = agent
        .session()
        .tree()
        .iter()
        .filter(|e| matches!(e.kind(), strata_session::EntryKind::Compaction))
        .count();
    assert_eq!(
        compactions, 2,
        "each overflow got its own compact-and-retry"
    );
    let steered = agent.session().tree().iter().any(|e| {
        matches!(e.entry().unwrap(), Entry::Message(m)
            if matches!(&*m.message, AgentMessage::User(u)
                if u.content.text_joined("") == "also check the tests"))
    });
    assert!(steered, "the steer was delivered in the run");
}

#[tokio::test]
async fn a_failed_compaction_records_what_its_summary_requests_cost() {
    let dir = tempfile::tempdir().unwrap();
    big_file(dir.path());
    let provider = Scripted::new(reads());
    let session =
        Session::create(dir.path().join("s.jsonl"), "/x", WriteOptions::default()).unwrap();
    let mut agent = agent_with_capabilities(
        session,
        provider.clone(),
        dir.path(),
        None,
        model(),
        strata_compaction::CompactionSettings {
            keep_recent_tokens: 500,
            ..strata_compaction::CompactionSettings::default()
        },
        cached_capabilities(),
    );
    agent.prompt("read big.txt").await.unwrap();
    agent.prompt("read it again").await.unwrap();
    // The model answers with a "summary" larger than what it replaces: refused, but billed.
    provider.set_summary(format!("## Goal\n{}", "padding ".repeat(20_000)));
    let mut events = agent.subscribe();
    let error = agent
        .compact(strata_compaction::CompactionReason::Manual, None)
        .await
        .expect_err("not smaller");
    assert!(error.to_string().contains("not smaller"), "{error}");
    let mut reported = None;
    while let Ok(event) = events.try_recv() {
        if let AgentEvent::CompactionEnd {
            entry_id,
            usage,
            cost,
            error,
            ..
        } = event
        {
            assert!(entry_id.is_none() && error.is_some());
            reported = Some((usage.unwrap(), cost.unwrap()));
        }
    }
    let (usage, cost) = reported.expect("a compaction end with the usage");
    assert!(usage.input > 0 && cost.total() > 0.0);
    // Recorded where the session's totals read it: strata's usage entry, kind compaction.
    let reopened = Session::open(agent.session().path()).unwrap();
    let records = usage_records(&reopened.session);
    assert_eq!(records.len(), 1, "{records:?}");
    assert_eq!(records[0]["kind"], "compaction");
    assert_eq!(records[0]["usage"]["input"], usage.input);
    assert_eq!(records[0]["usage"]["output"], usage.output);
    let total = records[0]["usage"]["cost"]["total"].as_f64().unwrap();
    assert!((total - cost.total()).abs() < 1e-12);
    assert_eq!(
        records[0]["usage"]["totalTokens"],
        usage.total_tokens(),
        "Pi's usage shape"
    );
}

#[tokio::test]
async fn a_threshold_compaction_that_would_not_shrink_the_context_leaves_it_and_waits() {
    let dir = tempfile::tempdir().unwrap();
    big_file(dir.path());
    let provider = Scripted::new(reads());
    let session =
        Session::create(dir.path().join("s.jsonl"), "/x", WriteOptions::default()).unwrap();
    let mut agent = agent_with_capabilities(
        session,
        provider.clone(),
        dir.path(),
        None,
        model(),
        strata_compaction::CompactionSettings {
            keep_recent_tokens: 500,
            trigger_percent: Some(1.0),
            masking: no_masking(),
            ..strata_compaction::CompactionSettings::default()
        },
        cached_capabilities(),
    );
    agent.prompt("read big.txt").await.unwrap();
    provider.set_summary(format!("## Goal\n{}", "padding ".repeat(20_000)));
    let mut events = agent.subscribe();
    // Past the trigger, the summary comes back larger than what it replaces: refused and
    // reported, and the run goes on with the context as it was.
    let summary = agent.prompt("read it again").await.unwrap();
    assert_eq!(summary.reason, "stop");
    let mut ends = Vec::new();
    while let Ok(event) = events.try_recv() {
        if let AgentEvent::CompactionEnd {
            entry_id, error, ..
        } = event
        {
            ends.push((entry_id, error));
        }
    }
    assert_eq!(ends.len(), 1, "one try: {ends:?}");
    assert!(ends[0].0.is_none());
    assert!(
        ends[0]
            .1
            .as_deref()
            .is_some_and(|e| e.contains("not smaller"))
    );
    // No second summary request for a cut that has not grown past what the refused summary
    // took.
    let summaries = |provider: &Scripted| {
        provider
            .requests()
            .iter()
            .filter(|request| is_summary_request(request))
            .count()
    };
    let summaries_before = summaries(&provider);
    assert_eq!(summaries_before, 1);
    assert_eq!(agent.prompt("and again").await.unwrap().reason, "stop");
    assert_eq!(summaries(&provider), summaries_before);
    while let Ok(event) = events.try_recv() {
        assert!(
            !matches!(event, AgentEvent::CompactionStart { .. }),
            "{event:?}"
        );
    }
}

#[tokio::test]
async fn a_failed_branch_summary_leaves_the_leaf_and_records_what_it_cost() {
    let dir = tempfile::tempdir().unwrap();
    big_file(dir.path());
    let provider = Scripted::new(reads());
    let session =
        Session::create(dir.path().join("s.jsonl"), "/x", WriteOptions::default()).unwrap();
    let mut agent = agent_with(
        session,
        provider.clone(),
        dir.path(),
        None,
        model(),
        strata_compaction::CompactionSettings::default(),
    );
    agent.prompt("read big.txt").await.unwrap();
    let leaf = agent.session().leaf().cloned();
    let first = agent.session().tree().iter().next().unwrap().id().clone();
    // The model answers the summary request with nothing: refused, billed all the same.
    provider.set_summary(String::new());
    let error = agent
        .navigate(Some(&first), true, None)
        .await
        .expect_err("an empty summary");
    assert!(error.to_string().contains("no summary text"), "{error}");
    let reopened = Session::open(agent.session().path()).unwrap();
    assert!(
        !reopened
            .session
            .tree()
            .iter()
            .any(|e| matches!(e.kind(), strata_session::EntryKind::BranchSummary)),
        "no summary is stored"
    );
    let records = usage_records(&reopened.session);
    assert_eq!(records.len(), 1, "{records:?}");
    assert_eq!(records[0]["kind"], "branch_summary");
    assert!(records[0]["usage"]["input"].as_u64().unwrap() > 0);
    // The usage entry is appended on the path the user is still on.
    let context = strata_context::build(reopened.session.tree(), reopened.session.leaf()).unwrap();
    assert_eq!(
        context.messages.last().map(|m| m.message.role()),
        Some("assistant")
    );
    assert_ne!(
        reopened.session.leaf(),
        leaf.as_ref(),
        "the usage entry is the new leaf"
    );
}

/// The session's Pi 1.x `usage` entries as JSON, in order.
fn usage_records(session: &Session) -> Vec<serde_json::Value> {
    session
        .tree()
        .iter()
        .filter_map(|e| match e.entry().unwrap() {
            Entry::Usage(usage) => Some(serde_json::to_value(&usage).unwrap()),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn session_start_hooks_with_source_compact_add_their_context_after_the_compaction() {
    let dir = tempfile::tempdir().unwrap();
    big_file(dir.path());
    std::fs::create_dir_all(dir.path().join(".claude")).unwrap();
    std::fs::write(
        dir.path().join(".claude/settings.json"),
        r#"{"hooks": {"SessionStart": [{"matcher": "compact", "hooks": [{"command": "echo Re-read PLAN.md after a compaction."}]}]}}"#,
    )
    .unwrap();
    let provider = Scripted::new(reads());
    let session =
        Session::create(dir.path().join("s.jsonl"), "/x", WriteOptions::default()).unwrap();
    let mut agent = agent_with_capabilities(
        session,
        provider.clone(),
        dir.path(),
        None,
        model(),
        strata_compaction::CompactionSettings {
            keep_recent_tokens: 500,
            ..strata_compaction::CompactionSettings::default()
        },
        cached_capabilities(),
    );
    let settings = strata_hooks::HooksSettings::default();
    let files = strata_hooks::HookFiles::standard(&settings, None, None, dir.path());
    agent.set_hooks(Some(strata_hooks::HookRunner::new(
        strata_hooks::HookSet::load(&files, &settings, true),
        dir.path(),
    )));
    agent.prompt("read big.txt").await.unwrap();
    agent.prompt("read it again").await.unwrap();
    let hook_texts = |agent: &strata_agent::Agent| -> Vec<String> {
        let session = agent.session();
        let leaf = session.leaf().unwrap();
        session
            .tree()
            .path_from_root(leaf)
            .into_iter()
            .filter_map(|id| match session.tree().entry(id).unwrap() {
                Entry::CustomMessage(m) => Some(serde_json::to_string(&m.content).unwrap()),
                _ => None,
            })
            .collect()
    };
    // The matcher kept the startup run out.
    assert!(hook_texts(&agent).is_empty());
    let id = agent
        .compact(strata_compaction::CompactionReason::Manual, None)
        .await
        .unwrap()
        .expect("compacted");
    // The context follows the compaction entry, as the session's last entry.
    let session = agent.session();
    let leaf = session.leaf().unwrap().clone();
    let parent = session
        .tree()
        .entry(&leaf)
        .unwrap()
        .base()
        .parent_id
        .clone();
    assert_eq!(parent.as_ref(), Some(&id));
    let texts = hook_texts(&agent);
    assert_eq!(texts.len(), 1, "{texts:?}");
    assert!(
        texts[0].contains("Re-read PLAN.md after a compaction."),
        "{texts:?}"
    );
}
