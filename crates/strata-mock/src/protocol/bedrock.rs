//! Bedrock Converse: `POST /model/{id}/converse` (JSON) and `/converse-stream` (AWS
//! event-stream binary frames); breakpoints are `cachePoint` blocks.

use axum::http::{HeaderValue, StatusCode};
use bytes::Bytes;
use serde_json::{Value, json};

use super::eventstream;
use super::{ErrorKind, ErrorResponse, Outcome, ParseContext, Parsed, Wire, chunks, error_headers};
use crate::anthropic_signature;
use crate::config::Protocol;
use crate::prompt::{Chapter, PromptBuilder, Ttl};
use crate::scenario::{Conversation, DeclaredTool, Stop};

/// The Bedrock Converse protocol.
pub struct Bedrock;

fn cache_point(block: &Value) -> Option<Ttl> {
    let point = block.get("cachePoint")?;
    Some(Ttl::parse(point.get("ttl").and_then(Value::as_str)))
}

fn usage(outcome: &Outcome<'_>) -> Value {
    let cache = outcome.cache;
    let input = if outcome.profile.input_includes_cache {
        cache.input_tokens
    } else {
        cache.uncached
    };
    let mut usage = json!({
        "inputTokens": input,
        "outputTokens": outcome.output_tokens,
        "totalTokens": cache.input_tokens + outcome.output_tokens,
        "cacheReadInputTokens": cache.cache_read,
        "cacheWriteInputTokens": cache.cache_write,
    });
    let mut details = Vec::new();
    if cache.cache_write_1h > 0 {
        details.push(json!({"ttl": "1h", "inputTokens": cache.cache_write_1h}));
    }
    if cache.cache_write_5m > 0 {
        details.push(json!({"ttl": "5m", "inputTokens": cache.cache_write_5m}));
    }
    if !details.is_empty() {
        usage["cacheDetails"] = Value::Array(details);
    }
    usage
}

fn stop_reason(stop: Stop) -> &'static str {
    match stop {
        Stop::EndTurn => "end_turn",
        Stop::ToolUse => "tool_use",
        Stop::MaxTokens => "max_tokens",
    }
}

fn tool_use_id(id: &str) -> String {
    format!("tooluse_{id}")
}

fn push_blocks(builder: &mut PromptBuilder<'_>, chapter: Chapter, tag: &str, blocks: &[Value]) {
    for block in blocks {
        match cache_point(block) {
            Some(ttl) => {
                builder.mark_previous(ttl);
            }
            None if block.get("reasoningContent").is_some() => {
                builder.push_uncacheable(chapter, tag, &block.to_string())
            }
            None => builder.push(chapter, tag, &block.to_string(), None),
        }
    }
}

/// The blocks a `role: "system"` message may hold; `toolAddition` / `toolRemoval` only there,
/// each naming a tool of the tool configuration (botocore's service model: "use within a
/// `system` role message", "a reference to a tool in the tool configuration").
const SYSTEM_MESSAGE_BLOCKS: [&str; 4] = ["text", "toolAddition", "toolRemoval", "cachePoint"];

fn check_tool_changes(
    role: &str,
    i: usize,
    content: &[Value],
    tools: &[DeclaredTool],
) -> Result<(), String> {
    for (j, block) in content.iter().enumerate() {
        let at = format!("messages.{}.member.content.{}.member", i + 1, j + 1);
        let kind = block
            .as_object()
            .and_then(|map| map.keys().next())
            .map_or("", String::as_str);
        if role == "system" && !SYSTEM_MESSAGE_BLOCKS.contains(&kind) {
            return Err(format!(
                "A conversation message with role system may contain only text, toolAddition, toolRemoval and cachePoint blocks; found {kind} at '{at}'"
            ));
        }
        if !matches!(kind, "toolAddition" | "toolRemoval") {
            continue;
        }
        if role != "system" {
            return Err(format!(
                "{kind} is only permitted in a message with role system; found at '{at}'"
            ));
        }
        let name = block
            .pointer(&format!("/{kind}/tool/name"))
            .and_then(Value::as_str)
            .ok_or_else(|| {
                format!("1 validation error detected: Value null at '{at}.{kind}.tool.name' failed to satisfy constraint: Member must not be null")
            })?;
        if !tools.iter().any(|tool| tool.name == name) {
            return Err(format!(
                "The tool {name} named by {kind} at '{at}' is not in the tool configuration."
            ));
        }
    }
    Ok(())
}

