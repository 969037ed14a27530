//! Branch summaries on tree navigation.

use serde_json::json;
use strata_compaction::{
    BRANCH_SUMMARY_MAX_TOKENS, NO_CONTENT, prepare_branch_summary, summarize_branch,
};
use strata_provider::StreamOptions;
use strata_session::{AgentMessage, Entry};

use crate::support::{
    ScriptedProvider, TestSession, assistant, last_user_text, model, tool_call, tool_result, user,
};

#[tokio::test]
async fn abandoned_path_is_summarized_from_the_common_ancestor_and_stored_for_pi() {
    let mut session = TestSession::new();
    session.push(user("shared start"));
    let ancestor = session.push(assistant("shared answer", 0));
    session.push(user("try approach A"));
    session.push(tool_call("c1", "edit", json!({"path": "src/a.rs"}), 0));
    session.push(tool_result("c1", "edit", "edited"));
    let old_leaf = session.push(assistant("approach A failed", 0));
    let preparation = prepare_branch_summary(session.session.tree(), &old_leaf, Some(&ancestor), 0)
        .expect("prepare");
    assert_eq!(preparation.common_ancestor.as_ref(), Some(&ancestor));
    assert_eq!(preparation.entries.len(), 4);
    // Tool results are left out; calls stay.
    assert_eq!(preparation.messages.len(), 3);
    assert!(
        preparation
            .messages
            .iter()
            .all(|m| !matches!(*m.message, AgentMessage::ToolResult(_)))
    );
    assert_eq!(preparation.file_lists().modified_files, ["src/a.rs"]);

    let provider = ScriptedProvider::answering("## Goal\nApproach A.");
    let summary = summarize_branch(
        &provider,
        &model("claude-sonnet-4-5"),
        &preparation,
        &StreamOptions::default(),
        Some("focus on the failure"),
        false,
    )
    .await
    .expect("summary");
    assert_eq!(
        summary.summary,
        "The user explored a different conversation branch before returning here.\nSummary of that exploration:\n\n## Goal\nApproach A.\n\n<modified-files>\nsrc/a.rs\n</modified-files>"
    );
    let request = &provider.requests()[0];
    assert_eq!(request.max_tokens, Some(BRANCH_SUMMARY_MAX_TOKENS));
    let text = last_user_text(request);
    assert!(text.starts_with("<conversation>\n[User]: try approach A"));
    assert!(text.ends_with("Additional focus: focus on the failure"));

    let id = session
        .session
        .branch_with_summary(
            Some(&ancestor),
            &summary.summary,
            Some(summary.details.to_details()),
            None,
        )
        .expect("store");
    let Entry::BranchSummary(stored) = session.session.tree().entry(id.as_str()).expect("entry")
    else {
        panic!("not a branch summary");
    };
    assert_eq!(stored.from_id, ancestor.as_str());

    // A later summary of a path holding this one accumulates its files.
    session.push(user("try approach B"));
    let second_leaf = session.push(tool_call("c2", "read", json!({"path": "src/b.rs"}), 0));
    let again = prepare_branch_summary(session.session.tree(), &second_leaf, Some(&ancestor), 0)
        .expect("prepare");
    let lists = again.file_lists();
    assert_eq!(lists.modified_files, ["src/a.rs"]);
    assert_eq!(lists.read_files, ["src/b.rs"]);
}

#[tokio::test]
async fn newest_messages_win_the_budget_and_empty_paths_need_no_request() {
    let mut session = TestSession::new();
    let root = session.push(user("root"));
    for index in 0..10 {
        session.push(user(&format!("{index}{}", "m".repeat(399))));
    }
    let leaf = session.leaf();
    let preparation =
        prepare_branch_summary(session.session.tree(), &leaf, Some(&root), 350).expect("prepare");
    // 100 tokens each: three fit in 350, the newest three.
    assert_eq!(preparation.messages.len(), 3);
    assert_eq!(preparation.tokens, 300);
    let first = match &*preparation.messages[0].message {
        AgentMessage::User(user) => user.content.text_joined(""),
        _ => String::new(),
    };
    assert!(first.starts_with('7'));

    let empty =
        prepare_branch_summary(session.session.tree(), &root, Some(&leaf), 0).expect("prepare");
    assert!(empty.messages.is_empty());
    let provider = ScriptedProvider::answering("unused");
    let summary = summarize_branch(
        &provider,
        &model("m"),
        &empty,
        &StreamOptions::default(),
        None,
        false,
    )
    .await
    .expect("summary");
    assert_eq!(summary.summary, NO_CONTENT);
    assert!(provider.requests().is_empty());
}
