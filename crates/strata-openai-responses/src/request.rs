//! Rendered [`Request`] → Responses `POST /responses` body.
//!
//! A session Pi 1.x started ([`Dialect::Pi`]) takes Pi 1.6's input items (`crate::pi`), no
//! `tool_choice` or `parallel_tool_calls` (Pi sends neither), and `reasoning.effort: "none"`
//! for a reasoning model whose thinking is off, as Pi asks.

use serde_json::{Map, Value, json};
use strata_provider::{
    BreakpointPosition, CacheTtl, Capabilities, ContentBlock, Dialect, Message, Model,
    ParamLocation, Prewarm, Protocol, ReasoningStyle, Request, Role, ThinkingLevel, ToolDefinition,
    ToolResultContent,
};

/// Where the system chapter goes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum SystemPlacement {
    /// A first input item with the row's system role (`developer` or `system`).
    #[default]
    Message,
    /// The top-level `instructions` field (required by the ChatGPT-plan Codex endpoint).
    Instructions,
}

/// The body plus the headers that carry request data (a header-located cache key).
#[derive(Debug, Clone, PartialEq)]
pub struct BuiltRequest {
    /// JSON body.
    pub body: Value,
    /// Extra headers derived from the request.
    pub headers: Vec<(String, String)>,
}

/// The smallest `max_output_tokens` the Responses API accepts.
const MIN_MAX_OUTPUT_TOKENS: u64 = 16;

