//! A fold cut short, as the providers' wire formats carry it: the fold's lines cut at every
//! byte, opened as a reader and as a resumed writer, render Anthropic Messages and OpenAI
//! Responses bodies whose tool calls and results pair up. The distinct bodies are kept in
//! `conformance/fixtures/fold-cut-bodies.json` for the vendors' SDKs to judge
//! (`conformance/test_request_bodies.py`); the test fails when the file and the bodies built
//! now differ, and `STRATA_BLESS=1` rewrites it.

use std::path::Path;

use serde_json::{Value, json};
use strata_context::{Context, ModelRef, RenderOptions, render_with};
use strata_provider::transport::{HttpClient, TransportConfig};
use strata_provider::{ApiKey, Catalog, StreamOptions};
use strata_runtime::{AdapterOptions, BedrockAuth};
use strata_session::{AgentMessage, EntryId, PlannedEdit, Replacement, Session, WriteOptions};

fn message(value: Value) -> AgentMessage {
    serde_json::from_value(value).unwrap()
}

fn user(text: &str) -> AgentMessage {
    message(json!({"role": "user", "content": [{"type": "text", "text": text}], "timestamp": 1}))
}

fn assistant(content: Value, stop: &str) -> AgentMessage {
    message(json!({"role": "assistant", "content": content,
        "api": "anthropic-messages", "provider": "anthropic", "model": "claude-sonnet-4-5",
        "usage": {"input": 10, "output": 5, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 15,
                  "cost": {"input": 0.0, "output": 0.0, "cacheRead": 0.0, "cacheWrite": 0.0, "total": 0.0}},
        "stopReason": stop, "timestamp": 2}))
}

fn call(id: &str, name: &str, args: Value) -> AgentMessage {
    assistant(
        json!([{"type": "toolCall", "id": id, "name": name, "arguments": args}]),
        "toolUse",
    )
}

fn result(id: &str, name: &str, text: &str) -> AgentMessage {
    message(
        json!({"role": "toolResult", "toolCallId": id, "toolName": name,
        "content": [{"type": "text", "text": text}], "isError": false, "timestamp": 3}),
    )
}

/// Task one (two calls, their results, the answer), task two's prompt, then the fold of task
/// one as the agent writes it (`strata_agent`'s `mask_if_due`): its calls and results left
/// out and its answer replaced by a note, one edit group. Returns the file's bytes.
fn folded_session(path: &Path) -> Vec<u8> {
    let mut session = Session::create(path, "/x", WriteOptions::default()).unwrap();
    let mut append = |m: AgentMessage| -> EntryId { session.append_message(m).unwrap() };
    append(user("task one: look at a.txt"));
    let omitted = vec![
        append(call("toolu_01", "read", json!({"path": "a.txt"}))),
        append(result(
            "toolu_01",
            "read",
            "version: a-7\nline 0001 of a.txt\n",
        )),
        append(call("toolu_02", "ls", json!({"path": "."}))),
        append(result("toolu_02", "ls", "a.txt\nb.txt\n")),
    ];
    let answer = append(assistant(
        json!([{"type": "text", "text": "Read a."}]),
        "stop",
    ));
    append(user("task two: now b.txt"));
    let mut edits: Vec<PlannedEdit> = omitted
        .into_iter()
        .map(|target_id| PlannedEdit {
            target_id,
            replacement: None,
        })
        .collect();
    edits.push(PlannedEdit {
        target_id: answer,
        replacement: Some(Replacement {
            content: Some(Value::String(
                "[Folded task] read a.txt (version: a-7), listed 2 entries. Answer: Read a.".into(),
            )),
            extra: Default::default(),
        }),
    });
    session.append_edit_group(edits).unwrap();
    drop(session);
    std::fs::read(path).unwrap()
}

/// The byte range of the file's context edits (the fold's lines).
fn fold_range(bytes: &[u8]) -> (usize, usize) {
    let mut offset = 0;
    let mut range: Option<(usize, usize)> = None;
    for line in bytes.split_inclusive(|&b| b == b'\n') {
        if line.starts_with(br#"{"type":"context_edit""#) {
            let start = range.map_or(offset, |(start, _)| start);
            range = Some((start, offset + line.len()));
        }
        offset += line.len();
    }
    range.unwrap()
}

/// One provider's adapter and what it renders with, built once (a client loads the system's
/// certificates).
struct Wire {
    provider: &'static str,
    model: strata_provider::Model,
    capabilities: strata_provider::Capabilities,
    adapter: std::sync::Arc<dyn strata_provider::Provider>,
}

impl Wire {
    fn new(catalog: &Catalog, provider: &'static str, model_id: &str) -> Self {
        let row = catalog.provider(provider).unwrap();
        let adapter = strata_runtime::adapter_with(
            row,
            row.endpoint(model_id).protocol,
            HttpClient::new(&TransportConfig::default()).unwrap(),
            AdapterOptions {
                bedrock: BedrockAuth::Missing,
                env: None,
            },
        )
        .unwrap();
        Self {
            provider,
            model: catalog.model(provider, model_id).unwrap(),
            capabilities: row.capabilities(model_id),
            adapter,
        }
    }

