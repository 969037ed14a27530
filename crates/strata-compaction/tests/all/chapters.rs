//! After compaction: tools and system chapters byte-identical in an unchanged epoch; the live
//! tool set and only the changed sections in a changed one (the seeds' figures).

use pretty_assertions::assert_eq;
use strata_compaction::{CompactionSettings, compaction_entry};
use strata_context::{RenderOptions, Rendered, render_with};

use crate::support::{
    ScriptedProvider, TestSession, anthropic_capabilities, assistant, compact_session, context,
    sections, tool, user,
};

fn rendered(session: &TestSession) -> Rendered {
    render_with(
        &context(session),
        &anthropic_capabilities(),
        &RenderOptions::default(),
    )
}

/// 436 messages of 100 estimated tokens each; keeping 2000 tokens keeps the last 20.
fn push_conversation(session: &mut TestSession, messages: usize) {
    for index in 0..messages / 2 {
        session.push(user(&format!("{:0>400}", index)));
        session.push(assistant(&format!("{:a>400}", index), 0));
    }
}

/// Compacts `session` (keeping 2,000 tokens) and appends the compaction entry.
async fn compact_and_append(session: &mut TestSession) {
    let settings = CompactionSettings {
        keep_recent_tokens: 2000,
        ..CompactionSettings::default()
    };
    let before = context(session);
    let provider = ScriptedProvider::answering("## Goal\nKeep going.");
    let result = compact_session(session, &settings, &provider)
        .await
        .expect("compact");
    session
        .session
        .append_compaction(compaction_entry(&result, &before))
        .expect("append");
}

#[tokio::test]
async fn unchanged_epoch_keeps_tools_and_system_bytes() {
    let mut session = TestSession::new();
    let tools: Vec<_> = (0..16).map(|i| tool(&format!("tool{i:02}"))).collect();
    session
        .session
        .append_system(sections("v1"), tools, Vec::new())
        .expect("system");
    push_conversation(&mut session, 436);
    let before = rendered(&session);
    assert_eq!(before.request.tools.len(), 16);
    assert_eq!(before.request.system.len(), 6);
    assert_eq!(before.request.messages.len(), 436);

    compact_and_append(&mut session).await;
    let after = rendered(&session);
    assert_eq!(after.request.tools.len(), 16);
    assert_eq!(
        after.bytes.tools, before.bytes.tools,
        "tools chapter byte-identical"
    );
    assert_eq!(
        after.bytes.system, before.bytes.system,
        "system chapter byte-identical"
    );
    assert_eq!(
        after.request.system, before.request.system,
        "six sections equal"
    );
    assert_eq!(
        after.request.messages.len(),
        21,
        "summary + 20 kept messages"
    );
    assert_eq!(after.request.messages[1..], before.request.messages[416..]);
}

#[tokio::test]
async fn changed_epoch_collapses_to_the_live_set_and_rewrites_only_changed_sections() {
    let mut session = TestSession::new();
    let tools: Vec<_> = (0..22).map(|i| tool(&format!("tool{i:02}"))).collect();
    session
        .session
        .append_system(sections("v1"), tools, Vec::new())
        .expect("system");
    push_conversation(&mut session, 200);
    // Withdraw 7 tools, add 1, rewrite the tools and rules sections.
    let changed: std::collections::BTreeMap<String, String> = sections("v2")
        .into_iter()
        .filter(|(name, _)| name == "tools" || name == "rules")
        .collect();
    let removed: Vec<String> = (3..10).map(|i| format!("tool{i:02}")).collect();
    session
        .session
        .append_system(changed, vec![tool("recall")], removed.clone())
        .expect("patch");
    push_conversation(&mut session, 236);
    let before = rendered(&session);
    assert_eq!(
        before.request.tools.len(),
        23,
        "append-only ledger before compaction"
    );

    compact_and_append(&mut session).await;
    let after = rendered(&session);
    let names: Vec<&str> = after
        .request
        .tools
        .iter()
        .map(|t| t.name.as_str())
        .collect();
    assert_eq!(names.len(), 16, "the live set");
    assert!(removed.iter().all(|name| !names.contains(&name.as_str())));
    assert_eq!(names.last(), Some(&"recall"));
    let differing: Vec<&str> = before
        .request
        .system
        .iter()
        .zip(&after.request.system)
        .filter(|(a, b)| a != b)
        .filter_map(|(a, _)| a.section.as_deref())
        .collect();
    assert_eq!(after.request.system.len(), 6);
    assert_eq!(
        differing,
        ["tools", "rules"],
        "only the changed sections differ"
    );
    assert_eq!(after.request.messages.len(), 21);
}