/// Builds the body for `request` to `model` with the row's capabilities.
///
/// `cache_key` is the routing key (the session id); it goes where `caps.cache_key` says.
pub fn build_request(
    model: &Model,
    request: &Request,
    caps: &Capabilities,
    placement: SystemPlacement,
    cache_key: Option<&str>,
) -> BuiltRequest {
    let mut body = Map::new();
    let mut headers = Vec::new();
    body.insert("model".into(), json!(request.model));

    let explicit = caps.uses_breakpoints();
    let mut input: Vec<Value> = Vec::new();
    let system_text = request.system_text();
    let system_breakpoint = explicit
        && request
            .breakpoints
            .iter()
            .any(|b| b.position == BreakpointPosition::System);
    let pi = request.dialect == Dialect::Pi;
    match placement {
        SystemPlacement::Message if pi => {}
        SystemPlacement::Instructions => {
            if !system_text.is_empty() {
                body.insert("instructions".into(), json!(system_text));
            }
        }
        SystemPlacement::Message => {
            if !request.system.is_empty() {
                let mut parts: Vec<Value> = request
                    .system
                    .iter()
                    .map(|b| json!({"type": "input_text", "text": b.text}))
                    .collect();
                if system_breakpoint && let Some(last) = parts.last_mut() {
                    last["prompt_cache_breakpoint"] = json!({"mode": "explicit"});
                }
                input.push(json!({"role": caps.system_role.as_str(), "content": parts}));
            }
        }
    }

    if pi {
        input.extend(crate::pi::input(
            request,
            model,
            caps,
            placement == SystemPlacement::Message,
        ));
    } else {
        for (i, message) in request.messages.iter().enumerate() {
            let first_item = input.len();
            push_message(&mut input, message, caps);
            let marked = explicit
                && request
                    .breakpoints
                    .iter()
                    .any(|b| b.position == BreakpointPosition::Message { index: i });
            if marked {
                mark_last_text_part(&mut input[first_item..]);
            }
        }
    }
    body.insert("input".into(), Value::Array(input));

    if !request.tools.is_empty() {
        // The renderer's stand-in for the provider's tool search is left out: the hosted
        // `tool_search` goes where it stood, before the first deferred tool (below).
        // A tool added mid-session in an `additional_tools` item is declared there only.
        let inline = if caps.additional_tools && !pi {
            added_inline(request)
        } else {
            Vec::new()
        };
        let declared: Vec<&ToolDefinition> = request
            .tools
            .iter()
            .filter(|t| !t.is_tool_search() && !inline.contains(&t.name.as_str()))
            .collect();
        let mut tools: Vec<Value> = declared
            .iter()
            .map(|t| {
                let mut tool = function_tool(t, caps);
                if t.defer_loading && caps.deferred_tools {
                    tool["defer_loading"] = json!(true);
                }
                tool
            })
            .collect();
        // Deferred functions are searchable only with the hosted `tool_search` tool in the
        // array. It goes just before the first deferred tool: the placeholder, declared from
        // the chain's first request, so the array's prefix never moves.
        let first_deferred = declared
            .iter()
            .position(|t| t.defer_loading && caps.deferred_tools);
        if let Some(at) = first_deferred {
            tools.insert(at, json!({"type": "tool_search"}));
        }
        body.insert("tools".into(), Value::Array(tools));
        if !pi {
            body.insert("tool_choice".into(), json!("auto"));
            body.insert("parallel_tool_calls".into(), json!(true));
        }
    }

    let reasoning = caps.reasoning == ReasoningStyle::OpenaiEffort
        && model.reasoning
        && request.thinking != ThinkingLevel::Off;
    if reasoning {
        body.insert(
            "reasoning".into(),
            json!({"effort": request.thinking.as_str(), "summary": "auto"}),
        );
        // With store:false the reasoning comes back encrypted so it can be replayed.
        body.insert("include".into(), json!(["reasoning.encrypted_content"]));
    } else if pi && caps.reasoning == ReasoningStyle::OpenaiEffort && model.reasoning {
        // The effort is part of the cache's identity: Pi says "none" for thinking off.
        body.insert("reasoning".into(), json!({"effort": "none"}));
    }

    // A zero cap is a warm-up: `prompt_cache_options.prewarm` "prepares the prompt cache
    // without generating output" (openai-python 3.63.0) where the row has it.
    let prewarm = request.max_tokens == Some(0) && caps.prewarm == Prewarm::PromptCacheOptions;
    if prewarm {
        // No output to cap.
    } else if let Some(max) = request
        .max_tokens
        .map(u64::from)
        .or((model.max_output > 0).then_some(model.max_output))
    {
        // The API refuses a cap below 16 ("integer below minimum value"); a keep-warm ping
        // asks for one token.
        body.insert(
            "max_output_tokens".into(),
            json!(max.max(MIN_MAX_OUTPUT_TOKENS)),
        );
    }

    if let (Some(key), Some(param)) = (cache_key, &caps.cache_key) {
        match param.location {
            ParamLocation::Body => {
                body.insert(param.name.clone(), json!(key));
            }
            ParamLocation::Header => headers.push((param.name.clone(), key.to_owned())),
        }
    }
    let longest = request.breakpoints.iter().map(|b| b.ttl).max();
    if longest == Some(CacheTtl::TwentyFourHours) && caps.supports_ttl(CacheTtl::TwentyFourHours) {
        body.insert("prompt_cache_retention".into(), json!("24h"));
    } else if longest == Some(CacheTtl::FiveMinutes)
        && caps.supports_ttl(CacheTtl::FiveMinutes)
        && caps.supports_ttl(CacheTtl::TwentyFourHours)
    {
        // Left out, the retention defaults to 24h for most organisations (openai-python's
        // `prompt_cache_retention` doc): a row offering both must name the short one.
        body.insert("prompt_cache_retention".into(), json!("in_memory"));
    }
    if explicit && caps.supports_ttl(CacheTtl::ThirtyMinutes) && !request.breakpoints.is_empty() {
        body.insert("prompt_cache_options".into(), json!({"ttl": "30m"}));
    }
    if prewarm {
        let options = body
            .entry("prompt_cache_options")
            .or_insert_with(|| json!({}));
        if let Some(options) = options.as_object_mut() {
            options.insert("prewarm".into(), json!(true));
        }
    }
    if caps.wire.supports_store {
        body.insert("store".into(), json!(false));
    }
    body.insert("stream".into(), json!(true));
    BuiltRequest {
        body: Value::Object(body),
        headers,
    }
}

