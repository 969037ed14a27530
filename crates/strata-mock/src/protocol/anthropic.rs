//! Anthropic Messages: `POST /v1/messages`, streamed as `event:` + `data:` SSE.

use axum::http::{HeaderValue, StatusCode};
use bytes::Bytes;
use serde_json::{Value, json};

use super::{
    ErrorKind, ErrorResponse, Outcome, ParseContext, Parsed, Wire, chunks, error_headers,
    sse_event, text_of,
};
use crate::config::Protocol;
use crate::deferred::{self, DeferredTools};
use crate::prompt::{Chapter, PromptBuilder, Ttl, canonical_without};
use crate::scenario::{Conversation, DeclaredTool, Stop};
use crate::tool_search::{self, Flavor, ToolSearch, Unloaded};

/// The Anthropic Messages protocol.
pub struct Anthropic;

fn ttl_of(value: &Value) -> Option<Ttl> {
    let control = value.get("cache_control")?;
    Some(Ttl::parse(control.get("ttl").and_then(Value::as_str)))
}

/// Checks the fields the API requires of a content block; returns its type.
/// The blocks a mid-conversation `role: "system"` message may hold (anthropic-sdk-python
/// 2.15.0, `BetaSystemMessageParam.content`).
const SYSTEM_MESSAGE_BLOCKS: [&str; 3] = ["text", "tool_addition", "tool_removal"];

/// The efforts `output_config.effort` takes (anthropic-python 2.17.0 `BetaOutputConfigParam`).
const EFFORTS: [&str; 5] = ["low", "medium", "high", "xhigh", "max"];

/// Hash of the request-level parameters that are part of the messages' cache identity:
/// "changing thinking parameters invalidates only the message blocks" (Anthropic
/// prompt-caching docs, PROVIDERS.md §1.2), and Claude Code's docs name effort as part of the
/// cache key. 0 when the request sets neither.
fn message_params(body: &Value) -> u64 {
    let thinking = body.get("thinking").filter(|v| !v.is_null());
    let effort = body
        .pointer("/output_config/effort")
        .filter(|v| !v.is_null());
    if thinking.is_none() && effort.is_none() {
        return 0;
    }
    crate::tokens::hash_str(&json!([thinking, effort]).to_string())
}

fn check_block(block: &Value) -> Result<&str, String> {
    let kind = block
        .get("type")
        .and_then(Value::as_str)
        .ok_or("type: Field required")?;
    let required: &[&str] = match kind {
        "text" => &["text"],
        "tool_use" => &["id", "name"],
        "tool_result" => &["tool_use_id"],
        _ => &[],
    };
    if let Some(missing) = required
        .iter()
        .find(|field| !block.get(**field).is_some_and(Value::is_string))
    {
        return Err(format!("{kind}.{missing}: Field required"));
    }
    if kind == "tool_use" && !block.get("input").is_some_and(Value::is_object) {
        return Err("tool_use.input: Field required".into());
    }
    Ok(kind)
}

/// The tool a `tool_addition` block defines inline, checked as a `tools` entry (anthropic-python
/// 2.17.0 `BetaToolChangeToolDefinitionParam`, beta `inline-tools-2026-09-15`): `None` for a
/// reference to a declared tool.
fn inline_tool(block: &Value) -> Result<Option<DeclaredTool>, String> {
    let tool = block.get("tool").ok_or("Field required")?;
    if tool.get("type").and_then(Value::as_str) != Some("tool_definition") {
        return Ok(None);
    }
    let definition = tool
        .get("definition")
        .filter(|d| d.is_object())
        .ok_or("tool_definition.definition: Field required")?;
    let name = definition
        .get("name")
        .and_then(Value::as_str)
        .ok_or("tool_definition.definition.name: Field required")?;
    let custom = definition
        .get("type")
        .and_then(Value::as_str)
        .is_none_or(|t| t == "custom");
    let schema = definition.get("input_schema");
    if custom && !schema.is_some_and(Value::is_object) {
        return Err("tool_definition.definition.input_schema: Field required".into());
    }
    Ok(Some(DeclaredTool::new(name, schema)))
}

