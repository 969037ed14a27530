//! The WebSocket mode against strata-mock's socket: a tool loop sends only new items after the
//! previous response, and a socket that expired or closed mid-session gives that turn to HTTP
//! in full, the session going on.

use std::time::Duration;

use pretty_assertions::assert_eq;
use serde_json::json;
use strata_mock::{MockConfig, MockServer, RequestRecord, Scenario};
use strata_provider::{
    ContentBlock, Event, Message, Provider, Request, StreamOptions, SystemBlock, ToolDefinition,
    ToolResultContent,
};

use crate::support::{collect, openai, options};

/// Four turns: three reads, then the answer.
fn tool_loop() -> Scenario {
    let mut text = String::new();
    for path in ["a.txt", "b.txt", "c.txt"] {
        text.push_str(&format!(
            "[[turn]]\ntext = \"Reading {path}.\"\n[[turn.tool_call]]\ntool = \"read\"\nargs = {{ path = \"{path}\" }}\n"
        ));
    }
    text.push_str("[[turn]]\ntext = \"All three read.\"\n");
    Scenario::from_toml(&text, "inline").unwrap()
}

fn first_request() -> Request {
    let mut request = Request::new("gpt-5.2");
    request.system.push(SystemBlock::text(
        std::iter::repeat_n("You are a careful coding agent.", 300)
            .collect::<Vec<_>>()
            .join(" "),
    ));
    request.tools.push(ToolDefinition {
        name: "read".into(),
        description: "Read a file".into(),
        parameters: json!({"type": "object", "properties": {"path": {"type": "string"}}}),
        defer_loading: false,
    });
    request.messages.push(Message::user_text("Read the files."));
    request
}

fn session_options(base_url: &str) -> StreamOptions {
    StreamOptions {
        session_id: Some("session-ws".into()),
        ..options(base_url)
    }
}

/// One turn: streams `request`, appends the reply and a result for each of its calls; the
/// reply's text.
async fn turn(
    provider: &strata_openai_responses::ResponsesProvider,
    model: &strata_provider::Model,
    request: &mut Request,
    options: &StreamOptions,
) -> String {
    let events = collect(provider.stream(model, request, options).await.unwrap()).await;
    let Some(Event::Done { message, .. }) = events.last() else {
        panic!("the turn did not complete: {events:?}")
    };
    let text = message.text();
    let calls: Vec<String> = message
        .tool_calls()
        .map(|(id, _, _)| id.to_owned())
        .collect();
    request.messages.push(message.clone());
    if !calls.is_empty() {
        request.messages.push(Message {
            role: strata_provider::Role::User,
            content: calls
                .into_iter()
                .map(|id| ContentBlock::ToolResult {
                    tool_call_id: id,
                    content: vec![ToolResultContent::Text {
                        text: "file contents ".repeat(50),
                    }],
                    is_error: false,
                })
                .collect(),
        });
    }
    text
}

fn input_len(record: &RequestRecord) -> usize {
    record
        .body
        .as_ref()
        .and_then(|b| b["input"].as_array())
        .map_or(0, Vec::len)
}

fn previous(record: &RequestRecord) -> Option<&str> {
    record
        .body
        .as_ref()
        .and_then(|b| b["previous_response_id"].as_str())
}

#[tokio::test]
async fn a_tool_loop_on_the_socket_sends_only_each_turns_new_items() {
    let server = MockServer::start(MockConfig::new()).await.unwrap();
    server.load_scenario(tool_loop());
    let (provider, model) = openai(0);
    let options = session_options(&server.base_url());
    let mut request = first_request();
    let mut texts = Vec::new();
    for _ in 0..4 {
        texts.push(turn(&provider, &model, &mut request, &options).await);
    }
    assert_eq!(
        texts,
        [
            "Reading a.txt.",
            "Reading b.txt.",
            "Reading c.txt.",
            "All three read."
        ]
    );
    let records = server.requests();
    assert_eq!(records.len(), 4, "{records:#?}");
    assert!(records.iter().all(|r| r.websocket && r.status == 200));
    // The first message carries the whole input; each later one the tool result alone, after
    // the previous response.
    assert_eq!(previous(&records[0]), None);
    assert_eq!(input_len(&records[0]), 2);
    for pair in records.windows(2) {
        let id = format!("resp_mock{:020}", pair[0].seq);
        assert_eq!(previous(&pair[1]), Some(id.as_str()));
        assert_eq!(input_len(&pair[1]), 1);
        assert_eq!(
            pair[1].body.as_ref().unwrap()["input"][0]["type"],
            "function_call_output"
        );
        assert!(pair[1].upload_bytes * 4 < pair[0].upload_bytes.max(records[0].upload_bytes));
    }
    // The connection's memory makes the same prompt: the prefix is read from the cache.
    let last = records[3].cache.unwrap();
    assert!(
        last.cache_read * 10 > last.input_tokens * 8,
        "{last:?} of the whole conversation"
    );
}