fn input_image(media_type: &str, data: &str) -> Value {
    json!({"type": "input_image", "detail": "auto", "image_url": format!("data:{media_type};base64,{data}")})
}

fn push_message(input: &mut Vec<Value>, message: &Message, caps: &Capabilities) {
    match message.role {
        Role::User => {
            let mut parts = Vec::new();
            let flush = |input: &mut Vec<Value>, parts: &mut Vec<Value>| {
                if !parts.is_empty() {
                    input.push(json!({"role": "user", "content": std::mem::take(parts)}));
                }
            };
            for block in &message.content {
                match block {
                    ContentBlock::Text { text, .. } => {
                        parts.push(json!({"type": "input_text", "text": text}));
                    }
                    ContentBlock::Image { media_type, data } => {
                        parts.push(input_image(media_type, data));
                    }
                    ContentBlock::ToolResult {
                        tool_call_id,
                        content,
                        is_error: _,
                    } => {
                        flush(input, &mut parts);
                        input.push(json!({
                            "type": "function_call_output",
                            "call_id": tool_call_id,
                            "output": tool_output(content, caps.uses_breakpoints()),
                        }));
                    }
                    other => text_fallback(other, &mut parts, "input_text"),
                }
            }
            flush(input, &mut parts);
        }
        Role::Assistant => {
            let mut parts = Vec::new();
            // A replayed assistant message is an output message item: openai-python 3.57.0's
            // `ResponseOutputMessageParam` requires `id` and `status`. The id is the item's
            // position in the input, so the same history always sends the same bytes.
            let flush = |input: &mut Vec<Value>, parts: &mut Vec<Value>| {
                if !parts.is_empty() {
                    input.push(json!({
                        "type": "message",
                        "role": "assistant",
                        "content": std::mem::take(parts),
                        "status": "completed",
                        "id": format!("msg_strata_{}", input.len()),
                    }));
                }
            };
            for block in &message.content {
                match block {
                    ContentBlock::Text { text, .. } => {
                        if !text.is_empty() {
                            parts.push(
                                json!({"type": "output_text", "text": text, "annotations": []}),
                            );
                        }
                    }
                    ContentBlock::Thinking { signature, .. } => {
                        // Only an encrypted reasoning item can be replayed with store:false;
                        // it is sent back exactly as it came.
                        if let Some(item) = signature
                            .as_deref()
                            .and_then(|s| serde_json::from_str::<Value>(s).ok())
                            .filter(|v| {
                                v.get("type").and_then(Value::as_str) == Some("reasoning")
                                    && v.get("encrypted_content").is_some_and(Value::is_string)
                            })
                        {
                            flush(input, &mut parts);
                            input.push(item);
                        }
                    }
                    ContentBlock::ToolCall {
                        id,
                        name,
                        arguments,
                    } => {
                        flush(input, &mut parts);
                        let arguments = match arguments {
                            Value::String(raw) => raw.clone(),
                            other => other.to_string(),
                        };
                        input.push(json!({
                            "type": "function_call",
                            "call_id": id,
                            "name": name,
                            "arguments": arguments,
                        }));
                    }
                    ContentBlock::ProviderItem { api, item }
                        if api == Protocol::OpenaiResponses.as_str() =>
                    {
                        // A hosted tool search's call or output: sent back exactly as it came.
                        flush(input, &mut parts);
                        input.push(item.clone());
                    }
                    other => text_fallback(other, &mut parts, "output_text"),
                }
            }
            flush(input, &mut parts);
        }
        Role::System => {
            let mut parts = Vec::new();
            let mut added = Vec::new();
            for block in &message.content {
                match block {
                    ContentBlock::ToolAddition { tools } if caps.additional_tools => {
                        added.extend(tools.iter().map(|t| function_tool(t, caps)));
                    }
                    other => text_fallback(other, &mut parts, "input_text"),
                }
            }
            if !parts.is_empty() {
                input.push(json!({"role": caps.system_role.as_str(), "content": parts}));
            }
            if !added.is_empty() {
                // Where the tools arrived; the `tools` array, the prompt's head, is untouched
                // (the documented `additional_tools` item; Pi 1.x `supportsAdditionalTools`).
                input
                    .push(json!({"type": "additional_tools", "role": "developer", "tools": added}));
            }
        }
    }
}

