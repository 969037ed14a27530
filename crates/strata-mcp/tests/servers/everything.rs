//! The reference server, over stdio and streamable HTTP.

use std::time::Duration;

use serde_json::json;
use strata_mcp::{ServerState, Transport};
use strata_tools::{ToolContent, ToolContext, ToolSource};

use crate::deps::{canned_http_endpoint, everything, free_port, server, started, stdio};

fn names(manager: &strata_mcp::McpManager) -> Vec<String> {
    manager
        .tools()
        .iter()
        .map(|t| t.name().to_owned())
        .collect()
}

#[tokio::test]
async fn stdio_tools_are_named_like_pi_and_called() {
    let Some((node, script)) = everything() else {
        return;
    };
    let manager = started(vec![server(
        "everything",
        stdio(&node, &[script.to_str().unwrap(), "stdio"]),
    )])
    .await;
    let status = &manager.status()[0];
    assert_eq!(status.state, ServerState::Connected, "{status:?}");
    let tools = names(&manager);
    assert!(
        tools.contains(&"mcp__everything__echo".to_owned()),
        "{tools:?}"
    );
    assert!(
        tools.contains(&"mcp__everything__get_sum".to_owned()),
        "get-sum sanitized: {tools:?}"
    );
    let ctx = ToolContext::new(std::env::temp_dir());
    let echo = manager.resolve("mcp__everything__echo").unwrap();
    let output = echo
        .execute(
            strata_tools::ToolCall::new("1", "mcp__everything__echo", json!({"message": "hi"})),
            &ctx,
            None,
        )
        .await;
    assert!(!output.is_error, "{output:?}");
    assert!(output.text_content().contains("hi"), "{output:?}");

    let image = manager
        .call("mcp__everything__get_tiny_image", json!({}), &ctx)
        .await;
    assert!(
        image
            .content
            .iter()
            .any(|block| matches!(block, ToolContent::Image { media_type, .. } if media_type == "image/png")),
        "{image:?}"
    );
    let bad = manager
        .call(
            "mcp__everything__get_sum",
            json!({"a": "not a number"}),
            &ctx,
        )
        .await;
    assert!(
        bad.is_error,
        "a server-side validation error reaches the model: {bad:?}"
    );

    // A reconnect (a restarted server) with the same tools changes nothing.
    let before: Vec<_> = manager.tools().iter().map(|t| t.definition()).collect();
    manager.take_changes();
    manager.reconnect("everything").await.unwrap();
    let after: Vec<_> = manager.tools().iter().map(|t| t.definition()).collect();
    assert_eq!(before, after);
    assert!(manager.take_changes().is_empty());
    manager.shutdown().await;
}