/// `body` as the model is shown it: a system message with `clear_at: "next_user_message"` is
/// left out once a later `role: "user"` message exists ("it stays in the array but is no
/// longer shown to the model", anthropic-python 2.17.0 `BetaSystemMessageParam.clear_at`).
pub fn shown(body: &Value) -> Value {
    let Some(messages) = body.get("messages").and_then(Value::as_array) else {
        return body.clone();
    };
    let role = |m: &Value| m.get("role").and_then(Value::as_str).map(str::to_owned);
    let kept: Vec<Value> = messages
        .iter()
        .enumerate()
        .filter(|(i, m)| {
            let cleared = role(m).as_deref() == Some("system")
                && m.get("clear_at").and_then(Value::as_str) == Some("next_user_message");
            !(cleared
                && messages[i + 1..]
                    .iter()
                    .any(|later| role(later).as_deref() == Some("user")))
        })
        .map(|(_, m)| m.clone())
        .collect();
    let mut shown = body.clone();
    shown["messages"] = Value::Array(kept);
    shown
}

/// The deterministic signature sent with a thinking block.
pub fn signature(thinking: &str) -> String {
    format!("mock-sig-{:016x}", crate::tokens::hash_str(thinking))
}

/// A replayed thinking block must carry its signature, unchanged when the mock issued it
/// (the API rejects a thinking block whose text or signature was altered).
fn check_signature(block: &Value) -> Result<(), String> {
    let signature = block
        .get("signature")
        .and_then(Value::as_str)
        .ok_or("signature: Field required")?;
    let thinking = block
        .get("thinking")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if signature.starts_with("mock-sig-") && signature != self::signature(thinking) {
        return Err("thinking: Invalid `signature` in `thinking` block".into());
    }
    Ok(())
}

fn usage(outcome: &Outcome<'_>) -> Value {
    let cache = outcome.cache;
    json!({
        "input_tokens": cache.uncached,
        "cache_creation_input_tokens": cache.cache_write,
        "cache_read_input_tokens": cache.cache_read,
        "cache_creation": {
            "ephemeral_5m_input_tokens": cache.cache_write_5m,
            "ephemeral_1h_input_tokens": cache.cache_write_1h,
        },
        "output_tokens": outcome.output_tokens,
        "service_tier": "standard",
    })
}

fn stop_reason(stop: Stop) -> &'static str {
    match stop {
        Stop::EndTurn => "end_turn",
        Stop::ToolUse => "tool_use",
        Stop::MaxTokens => "max_tokens",
    }
}