/// A function tool as the Responses API declares it, loaded (no `defer_loading`).
fn function_tool(t: &ToolDefinition, caps: &Capabilities) -> Value {
    let mut tool = json!({
        "type": "function",
        "name": t.name,
        "description": t.description,
        "parameters": t.parameters,
    });
    if caps.wire.supports_strict_mode {
        tool["strict"] = json!(false);
    }
    tool
}

/// The names of the tools the request's system messages add mid-session.
fn added_inline(request: &Request) -> Vec<&str> {
    request
        .messages
        .iter()
        .filter(|m| m.role == Role::System)
        .flat_map(|m| &m.content)
        .filter_map(|block| match block {
            ContentBlock::ToolAddition { tools } => Some(tools),
            _ => None,
        })
        .flatten()
        .map(|t| t.name.as_str())
        .collect()
}

/// Blocks with no Responses form of their own, as text (tool changes say what changed).
fn text_fallback(block: &ContentBlock, parts: &mut Vec<Value>, kind: &str) {
    let text = match block {
        ContentBlock::Text { text, .. } => text.clone(),
        ContentBlock::ToolAddition { tools } => {
            let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
            format!("Tools now available: {}.", names.join(", "))
        }
        ContentBlock::ToolRemoval { names } => {
            format!("Tools no longer available: {}.", names.join(", "))
        }
        ContentBlock::Image { media_type, data } if kind == "input_text" => {
            parts.push(input_image(media_type, data));
            return;
        }
        _ => return,
    };
    if !text.is_empty() {
        parts.push(json!({"type": kind, "text": text}));
    }
}

/// A tool's output: one string when it is all text, else a list of parts. On rows with
/// explicit breakpoints it is always a list, so a breakpoint can sit on its last text part
/// (`ResponseInputTextContentParam.prompt_cache_breakpoint`) and the item's bytes stay the
/// same whether or not it carries one.
fn tool_output(content: &[ToolResultContent], as_parts: bool) -> Value {
    let has_image = content
        .iter()
        .any(|c| matches!(c, ToolResultContent::Image { .. }));
    if !has_image && !as_parts {
        let text: Vec<&str> = content
            .iter()
            .map(|c| match c {
                ToolResultContent::Text { text } => text.as_str(),
                ToolResultContent::Image { .. } => "",
            })
            .collect();
        return json!(text.join("\n"));
    }
    Value::Array(
        content
            .iter()
            .map(|c| match c {
                ToolResultContent::Text { text } => json!({"type": "input_text", "text": text}),
                ToolResultContent::Image { media_type, data } => input_image(media_type, data),
            })
            .collect(),
    )
}

