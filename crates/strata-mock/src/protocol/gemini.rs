//! Gemini `:generateContent` and `:streamGenerateContent` (`alt=sse`: one
//! `GenerateContentResponse` per `data:` event).

use axum::http::StatusCode;
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use bytes::Bytes;
use serde_json::{Value, json};

use super::{ErrorKind, ErrorResponse, Outcome, ParseContext, Parsed, Wire, chunks, error_headers};
use crate::config::Protocol;
use crate::prompt::{Chapter, PromptBuilder};
use crate::scenario::{Conversation, DeclaredTool, Stop};

/// The Gemini protocol.
pub struct Gemini;

fn field<'a>(value: &'a Value, camel: &str, snake: &str) -> Option<&'a Value> {
    value.get(camel).or_else(|| value.get(snake))
}

fn usage(outcome: &Outcome<'_>, final_chunk: bool) -> Value {
    let cache = outcome.cache;
    let candidates = outcome.output_tokens - outcome.reasoning_tokens;
    let mut usage = json!({
        "promptTokenCount": cache.input_tokens,
        "totalTokenCount": cache.input_tokens,
        "promptTokensDetails": [{"modality": "TEXT", "tokenCount": cache.input_tokens}],
    });
    if cache.cache_read > 0 {
        usage["cachedContentTokenCount"] = json!(cache.cache_read);
        usage["cacheTokensDetails"] = json!([{"modality": "TEXT", "tokenCount": cache.cache_read}]);
    }
    if final_chunk {
        usage["candidatesTokenCount"] = json!(candidates);
        usage["totalTokenCount"] = json!(cache.input_tokens + outcome.output_tokens);
        if outcome.reasoning_tokens > 0 {
            usage["thoughtsTokenCount"] = json!(outcome.reasoning_tokens);
        }
    }
    usage
}

fn chunk(parsed: &Parsed, outcome: &Outcome<'_>, parts: Vec<Value>, finish: bool) -> Value {
    let mut candidate = json!({"content": {"parts": parts, "role": "model"}, "index": 0});
    if finish {
        candidate["finishReason"] = json!(match outcome.reply.stop {
            Stop::MaxTokens => "MAX_TOKENS",
            Stop::EndTurn | Stop::ToolUse => "STOP",
        });
    }
    json!({
        "candidates": [candidate],
        "usageMetadata": usage(outcome, finish),
        "modelVersion": parsed.model,
        "responseId": outcome.id,
    })
}

/// Function-call parts; after thinking, the first carries a `thoughtSignature` that the client
/// must send back on that part.
fn call_parts(outcome: &Outcome<'_>) -> Vec<Value> {
    let reply = outcome.reply;
    reply
        .tool_calls
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let mut part = json!({"functionCall": {"name": c.name, "args": c.arguments}});
            if let (0, Some(thinking)) = (i, &reply.thinking) {
                part["thoughtSignature"] = json!(thought_signature(thinking));
            }
            part
        })
        .collect()
}

/// The signature of `thinking`: bytes on the wire (`Part.thought_signature` is `bytes` in
/// google-genai), so base64 of the deterministic mock signature.
pub fn thought_signature(thinking: &str) -> String {
    BASE64.encode(crate::anthropic_signature(thinking))
}

/// A replayed signature must be base64, as the API's bytes field requires.
fn check_signature(signature: &Value) -> Result<(), String> {
    match signature.as_str() {
        Some(text) if BASE64.decode(text).is_ok() => Ok(()),
        _ => Err(signature.to_string()),
    }
}

/// One SSE event as Gemini frames it.
fn data(value: &Value) -> Bytes {
    Bytes::from(format!("data: {value}\r\n\r\n"))
}

impl Gemini {
    /// The stream as the JSON array Gemini returns without `alt=sse`.
    pub fn json_array(parsed: &Parsed, outcome: &Outcome<'_>) -> Value {
        Value::Array(stream_chunks(parsed, outcome))
    }
}