impl Wire for Bedrock {
    const PROTOCOL: Protocol = Protocol::Bedrock;
    const STREAM_CONTENT_TYPE: &'static str = "application/vnd.amazon.eventstream";

    fn parse(
        body: &Value,
        path_model: Option<&str>,
        ctx: &ParseContext<'_>,
    ) -> Result<Parsed, String> {
        let model = path_model
            .ok_or("The provided model identifier is invalid.")?
            .to_owned();
        let messages = body
            .get("messages")
            .and_then(Value::as_array)
            .ok_or("1 validation error detected: Value null at 'messages' failed to satisfy constraint: Member must not be null")?;
        let mut builder = PromptBuilder::new(ctx.tokenizer);
        let mut conversation = Conversation::default();
        if let Some(tools) = body.pointer("/toolConfig/tools").and_then(Value::as_array) {
            for tool in tools {
                if let Some(spec) = tool.get("toolSpec") {
                    let name = spec
                        .get("name")
                        .and_then(Value::as_str)
                        .ok_or("1 validation error detected: Value null at 'toolConfig.tools.member.toolSpec.name' failed to satisfy constraint: Member must not be null")?;
                    conversation
                        .tools
                        .push(DeclaredTool::new(name, spec.pointer("/inputSchema/json")));
                }
            }
            push_blocks(&mut builder, Chapter::Tools, "tool", tools);
        }
        if let Some(system) = body.get("system").and_then(Value::as_array) {
            push_blocks(&mut builder, Chapter::System, "system", system);
        }
        for (i, message) in messages.iter().enumerate() {
            let role = message
                .get("role")
                .and_then(Value::as_str)
                .unwrap_or_default();
            if !matches!(role, "user" | "assistant" | "system") {
                return Err(format!(
                    "1 validation error detected: Value '{role}' at 'messages.{}.member.role' failed to satisfy constraint: Member must satisfy enum value set: [user, assistant, system]",
                    i + 1
                ));
            }
            if role == "assistant" {
                conversation.assistant_turns += 1;
            }
            let content = message
                .get("content")
                .and_then(Value::as_array)
                .ok_or_else(|| format!("1 validation error detected: Value null at 'messages.{}.member.content' failed to satisfy constraint: Member must not be null", i + 1))?;
            if let Some(j) = content.iter().position(|block| !block.is_object()) {
                return Err(format!(
                    "1 validation error detected: Value at 'messages.{}.member.content.{}.member' failed to satisfy constraint: Member must be a ContentBlock object",
                    i + 1,
                    j + 1
                ));
            }
            check_tool_changes(role, i, content, &conversation.tools)?;
            push_blocks(&mut builder, Chapter::Messages, role, content);
        }
        conversation.last_user_text = messages
            .last()
            .filter(|m| m.get("role").and_then(Value::as_str) == Some("user"))
            .and_then(|m| super::text_of(m.get("content"), &[]));
        conversation.user_texts = messages
            .iter()
            .filter(|m| m.get("role").and_then(Value::as_str) == Some("user"))
            .filter_map(|m| super::text_of(m.get("content"), &[]))
            .collect();
        conversation.system_text = super::text_of(body.get("system"), &[]).unwrap_or_default();
        let max_output_tokens = match body.pointer("/inferenceConfig/maxTokens") {
            None | Some(Value::Null) => None,
            Some(cap) => Some(cap.as_u64().ok_or_else(|| {
                format!("1 validation error detected: Value '{cap}' at 'inferenceConfig.maxTokens' failed to satisfy constraint: Member must have value greater than or equal to 1")
            })?),
        };
        Ok(Parsed {
            model,
            prompt: builder.finish(),
            conversation,
            max_output_tokens,
            ..Parsed::default()
        })
    }

    fn respond(_parsed: &Parsed, outcome: &Outcome<'_>) -> Value {
        let reply = outcome.reply;
        let mut content = Vec::new();
        if let Some(thinking) = &reply.thinking {
            content.push(json!({"reasoningContent": {"reasoningText": {"text": thinking, "signature": anthropic_signature(thinking)}}}));
        }
        if let Some(text) = &reply.text {
            content.push(json!({"text": text}));
        }
        for call in &reply.tool_calls {
            content.push(json!({"toolUse": {"toolUseId": tool_use_id(&call.id), "name": call.name, "input": call.arguments}}));
        }
        json!({
            "output": {"message": {"role": "assistant", "content": content}},
            "stopReason": stop_reason(reply.stop),
            "usage": usage(outcome),
            "metrics": {"latencyMs": 1},
        })
    }

