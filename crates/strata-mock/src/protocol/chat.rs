//! OpenAI Chat Completions: `POST /v1/chat/completions`, streamed as `data:` chunks ending in
//! `data: [DONE]`; the DeepSeek variant reports `prompt_cache_hit_tokens` / `_miss_tokens`.

use axum::http::StatusCode;
use bytes::Bytes;
use serde_json::{Value, json};

use super::{
    ErrorKind, ErrorResponse, Outcome, ParseContext, Parsed, Wire, chunks, error_headers, sse_data,
    text_of,
};
use crate::config::{Protocol, UsageDialect};
use crate::prompt::{Chapter, PromptBuilder};
use crate::scenario::{Conversation, DeclaredTool, Stop};

/// The Chat Completions protocol.
pub struct Chat;

/// Renders an OpenAI-style error body.
pub fn openai_error(kind: &ErrorKind, context_message: &str, context_param: &str) -> ErrorResponse {
    let (status, message, kind_name, param, code) = match kind {
        ErrorKind::BadRequest(message) => (
            StatusCode::BAD_REQUEST,
            message.clone(),
            "invalid_request_error",
            Value::Null,
            Value::Null,
        ),
        ErrorKind::ContextLength { .. } => (
            StatusCode::BAD_REQUEST,
            context_message.to_owned(),
            "invalid_request_error",
            json!(context_param),
            json!("context_length_exceeded"),
        ),
        ErrorKind::RateLimit { retry_after_secs } => (
            StatusCode::TOO_MANY_REQUESTS,
            format!("Rate limit reached for requests. Please try again in {retry_after_secs}s."),
            "requests",
            Value::Null,
            json!("rate_limit_exceeded"),
        ),
        ErrorKind::Server => (
            StatusCode::INTERNAL_SERVER_ERROR,
            "The server had an error while processing your request. Sorry about that!".to_owned(),
            "server_error",
            Value::Null,
            Value::Null,
        ),
        ErrorKind::Overloaded => (
            StatusCode::SERVICE_UNAVAILABLE,
            "The engine is currently overloaded, please try again later.".to_owned(),
            "server_error",
            Value::Null,
            Value::Null,
        ),
        ErrorKind::NotFound(message) => (
            StatusCode::NOT_FOUND,
            message.clone(),
            "invalid_request_error",
            Value::Null,
            json!("not_found"),
        ),
        ErrorKind::TooLarge { limit } => (
            StatusCode::PAYLOAD_TOO_LARGE,
            format!("The request body exceeds the maximum size of {limit} bytes."),
            "invalid_request_error",
            Value::Null,
            json!("request_too_large"),
        ),
    };
    let body =
        json!({"error": {"message": message, "type": kind_name, "param": param, "code": code}});
    (status, error_headers(kind), Bytes::from(body.to_string()))
}

fn usage(outcome: &Outcome<'_>) -> Value {
    let cache = outcome.cache;
    let prompt = cache.input_tokens;
    let mut usage = json!({
        "prompt_tokens": prompt,
        "completion_tokens": outcome.output_tokens,
        "total_tokens": prompt + outcome.output_tokens,
        "prompt_tokens_details": {"cached_tokens": cache.cache_read, "audio_tokens": 0},
        "completion_tokens_details": {
            "reasoning_tokens": outcome.reasoning_tokens, "audio_tokens": 0,
            "accepted_prediction_tokens": 0, "rejected_prediction_tokens": 0,
        },
    });
    if outcome.profile.dialect == UsageDialect::Deepseek {
        usage["prompt_cache_hit_tokens"] = json!(cache.cache_read);
        usage["prompt_cache_miss_tokens"] = json!(prompt - cache.cache_read);
        usage["prompt_tokens_details"] = json!({"cached_tokens": cache.cache_read});
        usage["completion_tokens_details"] = json!({"reasoning_tokens": outcome.reasoning_tokens});
    }
    usage
}

fn finish_reason(stop: Stop) -> &'static str {
    match stop {
        Stop::EndTurn => "stop",
        Stop::ToolUse => "tool_calls",
        Stop::MaxTokens => "length",
    }
}

