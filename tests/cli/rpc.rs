//! `--mode rpc` driven by a client written from Pi's documented protocol (docs/rpc.md), and
//! by Pi's own `RpcClient` when node and the installed package are present.

use std::io::{BufRead as _, BufReader, Write as _};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use strata_mock::{Fault, FaultKind, MockServer, Scenario};

use crate::support::{demo_mock, mock_with, project, trusted_project_config};
mod ext_commands;

const MODEL: &str = "anthropic/claude-sonnet-4-5";
const WAIT: Duration = Duration::from_secs(60);

/// A client of the protocol as docs/rpc.md describes it: JSON lines, responses matched by
/// `id`, everything else an event.
pub(crate) struct Rpc {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<Value>,
    /// Events read while waiting for responses, not yet taken.
    events: Vec<Value>,
    /// The `agent_settled` that followed the last `agent_end` taken.
    settled: Option<Value>,
    next_id: u64,
}

impl Rpc {
    pub(crate) fn start(dir: &Path, server: &MockServer, extra: &[&str]) -> Self {
        let url = server.base_url();
        let mut args = vec![
            "--mode",
            "rpc",
            "--model",
            MODEL,
            "--base-url",
            &url,
            "--api-key",
            "k",
        ];
        args.extend_from_slice(extra);
        let mut child = Command::new(env!("CARGO_BIN_EXE_strata"))
            .current_dir(dir)
            .args(&args)
            .env("HOME", dir)
            .env_remove("XDG_CONFIG_HOME")
            .env_remove("STRATA_MODEL")
            .env_remove("STRATA_SESSIONS_DIR")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("strata starts");
        let stdout = child.stdout.take().unwrap();
        let (sender, lines) = channel();
        std::thread::spawn(move || {
            // LF framing only, as the protocol requires.
            let mut reader = BufReader::new(stdout);
            let mut buffer = Vec::new();
            while reader.read_until(b'\n', &mut buffer).unwrap_or(0) > 0 {
                let text = String::from_utf8_lossy(&buffer);
                let value: Value = serde_json::from_str(text.trim_end_matches(['\n', '\r']))
                    .map_err(|e| format!("stdout line is not JSON ({e}): {text}"))
                    .unwrap();
                if sender.send(value).is_err() {
                    return;
                }
                buffer.clear();
            }
        });
        Self {
            stdin: child.stdin.take(),
            child,
            lines,
            events: Vec::new(),
            settled: None,
            next_id: 0,
        }
    }

    fn write(&mut self, command: &Value) {
        let stdin = self.stdin.as_mut().unwrap();
        writeln!(stdin, "{command}").unwrap();
        stdin.flush().unwrap();
    }

    /// Sends `command` with a fresh id and returns its response.
    fn call(&mut self, mut command: Value) -> Value {
        self.next_id += 1;
        let id = format!("req_{}", self.next_id);
        command["id"] = json!(id);
        self.write(&command);
        let deadline = Instant::now() + WAIT;
        loop {
            let line = self.next_line(deadline, &command);
            if line["type"] == "response" && line["id"] == json!(id) {
                assert_eq!(line["command"], command["type"], "{line}");
                return line;
            }
            assert_ne!(line["type"], "response", "unexpected response {line}");
            self.events.push(line);
        }
    }

    /// Like [`Rpc::call`], failing the test unless it succeeded; returns `data`.
    pub(crate) fn ok(&mut self, command: Value) -> Value {
        let response = self.call(command);
        assert_eq!(response["success"], true, "{response}");
        response.get("data").cloned().unwrap_or(Value::Null)
    }

    fn next_line(&mut self, deadline: Instant, waiting_for: &Value) -> Value {
        let left = deadline.saturating_duration_since(Instant::now());
        self.lines
            .recv_timeout(left)
            .map_err(|e| match e {
                RecvTimeoutError::Timeout => format!("no answer to {waiting_for} in time"),
                RecvTimeoutError::Disconnected => {
                    format!("strata exited waiting for {waiting_for}")
                }
            })
            .unwrap()
    }

    /// The next response, whatever its id; events before it are kept.
    fn next_response(&mut self) -> Value {
        let deadline = Instant::now() + WAIT;
        loop {
            let line = self.next_line(deadline, &json!("a response"));
            if line["type"] == "response" {
                return line;
            }
            self.events.push(line);
        }
    }

    /// Events up to and including the next `agent_end`; the `agent_settled` that follows it
    /// at once (Pi 1.x: nothing more will happen on its own) is taken too and kept in
    /// `settled`.
    pub(crate) fn until_agent_end(&mut self) -> Vec<Value> {
        let events = self.until(|e| e["type"] == "agent_end");
        let next = self.until(|_| true);
        assert_eq!(
            next[0]["type"], "agent_settled",
            "after agent_end: {next:?}"
        );
        self.settled = next.into_iter().next();
        events
    }

    /// Events up to and including the first matching one.
    pub(crate) fn until(&mut self, done: impl Fn(&Value) -> bool) -> Vec<Value> {
        let mut taken = Vec::new();
        let buffered = std::mem::take(&mut self.events);
        let mut rest = buffered.into_iter();
        for event in rest.by_ref() {
            let last = done(&event);
            taken.push(event);
            if last {
                self.events = rest.collect();
                return taken;
            }
        }
        let deadline = Instant::now() + WAIT;
        loop {
            let event = self.next_line(deadline, &json!("an event"));
            assert_ne!(event["type"], "response", "unexpected response {event}");
            let last = done(&event);
            taken.push(event);
            if last {
                return taken;
            }
        }
    }

    pub(crate) fn prompt_and_wait(&mut self, message: &str) -> Vec<Value> {
        self.ok(json!({"type": "prompt", "message": message}));
        self.until_agent_end()
    }

    pub(crate) fn close(mut self) {
        drop(self.stdin.take());
        let deadline = Instant::now() + Duration::from_secs(20);
        let mut exited = false;
        while !exited && Instant::now() < deadline {
            exited = self.child.try_wait().unwrap().is_some();
            std::thread::sleep(Duration::from_millis(20));
        }
        if !exited {
            let _ = self.child.kill();
        }
        assert!(exited, "strata did not exit when stdin closed");
    }
}

fn kinds(events: &[Value]) -> Vec<&str> {
    events.iter().map(|e| e["type"].as_str().unwrap()).collect()
}

fn count(events: &[Value], kind: &str) -> usize {
    events.iter().filter(|e| e["type"] == kind).count()
}