    fn stream(_parsed: &Parsed, outcome: &Outcome<'_>) -> Vec<Bytes> {
        let reply = outcome.reply;
        let mut events = vec![eventstream::event(
            "messageStart",
            &json!({"role": "assistant"}),
        )];
        let mut index = 0usize;
        let delta = |index: usize, delta: Value| {
            eventstream::event(
                "contentBlockDelta",
                &json!({"contentBlockIndex": index, "delta": delta}),
            )
        };
        let stop = |index: usize| {
            eventstream::event("contentBlockStop", &json!({"contentBlockIndex": index}))
        };
        if let Some(thinking) = &reply.thinking {
            for piece in chunks(thinking, outcome.delta_chars) {
                events.push(delta(index, json!({"reasoningContent": {"text": piece}})));
            }
            events.push(delta(
                index,
                json!({"reasoningContent": {"signature": anthropic_signature(thinking)}}),
            ));
            events.push(stop(index));
            index += 1;
        }
        if let Some(text) = &reply.text {
            for piece in chunks(text, outcome.delta_chars) {
                events.push(delta(index, json!({"text": piece})));
            }
            events.push(stop(index));
            index += 1;
        }
        for call in &reply.tool_calls {
            events.push(eventstream::event(
                "contentBlockStart",
                &json!({
                    "contentBlockIndex": index,
                    "start": {"toolUse": {"toolUseId": tool_use_id(&call.id), "name": call.name}},
                }),
            ));
            for piece in chunks(&call.arguments_json(), outcome.delta_chars) {
                events.push(delta(index, json!({"toolUse": {"input": piece}})));
            }
            events.push(stop(index));
            index += 1;
        }
        events.push(eventstream::event(
            "messageStop",
            &json!({"stopReason": stop_reason(reply.stop)}),
        ));
        events.push(eventstream::event(
            "metadata",
            &json!({"usage": usage(outcome), "metrics": {"latencyMs": 1}}),
        ));
        events
    }

    fn error(kind: &ErrorKind) -> ErrorResponse {
        let (status, error_type, message) = match kind {
            ErrorKind::BadRequest(message) => (
                StatusCode::BAD_REQUEST,
                "ValidationException",
                message.clone(),
            ),
            ErrorKind::ContextLength { .. } => (
                StatusCode::BAD_REQUEST,
                "ValidationException",
                "Input is too long for requested model.".to_owned(),
            ),
            ErrorKind::RateLimit { .. } => (
                StatusCode::TOO_MANY_REQUESTS,
                "ThrottlingException",
                "Too many requests, please wait before trying again.".to_owned(),
            ),
            ErrorKind::Server => (
                StatusCode::INTERNAL_SERVER_ERROR,
                "InternalServerException",
                "The server encountered an internal error while processing the request.".to_owned(),
            ),
            ErrorKind::Overloaded => (
                StatusCode::SERVICE_UNAVAILABLE,
                "ServiceUnavailableException",
                "Bedrock is unable to process your request.".to_owned(),
            ),
            ErrorKind::NotFound(message) => (
                StatusCode::NOT_FOUND,
                "ResourceNotFoundException",
                message.clone(),
            ),
            ErrorKind::TooLarge { limit } => (
                StatusCode::PAYLOAD_TOO_LARGE,
                "ValidationException",
                format!("Request body exceeds the maximum size of {limit} bytes."),
            ),
        };
        let mut headers = error_headers(kind);
        headers.insert("x-amzn-errortype", HeaderValue::from_static(error_type));
        (
            status,
            headers,
            Bytes::from(json!({"message": message}).to_string()),
        )
    }

    fn stream_error(_index: usize) -> Bytes {
        eventstream::exception(
            "serviceUnavailableException",
            "Bedrock is unable to process your request.",
        )
    }

    fn malformed() -> Bytes {
        let frame = eventstream::event(
            "contentBlockDelta",
            &json!({"contentBlockIndex": 0, "delta": {"text": "x"}}),
        );
        let mut bytes = frame.to_vec();
        if let Some(last) = bytes.last_mut() {
            *last ^= 0xff;
        }
        Bytes::from(bytes)
    }
}
