//! A server on the official Python SDK that adds and removes tools and says so with
//! `notifications/tools/list_changed`.

use std::time::Duration;

use serde_json::json;
use strata_mcp::McpManager;
use strata_tools::{ABORTED_MESSAGE, ToolContext, ToolSource};

use crate::deps::{changed, churn_script, python, server, started, stdio};

pub async fn churn_manager(timeout: Duration) -> Option<McpManager> {
    let python = python()?;
    let mut config = server("churn", stdio(&python, &[churn_script().to_str().unwrap()]));
    config.timeout = timeout;
    Some(started(vec![config]).await)
}

fn names(manager: &McpManager) -> Vec<String> {
    manager
        .tools()
        .iter()
        .map(|t| t.name().to_owned())
        .collect()
}

/// Calls `churn` with `action` and waits until the manager took the new listing.
pub async fn churn(manager: &McpManager, action: &str) {
    let mut generation = manager.subscribe();
    generation.borrow_and_update();
    let output = manager
        .call(
            "mcp__churn__churn",
            json!({"action": action}),
            &ToolContext::new("/"),
        )
        .await;
    assert!(!output.is_error, "{output:?}");
    changed(&mut generation).await;
}

#[tokio::test]
async fn list_changed_adds_at_the_end_and_removes_in_place() {
    let Some(manager) = churn_manager(Duration::from_secs(30)).await else {
        return;
    };
    let start = names(&manager);
    assert_eq!(
        start,
        [
            "mcp__churn__alpha",
            "mcp__churn__beta",
            "mcp__churn__churn",
            "mcp__churn__slow"
        ]
    );
    manager.take_changes();
    churn(&manager, "add_gamma").await;
    assert_eq!(
        names(&manager),
        [
            "mcp__churn__alpha",
            "mcp__churn__beta",
            "mcp__churn__churn",
            "mcp__churn__slow",
            "mcp__churn__gamma"
        ]
    );
    churn(&manager, "remove_beta").await;
    assert!(!names(&manager).contains(&"mcp__churn__beta".to_owned()));
    let changes = manager.take_changes();
    let added: Vec<&String> = changes.iter().flat_map(|c| &c.diff.added).collect();
    let removed: Vec<&String> = changes.iter().flat_map(|c| &c.diff.removed).collect();
    assert_eq!(added, ["mcp__churn__gamma"]);
    assert_eq!(removed, ["mcp__churn__beta"]);
    assert_eq!(manager.status()[0].withdrawn, ["mcp__churn__beta"]);

    // The model may still call the withdrawn tool: it gets a clear error.
    let beta = manager.resolve("mcp__churn__beta").unwrap();
    let output = beta
        .execute(
            strata_tools::ToolCall::new("1", "mcp__churn__beta", json!({"a": 1, "b": 2})),
            &ToolContext::new("/"),
            None,
        )
        .await;
    assert!(output.is_error);
    assert!(
        output.text_content().contains("no longer available"),
        "{output:?}"
    );

    // Back again, in its first slot.
    churn(&manager, "restore_beta").await;
    assert_eq!(names(&manager)[1], "mcp__churn__beta");
    let sum = manager
        .call(
            "mcp__churn__beta",
            json!({"a": 1, "b": 2}),
            &ToolContext::new("/"),
        )
        .await;
    assert!(sum.text_content().contains('3'), "{sum:?}");
    manager.shutdown().await;
}

#[tokio::test]
async fn a_call_past_its_timeout_or_aborted_ends_with_an_error() {
    let Some(manager) = churn_manager(Duration::from_secs(2)).await else {
        return;
    };
    let ctx = ToolContext::new("/");
    let slow = manager
        .call("mcp__churn__slow", json!({"seconds": 30}), &ctx)
        .await;
    assert!(slow.is_error);
    assert!(
        slow.text_content().contains("did not answer within 2 s"),
        "{slow:?}"
    );

    let ctx = ToolContext::new("/");
    let cancel = ctx.cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(300)).await;
        cancel.cancel();
    });
    let aborted = manager
        .call("mcp__churn__slow", json!({"seconds": 30}), &ctx)
        .await;
    assert_eq!(aborted.text_content(), ABORTED_MESSAGE);
    // The server is still usable after both.
    let alpha = manager
        .call(
            "mcp__churn__alpha",
            json!({"text": "x"}),
            &ToolContext::new("/"),
        )
        .await;
    assert_eq!(alpha.text_content(), "alpha:x");
    manager.shutdown().await;
}
