//! An extension's slash command over rpc: listed by `get_commands`, run by a `prompt` that
//! names it, as Pi 1.6 does (docs/extensions.md, "Slash commands").

use serde_json::json;

use super::Rpc;
use crate::support::{demo_mock, project};

#[test]
fn an_extensions_command_is_listed_by_get_commands_and_a_prompt_naming_it_runs_it_not_the_model() {
    let server = demo_mock();
    let dir = project();
    crate::support::asker_extension(dir.path());
    let mut rpc = Rpc::start(dir.path(), &server, &["--no-session"]);
    let commands = rpc.ok(json!({"type": "get_commands"}));
    let echo = commands["commands"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "echo")
        .cloned()
        .unwrap_or_else(|| panic!("no echo in {commands}"));
    assert_eq!(echo["source"], "extension", "{echo}");
    assert_eq!(echo["description"], "says its arguments back");
    // Pi answers a handled command after its output, with no run.
    let answer = rpc.ok(json!({"type": "prompt", "message": "/echo hello there"}));
    assert_eq!(answer, json!({"disposition": "handled"}));
    let shown = rpc
        .events
        .iter()
        .find(|e| e["type"] == "extension_ui_request" && e["method"] == "notify")
        .cloned()
        .unwrap_or_else(|| panic!("no notify before the answer: {:?}", rpc.events));
    assert_eq!(shown["message"], "echo: hello there", "{shown}");
    assert!(
        !rpc.events.iter().any(|e| e["type"] == "agent_start"),
        "{:?}",
        rpc.events
    );
    assert!(server.requests().is_empty(), "{:?}", server.requests());
    // A message naming no command still prompts the model, and the command's text never
    // reached its context.
    rpc.prompt_and_wait("hello");
    let sent = server.requests()[0].body.as_ref().unwrap().to_string();
    assert!(sent.contains("hello"), "{sent}");
    assert!(!sent.contains("echo"), "{sent}");
    rpc.close();
}

/// An extension's `op` is one of the session runtime's own operations: a prompt it sends runs
/// as the user's would (the model reads it, the front end sees the run), and one that would
/// change the permission mode is refused with the reason, which the extension reads.
#[test]
fn an_extensions_prompt_operation_runs_and_a_permission_change_is_refused() {
    let server = demo_mock();
    let dir = project();
    crate::support::asker_extension(dir.path());
    let mut rpc = Rpc::start(dir.path(), &server, &["--no-session"]);
    let prompt = json!({"op": "prompt", "args": {"text": "sent by the extension", "images": []}});
    let answer = rpc.ok(json!({"type": "prompt", "message": format!("/op {prompt}")}));
    assert_eq!(answer, json!({"disposition": "handled"}));
    let notify = |rpc: &mut Rpc| {
        let events = rpc.until(|e| e["type"] == "extension_ui_request" && e["method"] == "notify");
        events.last().unwrap()["message"].clone()
    };
    assert_eq!(notify(&mut rpc), "op: ok");
    rpc.until_agent_end();
    let sent = server.requests()[0].body.as_ref().unwrap().to_string();
    assert!(sent.contains("sent by the extension"), "{sent}");
    let requests = server.requests().len();

    let escalate = json!({"op": "set_permission_mode", "args": "auto"});
    rpc.ok(json!({"type": "prompt", "message": format!("/op {escalate}")}));
    let refused = notify(&mut rpc);
    assert_eq!(
        refused,
        "op: refused: `set_permission_mode` is not an operation extensions may send: permissions are the user's to change and answer"
    );
    assert_eq!(server.requests().len(), requests);
    rpc.close();
}