/// The search blocks each call of `reply` needs first, by call id (crate::tool_search).
fn searches(parsed: &Parsed, reply: &crate::scenario::Reply) -> Vec<(String, [Value; 2])> {
    parsed
        .tool_search
        .as_ref()
        .map(|search| {
            search
                .found(reply)
                .into_iter()
                .map(|(call, _)| {
                    (
                        call.id.clone(),
                        tool_search::anthropic_blocks(&search.tool, call),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

fn tool_id(id: &str) -> String {
    format!("toolu_{id}")
}

impl Wire for Anthropic {
    const PROTOCOL: Protocol = Protocol::Anthropic;

    fn parse(
        body: &Value,
        _path_model: Option<&str>,
        ctx: &ParseContext<'_>,
    ) -> Result<Parsed, String> {
        let model = body
            .get("model")
            .and_then(Value::as_str)
            .ok_or("model: Field required")?
            .to_owned();
        let Some(max_tokens) = body.get("max_tokens").and_then(Value::as_u64) else {
            return Err("max_tokens: Field required".into());
        };
        let messages = body
            .get("messages")
            .and_then(Value::as_array)
            .ok_or("messages: Field required")?;
        if messages.is_empty() {
            return Err("messages: at least one message is required".into());
        }
        let mut builder = PromptBuilder::new(ctx.tokenizer);
        let mut conversation = Conversation::default();
        let mut deferred_tools = DeferredTools::default();
        let mut search_tool: Option<String> = None;
        let mut features: Vec<(&'static str, String)> = Vec::new();
        if max_tokens == 0 {
            features.push((
                "max-tokens-zero",
                "max_tokens: Input should be greater than or equal to 1".into(),
            ));
        }
        if let Some(tools) = body.get("tools") {
            let tools = tools
                .as_array()
                .ok_or("tools: Input should be a valid list")?;
            for (i, tool) in tools.iter().enumerate() {
                let name = tool
                    .get("name")
                    .and_then(Value::as_str)
                    .ok_or_else(|| format!("tools.{i}.name: Field required"))?;
                // Custom tools need a schema; server tools (`type` with a version) do not.
                let custom = tool
                    .get("type")
                    .and_then(Value::as_str)
                    .is_none_or(|t| t == "custom");
                if custom && !tool.get("input_schema").is_some_and(Value::is_object) {
                    return Err(format!("tools.{i}.custom.input_schema: Field required"));
                }
                if tool
                    .get("type")
                    .and_then(Value::as_str)
                    .is_some_and(|t| t.starts_with("tool_search_tool_"))
                {
                    search_tool = Some(name.to_owned());
                }
                conversation
                    .tools
                    .push(DeclaredTool::new(name, tool.get("input_schema")));
                let text = canonical_without(tool, "cache_control");
                if deferred::is_deferred(tool) {
                    // Not in the prefix until a tool_reference loads it (crate::deferred); a
                    // breakpoint on it caches the prefix up to the tool before it.
                    if let Some(ttl) = ttl_of(tool) {
                        builder.mark_previous(ttl);
                    }
                    deferred_tools.declare(name, text);
                } else {
                    builder.push(Chapter::Tools, "tool", &text, ttl_of(tool));
                }
            }
        }
        match body.get("system") {
            None | Some(Value::Null) => {}
            Some(Value::String(text)) => builder.push(Chapter::System, "system", text, None),
            Some(Value::Array(blocks)) => {
                for (j, block) in blocks.iter().enumerate() {
                    check_block(block).map_err(|e| format!("system.{j}.{e}"))?;
                    builder.push(
                        Chapter::System,
                        "system",
                        &canonical_without(block, "cache_control"),
                        ttl_of(block),
                    );
                }
            }
            Some(_) => return Err("system: Input should be a valid string or list".into()),
        }
        for (i, message) in messages.iter().enumerate() {
            let role = message
                .get("role")
                .and_then(Value::as_str)
                .unwrap_or_default();
            if !matches!(role, "user" | "assistant" | "system") {
                return Err(format!(
                    "messages.{i}.role: Input should be 'user', 'assistant' or 'system'"
                ));
            }
            if role == "assistant" {
                conversation.assistant_turns += 1;
            }
            // anthropic-python 2.17.0 `BetaSystemMessageParam.clear_at` (beta
            // `mid-conversation-system-clear-at-2026-08-21`): only on system messages. The
            // message stays in the prefix either way ([`shown`] hides it from the model).
            match message.get("clear_at") {
                None | Some(Value::Null) => {}
                Some(Value::String(_)) if role != "system" => {
                    return Err(format!(
                        "messages.{i}.clear_at: only permitted on role \"system\" messages"
                    ));
                }
                Some(Value::String(when)) if when == "never" => {}
                Some(Value::String(when)) if when == "next_user_message" => features.push((
                    "system-clear-at",
                    format!("messages.{i}.clear_at: Extra inputs are not permitted"),
                )),
                Some(other) => {
                    return Err(format!(
                        "messages.{i}.clear_at: Input should be 'next_user_message' or 'never', got {other}"
                    ));
                }
            }
            // Per-message output configuration (anthropic-python 2.17.0
            // `BetaSystemMessageOutputConfigParam`, beta
            // `mid-conversation-output-config-2026-07-01`): only on system messages; the
            // effort applies from here on, and the message is part of the cached prefix.
            let output_config = message.get("output_config").filter(|v| !v.is_null());
            if let Some(config) = output_config {
                if role != "system" {
                    return Err(format!(
                        "messages.{i}.output_config: only permitted on role \"system\" messages"
                    ));
                }
                match config.get("effort") {
                    None | Some(Value::Null) => {}
                    Some(Value::String(e)) if EFFORTS.contains(&e.as_str()) => {}
                    Some(other) => {
                        return Err(format!(
                            "messages.{i}.output_config.effort: Input should be 'low', 'medium', 'high', 'xhigh' or 'max', got {other}"
                        ));
                    }
                }
                builder.push(
                    Chapter::Messages,
                    "output_config",
                    &config.to_string(),
                    None,
                );
                features.push((
                    "system-output-config",
                    format!("messages.{i}.output_config: Extra inputs are not permitted"),
                ));
            }
            match message.get("content") {
                None if output_config.is_some() => {}
                // A string is shorthand for one text block, and the API caches it as one: a
                // harness that puts its marker on the last message sends it as a block, and
                // as a string once the marker has moved on (Claude Code 2.1).
                Some(Value::String(text)) => builder.push(
                    Chapter::Messages,
                    role,
                    &canonical_without(&json!({ "type": "text", "text": text }), "cache_control"),
                    None,
                ),
                Some(Value::Array(blocks)) => {
                    for (j, block) in blocks.iter().enumerate() {
                        let kind = check_block(block)
                            .map_err(|e| format!("messages.{i}.content.{j}.{e}"))?;
                        if role == "system" && !SYSTEM_MESSAGE_BLOCKS.contains(&kind) {
                            return Err(format!(
                                "messages.{i}.content.{j}: Input tag '{kind}' found using 'type' does not match any of the expected tags: 'text', 'tool_addition', 'tool_removal'"
                            ));
                        }
                        if kind == "thinking" {
                            check_signature(block)
                                .map_err(|e| format!("messages.{i}.content.{j}.{e}"))?;
                        }
                        if kind == "tool_addition"
                            && let Some(defined) = inline_tool(block)
                                .map_err(|e| format!("messages.{i}.content.{j}.tool.{e}"))?
                        {
                            if conversation.tools.iter().any(|t| t.name == defined.name) {
                                return Err(format!(
                                    "messages.{i}.content.{j}: tool name '{}' is already declared",
                                    defined.name
                                ));
                            }
                            conversation.tools.push(defined);
                            features.push((
                                "inline-tools",
                                format!("messages.{i}.content.{j}.tool: Input tag 'tool_definition' found using 'type' does not match any of the expected tags: 'tool_reference', 'mcp_tool_reference', 'mcp_toolset_reference'"),
                            ));
                        }
                        let text = canonical_without(block, "cache_control");
                        if matches!(kind, "thinking" | "redacted_thinking") {
                            builder.push_uncacheable(Chapter::Messages, role, &text);
                        } else {
                            builder.push(Chapter::Messages, role, &text, ttl_of(block));
                            deferred_tools.load_referenced(&mut builder, block);
                        }
                    }
                }
                _ => return Err(format!("messages.{i}.content: Field required")),
            }
        }
        conversation.last_user_text = messages
            .last()
            .filter(|m| m.get("role").and_then(Value::as_str) == Some("user"))
            .and_then(|m| text_of(m.get("content"), &["text"]));
        conversation.user_texts = messages
            .iter()
            .filter(|m| m.get("role").and_then(Value::as_str) == Some("user"))
            .filter_map(|m| text_of(m.get("content"), &["text"]))
            .collect();
        conversation.system_text = text_of(body.get("system"), &["text"]).unwrap_or_default();
        let mut prompt = builder.finish();
        if let Some(ttl) = ttl_of(body) {
            prompt.mark_last_cacheable(ttl);
        }
        let tool_search = search_tool.map(|tool| ToolSearch {
            flavor: Flavor::Anthropic,
            tool,
            unloaded: deferred_tools
                .unloaded()
                .map(|(name, billed)| Unloaded {
                    name: name.to_owned(),
                    definition: Value::Null,
                    billed: billed.to_owned(),
                })
                .collect(),
        });
        // anthropic-python 2.17.0 `BetaDiagnosticsParam`: an object whose
        // `previous_message_id` is a message id or null.
        let diagnose = match body.get("diagnostics") {
            None | Some(Value::Null) => None,
            Some(Value::Object(d)) => match d.get("previous_message_id") {
                None | Some(Value::Null) => Some(None),
                Some(Value::String(id)) => Some(Some(id.clone())),
                Some(_) => {
                    return Err(
                        "diagnostics.previous_message_id: Input should be a valid string".into(),
                    );
                }
            },
            Some(_) => return Err("diagnostics: Input should be a valid dictionary".into()),
        };
        if diagnose.is_some() {
            features.push((
                "diagnostics",
                "diagnostics: Extra inputs are not permitted".into(),
            ));
        }
        // Resolved by the server before parsing (crate::thread); only refused here.
        if body.get("thread").is_some_and(|t| !t.is_null()) {
            features.push((
                "message-threads",
                "thread: Extra inputs are not permitted".into(),
            ));
        }
        Ok(Parsed {
            model,
            stream: body.get("stream").and_then(Value::as_bool).unwrap_or(false),
            prompt,
            conversation,
            diagnose,
            features,
            params: message_params(body),
            max_output_tokens: Some(max_tokens),
            tool_search,
            ..Parsed::default()
        })
    }

    fn respond(parsed: &Parsed, outcome: &Outcome<'_>) -> Value {
        let reply = outcome.reply;
        let mut content = Vec::new();
        if let Some(thinking) = &reply.thinking {
            content.push(
                json!({"type": "thinking", "thinking": thinking, "signature": signature(thinking)}),
            );
        }
        if let Some(text) = &reply.text {
            content.push(json!({"type": "text", "text": text}));
        }
        let searches = searches(parsed, reply);
        for call in &reply.tool_calls {
            // A deferred tool not loaded yet is found first, in the same response.
            if let Some((_, blocks)) = searches.iter().find(|(id, _)| *id == call.id) {
                content.extend(blocks.iter().cloned());
            }
            content.push(json!({"type": "tool_use", "id": tool_id(&call.id), "name": call.name, "input": call.arguments}));
        }
        let mut message = json!({
            "id": format!("msg_{}", outcome.id),
            "type": "message",
            "role": "assistant",
            "model": parsed.model,
            "content": content,
            "stop_reason": stop_reason(reply.stop),
            "stop_sequence": null,
            "usage": usage(outcome),
        });
        if let Some(diagnosis) = &outcome.diagnosis {
            message["diagnostics"] = diagnosis.anthropic();
        }
        message
    }

    fn stream(parsed: &Parsed, outcome: &Outcome<'_>) -> Vec<Bytes> {
        let reply = outcome.reply;
        let mut events = Vec::new();
        let mut start_usage = usage(outcome);
        start_usage["output_tokens"] = json!(1);
        let mut start = json!({
            "type": "message_start",
            "message": {
                "id": format!("msg_{}", outcome.id), "type": "message", "role": "assistant",
                "model": parsed.model, "content": [], "stop_reason": null, "stop_sequence": null,
                "usage": start_usage,
            }
        });
        // The diagnosis rides on the message object (`BetaMessage.diagnostics`).
        if let Some(diagnosis) = &outcome.diagnosis {
            start["message"]["diagnostics"] = diagnosis.anthropic();
        }
        events.push(sse_event("message_start", &start));
        events.push(sse_event("ping", &json!({"type": "ping"})));
        let mut index = 0usize;
        let delta = |index: usize, delta: Value| {
            sse_event(
                "content_block_delta",
                &json!({"type": "content_block_delta", "index": index, "delta": delta}),
            )
        };
        let stop = |index: usize| {
            sse_event(
                "content_block_stop",
                &json!({"type": "content_block_stop", "index": index}),
            )
        };
        if let Some(thinking) = &reply.thinking {
            events.push(sse_event(
                "content_block_start",
                &json!({
                    "type": "content_block_start", "index": index,
                    "content_block": {"type": "thinking", "thinking": "", "signature": ""}
                }),
            ));
            for piece in chunks(thinking, outcome.delta_chars) {
                events.push(delta(
                    index,
                    json!({"type": "thinking_delta", "thinking": piece}),
                ));
            }
            events.push(delta(
                index,
                json!({"type": "signature_delta", "signature": signature(thinking)}),
            ));
            events.push(stop(index));
            index += 1;
        }
        if let Some(text) = &reply.text {
            events.push(sse_event("content_block_start", &json!({
                "type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}
            })));
            for piece in chunks(text, outcome.delta_chars) {
                events.push(delta(index, json!({"type": "text_delta", "text": piece})));
            }
            events.push(stop(index));
            index += 1;
        }
        let searches = searches(parsed, reply);
        for call in &reply.tool_calls {
            if let Some((_, [use_block, result])) = searches.iter().find(|(id, _)| *id == call.id) {
                // The server tool's input streams like a tool call's; its result comes whole.
                let mut opened = use_block.clone();
                opened["input"] = json!({});
                events.push(sse_event(
                    "content_block_start",
                    &json!({
                        "type": "content_block_start", "index": index, "content_block": opened
                    }),
                ));
                events.push(delta(
                    index,
                    json!({"type": "input_json_delta", "partial_json": use_block["input"].to_string()}),
                ));
                events.push(stop(index));
                index += 1;
                events.push(sse_event(
                    "content_block_start",
                    &json!({
                        "type": "content_block_start", "index": index, "content_block": result
                    }),
                ));
                events.push(stop(index));
                index += 1;
            }
            events.push(sse_event("content_block_start", &json!({
                "type": "content_block_start", "index": index,
                "content_block": {"type": "tool_use", "id": tool_id(&call.id), "name": call.name, "input": {}}
            })));
            events.push(delta(
                index,
                json!({"type": "input_json_delta", "partial_json": ""}),
            ));
            for piece in chunks(&call.arguments_json(), outcome.delta_chars) {
                events.push(delta(
                    index,
                    json!({"type": "input_json_delta", "partial_json": piece}),
                ));
            }
            events.push(stop(index));
            index += 1;
        }
        let cache = outcome.cache;
        events.push(sse_event(
            "message_delta",
            &json!({
                "type": "message_delta",
                "delta": {"stop_reason": stop_reason(reply.stop), "stop_sequence": null},
                "usage": {
                    "input_tokens": cache.uncached,
                    "cache_creation_input_tokens": cache.cache_write,
                    "cache_read_input_tokens": cache.cache_read,
                    "output_tokens": outcome.output_tokens,
                }
            }),
        ));
        events.push(sse_event("message_stop", &json!({"type": "message_stop"})));
        events
    }

    fn error(kind: &ErrorKind) -> ErrorResponse {
        let (status, kind_name, message) = match kind {
            ErrorKind::BadRequest(message) => (
                StatusCode::BAD_REQUEST,
                "invalid_request_error",
                message.clone(),
            ),
            ErrorKind::ContextLength { tokens, window } => (
                StatusCode::BAD_REQUEST,
                "invalid_request_error",
                format!("prompt is too long: {tokens} tokens > {window} maximum"),
            ),
            ErrorKind::RateLimit { .. } => (
                StatusCode::TOO_MANY_REQUESTS,
                "rate_limit_error",
                "Number of requests has exceeded your rate limit. Please try again later."
                    .to_owned(),
            ),
            ErrorKind::Server => (
                StatusCode::INTERNAL_SERVER_ERROR,
                "api_error",
                "Internal server error".to_owned(),
            ),
            ErrorKind::Overloaded => (
                overloaded_status(),
                "overloaded_error",
                "Overloaded".to_owned(),
            ),
            ErrorKind::NotFound(message) => {
                (StatusCode::NOT_FOUND, "not_found_error", message.clone())
            }
            ErrorKind::TooLarge { .. } => (
                StatusCode::PAYLOAD_TOO_LARGE,
                "request_too_large",
                "Request exceeds the maximum allowed number of bytes.".to_owned(),
            ),
        };
        let mut headers = error_headers(kind);
        headers.insert("request-id", HeaderValue::from_static("req_mock"));
        let body = json!({"type": "error", "error": {"type": kind_name, "message": message}, "request_id": "req_mock"});
        (status, headers, Bytes::from(body.to_string()))
    }

    fn stream_error(_index: usize) -> Bytes {
        sse_event(
            "error",
            &json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}),
        )
    }

    fn malformed() -> Bytes {
        Bytes::from_static(b"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_del\n\n")
    }
}

fn overloaded_status() -> StatusCode {
    StatusCode::from_u16(529).unwrap_or(StatusCode::SERVICE_UNAVAILABLE)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cleared_reminder_is_shown_until_the_next_user_message_only() {
        let reminder = json!({"role": "system", "clear_at": "next_user_message",
            "content": [{"type": "text", "text": "reminder"}]});
        let kept = json!({"role": "system", "clear_at": "never", "content": "kept"});
        let body = json!({"messages": [
            {"role": "user", "content": "a"}, reminder, kept,
        ]});
        assert_eq!(shown(&body), body, "no user message after it yet");
        let mut later = body.clone();
        later["messages"].as_array_mut().unwrap().extend([
            json!({"role": "assistant", "content": "b"}),
            json!({"role": "user", "content": "c"}),
        ]);
        let seen = shown(&later);
        let texts = crate::scenario::transcript_of(&seen);
        assert!(
            !texts.contains("reminder") && texts.contains("kept"),
            "{texts}"
        );
        assert_eq!(seen["messages"].as_array().unwrap().len(), 4);
    }
}