    /// The body the adapter would send with `context`.
    fn body(&self, context: &Context) -> Value {
        let context = Context {
            model: Some(ModelRef {
                provider: self.provider.into(),
                model_id: self.model.id.clone(),
            }),
            ..context.clone()
        };
        // A fixed cache key: the session's id is random, the fixture must not be.
        let options = RenderOptions::new().cache_key("fold-cuts");
        let request = render_with(&context, &self.capabilities, &options).request;
        let stream = StreamOptions {
            api_key: Some(ApiKey::new("k")),
            ..StreamOptions::default()
        };
        let http = self
            .adapter
            .http_request(&self.model, &request, &stream)
            .unwrap();
        serde_json::from_slice(&http.body).unwrap()
    }
}

/// Anthropic's rule: every `tool_result` answers a `tool_use` of the assistant message just
/// before its user message, and every `tool_use` is answered in the next message.
fn assert_anthropic_paired(body: &Value, what: &str) {
    let messages = body["messages"].as_array().unwrap();
    let blocks = |m: &Value, kind: &str, field: &str| -> Vec<String> {
        m["content"]
            .as_array()
            .map(|blocks| {
                blocks
                    .iter()
                    .filter(|b| b["type"] == kind)
                    .map(|b| b[field].as_str().unwrap().to_owned())
                    .collect()
            })
            .unwrap_or_default()
    };
    for (at, m) in messages.iter().enumerate() {
        let results = blocks(m, "tool_result", "tool_use_id");
        let calls_before = if at == 0 {
            Vec::new()
        } else {
            blocks(&messages[at - 1], "tool_use", "id")
        };
        for id in &results {
            assert!(
                calls_before.contains(id),
                "{what}: tool_result {id} answers no tool_use of the message before"
            );
        }
        let calls = blocks(m, "tool_use", "id");
        if !calls.is_empty() {
            let answered = messages
                .get(at + 1)
                .map(|next| blocks(next, "tool_result", "tool_use_id"))
                .unwrap_or_default();
            for id in &calls {
                assert!(
                    answered.contains(id),
                    "{what}: tool_use {id} is not answered in the next message"
                );
            }
        }
    }
}

/// The Responses rule: every `function_call_output` follows its `function_call`, and every
/// `function_call` has an output.
fn assert_responses_paired(body: &Value, what: &str) {
    let mut open: Vec<&str> = Vec::new();
    let mut answered: Vec<&str> = Vec::new();
    for item in body["input"].as_array().unwrap() {
        match item["type"].as_str() {
            Some("function_call") => open.push(item["call_id"].as_str().unwrap()),
            Some("function_call_output") => {
                let id = item["call_id"].as_str().unwrap();
                assert!(
                    open.contains(&id),
                    "{what}: function_call_output {id} follows no function_call"
                );
                answered.push(id);
            }
            _ => {}
        }
    }
    for id in open {
        assert!(
            answered.contains(&id),
            "{what}: function_call {id} has no output"
        );
    }
}

#[test]
fn a_fold_cut_at_any_byte_resumes_into_bodies_the_vendors_accept() {
    let dir = tempfile::tempdir().unwrap();
    let bytes = folded_session(&dir.path().join("s.jsonl"));
    let (start, end) = fold_range(&bytes);
    assert_eq!(end, bytes.len(), "the fold is the file's tail");
    assert_eq!(
        bytes[start..end].iter().filter(|&&b| b == b'\n').count(),
        5,
        "four calls and results left out, one answer replaced"
    );
    let catalog = Catalog::builtin().unwrap();
    let wires = [
        Wire::new(&catalog, "anthropic", "claude-sonnet-4-5"),
        Wire::new(&catalog, "openai", "gpt-5.2"),
    ];
    // Each distinct body, with the first cut that gave it.
    let mut kept: Vec<(String, String, Value)> = Vec::new();
    for cut_at in start..=end {
        let path = dir.path().join(format!("cut-{cut_at}.jsonl"));
        std::fs::write(&path, &bytes[..cut_at]).unwrap();
        for resumed in [false, true] {
            let opened = if resumed {
                Session::open_writable(&path, WriteOptions::default()).unwrap()
            } else {
                Session::open(&path).unwrap()
            };
            let tree = opened.session.tree();
            let context = strata_context::build(tree, tree.leaf()).unwrap();
            for wire in &wires {
                let provider = wire.provider;
                let what = format!(
                    "{provider}, cut after {} of {} fold bytes{}",
                    cut_at - start,
                    end - start,
                    if resumed { ", resumed" } else { "" }
                );
                let body = wire.body(&context);
                if provider == "anthropic" {
                    assert_anthropic_paired(&body, &what);
                } else {
                    assert_responses_paired(&body, &what);
                }
                if !kept.iter().any(|(_, p, b)| p == provider && *b == body) {
                    kept.push((what, provider.to_owned(), body));
                }
            }
        }
    }
    // The fold whole and the fold not written at all: two bodies per wire, no third.
    assert_eq!(
        kept.len(),
        4,
        "{:?}",
        kept.iter().map(|k| &k.0).collect::<Vec<_>>()
    );

    let entries: Vec<Value> = kept
        .into_iter()
        .map(|(name, provider, body)| json!({"name": name, "provider": provider, "body": body}))
        .collect();
    let text = serde_json::to_string_pretty(&entries).unwrap() + "\n";
    let path = format!(
        "{}/../../conformance/fixtures/fold-cut-bodies.json",
        env!("CARGO_MANIFEST_DIR")
    );
    if std::env::var_os("STRATA_BLESS").is_some() {
        std::fs::write(&path, &text).unwrap();
    }
    let on_file = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        on_file == text,
        "{path} is not what a cut fold renders now; rerun with STRATA_BLESS=1"
    );
}
