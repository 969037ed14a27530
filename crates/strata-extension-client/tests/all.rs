//! The client loop over in-memory streams: handshake, a hook that asks the UI while it
//! answers (with an event arriving meanwhile), and shutdown.

#![expect(clippy::unwrap_used, reason = "tests")]

use std::io::{Cursor, Write};
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use strata_extension_client::{Handler, Manifest, Message, Ui, run_on};

#[derive(Clone, Default)]
struct Shared(Arc<Mutex<Vec<u8>>>);

impl Write for Shared {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[derive(Default)]
struct Asker {
    events: Vec<String>,
}

impl Handler for Asker {
    fn hook(&mut self, _event: &str, input: &Value, ui: &mut Ui<'_>) -> Value {
        let yes = ui.confirm("sure?", input["prompt"].as_str().unwrap_or(""));
        json!({"decision": if yes { "approve" } else { "block" }, "events": self.events.len()})
    }
    fn event(&mut self, name: &str, _data: &Value, _ui: &mut Ui<'_>) {
        self.events.push(name.to_owned());
    }
}

#[test]
fn a_hook_that_asks_the_ui_answers_after_the_reply_and_queued_events_are_kept() {
    let lines = [
        Message::request(1, "initialize", json!({"protocolVersion": 1})),
        Message::request(
            2,
            "hook",
            json!({"event": "UserPromptSubmit", "input": {"prompt": "go"}}),
        ),
        // Arrives while the hook waits for the UI: handled after it.
        Message::notification("event", json!({"name": "agent_start", "data": {}})),
        Message::response(1, json!({"confirmed": true})),
        Message::request(
            3,
            "hook",
            json!({"event": "UserPromptSubmit", "input": {"prompt": "go"}}),
        ),
        Message::response(2, json!({"confirmed": false})),
        Message::request(4, "nope", json!({})),
        Message::request(5, "shutdown", json!({})),
    ];
    let input: String = lines.iter().map(Message::to_line).collect();
    let output = Shared::default();
    let manifest = Manifest {
        name: "asker".into(),
        hooks: vec!["UserPromptSubmit".into()],
        ..Manifest::default()
    };
    run_on(
        manifest,
        Asker::default(),
        Box::new(Cursor::new(input)),
        Box::new(output.clone()),
    )
    .unwrap();
    let written = String::from_utf8(output.0.lock().unwrap().clone()).unwrap();
    let sent: Vec<Message> = written
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(
        sent[0].result.as_ref().unwrap()["manifest"]["name"],
        "asker"
    );
    assert_eq!(sent[1].method.as_deref(), Some("ui/confirm"));
    assert_eq!(sent[2].id, Some(2));
    assert_eq!(
        sent[2].result,
        Some(json!({"decision": "approve", "events": 0}))
    );
    assert_eq!(sent[3].method.as_deref(), Some("ui/confirm"));
    assert_eq!(sent[4].id, Some(3));
    assert_eq!(
        sent[4].result,
        Some(json!({"decision": "block", "events": 1}))
    );
    assert_eq!(sent[5].error.as_ref().unwrap().code, -32601);
    assert_eq!(sent[6].id, Some(5));
    assert_eq!(sent.len(), 7);
}
