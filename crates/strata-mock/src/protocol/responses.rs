//! OpenAI Responses: `POST /v1/responses`, streamed as `event:` + `data:` SSE from
//! `response.created` to `response.completed` (or `response.incomplete` when the output cap
//! cut the reply).

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use bytes::Bytes;
use serde_json::{Value, json};

use super::chat::openai_error;
use super::{
    ErrorKind, ErrorResponse, Outcome, ParseContext, Parsed, Wire, chunks, sse_event, text_of,
};
use crate::config::Protocol;
use crate::deferred;
use crate::prompt::{Chapter, PromptBuilder};
use crate::scenario::{Conversation, DeclaredTool, Stop};
use crate::tool_search::{self, Flavor, ToolSearch, Unloaded};

/// The Responses protocol.
pub struct Responses;

fn is_assistant_item(item: &Value) -> bool {
    item.get("role").and_then(Value::as_str) == Some("assistant")
        || matches!(
            item.get("type").and_then(Value::as_str),
            Some(
                "function_call"
                    | "reasoning"
                    | "custom_tool_call"
                    | "tool_search_call"
                    | "tool_search_output"
            )
        )
}

/// The opaque `encrypted_content` of a reasoning item summarised as `summary`: base64, like
/// the API's, and checked when replayed.
pub fn encrypted_reasoning(summary: &str) -> String {
    BASE64.encode(format!(
        "mock-reasoning:{}",
        crate::anthropic_signature(summary)
    ))
}

/// The summary text of a reasoning item (its first summary part).
fn summary_text(item: &Value) -> &str {
    item["summary"][0]["text"].as_str().unwrap_or_default()
}

/// Replayed reasoning items: with `store: false` one can only come back with its
/// `encrypted_content`, and the mock's own must be unchanged.
fn check_reasoning(items: &[Value], store: bool) -> Result<(), String> {
    for item in items {
        if item.get("type").and_then(Value::as_str) != Some("reasoning") {
            continue;
        }
        let id = item.get("id").and_then(Value::as_str).unwrap_or_default();
        match item.get("encrypted_content").and_then(Value::as_str) {
            None if !store => {
                return Err(format!(
                    "Item with id '{id}' not found. Items are not persisted when `store` is set to false. Try again with `store` set to true, or remove this item from your input."
                ));
            }
            Some(content)
                if BASE64
                    .decode(content)
                    .is_ok_and(|raw| raw.starts_with(b"mock-reasoning:"))
                    && content != encrypted_reasoning(summary_text(item)) =>
            {
                return Err(format!(
                    "The encrypted content for item {id} could not be verified."
                ));
            }
            _ => {}
        }
    }
    Ok(())
}

/// The hosted tool search a request offers: a `tool_search` tool the server executes, and the
/// deferred functions no `tool_search_output` item of the input loaded.
fn hosted_search(tools: &[Value], items: &[Value]) -> Option<ToolSearch> {
    let hosted = tools.iter().any(|t| {
        t.get("type").and_then(Value::as_str) == Some("tool_search")
            && t.get("execution").and_then(Value::as_str) != Some("client")
    });
    if !hosted {
        return None;
    }
    let loaded: Vec<&str> = items
        .iter()
        .filter(|i| i.get("type").and_then(Value::as_str) == Some("tool_search_output"))
        .filter_map(|i| i.get("tools").and_then(Value::as_array))
        .flatten()
        .filter_map(|t| t.get("name").and_then(Value::as_str))
        .collect();
    let unloaded = tools
        .iter()
        .filter(|t| deferred::is_deferred(t))
        .filter_map(|t| {
            let name = t.get("name").and_then(Value::as_str)?;
            (!loaded.contains(&name)).then(|| Unloaded {
                name: name.to_owned(),
                definition: t.clone(),
                billed: t.to_string(),
            })
        })
        .collect();
    Some(ToolSearch {
        flavor: Flavor::Responses,
        tool: "tool_search".into(),
        unloaded,
    })
}

