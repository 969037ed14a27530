//! Write a strata extension in Rust.
//!
//! An extension is a long-lived child process that strata starts and talks to over
//! stdin/stdout with JSON-RPC 2.0, one message per line (`docs/extensions.md`). This crate
//! gives the message types ([`protocol`]) and [`run`], a blocking loop that answers strata's
//! requests with a [`Handler`]'s methods. A handler can ask the user through [`Ui`] while it
//! answers.
//!
//! ```no_run
//! use serde_json::{Value, json};
//! use strata_extension_client::{Handler, Manifest, Ui, run};
//!
//! struct NoSecrets;
//!
//! impl Handler for NoSecrets {
//!     fn hook(&mut self, event: &str, input: &Value, _ui: &mut Ui<'_>) -> Value {
//!         let prompt = input["prompt"].as_str().unwrap_or("");
//!         if event == "UserPromptSubmit" && prompt.contains("password") {
//!             return json!({"decision": "block", "reason": "no secrets in prompts"});
//!         }
//!         json!({})
//!     }
//! }
//!
//! let manifest = Manifest {
//!     name: "no-secrets".into(),
//!     hooks: vec!["UserPromptSubmit".into()],
//!     ..Manifest::default()
//! };
//! run(manifest, NoSecrets).unwrap();
//! ```

pub mod protocol;

use std::collections::VecDeque;
use std::io::{BufRead, Write};

use serde_json::{Value, json};

pub use protocol::{CommandSpec, Manifest, Message, PROTOCOL_VERSION, ToolResult, ToolSpec};

/// What an extension does with strata's calls. Every method has a default that does nothing,
/// so a handler implements only what its manifest declares.
pub trait Handler {
    /// A hook event it declared in [`Manifest::hooks`]; `input` is the JSON a command hook
    /// reads on stdin, and the answer is what a command hook prints (`{}`: no opinion).
    fn hook(&mut self, event: &str, input: &Value, ui: &mut Ui<'_>) -> Value {
        let _ = (event, input, ui);
        json!({})
    }

    /// A runtime event it subscribed to (a notification: nothing is answered).
    fn event(&mut self, name: &str, data: &Value, ui: &mut Ui<'_>) {
        let _ = (name, data, ui);
    }

    /// A slash command it declared; the text is shown to the user.
    fn command(&mut self, name: &str, args: &str, ui: &mut Ui<'_>) -> String {
        let _ = (args, ui);
        format!("unknown command {name}")
    }

    /// A request for a memory slot it claimed in [`Manifest::slots`] (`slot`: `ingress_filter`,
    /// `compaction`, `precompute` or `forgetting`; params and answers in
    /// `docs/extensions.md`). `{}` leaves the decision to strata's built-in policy.
    fn memory(&mut self, slot: &str, params: &Value, ui: &mut Ui<'_>) -> Value {
        let _ = (slot, params, ui);
        json!({})
    }

    /// A call of a tool it declared.
    fn tool(&mut self, name: &str, arguments: &Value, ui: &mut Ui<'_>) -> ToolResult {
        let _ = (arguments, ui);
        ToolResult {
            text: format!("unknown tool {name}"),
            is_error: true,
        }
    }
}

/// The way back to strata while a call is handled: UI requests and notifications.
pub struct Ui<'a> {
    io: &'a mut Io,
}

impl Ui<'_> {
    /// Asks the user yes or no; `false` when strata has no one to ask.
    pub fn confirm(&mut self, title: &str, message: &str) -> bool {
        self.io
            .call("ui/confirm", json!({"title": title, "message": message}))
            .and_then(|v| v.get("confirmed").and_then(Value::as_bool))
            .unwrap_or(false)
    }

    /// Asks the user to pick one of `options`; the index, or `None`.
    pub fn select(&mut self, title: &str, options: &[&str]) -> Option<usize> {
        self.io
            .call("ui/select", json!({"title": title, "options": options}))
            .and_then(|v| v.get("index").and_then(Value::as_u64))
            .and_then(|i| usize::try_from(i).ok())
    }

    /// Asks the user for a line of text; `None` when cancelled.
    pub fn input(&mut self, title: &str, placeholder: &str) -> Option<String> {
        self.io
            .call(
                "ui/input",
                json!({"title": title, "placeholder": placeholder}),
            )
            .and_then(|v| v.get("text").and_then(Value::as_str).map(str::to_owned))
    }

    /// Shows a message (`level`: `info`, `warning` or `error`).
    pub fn notify(&mut self, message: &str, level: &str) {
        self.io.send(&Message::notification(
            "ui/notify",
            json!({"message": message, "level": level}),
        ));
    }

    /// Sets this extension's text in the footer (`""` clears it).
    pub fn status(&mut self, text: &str) {
        self.io
            .send(&Message::notification("ui/status", json!({"text": text})));
    }

    /// Sends the session runtime one of its operations (`strata_runtime::Op` as JSON, e.g.
    /// `{"op":"follow_up","args":{"text":"…","images":[]}}`; the kinds an extension may send are in
    /// `docs/extensions.md`). `Ok` once the runtime has queued it; `Err` with strata's reason
    /// when it refused it (or strata is gone).
    pub fn op(&mut self, op: Value) -> Result<(), String> {
        self.io.call_result("op", op).map(|_| ())
    }
}

