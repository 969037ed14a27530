//! The Converse bodies of the adapter's newest shapes (a `role: "system"` message with tool
//! changes), kept in `conformance/fixtures/bedrock-bodies.json` for botocore to judge
//! (`conformance/test_request_bodies.py`). The test fails when the adapter's output and the
//! file differ; `STRATA_BLESS=1` rewrites the file.

use serde_json::{Value, json};
use strata_bedrock::build_body;
use strata_provider::{
    Breakpoint, BreakpointPosition, CacheTtl, Catalog, ContentBlock, Message, Model, Request, Role,
    SystemBlock, ThinkingLevel, ToolDefinition,
};

fn tool(name: &str) -> ToolDefinition {
    ToolDefinition {
        name: name.into(),
        description: format!("The {name} tool"),
        parameters: json!({"type": "object", "properties": {"path": {"type": "string"}}}),
        defer_loading: false,
    }
}

#[test]
fn the_bodies_botocore_judges_are_what_the_adapter_builds() {
    let catalog = Catalog::builtin().unwrap();
    let row = catalog.provider("amazon-bedrock").unwrap();
    let sonnet = catalog
        .model(
            "amazon-bedrock",
            "anthropic.claude-sonnet-4-5-20250929-v1:0",
        )
        .unwrap();
    let opus = Model {
        id: "us.anthropic.claude-opus-4-8-v1:0".into(),
        ..sonnet.clone()
    };
    let mut request = Request::new(&opus.id);
    request.tools = vec![tool("read"), tool("grep")];
    request.system = vec![SystemBlock::text("You are strata, a careful coding agent.")];
    request.messages = vec![
        Message::user_text("Look at a.txt"),
        Message::assistant_text("It says hello."),
        Message {
            role: Role::System,
            content: vec![
                ContentBlock::text("Answer in French from now on."),
                ContentBlock::ToolRemoval {
                    names: vec!["read".into()],
                },
                ContentBlock::ToolAddition {
                    tools: vec![tool("grep")],
                },
            ],
        },
        Message::user_text("And b.txt?"),
    ];
    request.breakpoints = vec![
        Breakpoint {
            position: BreakpointPosition::System,
            ttl: CacheTtl::FiveMinutes,
        },
        Breakpoint {
            position: BreakpointPosition::Message { index: 3 },
            ttl: CacheTtl::FiveMinutes,
        },
    ];
    request.thinking = ThinkingLevel::Low;
    request.max_tokens = Some(2048);
    let entries: Vec<Value> = [
        ("system message with tool changes", &opus),
        ("the fold's fallback: user text", &sonnet),
    ]
    .into_iter()
    .map(|(name, model)| {
        let caps = row.capabilities(&model.id);
        json!({"name": name, "modelId": model.id, "body": build_body(model, &request, &caps)})
    })
    .collect();
    assert_eq!(entries[0]["body"]["messages"][2]["role"], "system");
    let text = serde_json::to_string_pretty(&entries).unwrap() + "\n";
    let path = format!(
        "{}/../../conformance/fixtures/bedrock-bodies.json",
        env!("CARGO_MANIFEST_DIR")
    );
    if std::env::var_os("STRATA_BLESS").is_some() {
        std::fs::write(&path, &text).unwrap();
    }
    let kept = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        kept == text,
        "{path} is not what the adapter builds now; rerun with STRATA_BLESS=1"
    );
}
