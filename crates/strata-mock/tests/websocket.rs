//! The Responses WebSocket mode over a real socket: events as JSON messages, the connection's
//! memory of each lane's latest response, and its refusals.

use futures::{SinkExt, StreamExt};
use serde_json::{Value, json};
use strata_mock::{MockConfig, MockServer};
use tokio_tungstenite::tungstenite::Message;

type Socket =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

async fn open(server: &MockServer) -> Socket {
    let url = server.url("/v1/responses").replacen("http://", "ws://", 1);
    tokio_tungstenite::connect_async(url).await.unwrap().0
}

/// Sends `message` and reads events up to a terminal one (or an error); their JSON.
async fn exchange(socket: &mut Socket, message: Value) -> Vec<Value> {
    socket
        .send(Message::text(message.to_string()))
        .await
        .unwrap();
    let mut events = Vec::new();
    while let Some(Ok(frame)) = socket.next().await {
        let Message::Text(text) = frame else { continue };
        let event: Value = serde_json::from_str(&text).unwrap();
        let kind = event["type"].as_str().unwrap_or_default().to_owned();
        events.push(event);
        if matches!(kind.as_str(), "response.completed" | "error") {
            break;
        }
    }
    events
}

fn create(input: Value) -> Value {
    json!({"type": "response.create", "model": "gpt-5.5", "store": false, "input": input})
}

#[tokio::test]
async fn a_socket_continues_from_its_latest_response_with_only_new_items() {
    let server = MockServer::start(MockConfig::new()).await.unwrap();
    let mut socket = open(&server).await;
    let first = exchange(
        &mut socket,
        create(json!([{"role": "user", "content": "Say hello. ".repeat(800)}])),
    )
    .await;
    assert_eq!(first[0]["type"], "response.created");
    let done = first.last().unwrap();
    assert_eq!(done["type"], "response.completed");
    let id = done["response"]["id"].as_str().unwrap().to_owned();
    let mut next = create(json!([{"role": "user", "content": "Again."}]));
    next["previous_response_id"] = json!(id);
    let second = exchange(&mut socket, next).await;
    assert_eq!(second.last().unwrap()["type"], "response.completed");
    let records = server.requests();
    assert!(records.iter().all(|r| r.websocket && r.status == 200));
    // The second prompt is the first one, its reply and the new item: read from the cache.
    let (a, b) = (records[0].cache.unwrap(), records[1].cache.unwrap());
    assert!(b.input_tokens > a.input_tokens);
    assert!(b.cache_read >= a.input_tokens / 2, "{a:?} then {b:?}");
    assert!(records[1].upload_bytes * 10 < records[0].upload_bytes);
}

#[tokio::test]
async fn an_id_the_connection_does_not_hold_is_previous_response_not_found() {
    let server = MockServer::start(MockConfig::new()).await.unwrap();
    let mut socket = open(&server).await;
    let first = exchange(&mut socket, create(json!("hi"))).await;
    let id = first.last().unwrap()["response"]["id"].clone();
    // Another connection holds nothing (store: false persists nothing).
    let mut other = open(&server).await;
    let mut next = create(json!("again"));
    next["previous_response_id"] = id;
    let refused = exchange(&mut other, next).await;
    assert_eq!(refused.len(), 1);
    assert_eq!(refused[0]["type"], "error");
    assert_eq!(refused[0]["status"], 400);
    assert_eq!(refused[0]["error"]["code"], "previous_response_not_found");
    // The socket stays open: a whole input goes through.
    let full = exchange(&mut other, create(json!("again"))).await;
    assert_eq!(full.last().unwrap()["type"], "response.completed");
}

#[tokio::test]
async fn transport_fields_and_an_hour_old_connection_are_refused() {
    let server = MockServer::start(MockConfig::new()).await.unwrap();
    let mut socket = open(&server).await;
    let mut streamed = create(json!("hi"));
    streamed["stream"] = json!(true);
    let refused = exchange(&mut socket, streamed).await;
    assert_eq!(refused[0]["error"]["code"], "unknown_parameter");
    server.advance_clock(std::time::Duration::from_secs(60 * 60));
    let expired = exchange(&mut socket, create(json!("hi"))).await;
    assert_eq!(
        expired[0]["error"]["code"],
        "websocket_connection_limit_reached"
    );
    // And the server closes it.
    assert!(
        socket
            .next()
            .await
            .is_none_or(|frame| matches!(frame, Ok(Message::Close(_)) | Err(_)))
    );
}