#[tokio::test]
async fn a_socket_past_its_hour_gives_the_turn_to_http_in_full_and_the_next_turn_reopens() {
    let server = MockServer::start(MockConfig::new()).await.unwrap();
    server.load_scenario(tool_loop());
    let (provider, model) = openai(0);
    let options = session_options(&server.base_url());
    let mut request = first_request();
    let mut texts = vec![turn(&provider, &model, &mut request, &options).await];
    server.advance_clock(Duration::from_secs(61 * 60));
    for _ in 0..3 {
        texts.push(turn(&provider, &model, &mut request, &options).await);
    }
    // No turn lost: the script played through in order.
    assert_eq!(
        texts,
        [
            "Reading a.txt.",
            "Reading b.txt.",
            "Reading c.txt.",
            "All three read."
        ]
    );
    let records = server.requests();
    let shape: Vec<(bool, u16, Option<&str>)> = records
        .iter()
        .map(|r| (r.websocket, r.status, previous(r)))
        .collect();
    assert_eq!(shape.len(), 5, "{shape:?}");
    // The expired socket refuses the second turn; it goes over HTTP with the whole input.
    assert!(
        records[1]
            .error
            .as_deref()
            .is_some_and(|e| e.contains("websocket_connection_limit_reached")),
        "{:?}",
        records[1].error
    );
    assert_eq!((records[2].websocket, previous(&records[2])), (false, None));
    assert_eq!(input_len(&records[2]), 5);
    assert_eq!(records[2].body.as_ref().unwrap()["stream"], true);
    // A new socket: the whole input first (it holds nothing yet), then only the new items.
    assert_eq!((records[3].websocket, previous(&records[3])), (true, None));
    assert_eq!(input_len(&records[3]), 8);
    let id = format!("resp_mock{:020}", records[3].seq);
    assert_eq!(
        (records[4].websocket, previous(&records[4])),
        (true, Some(id.as_str()))
    );
    assert_eq!(input_len(&records[4]), 1);
}

#[tokio::test]
async fn a_socket_closed_between_turns_gives_the_turn_to_http_in_full() {
    let server = MockServer::start(MockConfig::new()).await.unwrap();
    server.load_scenario(tool_loop());
    let (provider, model) = openai(0);
    let options = session_options(&server.base_url());
    let mut request = first_request();
    let mut texts = vec![turn(&provider, &model, &mut request, &options).await];
    server.close_sockets();
    texts.push(turn(&provider, &model, &mut request, &options).await);
    texts.push(turn(&provider, &model, &mut request, &options).await);
    assert_eq!(
        texts,
        ["Reading a.txt.", "Reading b.txt.", "Reading c.txt."]
    );
    let records = server.requests();
    // The closed socket answered nothing, so it left no record: the turn is the HTTP one.
    let shape: Vec<(bool, Option<&str>, usize)> = records
        .iter()
        .map(|r| (r.websocket, previous(r), input_len(r)))
        .collect();
    assert_eq!(
        shape,
        vec![(true, None, 2), (false, None, 5), (true, None, 8)]
    );
}

#[tokio::test]
async fn with_the_mode_off_every_turn_is_an_http_request() {
    let server = MockServer::start(MockConfig::new()).await.unwrap();
    server.load_scenario(tool_loop());
    let (provider, model) = openai(0);
    let provider = provider.with_websocket(false);
    let options = session_options(&server.base_url());
    let mut request = first_request();
    turn(&provider, &model, &mut request, &options).await;
    turn(&provider, &model, &mut request, &options).await;
    let records = server.requests();
    assert!(
        records
            .iter()
            .all(|r| !r.websocket && previous(r).is_none())
    );
    assert_eq!(
        records.iter().map(input_len).collect::<Vec<_>>(),
        vec![2, 5]
    );
}
