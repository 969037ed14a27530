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

/// A manager on `cached_server.py` sending `ttlMs` / `cacheScope`, and the file it logs its
/// starts and listings to.
async fn cached_manager(ttl_ms: u64, scope: &str) -> Option<(McpManager, tempfile::TempDir)> {
    let python = python()?;
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("log");
    let script = churn_script().with_file_name("cached_server.py");
    let ttl = ttl_ms.to_string();
    let args = [script.to_str().unwrap(), &ttl, scope, log.to_str().unwrap()];
    let config = server("cached", stdio(&python, &args));
    Some((started(vec![config]).await, dir))
}

/// How many times the server started and listed its tools.
fn counts(dir: &tempfile::TempDir) -> (usize, usize) {
    let log = std::fs::read_to_string(dir.path().join("log")).unwrap_or_default();
    let count = |what: &str| log.lines().filter(|l| *l == what).count();
    (count("start"), count("list"))
}

/// Inside the listing's `ttlMs` a reconnect lists nothing (the server restarts, its tools
/// stay); `tools/list_changed` still re-lists. With `ttlMs: 0` a reconnect lists again, and
/// the restarted server's reversed order leaves the declared order as it was.
#[tokio::test]
async fn cache_hints_spare_listings_and_the_order_stays() {
    let Some((manager, dir)) = cached_manager(600_000, "public").await else {
        return;
    };
    let first = names(&manager);
    assert_eq!(
        first,
        [
            "mcp__cached__alpha",
            "mcp__cached__beta",
            "mcp__cached__touch"
        ]
    );
    assert_eq!(counts(&dir), (1, 1));
    manager.take_changes();
    manager.reconnect("cached").await.unwrap();
    assert_eq!(counts(&dir), (2, 1), "a fresh listing is not asked again");
    assert_eq!(names(&manager), first);
    assert!(manager.take_changes().is_empty());
    // The reused listing still calls the restarted server.
    let sum = manager
        .call(
            "mcp__cached__beta",
            json!({"a": 2, "b": 3}),
            &ToolContext::new("/"),
        )
        .await;
    assert!(sum.text_content().contains('5'), "{sum:?}");
    // A change notification outranks the lifetime.
    let mut generation = manager.subscribe();
    generation.borrow_and_update();
    let touched = manager
        .call("mcp__cached__touch", json!({}), &ToolContext::new("/"))
        .await;
    assert!(!touched.is_error, "{touched:?}");
    changed(&mut generation).await;
    assert_eq!(counts(&dir).1, 2);
    assert_eq!(names(&manager).last().unwrap(), "mcp__cached__gamma");
    manager.shutdown().await;

    let Some((manager, dir)) = cached_manager(0, "public").await else {
        return;
    };
    let first = names(&manager);
    manager.take_changes();
    manager.reconnect("cached").await.unwrap();
    assert_eq!(counts(&dir), (2, 2), "a stale listing is asked again");
    // The second start lists in reverse; the declared order is the first one.
    assert_eq!(names(&manager), first);
    assert!(manager.take_changes().is_empty());
    manager.shutdown().await;
}