/// The output items of a reply, in order.
pub fn output_items(parsed: &Parsed, outcome: &Outcome<'_>) -> Vec<Value> {
    let reply = outcome.reply;
    let mut items = Vec::new();
    if let Some(thinking) = &reply.thinking {
        let mut item = json!({
            "type": "reasoning", "id": format!("rs_{}", outcome.id),
            "summary": [{"type": "summary_text", "text": thinking}],
        });
        if parsed.encrypted_reasoning {
            item["encrypted_content"] = json!(encrypted_reasoning(thinking));
        }
        items.push(item);
    }
    if let Some(text) = &reply.text {
        // A message the output cap cut off is left incomplete, as the response is.
        let status = if reply.stop == Stop::MaxTokens && reply.tool_calls.is_empty() {
            "incomplete"
        } else {
            "completed"
        };
        items.push(json!({
            "type": "message", "id": format!("msg_{}", outcome.id), "status": status, "role": "assistant",
            "content": [{"type": "output_text", "text": text, "annotations": [], "logprobs": []}],
        }));
    }
    let found = parsed
        .tool_search
        .as_ref()
        .map(|search| search.found(reply))
        .unwrap_or_default();
    for call in &reply.tool_calls {
        // A deferred function not loaded yet is found first, in the same response.
        if let Some((_, tool)) = found.iter().find(|(c, _)| c.id == call.id) {
            items.extend(tool_search::responses_items(call, tool));
        }
        items.push(json!({
            "type": "function_call", "id": format!("fc_{}", call.id), "call_id": format!("call_{}", call.id),
            "name": call.name, "arguments": call.arguments_json(), "status": "completed",
        }));
    }
    items
}

fn usage(outcome: &Outcome<'_>) -> Value {
    let cache = outcome.cache;
    json!({
        "input_tokens": cache.input_tokens,
        "input_tokens_details": {"cached_tokens": cache.cache_read, "cache_write_tokens": cache.cache_write},
        "output_tokens": outcome.output_tokens,
        "output_tokens_details": {"reasoning_tokens": outcome.reasoning_tokens},
        "total_tokens": cache.input_tokens + outcome.output_tokens,
    })
}

/// The terminal status of a reply: `completed`, or `incomplete` when the output cap cut it.
fn final_status(outcome: &Outcome<'_>) -> &'static str {
    match outcome.reply.stop {
        Stop::MaxTokens => "incomplete",
        Stop::EndTurn | Stop::ToolUse => "completed",
    }
}

fn response(
    parsed: &Parsed,
    outcome: &Outcome<'_>,
    status: &str,
    output: Vec<Value>,
    usage: Value,
) -> Value {
    let incomplete_details = if status == "incomplete" {
        json!({"reason": "max_output_tokens"})
    } else {
        Value::Null
    };
    let mut response = json!({
        "id": format!("resp_{}", outcome.id),
        "object": "response",
        "created_at": outcome.created,
        "status": status,
        "error": null,
        "incomplete_details": incomplete_details,
        "model": parsed.model,
        "output": output,
        "parallel_tool_calls": true,
        "prompt_cache_key": parsed.cache_key,
        "store": parsed.store,
        "text": {"format": {"type": "text"}},
        "tool_choice": "auto",
        "tools": parsed.tools,
        "truncation": "disabled",
        "usage": usage,
        "metadata": {},
    });
    if let Some(diagnosis) = &outcome.diagnosis {
        response["prompt_cache_diagnostics"] = diagnosis.openai();
    }
    response
}

/// `additional_tools` input items (`{type, role: "developer", tools}`, the documented JSON;
/// Pi 1.x `supportsAdditionalTools`): tools declared at a point in the input, offered to the
/// model from there on while the `tools` array, the head of the prompt, stays as it was. A
/// name declared twice is refused, as a duplicate in `tools` is.
fn additional_tools(
    items: &[Value],
    declared: &[Value],
    conversation: &mut Conversation,
) -> Result<(), String> {
    let mut names: Vec<&str> = declared
        .iter()
        .filter_map(|t| t.get("name").and_then(Value::as_str))
        .collect();
    for (i, item) in items.iter().enumerate() {
        if item.get("type").and_then(Value::as_str) != Some("additional_tools") {
            continue;
        }
        match item.get("role").and_then(Value::as_str) {
            None | Some("developer") => {}
            Some(other) => {
                return Err(format!(
                    "Invalid value: '{other}'. 'input[{i}].role' must be 'developer'."
                ));
            }
        }
        let tools = item
            .get("tools")
            .and_then(Value::as_array)
            .ok_or_else(|| format!("Missing required parameter: 'input[{i}].tools'."))?;
        for (j, tool) in tools.iter().enumerate() {
            if tool.get("type").and_then(Value::as_str).is_none() {
                return Err(format!(
                    "Missing required parameter: 'input[{i}].tools[{j}].type'."
                ));
            }
            let Some(name) = tool.get("name").and_then(Value::as_str) else {
                continue;
            };
            if names.contains(&name) {
                return Err(format!(
                    "Duplicate tool name '{name}' in 'input[{i}].tools[{j}]': it is already declared."
                ));
            }
            names.push(name);
            conversation
                .tools
                .push(DeclaredTool::new(name, tool.get("parameters")));
        }
    }
    Ok(())
}

/// `prompt_cache_options.comparison_response_id` (openai-python 3.63.0 `PromptCacheOptions`).
fn comparison(body: &Value) -> Result<Option<String>, String> {
    let Some(options) = body.get("prompt_cache_options").filter(|o| !o.is_null()) else {
        return Ok(None);
    };
    if !options.is_object() {
        return Err(format!(
            "Invalid type for 'prompt_cache_options': expected an object, but got {} instead.",
            super::json_type(options)
        ));
    }
    match options.get("comparison_response_id") {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(id)) => Ok(Some(id.clone())),
        Some(other) => Err(format!(
            "Invalid type for 'prompt_cache_options.comparison_response_id': expected a string, but got {} instead.",
            super::json_type(other)
        )),
    }
}