struct Io {
    input: Box<dyn BufRead>,
    output: Box<dyn Write>,
    next_id: u64,
    /// Messages from strata read while waiting for a UI answer, handled afterwards.
    queued: VecDeque<Message>,
}

impl Io {
    fn send(&mut self, message: &Message) {
        let _ = self
            .output
            .write_all(message.to_line().as_bytes())
            .and_then(|()| self.output.flush());
    }

    fn read(&mut self) -> Option<Message> {
        if let Some(message) = self.queued.pop_front() {
            return Some(message);
        }
        loop {
            let mut line = String::new();
            match self.input.read_line(&mut line) {
                Ok(0) | Err(_) => return None,
                Ok(_) => {
                    if let Ok(message) = serde_json::from_str(&line) {
                        return Some(message);
                    }
                }
            }
        }
    }

    /// Sends a request to strata and waits for its answer (`None` on an error answer).
    fn call(&mut self, method: &str, params: Value) -> Option<Value> {
        self.call_result(method, params).ok()
    }

    /// Sends a request to strata and waits for its answer or its error's message.
    fn call_result(&mut self, method: &str, params: Value) -> Result<Value, String> {
        self.next_id += 1;
        let id = self.next_id;
        self.send(&Message::request(id, method, params));
        loop {
            let mut line = String::new();
            match self.input.read_line(&mut line) {
                Ok(0) | Err(_) => return Err("strata closed the connection".to_owned()),
                Ok(_) => {}
            }
            let Ok(message) = serde_json::from_str::<Message>(&line) else {
                continue;
            };
            if message.method.is_none() && message.id == Some(id) {
                return match message.error {
                    Some(error) => Err(error.message),
                    None => Ok(message.result.unwrap_or(Value::Null)),
                };
            }
            self.queued.push_back(message);
        }
    }
}

/// Serves strata on stdin/stdout until strata closes stdin or sends `shutdown`.
pub fn run(manifest: Manifest, handler: impl Handler) -> std::io::Result<()> {
    let stdin = std::io::stdin();
    run_on(
        manifest,
        handler,
        Box::new(stdin.lock()),
        Box::new(std::io::stdout()),
    )
}

/// [`run`] over any reader and writer (tests, other transports).
pub fn run_on(
    manifest: Manifest,
    mut handler: impl Handler,
    input: Box<dyn BufRead>,
    output: Box<dyn Write>,
) -> std::io::Result<()> {
    let mut io = Io {
        input,
        output,
        next_id: 0,
        queued: VecDeque::new(),
    };
    while let Some(message) = io.read() {
        let Some(method) = message.method.clone() else {
            continue; // A stray response.
        };
        let params = message.params.clone().unwrap_or(Value::Null);
        let text = |key: &str| {
            params
                .get(key)
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_owned()
        };
        let result = match method.as_str() {
            "initialize" => Some(json!({
                "protocolVersion": PROTOCOL_VERSION,
                "manifest": manifest,
            })),
            "hook" => {
                let input = params.get("input").cloned().unwrap_or(Value::Null);
                Some(handler.hook(&text("event"), &input, &mut Ui { io: &mut io }))
            }
            "event" => {
                let data = params.get("data").cloned().unwrap_or(Value::Null);
                handler.event(&text("name"), &data, &mut Ui { io: &mut io });
                None
            }
            "command" => {
                let answer = handler.command(&text("name"), &text("args"), &mut Ui { io: &mut io });
                Some(json!({ "text": answer }))
            }
            "tool" => {
                let arguments = params.get("arguments").cloned().unwrap_or(Value::Null);
                let result = handler.tool(&text("name"), &arguments, &mut Ui { io: &mut io });
                Some(serde_json::to_value(result).unwrap_or(Value::Null))
            }
            memory if memory.starts_with("memory/") => {
                let slot = memory.trim_start_matches("memory/");
                Some(handler.memory(slot, &params, &mut Ui { io: &mut io }))
            }
            "shutdown" => {
                if let Some(id) = message.id {
                    io.send(&Message::response(id, json!({})));
                }
                return Ok(());
            }
            _ => {
                if let Some(id) = message.id {
                    io.send(&Message::error(id, -32601, format!("no method {method}")));
                }
                None
            }
        };
        if let (Some(id), Some(result)) = (message.id, result) {
            io.send(&Message::response(id, result));
        }
    }
    Ok(())
}