#[tokio::test]
async fn streamable_http_works_the_same() {
    let Some((node, script)) = everything() else {
        return;
    };
    let port = free_port();
    let mut child = tokio::process::Command::new(&node)
        .arg(&script)
        .arg("streamableHttp")
        .env("PORT", port.to_string())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    // Wait for the port to open.
    for _ in 0..100 {
        if tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .is_ok()
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let manager = started(vec![server(
        "remote",
        Transport::Http {
            url: format!("http://127.0.0.1:{port}/mcp"),
            headers: Default::default(),
        },
    )])
    .await;
    assert_eq!(
        manager.status()[0].state,
        ServerState::Connected,
        "{:?}",
        manager.status()
    );
    let ctx = ToolContext::new(std::env::temp_dir());
    let output = manager
        .call("mcp__remote__get_sum", json!({"a": 2, "b": 3}), &ctx)
        .await;
    assert!(!output.is_error, "{output:?}");
    assert!(output.text_content().contains('5'), "{output:?}");
    manager.shutdown().await;
    let _ = child.kill().await;
}

#[tokio::test]
async fn a_server_that_cannot_start_is_reported_and_blocks_nothing() {
    let manager = started(vec![server(
        "missing",
        stdio(std::path::Path::new("/nonexistent/strata-mcp-server"), &[]),
    )])
    .await;
    let status = &manager.status()[0];
    assert!(
        matches!(&status.state, ServerState::Failed { error } if error.contains("cannot start")),
        "{status:?}"
    );
    assert!(manager.tools().is_empty());
    let output = manager
        .call("mcp__missing__x", json!({}), &ToolContext::new("/"))
        .await;
    assert!(output.is_error);
}

#[tokio::test]
async fn an_http_server_that_wants_authorization_says_so() {
    // A local endpoint answering every request with 401 and a bearer challenge.
    let port = canned_http_endpoint(b"HTTP/1.1 401 Unauthorized\r\nWWW-Authenticate: Bearer resource_metadata=\"http://127.0.0.1/.well-known/oauth-protected-resource\"\r\nContent-Length: 0\r\nConnection: close\r\n\r\n").await;
    let manager = started(vec![server(
        "locked",
        Transport::Http {
            url: format!("http://127.0.0.1:{port}/mcp"),
            headers: Default::default(),
        },
    )])
    .await;
    let status = &manager.status()[0];
    assert!(
        matches!(&status.state, ServerState::AuthRequired { error } if error.contains("requires authorization")),
        "{status:?}"
    );
}

#[tokio::test]
async fn a_deferred_server_is_reached_through_search_and_call() {
    let Some((node, script)) = everything() else {
        return;
    };
    let mut config = server(
        "everything",
        stdio(&node, &[script.to_str().unwrap(), "stdio"]),
    );
    config.exposure = strata_mcp::config::Exposure::Deferred;
    let manager = started(vec![config]).await;
    assert_eq!(
        names(&manager),
        ["mcp_tool_search", "mcp_tool_call"],
        "none of its tools is declared"
    );
    let ctx = ToolContext::new(std::env::temp_dir());
    let search = manager.resolve("mcp_tool_search").unwrap();
    let found = search
        .execute(
            strata_tools::ToolCall::new("1", "mcp_tool_search", json!({"query": "echo message"})),
            &ctx,
            None,
        )
        .await;
    let found: serde_json::Value = serde_json::from_str(&found.text_content()).unwrap();
    assert_eq!(found[0]["name"], "mcp__everything__echo", "{found}");
    assert!(
        found[0]["inputSchema"]["properties"]["message"].is_object(),
        "{found}"
    );
    let call = manager.resolve("mcp_tool_call").unwrap();
    let output = call
        .execute(
            strata_tools::ToolCall::new(
                "2",
                "mcp_tool_call",
                json!({"name": "mcp__everything__echo", "arguments": {"message": "found"}}),
            ),
            &ctx,
            None,
        )
        .await;
    assert!(!output.is_error, "{output:?}");
    assert!(output.text_content().contains("found"), "{output:?}");
    manager.shutdown().await;
}

/// `auto` follows the prices: at claude-opus-4-8's, server-everything's thirteen definitions
/// cost more carried in every request than searched, the four small tools of the churn server
/// less. The searched server goes through `mcp_tool_search`; on a row with the provider's tool
/// search that route's price is weighed and shown too, and loses at these prices.
#[tokio::test]
async fn auto_searches_the_server_whose_tools_cost_more_carried_than_searched() {
    let Some((node, script)) = everything() else {
        return;
    };
    let Some(python) = crate::deps::python() else {
        return;
    };
    let auto = |mut config: strata_mcp::ServerConfig| {
        config.exposure = strata_mcp::config::Exposure::Auto;
        config
    };
    let start = |native: bool| {
        let manager = strata_mcp::McpManager::new(
            vec![
                auto(server(
                    "everything",
                    stdio(&node, &[script.to_str().unwrap(), "stdio"]),
                )),
                auto(server(
                    "churn",
                    stdio(&python, &[crate::deps::churn_script().to_str().unwrap()]),
                )),
            ],
            Duration::from_secs(60),
        );
        manager.set_native_deferral(native);
        manager.set_searchable(strata_mcp::Searchable::Nothing);
        manager.set_prices(strata_mcp::TokenPrices {
            cache_read: 0.5,
            cache_write: 6.25,
            output: 25.0,
        });
        manager
    };

    let manager = start(false);
    manager.wait_ready().await;
    let status = manager.status();
    assert_eq!(status[0].exposure, "deferred", "{status:?}");
    assert!(!status[0].provider_search, "{status:?}");
    assert!(
        status[0].exposure_note.contains("mcp_tool_search"),
        "{status:?}"
    );
    assert_eq!(status[1].exposure, "direct", "{status:?}");
    assert!(status[1].exposure_note.contains("declared"), "{status:?}");
    let tools = manager.tools();
    let declared: Vec<&str> = tools.iter().map(|t| t.name()).collect();
    assert!(declared.contains(&"mcp__churn__alpha"), "{declared:?}");
    assert!(declared.contains(&"mcp_tool_search"), "{declared:?}");
    assert!(
        !declared
            .iter()
            .any(|name| name.starts_with("mcp__everything__")),
        "{declared:?}"
    );
    assert!(
        tools.iter().all(|t| !t.defer_loading()),
        "nothing provider-deferred"
    );
    manager.shutdown().await;

    let manager = start(true);
    manager.wait_ready().await;
    let status = manager.status();
    // With the provider's search on the row, its price is weighed and shown; at these prices a
    // server arriving mid-chain costs more through it (bench-mcp), so mcp_tool_search stays.
    assert!(!status[0].provider_search, "{status:?}");
    assert!(
        status[0]
            .exposure_note
            .contains("the provider's tool search ~"),
        "{status:?}"
    );
    let tools = manager.tools();
    let declared: Vec<&str> = tools.iter().map(|t| t.name()).collect();
    assert!(declared.contains(&"mcp_tool_search"), "{declared:?}");
    assert!(tools.iter().all(|t| !t.defer_loading()), "{declared:?}");
    manager.shutdown().await;
}