/// Puts a breakpoint on the last `input_text` part of `items`: in a message's `content` or
/// in a `function_call_output`'s `output` list (a tool result is often the last item).
fn mark_last_text_part(items: &mut [Value]) {
    for item in items.iter_mut().rev() {
        let parts = match item.get("type").and_then(Value::as_str) {
            Some("function_call_output") => item.get_mut("output"),
            _ => item.get_mut("content"),
        };
        if let Some(parts) = parts.and_then(Value::as_array_mut)
            && let Some(part) = parts
                .iter_mut()
                .rev()
                .find(|p| p.get("type").and_then(Value::as_str) == Some("input_text"))
        {
            part["prompt_cache_breakpoint"] = json!({"mode": "explicit"});
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use strata_provider::transport::StreamDriver;
    use strata_provider::{
        Breakpoint, CacheKeyParam, Modality, Prices, SystemBlock, SystemRole, ToolDefinition,
    };

    fn model(reasoning: bool) -> Model {
        Model {
            provider: "openai".into(),
            id: "gpt-5.2".into(),
            name: "GPT-5.2".into(),
            context_window: 400_000,
            max_output: 128_000,
            input: vec![Modality::Text, Modality::Image],
            reasoning,
            prices: Prices::default(),
        }
    }

    fn caps() -> Capabilities {
        let mut caps = Capabilities {
            reasoning: ReasoningStyle::OpenaiEffort,
            system_role: SystemRole::Developer,
            cache_key: Some(CacheKeyParam {
                location: ParamLocation::Body,
                name: "prompt_cache_key".into(),
            }),
            ..Capabilities::default()
        };
        caps.wire.supports_store = true;
        caps
    }

    #[test]
    fn conversation_with_tools_reasoning_and_cache_key() {
        let mut request = Request::new("gpt-5.2");
        request.system.push(SystemBlock::text("You are strata."));
        request.tools.push(ToolDefinition {
            name: "read".into(),
            description: "Read a file".into(),
            parameters: json!({"type": "object"}),
            defer_loading: false,
        });
        request.thinking = ThinkingLevel::High;
        request.max_tokens = Some(4096);
        request.messages.push(Message::user_text("read a"));
        let reasoning_item =
            json!({"type":"reasoning","id":"rs_1","summary":[],"encrypted_content":"enc"});
        request.messages.push(Message {
            role: Role::Assistant,
            content: vec![
                ContentBlock::Thinking {
                    text: "hm".into(),
                    signature: Some(reasoning_item.to_string()),
                    redacted: false,
                },
                ContentBlock::ToolCall {
                    id: "call_1".into(),
                    name: "read".into(),
                    arguments: json!({"path": "a"}),
                },
            ],
        });
        request.messages.push(Message {
            role: Role::User,
            content: vec![ContentBlock::ToolResult {
                tool_call_id: "call_1".into(),
                content: vec![ToolResultContent::Text { text: "A".into() }],
                is_error: false,
            }],
        });
        request.messages.push(Message::system_text("Be brief."));
        let built = build_request(
            &model(true),
            &request,
            &caps(),
            SystemPlacement::Message,
            Some("sess-1"),
        );
        assert_eq!(
            built.body,
            json!({
                "model": "gpt-5.2",
                "input": [
                    {"role": "developer", "content": [{"type": "input_text", "text": "You are strata."}]},
                    {"role": "user", "content": [{"type": "input_text", "text": "read a"}]},
                    reasoning_item,
                    {"type": "function_call", "call_id": "call_1", "name": "read", "arguments": "{\"path\":\"a\"}"},
                    {"type": "function_call_output", "call_id": "call_1", "output": "A"},
                    {"role": "developer", "content": [{"type": "input_text", "text": "Be brief."}]},
                ],
                "tools": [{"type": "function", "name": "read", "description": "Read a file", "parameters": {"type": "object"}}],
                "tool_choice": "auto",
                "parallel_tool_calls": true,
                "reasoning": {"effort": "high", "summary": "auto"},
                "include": ["reasoning.encrypted_content"],
                "max_output_tokens": 4096,
                "prompt_cache_key": "sess-1",
                "store": false,
                "stream": true,
            })
        );
    }

    #[test]
    fn instructions_placement_and_explicit_breakpoints() {
        let mut request = Request::new("gpt-5.6");
        request.system.push(SystemBlock::text("sys"));
        request.messages.push(Message::user_text("hi"));
        request.breakpoints.push(Breakpoint {
            position: BreakpointPosition::Message { index: 0 },
            ttl: CacheTtl::ThirtyMinutes,
        });
        let mut c = caps();
        c.cache_style = strata_provider::CacheStyle::ExplicitBreakpoints;
        c.max_breakpoints = 4;
        c.ttl_options = vec![CacheTtl::ThirtyMinutes];
        let built = build_request(
            &model(false),
            &request,
            &c,
            SystemPlacement::Instructions,
            None,
        );
        assert_eq!(built.body["instructions"], json!("sys"));
        assert_eq!(
            built.body["input"][0]["content"][0]["prompt_cache_breakpoint"],
            json!({"mode": "explicit"})
        );
        assert_eq!(built.body["prompt_cache_options"], json!({"ttl": "30m"}));
        assert!(built.body.get("reasoning").is_none());
        assert!(built.body.get("prompt_cache_key").is_none());
    }

    #[test]
    fn short_retention_on_a_row_offering_both_lifetimes_names_in_memory() {
        let mut request = Request::new("gpt-5.2");
        request.messages.push(Message::user_text("hi"));
        let mut c = caps();
        c.cache_style = strata_provider::CacheStyle::AutomaticPrefix;
        c.ttl_options = vec![CacheTtl::FiveMinutes, CacheTtl::TwentyFourHours];
        let with_ttl = |c: &Capabilities, ttl| {
            let mut request = request.clone();
            request.breakpoints.push(Breakpoint {
                position: BreakpointPosition::Message { index: 0 },
                ttl,
            });
            build_request(&model(false), &request, c, SystemPlacement::Message, None).body
        };
        assert_eq!(
            with_ttl(&c, CacheTtl::FiveMinutes)["prompt_cache_retention"],
            json!("in_memory")
        );
        assert_eq!(
            with_ttl(&c, CacheTtl::TwentyFourHours)["prompt_cache_retention"],
            json!("24h")
        );
        // A row with only the short lifetime (Azure) has nothing to choose between.
        c.ttl_options = vec![CacheTtl::FiveMinutes];
        let only_short = with_ttl(&c, CacheTtl::FiveMinutes);
        assert!(only_short.get("prompt_cache_retention").is_none());
    }

    #[test]
    fn the_end_breakpoint_lands_on_a_trailing_function_call_output() {
        let mut request = Request::new("gpt-5.6");
        request.messages.push(Message::user_text("read a"));
        request.messages.push(Message {
            role: Role::Assistant,
            content: vec![ContentBlock::ToolCall {
                id: "call_1".into(),
                name: "read".into(),
                arguments: json!({"path": "a"}),
            }],
        });
        request.messages.push(Message {
            role: Role::User,
            content: vec![ContentBlock::ToolResult {
                tool_call_id: "call_1".into(),
                content: vec![ToolResultContent::Text { text: "A".into() }],
                is_error: false,
            }],
        });
        request.breakpoints.push(Breakpoint {
            position: BreakpointPosition::Message { index: 2 },
            ttl: CacheTtl::ThirtyMinutes,
        });
        let mut c = caps();
        c.cache_style = strata_provider::CacheStyle::ExplicitBreakpoints;
        c.max_breakpoints = 4;
        c.ttl_options = vec![CacheTtl::ThirtyMinutes];
        let built = build_request(&model(false), &request, &c, SystemPlacement::Message, None);
        let last = &built.body["input"][2];
        assert_eq!(last["type"], json!("function_call_output"));
        assert_eq!(
            last["output"],
            json!([{"type": "input_text", "text": "A",
                    "prompt_cache_breakpoint": {"mode": "explicit"}}])
        );
        // The next turn sends the same output without the marker: the same list shape, so
        // the item's bytes differ only by the breakpoint.
        request.breakpoints.clear();
        let next = build_request(&model(false), &request, &c, SystemPlacement::Message, None);
        assert_eq!(
            next.body["input"][2]["output"],
            json!([{"type": "input_text", "text": "A"}])
        );
    }

    #[test]
    fn unencrypted_reasoning_is_not_replayed_and_images_are_data_urls() {
        let mut request = Request::new("gpt-5.2");
        request.messages.push(Message {
            role: Role::User,
            content: vec![
                ContentBlock::text("see"),
                ContentBlock::Image {
                    media_type: "image/png".into(),
                    data: "AAAA".into(),
                },
            ],
        });
        request.messages.push(Message {
            role: Role::Assistant,
            content: vec![
                ContentBlock::Thinking {
                    text: "x".into(),
                    signature: None,
                    redacted: false,
                },
                ContentBlock::text("ok"),
            ],
        });
        let built = build_request(
            &model(true),
            &request,
            &caps(),
            SystemPlacement::Message,
            None,
        );
        let input = built.body["input"].as_array().unwrap();
        assert_eq!(input.len(), 2);
        assert_eq!(
            input[0]["content"][1]["image_url"],
            json!("data:image/png;base64,AAAA")
        );
        assert_eq!(input[1]["content"][0]["type"], json!("output_text"));
        // `ResponseOutputMessageParam` requires both (openai-python 3.57.0).
        assert_eq!(input[1]["status"], json!("completed"));
        assert_eq!(input[1]["id"], json!("msg_strata_1"));
    }

    #[test]
    fn header_cache_key_goes_to_headers() {
        let mut c = caps();
        c.cache_key = Some(CacheKeyParam {
            location: ParamLocation::Header,
            name: "x-session".into(),
        });
        let built = build_request(
            &model(false),
            &Request::new("m"),
            &c,
            SystemPlacement::Message,
            Some("k"),
        );
        assert_eq!(
            built.headers,
            vec![("x-session".to_owned(), "k".to_owned())]
        );
    }

    #[test]
    fn deferred_tools_bring_the_hosted_tool_search_just_before_the_first_of_them() {
        let tool = |name: &str, defer_loading: bool| ToolDefinition {
            name: name.into(),
            description: format!("{name} tool"),
            parameters: json!({"type": "object"}),
            defer_loading,
        };
        let mut request = Request::new("gpt-5.5");
        request.messages.push(Message::user_text("hi"));
        request.tools = vec![
            tool("read", false),
            tool("bash", false),
            tool("__placeholder__", true),
            tool("grep", true),
        ];
        let mut c = caps();
        c.deferred_tools = true;
        let built = build_request(&model(true), &request, &c, SystemPlacement::Message, None);
        let kinds: Vec<String> = built.body["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| {
                t["name"]
                    .as_str()
                    .unwrap_or(t["type"].as_str().unwrap())
                    .to_owned()
            })
            .collect();
        assert_eq!(
            kinds,
            ["read", "bash", "tool_search", "__placeholder__", "grep"]
        );
        assert_eq!(built.body["tools"][4]["defer_loading"], json!(true));

        // A row without deferred tools sends every tool loaded and no search tool.
        let built = build_request(
            &model(true),
            &request,
            &caps(),
            SystemPlacement::Message,
            None,
        );
        let tools = built.body["tools"].as_array().unwrap();
        assert_eq!(tools.len(), 4);
        assert!(
            tools
                .iter()
                .all(|t| t["type"] == "function" && t.get("defer_loading").is_none())
        );
    }

    /// One hosted tool search then a call, as the Responses stream sends it (shapes of
    /// openai-python 3.57.0: `ResponseToolSearchCall`, `ResponseToolSearchOutputItem`).
    fn hosted_search_stream() -> Vec<String> {
        let call = json!({"type": "tool_search_call", "id": "tsc_1", "call_id": null,
            "execution": "server", "status": "completed", "arguments": {"query": "echo"}});
        let output = json!({"type": "tool_search_output", "id": "tso_1", "call_id": null,
            "execution": "server", "status": "completed", "tools": [{"type": "function",
            "name": "mcp__everything__echo", "description": "Echoes back the input",
            "parameters": {"type": "object", "properties": {"message": {"type": "string"}}},
            "strict": false, "defer_loading": true}]});
        let function = json!({"type": "function_call", "id": "fc_1", "call_id": "call_1",
            "name": "mcp__everything__echo", "arguments": "{\"message\":\"hi\"}", "status": "completed"});
        let frame = |value: Value| {
            let kind = value["type"].as_str().unwrap().to_owned();
            format!("event: {kind}\ndata: {value}\n\n")
        };
        let mut frames = vec![frame(json!({"type": "response.created",
            "response": {"id": "resp_1", "model": "gpt-5.5"}}))];
        for (n, item) in [call, output, function].into_iter().enumerate() {
            frames.push(frame(
                json!({"type": "response.output_item.added", "output_index": n, "item": item}),
            ));
            frames.push(frame(
                json!({"type": "response.output_item.done", "output_index": n, "item": item}),
            ));
        }
        frames.push(frame(
            json!({"type": "response.completed", "response": {"id": "resp_1",
            "usage": {"input_tokens": 10, "output_tokens": 5}}}),
        ));
        frames
    }

    fn assistant_of(frames: &[String]) -> Message {
        let mut driver = StreamDriver::sse(crate::ResponsesParser::new());
        let mut out = Vec::new();
        for frame in frames {
            driver.feed(frame.as_bytes(), &mut out);
        }
        driver.end(&mut out);
        match out.pop() {
            Some(strata_provider::Event::Done { message, .. }) => message,
            other => panic!("no Done: {other:?}"),
        }
    }

    #[test]
    fn hosted_tool_search_items_are_kept_and_the_next_request_extends_the_last() {
        let frames = hosted_search_stream();
        let assistant = assistant_of(&frames);
        let kinds: Vec<String> = assistant
            .content
            .iter()
            .map(|block| match block {
                ContentBlock::ProviderItem { item, .. } => item["type"].as_str().unwrap().into(),
                ContentBlock::ToolCall { name, .. } => format!("call {name}"),
                other => panic!("unexpected block {other:?}"),
            })
            .collect();
        assert_eq!(
            kinds,
            [
                "tool_search_call",
                "tool_search_output",
                "call mcp__everything__echo"
            ]
        );

        let mut c = caps();
        c.deferred_tools = true;
        let mut request = Request::new("gpt-5.5");
        request.tools.push(ToolDefinition {
            name: "mcp__everything__echo".into(),
            description: "Echoes back the input".into(),
            parameters: json!({"type": "object", "properties": {"message": {"type": "string"}}}),
            defer_loading: true,
        });
        request.messages.push(Message::user_text("echo hi"));
        let before = build_request(&model(true), &request, &c, SystemPlacement::Message, None);
        request.messages.push(assistant);
        request.messages.push(Message {
            role: Role::User,
            content: vec![ContentBlock::ToolResult {
                tool_call_id: "call_1".into(),
                content: vec![ToolResultContent::Text { text: "hi".into() }],
                is_error: false,
            }],
        });
        let after = build_request(&model(true), &request, &c, SystemPlacement::Message, None);

        // Everything but the input is the same, and the input only grows at its end.
        let mut rest_before = before.body.clone();
        let mut rest_after = after.body.clone();
        let input_before = rest_before["input"].take();
        let input_after = rest_after["input"].take();
        assert_eq!(rest_before, rest_after);
        let (input_before, input_after) = (
            input_before.as_array().unwrap(),
            input_after.as_array().unwrap(),
        );
        assert_eq!(&input_after[..input_before.len()], &input_before[..]);
        // The search's items go back byte for byte as the stream sent them, in order.
        let sent: Vec<String> = frames
            .iter()
            .filter(|f| f.starts_with("event: response.output_item.done"))
            .map(|f| {
                let data = f.split_once("data: ").unwrap().1.trim();
                serde_json::from_str::<Value>(data).unwrap()["item"].to_string()
            })
            .take(2)
            .collect();
        let replayed: Vec<String> = input_after[input_before.len()..input_before.len() + 2]
            .iter()
            .map(Value::to_string)
            .collect();
        assert_eq!(replayed, sent);
        assert_eq!(
            input_after[input_before.len() + 2]["type"],
            json!("function_call")
        );
        // Another provider's request carries none of it.
        let foreign = ContentBlock::ProviderItem {
            api: "anthropic-messages".into(),
            item: json!({"type": "tool_search_tool_result"}),
        };
        request.messages.push(Message {
            role: Role::Assistant,
            content: vec![foreign],
        });
        let with_foreign =
            build_request(&model(true), &request, &c, SystemPlacement::Message, None);
        assert_eq!(with_foreign.body["input"], after.body["input"]);
    }
}