fn call_id(id: &str) -> String {
    format!("call_{id}")
}

impl Wire for Chat {
    const PROTOCOL: Protocol = Protocol::Chat;

    fn parse(
        body: &Value,
        _path_model: Option<&str>,
        ctx: &ParseContext<'_>,
    ) -> Result<Parsed, String> {
        let model = body
            .get("model")
            .and_then(Value::as_str)
            .ok_or("you must provide a model parameter")?
            .to_owned();
        let messages = body
            .get("messages")
            .and_then(Value::as_array)
            .ok_or("Missing required parameter: 'messages'.")?;
        if messages.is_empty() {
            return Err("Invalid 'messages': empty array. Expected an array with minimum length 1, but got an empty array instead.".into());
        }
        // `max_completion_tokens` replaced `max_tokens`; a request may carry either.
        let max_output_tokens =
            match super::token_cap(body.get("max_completion_tokens"), "max_completion_tokens")? {
                Some(cap) => Some(cap),
                None => super::token_cap(body.get("max_tokens"), "max_tokens")?,
            };
        let mut builder = PromptBuilder::new(ctx.tokenizer);
        let mut conversation = Conversation::default();
        if let Some(tools) = body.get("tools") {
            let tools = tools
                .as_array()
                .ok_or("Invalid type for 'tools': expected an array.")?;
            for (i, tool) in tools.iter().enumerate() {
                let function = tool.get("function");
                let name = function
                    .and_then(|f| f.get("name"))
                    .and_then(Value::as_str)
                    .ok_or_else(|| {
                        format!("Missing required parameter: 'tools[{i}].function.name'.")
                    })?;
                conversation.tools.push(DeclaredTool::new(
                    name,
                    function.and_then(|f| f.get("parameters")),
                ));
                builder.push(Chapter::Tools, "tool", &tool.to_string(), None);
            }
        }
        let mut in_system = true;
        for (i, message) in messages.iter().enumerate() {
            if !message.is_object() {
                return Err(format!(
                    "Invalid type for 'messages[{i}]': expected an object, but got {} instead.",
                    super::json_type(message)
                ));
            }
            let role = message
                .get("role")
                .and_then(Value::as_str)
                .unwrap_or_default();
            // Only an assistant message may leave out its content (when it calls tools).
            if role != "assistant" && message.get("content").is_none_or(Value::is_null) {
                return Err(format!(
                    "Missing required parameter: 'messages[{i}].content'."
                ));
            }
            if role == "tool" && !message.get("tool_call_id").is_some_and(Value::is_string) {
                return Err(format!(
                    "Missing required parameter: 'messages[{i}].tool_call_id'."
                ));
            }
            if !matches!(
                role,
                "system" | "developer" | "user" | "assistant" | "tool" | "function"
            ) {
                return Err(format!(
                    "Invalid value: '{role}'. Supported values are: 'system', 'assistant', 'user', 'function', 'tool', and 'developer'. (messages[{i}].role)"
                ));
            }
            in_system &= matches!(role, "system" | "developer");
            if role == "assistant" {
                conversation.assistant_turns += 1;
            }
            let chapter = if in_system {
                Chapter::System
            } else {
                Chapter::Messages
            };
            builder.push(chapter, role, &message.to_string(), None);
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
        conversation.system_text = messages
            .iter()
            .take_while(|m| {
                matches!(
                    m.get("role").and_then(Value::as_str),
                    Some("system" | "developer")
                )
            })
            .filter_map(|m| text_of(m.get("content"), &["text"]))
            .collect::<Vec<_>>()
            .join("\n");
        Ok(Parsed {
            model,
            stream: body.get("stream").and_then(Value::as_bool).unwrap_or(false),
            prompt: builder.finish(),
            conversation,
            cache_key: body
                .get("prompt_cache_key")
                .and_then(Value::as_str)
                .map(str::to_owned),
            include_usage: body
                .pointer("/stream_options/include_usage")
                .and_then(Value::as_bool)
                .unwrap_or(false),
            max_output_tokens,
            retention: super::retention(body)?,
            ..Parsed::default()
        })
    }

    fn respond(parsed: &Parsed, outcome: &Outcome<'_>) -> Value {
        let reply = outcome.reply;
        let mut message = json!({"role": "assistant", "content": reply.text, "refusal": null});
        if outcome.profile.dialect == UsageDialect::Deepseek {
            message["reasoning_content"] = json!(reply.thinking);
        }
        if !reply.tool_calls.is_empty() {
            message["tool_calls"] = reply
                .tool_calls
                .iter()
                .map(|c| json!({"id": call_id(&c.id), "type": "function", "function": {"name": c.name, "arguments": c.arguments_json()}}))
                .collect();
        }
        json!({
            "id": format!("chatcmpl-{}", outcome.id),
            "object": "chat.completion",
            "created": outcome.created,
            "model": parsed.model,
            "choices": [{"index": 0, "message": message, "logprobs": null, "finish_reason": finish_reason(reply.stop)}],
            "usage": usage(outcome),
            "system_fingerprint": "fp_strata_mock",
        })
    }

    fn stream(parsed: &Parsed, outcome: &Outcome<'_>) -> Vec<Bytes> {
        let reply = outcome.reply;
        let deepseek = outcome.profile.dialect == UsageDialect::Deepseek;
        let with_usage = parsed.include_usage && !deepseek;
        let chunk = |delta: Value, finish: Value| {
            let mut chunk = json!({
                "id": format!("chatcmpl-{}", outcome.id),
                "object": "chat.completion.chunk",
                "created": outcome.created,
                "model": parsed.model,
                "system_fingerprint": "fp_strata_mock",
                "choices": [{"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish}],
            });
            if with_usage {
                chunk["usage"] = Value::Null;
            }
            chunk
        };
        let mut events = vec![sse_data(&chunk(
            json!({"role": "assistant", "content": "", "refusal": null}),
            Value::Null,
        ))];
        if let (Some(thinking), true) = (&reply.thinking, deepseek) {
            for piece in chunks(thinking, outcome.delta_chars) {
                events.push(sse_data(&chunk(
                    json!({"reasoning_content": piece}),
                    Value::Null,
                )));
            }
        }
        if let Some(text) = &reply.text {
            for piece in chunks(text, outcome.delta_chars) {
                events.push(sse_data(&chunk(json!({"content": piece}), Value::Null)));
            }
        }
        for (index, call) in reply.tool_calls.iter().enumerate() {
            events.push(sse_data(&chunk(
                json!({"tool_calls": [{"index": index, "id": call_id(&call.id), "type": "function", "function": {"name": call.name, "arguments": ""}}]}),
                Value::Null,
            )));
            for piece in chunks(&call.arguments_json(), outcome.delta_chars) {
                events.push(sse_data(&chunk(
                    json!({"tool_calls": [{"index": index, "function": {"arguments": piece}}]}),
                    Value::Null,
                )));
            }
        }
        let mut last = chunk(json!({}), json!(finish_reason(reply.stop)));
        if deepseek {
            last["usage"] = usage(outcome);
        }
        events.push(sse_data(&last));
        if with_usage {
            let mut usage_chunk = chunk(json!({}), Value::Null);
            usage_chunk["choices"] = json!([]);
            usage_chunk["usage"] = usage(outcome);
            events.push(sse_data(&usage_chunk));
        }
        events.push(Bytes::from_static(b"data: [DONE]\n\n"));
        events
    }

    fn error(kind: &ErrorKind) -> ErrorResponse {
        let context = match kind {
            ErrorKind::ContextLength { tokens, window } => format!(
                "This model's maximum context length is {window} tokens. However, your messages resulted in {tokens} tokens. Please reduce the length of the messages."
            ),
            _ => String::new(),
        };
        openai_error(kind, &context, "messages")
    }

    fn stream_error(_index: usize) -> Bytes {
        sse_data(&json!({"error": {
            "message": "The server had an error while processing your request. Sorry about that!",
            "type": "server_error", "param": null, "code": null
        }}))
    }

    fn malformed() -> Bytes {
        Bytes::from_static(b"data: {\"id\":\"chatcmpl-mock\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"delta\":{\"content\":\n\n")
    }
}