impl Wire for Responses {
    const PROTOCOL: Protocol = Protocol::Responses;

    fn parse(
        body: &Value,
        _path_model: Option<&str>,
        ctx: &ParseContext<'_>,
    ) -> Result<Parsed, String> {
        let model = body
            .get("model")
            .and_then(Value::as_str)
            .ok_or("Missing required parameter: 'model'.")?
            .to_owned();
        // What a previous response holds is the server's own: only the items this request
        // brings are checked for replayable reasoning (below).
        let mut items: Vec<Value> = match body.get("previous_response_id").and_then(Value::as_str) {
            Some(id) => (ctx.previous)(id)
                .ok_or_else(|| format!("Previous response with id '{id}' not found."))?,
            None => Vec::new(),
        };
        match body.get("input") {
            Some(Value::String(text)) => items.push(json!({"role": "user", "content": text})),
            Some(Value::Array(list)) => {
                if let Some((i, item)) = list.iter().enumerate().find(|(_, v)| !v.is_object()) {
                    return Err(format!(
                        "Invalid type for 'input[{i}]': expected an object, but got {} instead.",
                        super::json_type(item)
                    ));
                }
                let store = body.get("store").and_then(Value::as_bool).unwrap_or(true);
                check_reasoning(list, store)?;
                items.extend(list.iter().cloned())
            }
            None if !items.is_empty() => {}
            None => return Err("Missing required parameter: 'input'.".into()),
            Some(other) => {
                return Err(format!(
                    "Invalid type for 'input': expected one of a string or array of input items, but got {} instead.",
                    super::json_type(other)
                ));
            }
        }
        let store = body.get("store").and_then(Value::as_bool).unwrap_or(true);
        let mut builder = PromptBuilder::new(ctx.tokenizer);
        let mut conversation = Conversation::default();
        let mut declared = Vec::new();
        if let Some(tools) = body.get("tools") {
            let tools = tools
                .as_array()
                .ok_or("Invalid type for 'tools': expected an array.")?;
            declared.clone_from(tools);
            for tool in tools {
                if let Some(name) = tool.get("name").and_then(Value::as_str) {
                    conversation
                        .tools
                        .push(DeclaredTool::new(name, tool.get("parameters")));
                }
                // A deferred function shows only its name and description until a
                // tool_search_output item loads it (crate::deferred).
                let billed = if deferred::is_deferred(tool) {
                    deferred::searchable_part(tool)
                } else {
                    tool.clone()
                };
                builder.push(Chapter::Tools, "tool", &billed.to_string(), None);
            }
        }
        if let Some(instructions) = body.get("instructions").and_then(Value::as_str) {
            builder.push(Chapter::System, "instructions", instructions, None);
        }
        let mut in_system = true;
        let mut in_assistant = false;
        for item in &items {
            let role = item.get("role").and_then(Value::as_str);
            in_system &= matches!(role, Some("system" | "developer"));
            let assistant = is_assistant_item(item);
            if assistant && !in_assistant {
                conversation.assistant_turns += 1;
            }
            in_assistant = assistant;
            let chapter = if in_system {
                Chapter::System
            } else {
                Chapter::Messages
            };
            builder.push(chapter, role.unwrap_or("item"), &item.to_string(), None);
        }
        conversation.last_user_text = items
            .last()
            .filter(|i| i.get("role").and_then(Value::as_str) == Some("user"))
            .and_then(|i| text_of(i.get("content"), &["input_text", "text"]));
        conversation.user_texts = items
            .iter()
            .filter(|i| i.get("role").and_then(Value::as_str) == Some("user"))
            .filter_map(|i| text_of(i.get("content"), &["input_text", "text"]))
            .collect();
        conversation.system_text = body
            .get("instructions")
            .and_then(Value::as_str)
            .map(str::to_owned)
            .into_iter()
            .chain(
                items
                    .iter()
                    .take_while(|i| {
                        matches!(
                            i.get("role").and_then(Value::as_str),
                            Some("system" | "developer")
                        )
                    })
                    .filter_map(|i| text_of(i.get("content"), &["input_text", "text"])),
            )
            .collect::<Vec<_>>()
            .join("\n");
        additional_tools(&items, &declared, &mut conversation)?;
        let tool_search = hosted_search(&declared, &items);
        let mut features: Vec<(&'static str, String)> = Vec::new();
        if body
            .pointer("/prompt_cache_options/comparison_response_id")
            .is_some_and(|v| !v.is_null())
        {
            features.push((
                "comparison-response-id",
                "Unknown parameter: 'prompt_cache_options.comparison_response_id'.".into(),
            ));
        }
        if body.pointer("/prompt_cache_options/prewarm").is_some() {
            features.push((
                "prewarm",
                "Unknown parameter: 'prompt_cache_options.prewarm'.".into(),
            ));
        }
        if let Some(i) = items.iter().position(|item| {
            item.get("type").and_then(Value::as_str) == Some("configuration_update")
        }) {
            features.push((
                "configuration-update",
                format!("Invalid value: 'configuration_update'. 'input[{i}].type' does not accept it for this model."),
            ));
        }
        if let Some(i) = items
            .iter()
            .position(|item| item.get("type").and_then(Value::as_str) == Some("additional_tools"))
        {
            features.push((
                "additional-tools",
                format!("Invalid value: 'additional_tools'. 'input[{i}].type' does not accept it for this model."),
            ));
        }
        Ok(Parsed {
            features,
            model,
            stream: body.get("stream").and_then(Value::as_bool).unwrap_or(false),
            prompt: builder.finish(),
            tool_search,
            conversation,
            cache_key: body
                .get("prompt_cache_key")
                .and_then(Value::as_str)
                .map(str::to_owned),
            store,
            items,
            tools: declared,
            encrypted_reasoning: body.get("include").and_then(Value::as_array).is_some_and(
                |include| {
                    include
                        .iter()
                        .any(|v| v.as_str() == Some("reasoning.encrypted_content"))
                },
            ),
            max_output_tokens: super::token_cap(
                body.get("max_output_tokens"),
                "max_output_tokens",
            )?,
            retention: super::retention(body)?,
            diagnose: comparison(body)?.map(Some),
            // `reasoning_effort_changed` is one of OpenAI's cache-miss reasons
            // (openai-python 3.63.0 `PromptCacheDiagnosticsCacheMiss`): the effort is part of
            // the cache's identity.
            params: body
                .pointer("/reasoning/effort")
                .and_then(Value::as_str)
                .map_or(0, crate::tokens::hash_str),
            prewarm: body
                .pointer("/prompt_cache_options/prewarm")
                .and_then(Value::as_bool)
                .unwrap_or(false),
            ..Parsed::default()
        })
    }

    fn respond(parsed: &Parsed, outcome: &Outcome<'_>) -> Value {
        response(
            parsed,
            outcome,
            final_status(outcome),
            output_items(parsed, outcome),
            usage(outcome),
        )
    }

    fn stream(parsed: &Parsed, outcome: &Outcome<'_>) -> Vec<Bytes> {
        let mut sequence = 0u64;
        let mut events = Vec::new();
        let mut emit = |name: &str, mut data: Value| {
            data["type"] = json!(name);
            data["sequence_number"] = json!(sequence);
            sequence += 1;
            events.push(sse_event(name, &data));
        };
        let pending = response(parsed, outcome, "in_progress", Vec::new(), Value::Null);
        emit("response.created", json!({"response": pending}));
        emit("response.in_progress", json!({"response": pending}));
        let items = output_items(parsed, outcome);
        for (output_index, item) in items.iter().enumerate() {
            let item_id = item["id"].clone();
            match item["type"].as_str() {
                Some("reasoning") => {
                    let text = item["summary"][0]["text"].as_str().unwrap_or_default();
                    emit(
                        "response.output_item.added",
                        json!({"output_index": output_index, "item": {"type": "reasoning", "id": item_id, "summary": []}}),
                    );
                    emit(
                        "response.reasoning_summary_part.added",
                        json!({"item_id": item_id, "output_index": output_index, "summary_index": 0, "part": {"type": "summary_text", "text": ""}}),
                    );
                    for piece in chunks(text, outcome.delta_chars) {
                        emit(
                            "response.reasoning_summary_text.delta",
                            json!({"item_id": item_id, "output_index": output_index, "summary_index": 0, "delta": piece}),
                        );
                    }
                    emit(
                        "response.reasoning_summary_text.done",
                        json!({"item_id": item_id, "output_index": output_index, "summary_index": 0, "text": text}),
                    );
                    emit(
                        "response.reasoning_summary_part.done",
                        json!({"item_id": item_id, "output_index": output_index, "summary_index": 0, "part": {"type": "summary_text", "text": text}}),
                    );
                }
                Some("message") => {
                    let text = item["content"][0]["text"].as_str().unwrap_or_default();
                    emit(
                        "response.output_item.added",
                        json!({"output_index": output_index, "item": {"type": "message", "id": item_id, "status": "in_progress", "role": "assistant", "content": []}}),
                    );
                    emit(
                        "response.content_part.added",
                        json!({"item_id": item_id, "output_index": output_index, "content_index": 0, "part": {"type": "output_text", "text": "", "annotations": []}}),
                    );
                    for piece in chunks(text, outcome.delta_chars) {
                        emit(
                            "response.output_text.delta",
                            json!({"item_id": item_id, "output_index": output_index, "content_index": 0, "delta": piece, "logprobs": []}),
                        );
                    }
                    emit(
                        "response.output_text.done",
                        json!({"item_id": item_id, "output_index": output_index, "content_index": 0, "text": text, "logprobs": []}),
                    );
                    emit(
                        "response.content_part.done",
                        json!({"item_id": item_id, "output_index": output_index, "content_index": 0, "part": item["content"][0]}),
                    );
                }
                Some("tool_search_call" | "tool_search_output") => {
                    // Run by the server: they come whole.
                    emit(
                        "response.output_item.added",
                        json!({"output_index": output_index, "item": item}),
                    );
                }
                _ => {
                    let arguments = item["arguments"].as_str().unwrap_or_default();
                    let mut added = item.clone();
                    added["arguments"] = json!("");
                    added["status"] = json!("in_progress");
                    emit(
                        "response.output_item.added",
                        json!({"output_index": output_index, "item": added}),
                    );
                    for piece in chunks(arguments, outcome.delta_chars) {
                        emit(
                            "response.function_call_arguments.delta",
                            json!({"item_id": item_id, "output_index": output_index, "delta": piece}),
                        );
                    }
                    emit(
                        "response.function_call_arguments.done",
                        json!({"item_id": item_id, "output_index": output_index, "arguments": arguments}),
                    );
                }
            }
            emit(
                "response.output_item.done",
                json!({"output_index": output_index, "item": item}),
            );
        }
        // A cut reply ends with `response.incomplete` instead of `response.completed`.
        let status = final_status(outcome);
        emit(
            &format!("response.{status}"),
            json!({"response": response(parsed, outcome, status, items, usage(outcome))}),
        );
        events
    }

    fn error(kind: &ErrorKind) -> ErrorResponse {
        openai_error(
            kind,
            "Your input exceeds the context window of this model. Please adjust your input and try again.",
            "input",
        )
    }

    fn stream_error(index: usize) -> Bytes {
        sse_event(
            "error",
            &json!({
                "type": "error", "code": "server_error",
                "message": "The server had an error while processing your request. Sorry about that!",
                "param": null, "sequence_number": index
            }),
        )
    }

    fn malformed() -> Bytes {
        Bytes::from_static(b"event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"delta\":\n\n")
    }
}
