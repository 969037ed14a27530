//! An answer over the stdio message limit (16 MiB) fails its call at once with its size,
//! instead of being dropped by the transport and read as a timeout.

use std::time::Duration;

use serde_json::json;
use strata_mcp::stdio::MAX_MESSAGE_BYTES;
use strata_tools::{ToolContext, ToolSource};

use crate::deps::{fixture, server, started, stdio, system_python};

async fn call_big(manager: &strata_mcp::McpManager, bytes: usize, id_last: bool) -> (bool, String) {
    let output = manager
        .call(
            "mcp__big__big",
            json!({"bytes": bytes, "id_last": id_last}),
            &ToolContext::new("/"),
        )
        .await;
    (output.is_error, output.text_content())
}

#[tokio::test]
async fn an_answer_over_the_stdio_limit_fails_at_once_as_too_large() {
    let Some(python) = system_python() else {
        return;
    };
    let script = fixture("big_server.py");
    let mut config = server("big", stdio(&python, &[script.to_str().unwrap()]));
    // Far longer than the test takes: a dropped answer would read as this timeout.
    config.timeout = Duration::from_secs(600);
    let manager = started(vec![config]).await;
    assert_eq!(manager.tools().len(), 1, "{:?}", manager.status());

    for id_last in [false, true] {
        let (is_error, text) = call_big(&manager, MAX_MESSAGE_BYTES + 1024, id_last).await;
        assert!(is_error, "{}", &text[..text.len().min(300)]);
        assert!(
            text.contains("more than the 16 MiB one stdio message may hold"),
            "{text}"
        );
        assert!(
            text.contains("MCP server \"big\" answered with 16.0 MiB"),
            "{text}"
        );
        assert!(!text.contains("did not answer"), "{text}");
    }
    // The connection is still good, and an answer under the limit arrives whole.
    let (is_error, text) = call_big(&manager, 1000, false).await;
    assert!(!is_error, "{text}");
    assert!(text.starts_with(&"x".repeat(1000)), "{text}");
    manager.shutdown().await;
}