#[test]
fn a_prompt_streams_pi_events_and_ends_with_agent_end() {
    let server = demo_mock();
    let dir = project();
    let mut rpc = Rpc::start(dir.path(), &server, &["--no-session"]);
    // The response comes first, before any event of the run.
    let response = rpc.call(json!({"type": "prompt", "message": "fix the greeting"}));
    assert_eq!(
        response,
        json!({"id": "req_1", "type": "response", "command": "prompt", "success": true,
            "data": {"disposition": "started"}})
    );
    assert!(rpc.events.is_empty(), "{:?}", rpc.events);
    let events = rpc.until_agent_end();
    let kinds = kinds(&events);
    // The system snapshot stored for the run is a message of its first turn, before the
    // prompt, as Pi 1.6 reports it.
    assert_eq!(
        &kinds[..8],
        [
            "agent_start",
            "turn_start",
            "message_start",
            "message_end",
            "message_start",
            "message_end",
            "message_start",
            "message_update"
        ]
    );
    assert_eq!(events[2]["message"]["role"], "system");
    assert!(events[2]["message"]["toolsAdded"].is_array());
    assert_eq!(events[4]["message"]["role"], "user");
    assert_eq!(
        events[4]["message"]["content"][0]["text"],
        "fix the greeting"
    );
    assert_eq!(events[6]["message"]["role"], "assistant");
    assert_eq!(count(&events, "turn_start"), 4);
    assert_eq!(count(&events, "turn_end"), 4);
    assert_eq!(count(&events, "tool_execution_start"), 3);
    assert_eq!(count(&events, "tool_execution_end"), 3);
    assert_eq!(kinds.last(), Some(&"agent_end"));

    // Every message_start has its message_end, assistant deltas in between.
    let starts = count(&events, "message_start");
    assert_eq!(starts, count(&events, "message_end"));
    assert_eq!(starts, 9); // the system snapshot, the prompt, four answers, three results
    let deltas: Vec<&str> = events
        .iter()
        .filter(|e| e["type"] == "message_update")
        .map(|e| e["assistantMessageEvent"]["type"].as_str().unwrap())
        .collect();
    for kind in [
        "thinking_start",
        "thinking_delta",
        "thinking_end",
        "text_start",
        "text_delta",
        "text_end",
        "toolcall_start",
        "toolcall_delta",
        "toolcall_end",
    ] {
        assert!(deltas.contains(&kind), "{kind} missing from {deltas:?}");
    }
    // Pi 1.x sends deltas only: no cumulative message, no partial snapshot; the usage so far
    // rides on each update.
    for update in events.iter().filter(|e| e["type"] == "message_update") {
        assert!(update.get("message").is_none(), "{update}");
        assert!(
            update["assistantMessageEvent"].get("partial").is_none(),
            "{update}"
        );
        assert!(update["usage"].is_object(), "{update}");
    }
    assert_eq!(
        rpc.settled,
        Some(json!({"type": "agent_settled", "aborted": false}))
    );
    // The first turn: thinking at index 0, text at 1, the read call at 2.
    let first_turn: Vec<&Value> = events
        .iter()
        .take_while(|e| e["type"] != "turn_end")
        .filter(|e| e["type"] == "message_update")
        .collect();
    let text_delta = first_turn
        .iter()
        .find(|e| e["assistantMessageEvent"]["type"] == "text_delta")
        .unwrap();
    assert_eq!(text_delta["assistantMessageEvent"]["contentIndex"], 1);
    let thinking_start = first_turn
        .iter()
        .find(|e| e["assistantMessageEvent"]["type"] == "thinking_start")
        .unwrap();
    assert_eq!(thinking_start["assistantMessageEvent"]["contentIndex"], 0);
    let call_end = first_turn
        .iter()
        .find(|e| e["assistantMessageEvent"]["type"] == "toolcall_end")
        .unwrap();
    assert_eq!(call_end["assistantMessageEvent"]["contentIndex"], 2);
    assert_eq!(
        call_end["assistantMessageEvent"]["toolCall"]["arguments"],
        json!({"path": "src/greeting.rs"})
    );

    // Text deltas add up to the final answer.
    let last_turn_start = kinds.iter().rposition(|k| *k == "turn_start").unwrap();
    let streamed: String = events[last_turn_start..]
        .iter()
        .filter(|e| e["assistantMessageEvent"]["type"] == "text_delta")
        .map(|e| e["assistantMessageEvent"]["delta"].as_str().unwrap())
        .collect();
    assert_eq!(
        streamed,
        "Fixed the typo in `src/greeting.rs` (Helo → Hello); the tests pass."
    );

    // Tool events: start, then end with the result, then the toolResult message.
    let start = events
        .iter()
        .position(|e| e["type"] == "tool_execution_start")
        .unwrap();
    assert_eq!(events[start]["toolName"], "read");
    assert_eq!(events[start]["args"], json!({"path": "src/greeting.rs"}));
    let end = &events[start + 1];
    assert_eq!(end["type"], "tool_execution_end");
    assert_eq!(end["toolCallId"], events[start]["toolCallId"]);
    assert_eq!(end["isError"], false);
    assert!(
        end["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("Helo")
    );
    assert_eq!(events[start + 2]["type"], "message_start");
    assert_eq!(events[start + 2]["message"]["role"], "toolResult");

    // turn_end carries the assistant message and the turn's tool results.
    let turn_end = events.iter().find(|e| e["type"] == "turn_end").unwrap();
    assert_eq!(turn_end["message"]["role"], "assistant");
    assert_eq!(turn_end["message"]["stopReason"], "toolUse");
    assert_eq!(turn_end["toolResults"].as_array().unwrap().len(), 1);

    // agent_end lists every message of the run.
    let end = events.last().unwrap();
    let roles: Vec<&str> = end["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(
        roles,
        [
            "system",
            "user",
            "assistant",
            "toolResult",
            "assistant",
            "toolResult",
            "assistant",
            "toolResult",
            "assistant"
        ]
    );
    rpc.close();
}

#[test]
fn get_state_get_messages_and_stats_have_pi_shapes_and_the_mock_numbers() {
    let server = demo_mock();
    let dir = project();
    let mut rpc = Rpc::start(dir.path(), &server, &[]);
    let state = rpc.ok(json!({"type": "get_state"}));
    let mut keys: Vec<&str> = state
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    keys.sort_unstable();
    assert_eq!(
        keys,
        [
            "autoCompactionEnabled",
            "followUpMode",
            "isCompacting",
            "isStreaming",
            "messageCount",
            "model",
            "pendingMessageCount",
            "sessionFile",
            "sessionId",
            "steeringMode",
            "thinkingLevel"
        ]
    );
    assert_eq!(state["model"]["id"], "claude-sonnet-4-5");
    assert_eq!(state["model"]["provider"], "anthropic");
    assert_eq!(state["model"]["api"], "anthropic-messages");
    assert_eq!(state["model"]["baseUrl"], json!(server.base_url()));
    assert!(state["model"]["contextWindow"].as_u64().unwrap() > 0);
    assert!(state["model"]["cost"]["cacheRead"].is_number());
    assert_eq!(state["isStreaming"], false);
    assert_eq!(state["messageCount"], 0);
    assert_eq!(state["thinkingLevel"], "medium");
    assert!(Path::new(state["sessionFile"].as_str().unwrap()).is_file());

    rpc.prompt_and_wait("fix the greeting");
    let messages = rpc.ok(json!({"type": "get_messages"}));
    let messages = messages["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 8);
    assert_eq!(messages[0]["role"], "user");
    assert_eq!(messages[7]["role"], "assistant");
    assert_eq!(messages[7]["stopReason"], "stop");
    assert!(messages[7]["usage"]["cost"]["total"].is_number());
    let state = rpc.ok(json!({"type": "get_state"}));
    assert_eq!(state["messageCount"], 8);
    assert_eq!(state["isStreaming"], false);

    let stats = rpc.ok(json!({"type": "get_session_stats"}));
    assert_eq!(stats["userMessages"], 1);
    assert_eq!(stats["assistantMessages"], 4);
    assert_eq!(stats["toolCalls"], 3);
    assert_eq!(stats["toolResults"], 3);
    assert_eq!(stats["totalMessages"], 8);
    assert_eq!(stats["sessionFile"], state["sessionFile"]);
    // The mock's own accounting of the four requests.
    let records = server.requests();
    assert_eq!(records.len(), 4);
    let sum = |f: &dyn Fn(&strata_mock::Accounting) -> u64| -> u64 {
        records.iter().map(|r| f(r.cache.as_ref().unwrap())).sum()
    };
    let output: u64 = records.iter().map(|r| r.output_tokens).sum();
    assert_eq!(stats["tokens"]["cacheRead"], sum(&|a| a.cache_read));
    assert_eq!(stats["tokens"]["cacheWrite"], sum(&|a| a.cache_write));
    assert_eq!(stats["tokens"]["input"], sum(&|a| a.uncached));
    assert_eq!(stats["tokens"]["output"], output);
    assert_eq!(
        stats["tokens"]["total"],
        sum(&|a| a.cache_read + a.cache_write + a.uncached) + output
    );
    assert!(stats["tokens"]["cacheRead"].as_u64().unwrap() > 0);
    assert!(stats["cost"].as_f64().unwrap() > 0.0);
    assert!(stats["contextUsage"]["tokens"].as_u64().unwrap() > 0);

    let text = rpc.ok(json!({"type": "get_last_assistant_text"}));
    assert_eq!(
        text["text"],
        "Fixed the typo in `src/greeting.rs` (Helo → Hello); the tests pass."
    );
    rpc.close();
}

#[test]
fn set_model_switches_the_next_request_and_rejects_unknown_models() {
    let server = demo_mock();
    let dir = project();
    let mut rpc = Rpc::start(dir.path(), &server, &["--no-session"]);
    let response =
        rpc.call(json!({"type": "set_model", "provider": "anthropic", "modelId": "nope"}));
    assert_eq!(response["success"], false);
    assert_eq!(response["error"], "Model not found: anthropic/nope");

    let models = rpc.ok(json!({"type": "get_available_models"}));
    let models = models["models"].as_array().unwrap();
    let other = models
        .iter()
        .find(|m| m["provider"] == "anthropic" && m["id"] != "claude-sonnet-4-5")
        .expect("another anthropic model")
        .clone();
    let model =
        rpc.ok(json!({"type": "set_model", "provider": "anthropic", "modelId": other["id"]}));
    assert_eq!(model, other);
    let state = rpc.ok(json!({"type": "get_state"}));
    assert_eq!(state["model"]["id"], other["id"]);
    rpc.prompt_and_wait("fix the greeting");
    let records = server.requests();
    assert!(
        records
            .iter()
            .all(|r| r.model == other["id"].as_str().unwrap())
    );

    let level = rpc.call(json!({"type": "set_thinking_level", "level": "loud"}));
    assert_eq!(level["success"], false);
    rpc.ok(json!({"type": "set_thinking_level", "level": "low"}));
    let state = rpc.ok(json!({"type": "get_state"}));
    let expected = if other["reasoning"] == true {
        "low"
    } else {
        "off"
    };
    assert_eq!(state["thinkingLevel"], expected);
    rpc.close();
}

/// An rpc session whose next two prompts get long answers, with a scripted history summary
/// and 10 recent tokens kept, so a compaction has something to summarise.
fn two_long_answers_to_come() -> (MockServer, tempfile::TempDir, Rpc) {
    let long = "The parser handles nested expressions and reports errors with spans. ".repeat(60);
    let scenario = Scenario::from_toml(
        &format!(
            "name = \"long\"\nplayback = \"sequence\"\n[[turn]]\ntext = \"{long}\"\n[[turn]]\ntext = \"{long}\"\n[[summary]]\nkind = \"history\"\ntext = \"Two long answers about the parser.\"\n"
        ),
        "long.toml",
    )
    .unwrap();
    let server = mock_with(scenario);
    let dir = project();
    trusted_project_config(dir.path(), "[compaction]\nkeep_recent_tokens = 10\n");
    let rpc = Rpc::start(dir.path(), &server, &[]);
    (server, dir, rpc)
}

#[test]
fn compact_summarises_and_the_context_starts_with_the_summary() {
    let (_server, _dir, mut rpc) = two_long_answers_to_come();
    let nothing = rpc.call(json!({"type": "compact"}));
    assert_eq!(nothing["success"], false, "{nothing}");
    rpc.prompt_and_wait("write a parser");
    rpc.prompt_and_wait("explain it");
    let result = rpc.ok(json!({"type": "compact", "customInstructions": "focus on the file"}));
    // The scripted history summary, followed by the split turn's prefix summary.
    assert!(
        result["summary"]
            .as_str()
            .unwrap()
            .starts_with("Two long answers about the parser."),
        "{result}"
    );
    assert!(!result["summary"].as_str().unwrap().is_empty(), "{result}");
    assert!(result["firstKeptEntryId"].is_string(), "{result}");
    assert!(result["tokensBefore"].as_u64().unwrap() > 0, "{result}");
    let events = std::mem::take(&mut rpc.events);
    assert_eq!(kinds(&events), ["compaction_start", "compaction_end"]);
    assert_eq!(events[0]["reason"], "manual");
    assert_eq!(events[1]["result"], result);
    assert_eq!(events[1]["aborted"], false);
    let messages = rpc.ok(json!({"type": "get_messages"}));
    assert_eq!(messages["messages"][0]["role"], "compactionSummary");
    assert_eq!(messages["messages"][0]["summary"], result["summary"]);
    let stats = rpc.ok(json!({"type": "get_session_stats"}));
    assert_eq!(stats["contextUsage"]["tokens"], Value::Null);
    rpc.close();
}

#[test]
fn a_retried_summary_request_reports_pi_summarization_retries() {
    let (server, _dir, mut rpc) = two_long_answers_to_come();
    rpc.prompt_and_wait("write a parser");
    rpc.prompt_and_wait("explain it");
    // The first summary request is refused once; the transport retries it.
    server.push_fault(Fault::next(FaultKind::Overloaded));
    let result = rpc.ok(json!({"type": "compact"}));
    assert!(result["summary"].is_string(), "{result}");
    let events = std::mem::take(&mut rpc.events);
    assert_eq!(
        kinds(&events),
        [
            "compaction_start",
            "summarization_retry_scheduled",
            "summarization_retry_attempt_start",
            "summarization_retry_finished",
            "compaction_end",
        ],
        "{events:?}"
    );
    let scheduled = &events[1];
    assert_eq!(scheduled["attempt"], 1);
    assert_eq!(scheduled["maxAttempts"], 3);
    assert!(scheduled["delayMs"].is_u64());
    assert!(!scheduled["errorMessage"].as_str().unwrap().is_empty());
    assert_eq!(
        events[2],
        json!({"type": "summarization_retry_attempt_start", "source": "compaction", "reason": "manual"})
    );
    rpc.close();
}

#[test]
fn steering_during_a_run_reaches_the_model_before_its_next_request() {
    let server = demo_mock();
    server.push_fault(Fault::next(FaultKind::Slow { delay_ms: 100 }));
    let dir = project();
    let mut rpc = Rpc::start(dir.path(), &server, &["--no-session"]);
    rpc.ok(json!({"type": "prompt", "message": "fix the greeting"}));
    rpc.until(|e| e["type"] == "message_update");
    // A prompt while streaming needs a streamingBehavior.
    let refused = rpc.call(json!({"type": "prompt", "message": "again"}));
    assert_eq!(refused["success"], false);
    assert!(
        refused["error"]
            .as_str()
            .unwrap()
            .contains("streamingBehavior")
    );
    // Served while the run goes on.
    let state = rpc.ok(json!({"type": "get_state"}));
    assert_eq!(state["isStreaming"], true);
    rpc.ok(
        json!({"type": "steer", "message": "also keep the signature",
        "images": [{"type": "image", "data": "c2lnbmF0dXJl", "mimeType": "image/png"}]}),
    );
    let events = rpc.until_agent_end();
    let update = events.iter().find(|e| e["type"] == "queue_update").unwrap();
    assert_eq!(update["steering"], json!(["also keep the signature"]));
    let steered = events
        .iter()
        .position(|e| {
            e["type"] == "message_end"
                && e["message"]["role"] == "user"
                && e["message"]["content"][0]["text"] == "also keep the signature"
        })
        .expect("the steering message is reported");
    // Its image travels with it.
    assert_eq!(
        events[steered]["message"]["content"][1],
        json!({"type": "image", "data": "c2lnbmF0dXJl", "mimeType": "image/png"})
    );
    // Delivered after the first tool batch: a new turn opens with it.
    assert_eq!(events[steered - 2]["type"], "turn_start");
    let first_turn_end = events.iter().position(|e| e["type"] == "turn_end").unwrap();
    assert!(first_turn_end < steered);
    // The second request carried it.
    let records = server.requests();
    let second = records[1].body.as_ref().unwrap().to_string();
    assert!(second.contains("also keep the signature"));
    assert!(
        second.contains("c2lnbmF0dXJl"),
        "the image reached the model"
    );
    assert!(
        !records[0]
            .body
            .as_ref()
            .unwrap()
            .to_string()
            .contains("also keep the signature")
    );
    rpc.close();
}

#[test]
fn abort_stops_a_running_tool_and_answers_when_idle() {
    let scenario = Scenario::from_toml(
        "name = \"sleepy\"\n[[turn]]\ntext = \"Waiting.\"\n[[turn.tool_call]]\ntool = \"bash\"\nargs = { command = \"sleep 30\" }\n",
        "sleepy.toml",
    )
    .unwrap();
    let server = mock_with(scenario);
    let dir = project();
    let mut rpc = Rpc::start(dir.path(), &server, &["--no-session"]);
    let started = Instant::now();
    rpc.ok(json!({"type": "prompt", "message": "wait"}));
    rpc.until(|e| e["type"] == "tool_execution_start");
    rpc.ok(json!({"type": "abort"}));
    assert!(started.elapsed() < Duration::from_secs(20));
    // The answer came after the run ended and settled, aborted.
    let events = std::mem::take(&mut rpc.events);
    assert_eq!(
        events.last().unwrap(),
        &json!({"type": "agent_settled", "aborted": true}),
        "{events:?}"
    );
    assert_eq!(events[events.len() - 2]["type"], "agent_end");
    let end = events
        .iter()
        .find(|e| e["type"] == "tool_execution_end")
        .unwrap();
    assert_eq!(end["isError"], true);
    let state = rpc.ok(json!({"type": "get_state"}));
    assert_eq!(state["isStreaming"], false);
    rpc.close();
}

#[test]
fn bash_output_is_recorded_and_sent_with_the_next_prompt() {
    let server = demo_mock();
    let dir = project();
    let mut rpc = Rpc::start(dir.path(), &server, &["--no-session"]);
    let result = rpc.ok(json!({"type": "bash", "command": "echo hello-from-bash; exit 3"}));
    assert_eq!(
        result,
        json!({"output": "hello-from-bash", "exitCode": 3, "cancelled": false, "truncated": false})
    );
    // Its output streamed as Pi 1.x's `bash_execution_update` events, and nothing else.
    let updates = std::mem::take(&mut rpc.events);
    assert!(
        updates.iter().all(|e| e["type"] == "bash_execution_update"),
        "{updates:?}"
    );
    let streamed: String = updates
        .iter()
        .map(|e| e["delta"].as_str().unwrap())
        .collect();
    assert_eq!(streamed, "hello-from-bash\n");
    let messages = rpc.ok(json!({"type": "get_messages"}));
    let last = &messages["messages"][0];
    assert_eq!(last["role"], "bashExecution");
    assert_eq!(last["command"], "echo hello-from-bash; exit 3");
    assert_eq!(last["exitCode"], 3);
    rpc.prompt_and_wait("fix the greeting");
    let first = server.requests()[0].body.as_ref().unwrap().to_string();
    assert!(
        first.contains("Ran `echo hello-from-bash; exit 3`"),
        "{first}"
    );

    // abort_bash stops a long command.
    rpc.write(&json!({"id": "long", "type": "bash", "command": "sleep 30"}));
    std::thread::sleep(Duration::from_millis(300));
    rpc.write(&json!({"id": "stop", "type": "abort_bash"}));
    let mut responses = [rpc.next_response(), rpc.next_response()];
    responses.sort_by_key(|r| r["id"].as_str().unwrap().to_owned());
    assert_eq!(responses[1]["success"], true, "{}", responses[1]);
    let data = &responses[0]["data"];
    assert_eq!(data["cancelled"], true);
    assert_eq!(data["exitCode"], Value::Null);
    rpc.close();
}

/// Pi 1.x's session commands over the raw protocol (no node needed): `get_entries` pages by
/// entry id, `get_tree` nests the same entries, `set_session_name` reports
/// `session_info_changed`, `clear_queue` hands back what waited, and a bash command kept out
/// of the context is recorded as such.
#[test]
fn entries_page_by_id_the_tree_nests_them_and_queues_clear() {
    let server = demo_mock();
    let dir = project();
    let mut rpc = Rpc::start(dir.path(), &server, &[]);
    rpc.prompt_and_wait("fix the greeting");
    let all = rpc.ok(json!({"type": "get_entries"}));
    let entries = all["entries"].as_array().unwrap().clone();
    let state = rpc.ok(json!({"type": "get_state"}));
    let file = std::fs::read_to_string(state["sessionFile"].as_str().unwrap()).unwrap();
    assert_eq!(
        entries.len(),
        file.lines().count() - 1,
        "every entry, no header"
    );
    assert_eq!(all["leafId"], entries.last().unwrap()["id"]);
    let page = rpc.ok(json!({"type": "get_entries", "since": entries[1]["id"]}));
    assert_eq!(page["entries"].as_array().unwrap()[..], entries[2..]);
    let missing = rpc.call(json!({"type": "get_entries", "since": "nope"}));
    assert_eq!(missing["success"], false);
    assert_eq!(missing["error"], "Entry not found: nope");

    let tree = rpc.ok(json!({"type": "get_tree"}));
    let mut ids = Vec::new();
    let mut nodes: Vec<Value> = tree["tree"].as_array().unwrap().clone();
    while let Some(node) = nodes.pop() {
        let parent = node["entry"]["id"].clone();
        for child in node["children"].as_array().unwrap() {
            assert_eq!(child["entry"]["parentId"], parent);
            nodes.push(child.clone());
        }
        ids.push(node["entry"]["id"].as_str().unwrap().to_owned());
    }
    ids.sort();
    let mut expected: Vec<String> = entries
        .iter()
        .map(|e| e["id"].as_str().unwrap().to_owned())
        .collect();
    expected.sort();
    assert_eq!(ids, expected, "the tree holds every entry once");

    rpc.ok(json!({"type": "set_session_name", "name": "greeting fix"}));
    let named = rpc.until(|e| e["type"] == "session_info_changed");
    assert_eq!(named.last().unwrap()["name"], "greeting fix");

    // Queued while idle: follow-ups wait for the next run, clear_queue returns them.
    rpc.ok(json!({"type": "follow_up", "message": "later"}));
    let cleared = rpc.ok(json!({"type": "clear_queue"}));
    assert_eq!(cleared, json!({"steering": [], "followUp": ["later"]}));

    rpc.ok(json!({"type": "bash", "command": "echo private", "excludeFromContext": true}));
    let messages = rpc.ok(json!({"type": "get_messages"}));
    let bash = messages["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert_eq!(bash["role"], "bashExecution");
    assert_eq!(bash["excludeFromContext"], true);
    rpc.close();
}

#[test]
fn new_session_fork_and_switch_move_between_files() {
    let server = demo_mock();
    let dir = project();
    let mut rpc = Rpc::start(dir.path(), &server, &[]);
    rpc.prompt_and_wait("fix the greeting");
    rpc.prompt_and_wait("now say thanks");
    let first = rpc.ok(json!({"type": "get_state"}));
    let first_file = first["sessionFile"].as_str().unwrap().to_owned();

    let forks = rpc.ok(json!({"type": "get_fork_messages"}));
    let forks = forks["messages"].as_array().unwrap().clone();
    let texts: Vec<&str> = forks.iter().map(|m| m["text"].as_str().unwrap()).collect();
    assert_eq!(texts, ["fix the greeting", "now say thanks"]);

    // Forking at the second prompt keeps the first exchange and hands back the prompt.
    let forked = rpc.ok(json!({"type": "fork", "entryId": forks[1]["entryId"]}));
    assert_eq!(
        forked,
        json!({"text": "now say thanks", "cancelled": false})
    );
    let state = rpc.ok(json!({"type": "get_state"}));
    let fork_file = state["sessionFile"].as_str().unwrap().to_owned();
    assert_ne!(fork_file, first_file);
    assert_eq!(state["messageCount"], 8);
    let header = first_line(Path::new(&fork_file));
    assert_eq!(header["parentSession"], json!(first_file));

    let fresh = rpc.ok(json!({"type": "new_session", "parentSession": first_file}));
    assert_eq!(fresh, json!({"cancelled": false}));
    let state = rpc.ok(json!({"type": "get_state"}));
    let new_file = state["sessionFile"].as_str().unwrap().to_owned();
    assert!(new_file != first_file && new_file != fork_file);
    assert_eq!(state["messageCount"], 0);
    assert_eq!(
        first_line(Path::new(&new_file))["parentSession"],
        json!(first_file)
    );

    rpc.ok(json!({"type": "set_session_name", "name": "  the first one  "}));
    // The new session moves to another model; switching back takes up the first session's own
    // model again, as Pi does, and writes nothing to it.
    let models = rpc.ok(json!({"type": "get_available_models"}));
    let other = models["models"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["provider"] == first["model"]["provider"] && m["id"] != first["model"]["id"])
        .expect("another model of the same provider")
        .clone();
    let provider = other["provider"].clone();
    rpc.ok(json!({"type": "set_model", "provider": provider, "modelId": other["id"]}));
    let first_bytes = std::fs::read(&first_file).unwrap();
    let switched = rpc.ok(json!({"type": "switch_session", "sessionPath": first_file}));
    assert_eq!(switched, json!({"cancelled": false}));
    let state = rpc.ok(json!({"type": "get_state"}));
    assert_eq!(state["sessionFile"], json!(first_file));
    assert_eq!(state["model"]["id"], first["model"]["id"]);
    assert_eq!(std::fs::read(&first_file).unwrap(), first_bytes);
    // The second prompt was past the script: the mock echoed, without tools.
    assert_eq!(state["messageCount"], 10);
    assert!(state.get("sessionName").is_none());
    rpc.ok(json!({"type": "switch_session", "sessionPath": new_file}));
    let state = rpc.ok(json!({"type": "get_state"}));
    assert_eq!(state["sessionName"], "the first one");
    assert_eq!(state["model"]["id"], other["id"]);

    let missing = rpc.call(json!({"type": "switch_session", "sessionPath": "/nonexistent.jsonl"}));
    assert_eq!(missing["success"], false);
    // A file that is no session: refused, and strata stays on the session it had.
    let garbage = dir.path().join("garbage.jsonl");
    std::fs::write(&garbage, "not json at all\n").unwrap();
    let refused = rpc.call(json!({"type": "switch_session", "sessionPath": garbage}));
    assert_eq!(refused["success"], false, "{refused}");
    let state = rpc.ok(json!({"type": "get_state"}));
    assert_eq!(state["sessionFile"], json!(new_file));
    rpc.prompt_and_wait("still here");
    rpc.close();
}

#[test]
fn unknown_and_unsupported_commands_fail_loudly() {
    let server = demo_mock();
    let dir = project();
    let mut rpc = Rpc::start(dir.path(), &server, &["--no-session"]);
    let unknown = rpc.call(json!({"type": "dance"}));
    assert_eq!(unknown["success"], false);
    assert_eq!(unknown["error"], "Unknown command: dance");
    let retry = rpc.call(json!({"type": "abort_retry"}));
    assert_eq!(retry["success"], false);
    let images = rpc.call(json!({"type": "prompt", "message": "look",
        "images": [{"type": "image", "data": "AAAA"}]}));
    assert_eq!(images["success"], false);
    assert!(
        images["error"].as_str().unwrap().starts_with("images[0]:"),
        "{images}"
    );
    let queued = rpc.call(json!({"type": "steer", "message": "look",
        "images": [{"type": "image", "mimeType": "image/png"}]}));
    assert_eq!(queued["success"], false);
    assert!(
        queued["error"].as_str().unwrap().starts_with("images[0]:"),
        "{queued}"
    );
    rpc.write(&json!("not a command"));
    let typeless = rpc.next_response();
    assert_eq!(typeless["success"], false);
    assert_eq!(typeless["command"], "parse");
    rpc.stdin.as_mut().unwrap().write_all(b"{broken\n").unwrap();
    let parse = rpc.next_response();
    assert_eq!(parse["success"], false);
    assert!(
        parse["error"]
            .as_str()
            .unwrap()
            .starts_with("Failed to parse command"),
        "{parse}"
    );
    let empty = rpc.call(json!({"type": "set_session_name", "name": "  "}));
    assert_eq!(empty["error"], "Session name cannot be empty");
    rpc.ok(json!({"type": "set_steering_mode", "mode": "all"}));
    rpc.ok(json!({"type": "set_follow_up_mode", "mode": "one-at-a-time"}));
    let state = rpc.ok(json!({"type": "get_state"}));
    assert_eq!(state["steeringMode"], "all");
    let commands = rpc.ok(json!({"type": "get_commands"}));
    assert_eq!(commands, json!({"commands": []}));
    rpc.close();
}

#[test]
fn a_prompt_with_images_stores_them_and_sends_them_to_the_model() {
    let server = demo_mock();
    let dir = project();
    let mut rpc = Rpc::start(dir.path(), &server, &["--no-session"]);
    rpc.ok(
        json!({"type": "prompt", "message": "what is in this picture?",
        "images": [{"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"}]}),
    );
    rpc.until_agent_end();
    let messages = rpc.ok(json!({"type": "get_messages"}));
    let user = &messages["messages"][0];
    assert_eq!(user["role"], "user");
    assert_eq!(user["content"][0]["text"], "what is in this picture?");
    assert_eq!(
        user["content"][1],
        json!({"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"})
    );
    let sent = server.requests();
    let body = sent.last().unwrap().body.as_ref().unwrap();
    let text = body.to_string();
    assert!(text.contains("iVBORw0KGgo="), "{text}");
    assert!(text.contains("image/png"), "{text}");
    rpc.close();
}

#[test]
fn follow_ups_run_after_the_run_as_one_pi_run() {
    let server = demo_mock();
    server.push_fault(Fault::next(FaultKind::Slow { delay_ms: 100 }));
    let dir = project();
    let mut rpc = Rpc::start(dir.path(), &server, &["--no-session"]);
    rpc.ok(json!({"type": "prompt", "message": "fix the greeting"}));
    rpc.until(|e| e["type"] == "message_update");
    rpc.ok(
        json!({"type": "prompt", "message": "then summarise", "streamingBehavior": "followUp",
        "images": [{"type": "image", "data": "c3VtbWFyeQ==", "mimeType": "image/jpeg"}]}),
    );
    let events = rpc.until_agent_end();
    assert_eq!(count(&events, "agent_start"), 0);
    let end = events.last().unwrap();
    let users: Vec<&Value> = end["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "user")
        .collect();
    assert_eq!(users.len(), 2, "{end}");
    assert_eq!(users[1]["content"][0]["text"], "then summarise");
    assert_eq!(
        users[1]["content"][1],
        json!({"type": "image", "data": "c3VtbWFyeQ==", "mimeType": "image/jpeg"})
    );
    // Nothing else follows: one agent_end for both.
    let state = rpc.ok(json!({"type": "get_state"}));
    assert_eq!(state["isStreaming"], false);
    assert_eq!(state["pendingMessageCount"], 0);
    assert!(rpc.events.iter().all(|e| e["type"] != "agent_end"));
    rpc.close();
}

#[test]
fn export_html_writes_the_session_page() {
    let server = demo_mock();
    let dir = project();
    let mut rpc = Rpc::start(dir.path(), &server, &[]);
    rpc.prompt_and_wait("fix the greeting");
    let out = dir.path().join("page.html");
    let data = rpc.ok(json!({"type": "export_html", "outputPath": out}));
    assert_eq!(data["path"], json!(out));
    let page = std::fs::read_to_string(&out).unwrap();
    assert!(page.contains("fix the greeting"));
    rpc.close();
}

fn first_line(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap();
    serde_json::from_str(text.lines().next().unwrap()).unwrap()
}

/// Where `.ci/install-pi` put node 22 and Pi 1.6 (`STRATA_PI16_DIR`, default
/// `~/.cache/strata/pi16`): the node binary and Pi's `rpc-client.js`, when both are there.
/// `PI_RPC_CLIENT` and `PI_NODE` name other files.
fn pi16_rpc_client() -> Option<(PathBuf, PathBuf)> {
    let pi = crate::support::Pi16::find()?;
    let client = std::env::var_os("PI_RPC_CLIENT").map_or_else(
        || pi.package.join("dist/modes/rpc/rpc-client.js"),
        PathBuf::from,
    );
    client.is_file().then_some((pi.node, client))
}

/// Pi 1.6's own `RpcClient` (from the installed package) drives strata through prompt, steer,
/// follow-up, clear_queue, abort, compact, model and thinking changes, `get_entries` paging
/// and `get_tree`: the strongest check that Pi clients work unchanged. Skipped with a message
/// when node 22 or the package is missing.
#[test]
fn pi_rpc_client_drives_strata_unchanged() {
    let Some((node, package)) = pi16_rpc_client() else {
        eprintln!(
            "skipped: node 22 and Pi 1.6's rpc-client.js not found (run .ci/install-pi, or set STRATA_PI16_DIR / PI_RPC_CLIENT and PI_NODE)"
        );
        return;
    };
    let server = demo_mock();
    let dir = project();
    trusted_project_config(dir.path(), "[compaction]\nkeep_recent_tokens = 10\n");
    let script = crate::support::fixture("rpc/pi-client.mjs");
    // The client starts `node <cliPath>`: node 22 first on the PATH.
    let node_dir = node.parent().map(Path::to_path_buf).unwrap_or_default();
    let path = std::env::var_os("PATH").unwrap_or_default();
    let mut paths = vec![node_dir];
    paths.extend(std::env::split_paths(&path));
    let output = Command::new(&node)
        .arg(&script)
        .current_dir(dir.path())
        .env("PATH", std::env::join_paths(paths).unwrap())
        .env("PI_RPC_CLIENT", &package)
        .env("SHIM_TARGET", env!("CARGO_BIN_EXE_strata"))
        .env("SHIM_PATH", crate::support::fixture("rpc/strata-shim.mjs"))
        .env("MOCK_URL", server.base_url())
        .env("HOME", dir.path())
        .env_remove("XDG_CONFIG_HOME")
        .output()
        .expect("node runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let report: Value = serde_json::from_str(stdout.trim()).unwrap();
    assert_eq!(report["firstEvent"], "agent_start");
    assert_eq!(report["lastEvent"], "agent_settled");
    assert_eq!(
        report["settled"],
        json!({"type": "agent_settled", "aborted": false})
    );
    assert_eq!(report["toolEnds"], 3);
    assert_eq!(report["deltasOnly"], true);
    assert_eq!(
        report["streamed"],
        "Fixed the typo in `src/greeting.rs` (Helo → Hello); the tests pass."
    );
    assert_eq!(report["state"]["model"]["id"], "claude-sonnet-4-5");
    assert_eq!(report["state"]["isStreaming"], false);
    assert_eq!(report["stats"]["assistantMessages"], 4);
    assert_eq!(report["lastText"], report["streamed"]);

    // Paging: a cursor returns what is strictly after it.
    let entries = report["entries"].as_u64().unwrap();
    assert!(entries >= 9, "{report}");
    assert_eq!(report["leafIsLast"], true);
    assert_eq!(report["pageAfterThird"], entries - 3);
    assert_eq!(report["pageStartsAfterCursor"], true);
    assert_eq!(report["nothingAfterLeaf"], 0);
    assert_eq!(report["unknownCursor"], "Entry not found: nope");
    assert_eq!(report["treeRoots"], 1);
    assert_eq!(report["treeNodes"], entries);
    assert_eq!(report["treeLeaf"], true);

    assert_eq!(report["thinkingAfterSet"], "low");
    assert_eq!(report["cycled"], json!({"level": "medium"}));
    assert_eq!(report["haiku"], "claude-3-5-haiku-latest");
    assert_eq!(report["thinkingOnHaiku"], "off", "haiku does not reason");
    assert_eq!(report["backOnSonnet"], "claude-sonnet-4-5");
    assert_eq!(
        report["thinkingBackOnSonnet"], "medium",
        "the level asked for comes back with a model that reasons"
    );
    assert_eq!(report["unknownModel"], "Model not found: anthropic/nope");
    assert_eq!(
        report["thinkingEvents"],
        json!(["low", "medium", "off", "medium"])
    );

    let compacted = &report["compacted"];
    assert!(
        compacted["summary"].as_str().unwrap().len() > 10,
        "{compacted}"
    );
    let before = compacted["tokensBefore"].as_u64().unwrap();
    let after = compacted["estimatedTokensAfter"].as_u64().unwrap();
    assert!(after > 0 && after < before, "{after} of {before}");
    assert_eq!(report["afterCompact"], "compactionSummary");

    assert_eq!(report["bash"]["output"], "hi");
    assert_eq!(report["bashStreamed"], "hi\n");
    assert_eq!(report["newSession"], json!({"cancelled": false}));
    assert_eq!(report["afterNew"], 0);

    assert_eq!(report["promptDisposition"], "started");
    assert_eq!(report["steerDisposition"], "queued");
    assert_eq!(report["followUpDisposition"], "queued");
    assert_eq!(
        report["userTexts"],
        json!(["fix the greeting", "keep the signature", "then say done"])
    );
    assert_eq!(report["steeredRunsSettled"], 1);

    assert_eq!(
        report["cleared"],
        json!({"steering": [], "followUp": ["never sent"]})
    );
    assert_eq!(
        report["abortSettled"],
        json!({"type": "agent_settled", "aborted": true})
    );
    assert_eq!(report["abortedStop"], "aborted");
    assert_eq!(report["idleAfterAbort"], true);
    let source = std::fs::read_to_string(dir.path().join("src/greeting.rs")).unwrap();
    assert!(source.contains("\"Hello\""));
}

#[test]
fn a_retried_request_reports_auto_retry_start_and_end() {
    let server = demo_mock();
    server.push_fault(Fault::next(FaultKind::Overloaded));
    let dir = project();
    let mut rpc = Rpc::start(dir.path(), &server, &["--no-session"]);
    let events = rpc.prompt_and_wait("fix the greeting");
    let start = events
        .iter()
        .position(|e| e["type"] == "auto_retry_start")
        .expect("a retry is reported");
    assert_eq!(events[start]["attempt"], 1);
    assert_eq!(events[start]["maxAttempts"], 3);
    assert!(events[start]["delayMs"].is_u64());
    assert!(!events[start]["errorMessage"].as_str().unwrap().is_empty());
    let end = events
        .iter()
        .position(|e| e["type"] == "auto_retry_end")
        .unwrap();
    assert!(end > start);
    assert_eq!(
        events[end],
        json!({"type": "auto_retry_end", "success": true, "attempt": 1})
    );
    // The system snapshot, the prompt, four answers and three tool results.
    assert_eq!(
        events.last().unwrap()["messages"].as_array().unwrap().len(),
        9
    );
    rpc.close();
}

#[test]
fn settings_commands_change_what_get_state_reports() {
    let server = demo_mock();
    let dir = project();
    let mut rpc = Rpc::start(dir.path(), &server, &[]);
    let state = rpc.ok(json!({"type": "get_state"}));
    assert_eq!(state["autoCompactionEnabled"], true);
    rpc.ok(json!({"type": "set_auto_compaction", "enabled": false}));
    let state = rpc.ok(json!({"type": "get_state"}));
    assert_eq!(state["autoCompactionEnabled"], false);

    // Sonnet 4.5 reasons: medium → high → off → minimal.
    let level = rpc.ok(json!({"type": "cycle_thinking_level"}));
    assert_eq!(level, json!({"level": "high"}));
    let level = rpc.ok(json!({"type": "cycle_thinking_level"}));
    assert_eq!(level, json!({"level": "off"}));
    let state = rpc.ok(json!({"type": "get_state"}));
    assert_eq!(state["thinkingLevel"], "off");

    let cycled = rpc.ok(json!({"type": "cycle_model"}));
    assert_eq!(cycled["isScoped"], false);
    assert_ne!(cycled["model"]["id"], "claude-sonnet-4-5");
    let state = rpc.ok(json!({"type": "get_state"}));
    assert_eq!(state["model"], cycled["model"]);

    // The session records each change, as Pi's does.
    let file = std::fs::read_to_string(state["sessionFile"].as_str().unwrap()).unwrap();
    assert!(file.contains("\"thinkingLevel\":\"off\""));
    assert!(file.contains(&format!("\"modelId\":{}", cycled["model"]["id"])));

    // clone: a new file holding the current branch.
    rpc.prompt_and_wait("fix the greeting");
    let before = rpc.ok(json!({"type": "get_state"}));
    assert_eq!(
        rpc.ok(json!({"type": "clone"})),
        json!({"cancelled": false})
    );
    let after = rpc.ok(json!({"type": "get_state"}));
    assert_ne!(after["sessionFile"], before["sessionFile"]);
    assert_eq!(after["messageCount"], before["messageCount"]);
    rpc.close();
}

#[test]
fn with_auto_retry_off_a_failed_request_ends_the_run_with_an_error_message() {
    let server = demo_mock();
    server.push_fault(Fault::next(FaultKind::Overloaded));
    let dir = project();
    let mut rpc = Rpc::start(dir.path(), &server, &["--no-session"]);
    rpc.ok(json!({"type": "set_auto_retry", "enabled": false}));
    let events = rpc.prompt_and_wait("fix the greeting");
    assert_eq!(count(&events, "auto_retry_start"), 0);
    let end = events.last().unwrap();
    let last = end["messages"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(last["role"], "assistant");
    assert_eq!(last["stopReason"], "error");
    assert!(!last["errorMessage"].as_str().unwrap().is_empty());
    assert_eq!(server.requests().len(), 1);
    // The next prompt works: the fault was used up.
    rpc.ok(json!({"type": "set_auto_retry", "enabled": true}));
    let events = rpc.prompt_and_wait("fix the greeting");
    assert_eq!(count(&events, "tool_execution_end"), 3);
    rpc.close();
}

#[test]
fn skills_are_listed_as_commands_and_expanded_in_prompts() {
    let server = demo_mock();
    let dir = project();
    let skill = dir.path().join(".strata/skills/greet");
    std::fs::create_dir_all(&skill).unwrap();
    std::fs::write(
        skill.join("SKILL.md"),
        "---\nname: greet\ndescription: Greets warmly\n---\nAlways greet by name.\n",
    )
    .unwrap();
    // A project's skills are offered once the user trusts the project.
    let mut rpc = Rpc::start(dir.path(), &server, &["--no-session"]);
    let commands = rpc.ok(json!({"type": "get_commands"}));
    let names: Vec<&Value> = commands["commands"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| &c["name"])
        .collect();
    assert!(
        !names.contains(&&json!("skill:greet")),
        "untrusted: {names:?}"
    );
    rpc.close();
    let mut rpc = Rpc::start(dir.path(), &server, &["--no-session", "--trust"]);
    let commands = rpc.ok(json!({"type": "get_commands"}));
    let listed = &commands["commands"][0];
    assert_eq!(listed["name"], "skill:greet");
    assert_eq!(listed["description"], "Greets warmly");
    assert_eq!(listed["source"], "skill");
    rpc.prompt_and_wait("/skill:greet fix the greeting");
    let first = server.requests()[0].body.as_ref().unwrap().to_string();
    assert!(first.contains("<skill name=\\\"greet\\\""), "{first}");
    assert!(first.contains("Always greet by name.\\n</skill>\\n\\nfix the greeting"));
    rpc.close();
}

#[test]
fn automatic_compaction_during_a_run_is_reported_with_its_result() {
    let long = "The parser handles nested expressions and reports errors with spans. ".repeat(60);
    let scenario = Scenario::from_toml(
        &format!(
            "name = \"long\"\nplayback = \"sequence\"\n[[turn]]\ntext = \"{long}\"\n[[turn]]\ntext = \"Short.\"\n"
        ),
        "long.toml",
    )
    .unwrap();
    let server = mock_with(scenario);
    let dir = project();
    trusted_project_config(
        dir.path(),
        "[compaction]\nkeep_recent_tokens = 1\ntrigger_percent = 0.2\n",
    );
    let mut rpc = Rpc::start(dir.path(), &server, &["--no-session"]);
    let first = rpc.prompt_and_wait("write a parser");
    assert_eq!(count(&first, "compaction_start"), 0, "{first:?}");
    let events = rpc.prompt_and_wait("and now?");
    let start = events
        .iter()
        .position(|e| e["type"] == "compaction_start")
        .expect("the threshold compaction is reported");
    assert_eq!(events[start]["reason"], "threshold");
    let end = &events[start + 1];
    assert_eq!(end["type"], "compaction_end", "{end}");
    assert_eq!(end["reason"], "threshold", "{end}");
    assert_eq!(end["aborted"], false);
    assert_eq!(end["willRetry"], false);
    assert!(end["result"].is_object(), "{end}");
    let summary = end["result"]["summary"].as_str().unwrap();
    assert!(!summary.is_empty(), "{end}");
    assert!(end["result"]["tokensBefore"].as_u64().unwrap() > 0);
    assert!(end["result"]["firstKeptEntryId"].is_string());
    assert_eq!(events.last().unwrap()["type"], "agent_end");
    // The context the rest of the run used starts with the summary reported.
    let messages = rpc.ok(json!({"type": "get_messages"}));
    assert_eq!(messages["messages"][0]["role"], "compactionSummary");
    assert_eq!(messages["messages"][0]["summary"], summary);
    rpc.close();
}

#[test]
fn idle_rpc_session_keeps_its_cache_warm_with_one_token_pings() {
    let scenario = Scenario::from_toml(
        "[[turn]]\ntext = \"First answer.\"\n[[turn]]\ntext = \"Second answer.\"\n",
        "keep-warm",
    )
    .unwrap();
    let server = mock_with(scenario);
    let dir = project();
    // A ping is due 1 s after the last request (5-minute lifetime, 299 s margin), at most two.
    trusted_project_config(
        dir.path(),
        "[cache]\nkeep_warm_margin_secs = 299\nkeep_warm_max_pings = 2\n",
    );
    let mut rpc = Rpc::start(dir.path(), &server, &[]);
    // Sonnet 4.5 thinks with a budget, which a one-token cap would change (and with it the
    // cached messages): no pings while thinking is on.
    rpc.ok(json!({"type": "set_thinking_level", "level": "off"}));
    // Long enough to pass the model's 1,024-token cache minimum.
    let long = "Review the parser and list every odd corner case in it. ".repeat(120);
    rpc.prompt_and_wait(&long);
    let deadline = Instant::now() + WAIT;
    while server.requests().len() < 3 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(1500));
    let records = server.requests();
    assert_eq!(records.len(), 3, "two pings, then the limit");
    let first = records[0].cache.unwrap();
    for ping in &records[1..] {
        let body = ping.body.as_ref().unwrap();
        // Anthropic rows warm with `max_tokens: 0` (no output at all).
        assert_eq!(body["max_tokens"], json!(0));
        assert_eq!(
            body["messages"],
            records[0].body.as_ref().unwrap()["messages"]
        );
        assert_eq!(ping.cache.as_ref().unwrap().cache_read, first.input_tokens);
    }
    // Each stored ping is announced as Pi 1.6's cache warmer announces it.
    for _ in 0..2 {
        let appended = rpc.until(|e| e["type"] == "entry_appended");
        let entry = &appended.last().unwrap()["entry"];
        assert_eq!(entry["type"], "usage", "{entry}");
        assert_eq!(entry["kind"], "cache_warm", "{entry}");
        assert!(entry["id"].is_string(), "{entry}");
    }
    // The pings left the script alone and are billed in the session's stats.
    let events = rpc.prompt_and_wait("and now?");
    let end = events.last().unwrap();
    let last = end["messages"].as_array().unwrap().last().unwrap();
    assert_eq!(last["content"][0]["text"], "Second answer.", "{last}");
    let stats = rpc.ok(json!({"type": "get_session_stats"}));
    let file = stats["sessionFile"].as_str().unwrap().to_owned();
    rpc.close();
    let pings = std::fs::read_to_string(&file)
        .unwrap()
        .lines()
        .filter(|line| line.contains("\"kind\":\"cache_warm\""))
        .count();
    assert_eq!(pings, 2, "{file}");
}

#[test]
fn get_extensions_and_get_hooks_list_what_is_loaded_with_source_status_and_slots() {
    let server = mock_with(Scenario::from_toml("[[turn]]\ntext = \"ok\"\n", "ext").unwrap());
    let dir = project();
    let ext = crate::support::workspace().join("crates/strata-extensions/tests/ext.py");
    trusted_project_config(
        dir.path(),
        &format!(
            "[extensions.keeper]\ncommand = \"python3\"\nargs = [{:?}, \"claim:compaction\", \"keeper\"]\n[extensions.gone]\ncommand = \"/nonexistent/strata-ext\"\n",
            ext.display().to_string()
        ),
    );
    std::fs::create_dir_all(dir.path().join(".claude")).unwrap();
    std::fs::write(
        dir.path().join(".claude/settings.json"),
        r#"{"hooks": {"UserPromptSubmit": [{"hooks": [{"command": "echo be brief", "timeout": 7}]}]}}"#,
    )
    .unwrap();
    let mut rpc = Rpc::start(dir.path(), &server, &[]);
    let before = rpc.ok(json!({"type": "get_extensions"}));
    assert_eq!(before["extensions"][0]["status"], "not started", "{before}");
    rpc.prompt_and_wait("hi");
    let data = rpc.ok(json!({"type": "get_extensions"}));
    let extensions = data["extensions"].as_array().unwrap();
    let config = dir.path().join(".strata/config.toml").display().to_string();
    // Name order: gone, keeper.
    assert_eq!(extensions[0]["name"], "gone", "{data}");
    assert_eq!(extensions[0]["status"], "failed");
    assert!(
        extensions[0]["error"]
            .as_str()
            .unwrap()
            .contains("could not start"),
        "{data}"
    );
    assert_eq!(extensions[1]["name"], "keeper");
    assert_eq!(extensions[1]["status"], "running");
    assert_eq!(extensions[1]["source"], json!(config));
    assert_eq!(extensions[1]["slots"], json!(["compaction"]));
    assert_eq!(extensions[1]["tools"], json!(["shout"]));
    let hooks = rpc.ok(json!({"type": "get_hooks"}));
    let rows = hooks["hooks"].as_array().unwrap();
    let settings = dir
        .path()
        .join(".claude/settings.json")
        .display()
        .to_string();
    assert!(
        rows.iter().any(|h| h["event"] == "UserPromptSubmit"
            && h["command"] == "echo be brief"
            && h["source"] == json!(settings)
            && h["scope"] == "project"
            && h["timeoutSecs"] == json!(7.0)
            // "be brief": 8 characters of context, 2 tokens of cache writes.
            && h["cacheWriteTokens"] == json!(2)),
        "{hooks}"
    );
    assert!(
        rows.iter()
            .any(|h| h["event"] == "PreToolUse" && h["command"] == "extension keeper"),
        "{hooks}"
    );
    rpc.close();
}

#[test]
fn an_extensions_select_input_confirm_notify_and_status_are_pis_extension_ui_requests() {
    let server = mock_with(
        Scenario::from_toml(
            r#"
[[turn]]
[[turn.tool_call]]
tool = "bash"
args = { command = "echo pick" }
[[turn]]
[[turn.tool_call]]
tool = "bash"
args = { command = "rm -rf gone-dir" }
[[turn]]
text = "Done."
"#,
            "ext-ui",
        )
        .unwrap(),
    );
    let dir = project();
    crate::support::asker_extension(dir.path());
    let mut rpc = Rpc::start(dir.path(), &server, &[]);
    rpc.ok(json!({"type": "prompt", "message": "go"}));
    let request = |rpc: &mut Rpc, method: &str| {
        let events = rpc.until(|e| e["type"] == "extension_ui_request" && e["method"] == method);
        events.last().unwrap().clone()
    };
    let select = request(&mut rpc, "select");
    assert_eq!(select["title"], "Which one?", "{select}");
    assert_eq!(select["options"], json!(["alpha", "beta"]));
    rpc.write(&json!({"type": "extension_ui_response", "id": select["id"], "value": "beta"}));
    let input = request(&mut rpc, "input");
    assert_eq!(input["placeholder"], "a reason", "{input}");
    rpc.write(&json!({"type": "extension_ui_response", "id": input["id"], "value": "because"}));
    let notify = request(&mut rpc, "notify");
    assert_eq!(notify["message"], "picked 1", "{notify}");
    assert_eq!(notify["notifyType"], "info");
    let confirm = request(&mut rpc, "confirm");
    assert_eq!(confirm["title"], "Destructive command", "{confirm}");
    assert_eq!(confirm["message"], "rm -rf gone-dir");
    rpc.write(&json!({"type": "extension_ui_response", "id": confirm["id"], "confirmed": true}));
    let status = request(&mut rpc, "setStatus");
    assert_eq!(status["statusKey"], "asker", "{status}");
    assert_eq!(status["statusText"], "guard asked");
    rpc.until(|e| e["type"] == "agent_end");
    let requests = server.requests();
    // The answers reached the extension: its context names them; the confirmed call ran.
    let second = requests[1].body.as_ref().unwrap().to_string();
    assert!(second.contains("picked=1 text=because"), "{second}");
    let third = requests[2].body.as_ref().unwrap().to_string();
    assert!(!third.contains("the user said no"), "{third}");
    rpc.close();
}