fn stream_chunks(parsed: &Parsed, outcome: &Outcome<'_>) -> Vec<Value> {
    let reply = outcome.reply;
    let mut out = Vec::new();
    if let Some(thinking) = &reply.thinking {
        for piece in chunks(thinking, outcome.delta_chars) {
            out.push(chunk(
                parsed,
                outcome,
                vec![json!({"text": piece, "thought": true})],
                false,
            ));
        }
    }
    if let Some(text) = &reply.text {
        for piece in chunks(text, outcome.delta_chars) {
            out.push(chunk(parsed, outcome, vec![json!({"text": piece})], false));
        }
    }
    let calls = call_parts(outcome);
    // Function calls arrive whole, in the final chunk with the finish reason.
    out.push(chunk(parsed, outcome, calls, true));
    out
}

impl Wire for Gemini {
    const PROTOCOL: Protocol = Protocol::Gemini;

    fn parse(
        body: &Value,
        path_model: Option<&str>,
        ctx: &ParseContext<'_>,
    ) -> Result<Parsed, String> {
        let model = path_model.ok_or("model is not specified")?.to_owned();
        if field(body, "cachedContent", "cached_content").is_some() {
            return Err(
                "cachedContent: the cache is resolved by the server before the request is read"
                    .into(),
            );
        }
        let contents = body
            .get("contents")
            .and_then(Value::as_array)
            .ok_or("* GenerateContentRequest.contents: contents is not specified\n")?;
        if contents.is_empty() {
            return Err("* GenerateContentRequest.contents: contents is not specified\n".into());
        }
        let mut builder = PromptBuilder::new(ctx.tokenizer);
        let mut conversation = Conversation::default();
        if let Some(tools) = body.get("tools").and_then(Value::as_array) {
            for tool in tools {
                match field(tool, "functionDeclarations", "function_declarations")
                    .and_then(Value::as_array)
                {
                    Some(declarations) => {
                        for declaration in declarations {
                            let name = declaration
                                .get("name")
                                .and_then(Value::as_str)
                                .ok_or("* GenerateContentRequest.tools[0].function_declarations[0].name: Name cannot be empty.\n")?;
                            // google-genai sends the JSON-schema form snake_case.
                            let schema = declaration
                                .get("parameters")
                                .or_else(|| declaration.get("parametersJsonSchema"))
                                .or_else(|| declaration.get("parameters_json_schema"));
                            conversation.tools.push(DeclaredTool::new(name, schema));
                            builder.push(Chapter::Tools, "tool", &declaration.to_string(), None);
                        }
                    }
                    None => builder.push(Chapter::Tools, "tool", &tool.to_string(), None),
                }
            }
        }
        if let Some(system) = field(body, "systemInstruction", "system_instruction") {
            for part in system
                .get("parts")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                builder.push(Chapter::System, "system", &part.to_string(), None);
            }
        }
        for (i, content) in contents.iter().enumerate() {
            let role = content
                .get("role")
                .and_then(Value::as_str)
                .unwrap_or("user");
            if !matches!(role, "user" | "model" | "function") {
                return Err(format!(
                    "* GenerateContentRequest.contents[{i}].role: Please use a valid role: user, model.\n"
                ));
            }
            if role == "model" {
                conversation.assistant_turns += 1;
            }
            let parts = content
                .get("parts")
                .and_then(Value::as_array)
                .ok_or_else(|| format!("* GenerateContentRequest.contents[{i}].parts: contents.parts must not be empty.\n"))?;
            if parts.is_empty() {
                return Err(format!(
                    "* GenerateContentRequest.contents[{i}].parts: contents.parts must not be empty.\n"
                ));
            }
            for (j, part) in parts.iter().enumerate() {
                if !part.is_object() {
                    return Err(format!(
                        "Invalid JSON payload received. Invalid value at 'contents[{i}].parts[{j}]': expected a Part object.\n"
                    ));
                }
                if let Some(signature) = field(part, "thoughtSignature", "thought_signature") {
                    check_signature(signature).map_err(|bad| {
                        format!(
                            "Invalid value at 'contents[{i}].parts[{j}].thought_signature' (TYPE_BYTES), Base64 decoding failed for {bad}\n"
                        )
                    })?;
                }
                if part.get("thought").and_then(Value::as_bool) == Some(true) {
                    builder.push_uncacheable(Chapter::Messages, role, &part.to_string());
                } else {
                    builder.push(Chapter::Messages, role, &part.to_string(), None);
                }
            }
        }
        conversation.last_user_text = contents
            .last()
            .filter(|c| c.get("role").and_then(Value::as_str).unwrap_or("user") == "user")
            .and_then(|c| super::text_of(c.get("parts"), &[]));
        conversation.user_texts = contents
            .iter()
            .filter(|c| c.get("role").and_then(Value::as_str).unwrap_or("user") == "user")
            .filter_map(|c| super::text_of(c.get("parts"), &[]))
            .collect();
        conversation.system_text = field(body, "systemInstruction", "system_instruction")
            .and_then(|system| super::text_of(system.get("parts"), &[]))
            .unwrap_or_default();
        let max_output_tokens = field(body, "generationConfig", "generation_config")
            .and_then(|config| field(config, "maxOutputTokens", "max_output_tokens"));
        Ok(Parsed {
            model,
            prompt: builder.finish(),
            conversation,
            max_output_tokens: match max_output_tokens {
                None | Some(Value::Null) => None,
                Some(cap) => Some(cap.as_u64().ok_or_else(|| {
                    format!(
                        "Invalid value at 'generation_config.max_output_tokens' (TYPE_INT32), {cap}"
                    )
                })?),
            },
            ..Parsed::default()
        })
    }

    fn respond(parsed: &Parsed, outcome: &Outcome<'_>) -> Value {
        let reply = outcome.reply;
        let mut parts = Vec::new();
        if let Some(thinking) = &reply.thinking {
            parts.push(json!({"text": thinking, "thought": true}));
        }
        if let Some(text) = &reply.text {
            parts.push(json!({"text": text}));
        }
        parts.extend(call_parts(outcome));
        chunk(parsed, outcome, parts, true)
    }

    fn stream(parsed: &Parsed, outcome: &Outcome<'_>) -> Vec<Bytes> {
        stream_chunks(parsed, outcome).iter().map(data).collect()
    }

    fn error(kind: &ErrorKind) -> ErrorResponse {
        let (status, message, status_name) = match kind {
            ErrorKind::BadRequest(message) => {
                (StatusCode::BAD_REQUEST, message.clone(), "INVALID_ARGUMENT")
            }
            ErrorKind::ContextLength { tokens, window } => (
                StatusCode::BAD_REQUEST,
                format!(
                    "The input token count ({tokens}) exceeds the maximum number of tokens allowed ({window})."
                ),
                "INVALID_ARGUMENT",
            ),
            ErrorKind::RateLimit { .. } => (
                StatusCode::TOO_MANY_REQUESTS,
                "Resource has been exhausted (e.g. check quota).".to_owned(),
                "RESOURCE_EXHAUSTED",
            ),
            ErrorKind::Server => (
                StatusCode::INTERNAL_SERVER_ERROR,
                "An internal error has occurred. Please retry.".to_owned(),
                "INTERNAL",
            ),
            ErrorKind::Overloaded => (
                StatusCode::SERVICE_UNAVAILABLE,
                "The model is overloaded. Please try again later.".to_owned(),
                "UNAVAILABLE",
            ),
            ErrorKind::NotFound(message) => (StatusCode::NOT_FOUND, message.clone(), "NOT_FOUND"),
            ErrorKind::TooLarge { limit } => (
                StatusCode::BAD_REQUEST,
                format!("Request payload size exceeds the limit: {limit} bytes."),
                "INVALID_ARGUMENT",
            ),
        };
        let mut error = json!({"code": status.as_u16(), "message": message, "status": status_name});
        if let ErrorKind::RateLimit { retry_after_secs } = kind {
            error["details"] = json!([{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": format!("{retry_after_secs}s")}]);
        }
        (
            status,
            error_headers(kind),
            Bytes::from(json!({"error": error}).to_string()),
        )
    }

    fn stream_error(_index: usize) -> Bytes {
        data(
            &json!({"error": {"code": 503, "message": "The model is overloaded. Please try again later.", "status": "UNAVAILABLE"}}),
        )
    }

    fn malformed() -> Bytes {
        Bytes::from_static(
            b"data: {\"candidates\": [{\"content\": {\"parts\": [{\"text\": \r\n\r\n",
        )
    }
}
