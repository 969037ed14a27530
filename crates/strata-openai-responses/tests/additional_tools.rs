//! A tool added mid-session on a row with `additional_tools` (GPT-5.6 and later): declared in
//! an `additional_tools` input item where it arrived, the `tools` array unchanged, the prefix
//! read from the cache; on a row without it the array grows and the conversation is written
//! again.

use serde_json::{Value, json};
use strata_mock::{MockConfig, MockServer, RequestRecord};
use strata_provider::{
    ContentBlock, Message, Provider, Request, Role, SystemBlock, ThinkingLevel, ToolDefinition,
};

use crate::support::{openai, options};

fn tool(name: &str) -> ToolDefinition {
    ToolDefinition {
        name: name.into(),
        description: format!("The {name} tool"),
        parameters: json!({"type": "object", "properties": {"path": {"type": "string"}}}),
        defer_loading: false,
    }
}

fn conversation(model: &str) -> Request {
    let mut request = Request::new(model);
    request.system.push(SystemBlock::text(
        std::iter::repeat_n("You are a careful coding agent.", 300)
            .collect::<Vec<_>>()
            .join(" "),
    ));
    request.tools.push(tool("read"));
    request.thinking = ThinkingLevel::Medium;
    for i in 0..20 {
        request.messages.push(Message::user_text(format!(
            "Step {i}: look at the code again."
        )));
        request
            .messages
            .push(Message::assistant_text(format!("Step {i} looked at.")));
    }
    request
}

/// `request` after an MCP server's `grep` arrived, as the renderer says it: a system message
/// with the addition, the tool also in the request's tool list (deferred, at its end).
fn with_grep_added(mut request: Request) -> Request {
    request.messages.push(Message {
        role: Role::System,
        content: vec![ContentBlock::ToolAddition {
            tools: vec![tool("grep")],
        }],
    });
    request.tools.push(ToolDefinition {
        defer_loading: true,
        ..tool("grep")
    });
    request
        .messages
        .push(Message::user_text("Now search for it."));
    request
}

fn tool_names(body: &Value) -> Vec<String> {
    body["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t["name"].as_str().map(str::to_owned))
        .collect()
}

async fn two_requests(model_id: &str) -> Vec<RequestRecord> {
    let server = MockServer::start(MockConfig::new()).await.unwrap();
    let (provider, mut model) = openai(0);
    model.id = model_id.into();
    let opts = options(&server.base_url());
    let first = conversation(model_id);
    provider.complete(&model, &first, &opts).await.unwrap();
    provider
        .complete(&model, &with_grep_added(first), &opts)
        .await
        .unwrap();
    server.requests()
}

#[tokio::test]
async fn a_tool_added_mid_session_is_declared_where_it_arrived_and_the_prefix_stays_cached() {
    let records = two_requests("gpt-6").await;
    assert!(records.iter().all(|r| r.status == 200), "{records:#?}");
    let (first, second) = (
        records[0].body.clone().unwrap(),
        records[1].body.clone().unwrap(),
    );
    assert_eq!(
        first["tools"], second["tools"],
        "the tools array is unchanged"
    );
    assert_eq!(tool_names(&second), ["read"]);
    let input = second["input"].as_array().unwrap();
    let added: Vec<&Value> = input
        .iter()
        .filter(|item| item["type"] == "additional_tools")
        .collect();
    assert_eq!(added.len(), 1);
    assert_eq!(added[0]["role"], "developer");
    assert_eq!(added[0]["tools"][0]["name"], "grep");
    assert!(added[0]["tools"][0].get("defer_loading").is_none());
    // It stands after the conversation so far, before the new user message.
    assert_eq!(input[input.len() - 2]["type"], "additional_tools");
    let cache = records[1].cache.unwrap();
    let first_prompt = records[0].cache.unwrap().input_tokens;
    assert!(
        cache.cache_read * 100 >= first_prompt * 90,
        "the first request's prompt is read again: {cache:?} of {first_prompt}"
    );
}

#[tokio::test]
async fn without_additional_tools_the_tools_array_grows_and_the_conversation_is_written_again() {
    // gpt-5.5 has tool addition through tool search, not `additional_tools`.
    let records = two_requests("gpt-5.5").await;
    let (first, second) = (
        records[0].body.clone().unwrap(),
        records[1].body.clone().unwrap(),
    );
    assert!(
        !second["input"]
            .as_array()
            .unwrap()
            .iter()
            .any(|item| item["type"] == "additional_tools")
    );
    assert_eq!(tool_names(&first), ["read"]);
    assert!(tool_names(&second).contains(&"grep".to_owned()));
    let cache = records[1].cache.unwrap();
    let first_prompt = records[0].cache.unwrap().input_tokens;
    assert!(
        cache.cache_read * 2 < first_prompt,
        "a changed tools array misses the conversation after it: {cache:?} of {first_prompt}"
    );
}
