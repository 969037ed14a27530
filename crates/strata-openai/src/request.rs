//! The Chat Completions body, rendered from a provider-neutral [`Request`].
//!
//! A session Pi 1.x started ([`Dialect::Pi`]) takes Pi 1.6's messages (`crate::pi`); the
//! rest of the body is the row's, as for strata's own sessions.

use std::collections::HashMap;

use serde_json::{Map, Value, json};
use strata_provider::{
    BreakpointPosition, CacheTtl, Capabilities, ContentBlock, Dialect, Message, Model,
    ParamLocation, ReasoningStyle, Request, Role, ThinkingLevel, ToolResultContent,
};

/// Output cap when neither the request nor the model says.
const DEFAULT_MAX_TOKENS: u64 = 32_000;

/// What the assistant says between a tool result and the next user turn, for servers that
/// require an assistant message there (`requires_assistant_after_tool_result`).
const TOOL_RESULTS_ACK: &str = "I have processed the tool results.";

/// The JSON body for `request` to `model`, shaped by `caps`.
pub fn build_body(request: &Request, model: &Model, caps: &Capabilities) -> Value {
    let markers = Markers::new(request, caps);
    let mut body = Map::new();
    body.insert("model".into(), Value::String(request.model.clone()));
    let messages = match request.dialect {
        Dialect::Strata => messages_json(request, caps, &markers),
        Dialect::Pi => crate::pi::messages(request, model, caps),
    };
    body.insert("messages".into(), Value::Array(messages));
    if !request.tools.is_empty() {
        let last = request.tools.len() - 1;
        let tools = request
            .tools
            .iter()
            .enumerate()
            .map(|(i, t)| {
                let mut function = json!({
                    "name": t.name,
                    "description": t.description,
                    "parameters": t.parameters,
                });
                if caps.wire.supports_strict_mode {
                    function["strict"] = Value::Bool(false);
                }
                let mut tool = json!({"type": "function", "function": function});
                if i == last {
                    markers.attach_object(&mut tool, Slot::Tools);
                }
                tool
            })
            .collect();
        body.insert("tools".into(), Value::Array(tools));
    }
    body.insert("stream".into(), Value::Bool(true));
    if caps.wire.supports_usage_in_streaming {
        body.insert("stream_options".into(), json!({"include_usage": true}));
    }
    let model_max = if model.max_output > 0 {
        model.max_output
    } else {
        DEFAULT_MAX_TOKENS
    };
    let max_tokens = request
        .max_tokens
        .map(u64::from)
        .unwrap_or_else(|| model_max.min(DEFAULT_MAX_TOKENS));
    body.insert(caps.wire.max_tokens_field.clone(), json!(max_tokens));
    if model.reasoning {
        reasoning_params(&mut body, request.thinking, caps.reasoning);
    }
    if let (Some(key), Some(param)) = (request.cache_key.as_ref(), caps.cache_key.as_ref())
        && param.location == ParamLocation::Body
    {
        body.insert(param.name.clone(), Value::String(key.clone()));
    }
    if caps.wire.supports_store {
        body.insert("store".into(), Value::Bool(false));
    }
    Value::Object(body)
}

fn effort(level: ThinkingLevel) -> &'static str {
    match level {
        ThinkingLevel::Off | ThinkingLevel::Minimal => "minimal",
        ThinkingLevel::Low => "low",
        ThinkingLevel::Medium => "medium",
        ThinkingLevel::High | ThinkingLevel::Xhigh => "high",
    }
}

/// The row's reasoning parameter for `level`.
fn reasoning_params(body: &mut Map<String, Value>, level: ThinkingLevel, style: ReasoningStyle) {
    let on = level != ThinkingLevel::Off;
    match style {
        ReasoningStyle::OpenaiEffort if on => {
            body.insert("reasoning_effort".into(), json!(effort(level)));
        }
        ReasoningStyle::ReasoningObject => {
            let value = if on {
                json!({"effort": effort(level)})
            } else {
                json!({"enabled": false})
            };
            body.insert("reasoning".into(), value);
        }
        ReasoningStyle::ThinkingToggle => {
            let kind = if on { "enabled" } else { "disabled" };
            body.insert("thinking".into(), json!({ "type": kind }));
        }
        ReasoningStyle::EnableThinking => {
            body.insert("enable_thinking".into(), Value::Bool(on));
            if let Some(budget) = level.default_budget_tokens() {
                body.insert("thinking_budget".into(), json!(budget));
            }
        }
        _ => {}
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Slot {
    Tools,
    System,
    Message(usize),
}

/// Explicit `cache_control` markers, for rows with explicit breakpoints (OpenRouter's
/// Anthropic models, DashScope); empty for automatic caches.
struct Markers {
    slots: Vec<(Slot, CacheTtl)>,
    send_ttl: bool,
}

impl Markers {
    fn new(request: &Request, caps: &Capabilities) -> Self {
        if !caps.uses_breakpoints() {
            return Self {
                slots: Vec::new(),
                send_ttl: false,
            };
        }
        let skip = request
            .breakpoints
            .len()
            .saturating_sub(usize::from(caps.max_breakpoints));
        let slots = request.breakpoints[skip..]
            .iter()
            .map(|bp| {
                let slot = match bp.position {
                    BreakpointPosition::Tools => Slot::Tools,
                    BreakpointPosition::System => Slot::System,
                    BreakpointPosition::Message { index } => Slot::Message(index),
                };
                let ttl = if caps.supports_ttl(bp.ttl) {
                    bp.ttl
                } else {
                    CacheTtl::FiveMinutes
                };
                (slot, ttl)
            })
            .collect();
        Self {
            slots,
            send_ttl: caps.supports_ttl(CacheTtl::OneHour),
        }
    }

    fn control(&self, slot: Slot) -> Option<Value> {
        let (_, ttl) = self.slots.iter().find(|(s, _)| *s == slot)?;
        Some(if self.send_ttl {
            json!({"type": "ephemeral", "ttl": ttl.as_str()})
        } else {
            json!({"type": "ephemeral"})
        })
    }

    fn attach_object(&self, value: &mut Value, slot: Slot) {
        if let (Some(control), Value::Object(map)) = (self.control(slot), value) {
            map.insert("cache_control".into(), control);
        }
    }

    /// Content as a string, or as parts with the marker on the last part.
    fn content(&self, parts: Vec<Value>, slot: Slot) -> Value {
        match self.control(slot) {
            None => simplify(parts),
            Some(control) => {
                let mut parts = parts;
                if let Some(Value::Object(last)) = parts.last_mut() {
                    last.insert("cache_control".into(), control);
                }
                Value::Array(parts)
            }
        }
    }
}

/// A lone text part becomes a plain string (what every compatible server accepts).
fn simplify(parts: Vec<Value>) -> Value {
    if let [only] = parts.as_slice()
        && only.get("type").and_then(Value::as_str) == Some("text")
        && let Some(text) = only.get("text")
    {
        return text.clone();
    }
    Value::Array(parts)
}

fn text_part(text: &str) -> Value {
    json!({"type": "text", "text": text})
}

fn image_part(media_type: &str, data: &str) -> Value {
    json!({"type": "image_url", "image_url": {"url": format!("data:{media_type};base64,{data}")}})
}

fn messages_json(request: &Request, caps: &Capabilities, markers: &Markers) -> Vec<Value> {
    let system_role = caps.system_role.as_str();
    let mut out = Vec::with_capacity(request.messages.len() + 1);
    if !request.system.is_empty() {
        let parts = vec![text_part(&request.system_text())];
        out.push(json!({"role": system_role, "content": markers.content(parts, Slot::System)}));
    }
    let mut tool_names: HashMap<&str, &str> = HashMap::new();
    for (index, message) in request.messages.iter().enumerate() {
        let slot = Slot::Message(index);
        match message.role {
            Role::System => {
                let text = message.joined_text();
                if text.is_empty() {
                    continue;
                }
                // Without mid-conversation system messages the patch is read as user input.
                let role = if caps.mid_conversation_system {
                    system_role
                } else {
                    "user"
                };
                out.push(
                    json!({"role": role, "content": markers.content(vec![text_part(&text)], slot)}),
                );
            }
            Role::User => user_messages(message, caps, markers, slot, &tool_names, &mut out),
            Role::Assistant => {
                for (id, name, _) in message.tool_calls() {
                    tool_names.insert(id, name);
                }
                if let Some(m) = assistant_message(message, caps, markers, slot) {
                    out.push(m);
                }
            }
        }
    }
    out
}

/// A user message: its tool results as `role: tool` messages (images from them follow in a
/// user message, since tool messages carry text only), then its own text and images.
fn user_messages(
    message: &Message,
    caps: &Capabilities,
    markers: &Markers,
    slot: Slot,
    tool_names: &HashMap<&str, &str>,
    out: &mut Vec<Value>,
) {
    let mut parts = Vec::new();
    let mut result_images = Vec::new();
    let mut results: Vec<Value> = Vec::new();
    for block in &message.content {
        match block {
            ContentBlock::Text { text, .. } if !text.is_empty() => parts.push(text_part(text)),
            ContentBlock::Image { media_type, data } => parts.push(image_part(media_type, data)),
            ContentBlock::ToolResult {
                tool_call_id,
                content,
                is_error,
            } => {
                let mut text = String::new();
                for c in content {
                    match c {
                        ToolResultContent::Text { text: t } => {
                            if !text.is_empty() {
                                text.push('\n');
                            }
                            text.push_str(t);
                        }
                        ToolResultContent::Image { media_type, data } => {
                            result_images.push(image_part(media_type, data));
                        }
                    }
                }
                if *is_error && !text.starts_with("Error") {
                    text.insert_str(0, "Error: ");
                }
                let mut m = json!({"role": "tool", "tool_call_id": tool_call_id, "content": text});
                if caps.wire.requires_tool_result_name
                    && let Some(name) = tool_names.get(tool_call_id.as_str())
                {
                    m["name"] = json!(name);
                }
                results.push(m);
            }
            _ => {}
        }
    }
    let has_results = !results.is_empty();
    let parts_empty = parts.is_empty() && result_images.is_empty();
    if parts_empty && let Some(last) = results.last_mut() {
        // The breakpoint goes on the last thing this message produced.
        if let Some(control) = markers.control(slot) {
            last["content"] =
                json!([{"type": "text", "text": last["content"], "cache_control": control}]);
        }
    }
    out.extend(results);
    if !result_images.is_empty() {
        let mut images = vec![text_part("Attached image(s) from tool result:")];
        images.append(&mut result_images);
        parts.splice(0..0, images);
    }
    if parts.is_empty() {
        return;
    }
    if has_results && caps.wire.requires_assistant_after_tool_result {
        out.push(json!({"role": "assistant", "content": TOOL_RESULTS_ACK}));
    }
    out.push(json!({"role": "user", "content": markers.content(parts, slot)}));
}

fn assistant_message(
    message: &Message,
    caps: &Capabilities,
    markers: &Markers,
    slot: Slot,
) -> Option<Value> {
    let mut text = message.joined_text();
    let mut reasoning = String::new();
    let mut calls = Vec::new();
    for block in &message.content {
        match block {
            ContentBlock::Thinking {
                text: t,
                redacted: false,
                ..
            } => reasoning.push_str(t),
            ContentBlock::ToolCall {
                id,
                name,
                arguments,
            } => calls.push(json!({
                "id": id,
                "type": "function",
                "function": {"name": name, "arguments": arguments.to_string()},
            })),
            _ => {}
        }
    }
    if caps.wire.requires_thinking_as_text && !reasoning.is_empty() {
        text = format!("{reasoning}\n\n{text}");
        reasoning.clear();
    }
    if text.is_empty() && calls.is_empty() && reasoning.is_empty() {
        return None;
    }
    let mut m = Map::new();
    m.insert("role".into(), json!("assistant"));
    let content = if text.is_empty() {
        Value::Null
    } else {
        markers.content(vec![text_part(&text)], slot)
    };
    m.insert("content".into(), content);
    if caps.wire.requires_reasoning_content {
        // DeepSeek wants the reasoning back on assistant turns with tool calls.
        m.insert("reasoning_content".into(), json!(reasoning));
    }
    if !calls.is_empty() {
        m.insert("tool_calls".into(), Value::Array(calls));
    }
    Some(Value::Object(m))
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use strata_provider::{
        Breakpoint, CacheStyle, Modality, Prices, SystemBlock, SystemRole, ToolDefinition,
        WireQuirks,
    };

    fn model() -> Model {
        Model {
            provider: "p".into(),
            id: "m".into(),
            name: "m".into(),
            context_window: 128_000,
            max_output: 8192,
            input: vec![Modality::Text, Modality::Image],
            reasoning: true,
            prices: Prices::default(),
        }
    }

    fn conversation() -> Request {
        let mut r = Request::new("m");
        r.system = vec![SystemBlock::text("sys")];
        r.tools = vec![ToolDefinition {
            name: "read".into(),
            description: "Read".into(),
            parameters: json!({"type": "object"}),
            defer_loading: false,
        }];
        r.messages = vec![
            Message::user_text("hi"),
            Message {
                role: Role::Assistant,
                content: vec![
                    ContentBlock::Thinking {
                        text: "think".into(),
                        signature: None,
                        redacted: false,
                    },
                    ContentBlock::ToolCall {
                        id: "c1".into(),
                        name: "read".into(),
                        arguments: json!({"path": "a"}),
                    },
                ],
            },
            Message {
                role: Role::User,
                content: vec![
                    ContentBlock::ToolResult {
                        tool_call_id: "c1".into(),
                        content: vec![
                            ToolResultContent::Text {
                                text: "file".into(),
                            },
                            ToolResultContent::Image {
                                media_type: "image/png".into(),
                                data: "QQ==".into(),
                            },
                        ],
                        is_error: false,
                    },
                    ContentBlock::text("and now?"),
                ],
            },
        ];
        r
    }

    #[test]
    fn a_plain_openai_body() {
        let caps = Capabilities {
            reasoning: ReasoningStyle::OpenaiEffort,
            system_role: SystemRole::Developer,
            ..Capabilities::default()
        };
        let mut r = conversation();
        r.thinking = ThinkingLevel::High;
        let body = build_body(&r, &model(), &caps);
        assert_eq!(
            body,
            json!({
                "model": "m",
                "messages": [
                    {"role": "developer", "content": "sys"},
                    {"role": "user", "content": "hi"},
                    {"role": "assistant", "content": null, "tool_calls": [
                        {"id": "c1", "type": "function", "function": {"name": "read", "arguments": "{\"path\":\"a\"}"}}
                    ]},
                    {"role": "tool", "tool_call_id": "c1", "content": "file"},
                    {"role": "user", "content": [
                        {"type": "text", "text": "Attached image(s) from tool result:"},
                        {"type": "image_url", "image_url": {"url": "data:image/png;base64,QQ=="}},
                        {"type": "text", "text": "and now?"},
                    ]},
                ],
                "tools": [{"type": "function", "function": {"name": "read", "description": "Read", "parameters": {"type": "object"}}}],
                "stream": true,
                "stream_options": {"include_usage": true},
                "max_completion_tokens": 8192,
                "reasoning_effort": "high",
            })
        );
    }

    #[test]
    fn separate_text_blocks_do_not_run_together() {
        let caps = Capabilities {
            mid_conversation_system: true,
            ..Capabilities::default()
        };
        let mut r = Request::new("m");
        r.messages = vec![
            Message::user_text("hi"),
            Message {
                role: Role::System,
                content: vec![
                    ContentBlock::text("Edit a file."),
                    ContentBlock::text("Tool update: grep is available."),
                ],
            },
            Message {
                role: Role::Assistant,
                content: vec![
                    ContentBlock::text("Before answering."),
                    ContentBlock::text("Let me read the file."),
                ],
            },
        ];
        let body = build_body(&r, &model(), &caps);
        assert_eq!(
            body["messages"][1]["content"],
            "Edit a file.\n\nTool update: grep is available."
        );
        assert_eq!(
            body["messages"][2]["content"],
            "Before answering.\n\nLet me read the file."
        );
    }

    #[test]
    fn deepseek_style_quirks() {
        let caps = Capabilities {
            reasoning: ReasoningStyle::ThinkingToggle,
            wire: WireQuirks {
                max_tokens_field: "max_tokens".into(),
                requires_reasoning_content: true,
                requires_tool_result_name: true,
                requires_assistant_after_tool_result: true,
                ..WireQuirks::default()
            },
            ..Capabilities::default()
        };
        let mut r = conversation();
        r.cache_key = Some("sess-1".into());
        let body = build_body(&r, &model(), &caps);
        assert_eq!(body["max_tokens"], 8192);
        assert_eq!(body.get("max_completion_tokens"), None);
        assert_eq!(body["thinking"], json!({"type": "disabled"}));
        assert_eq!(body["messages"][2]["reasoning_content"], "think");
        assert_eq!(body["messages"][3]["name"], "read");
        assert_eq!(
            body["messages"][4],
            json!({"role": "assistant", "content": TOOL_RESULTS_ACK})
        );
        assert_eq!(
            body.get("prompt_cache_key"),
            None,
            "no cache key parameter in this row"
        );
    }

    #[test]
    fn explicit_breakpoints_become_cache_control_parts_and_cache_keys_go_in_the_body() {
        let caps = Capabilities {
            cache_style: CacheStyle::ExplicitBreakpoints,
            max_breakpoints: 4,
            ttl_options: vec![CacheTtl::FiveMinutes],
            cache_key: Some(strata_provider::CacheKeyParam {
                location: ParamLocation::Body,
                name: "prompt_cache_key".into(),
            }),
            ..Capabilities::default()
        };
        let mut r = conversation();
        r.cache_key = Some("sess-1".into());
        r.breakpoints = vec![
            Breakpoint {
                position: BreakpointPosition::Tools,
                ttl: CacheTtl::OneHour,
            },
            Breakpoint {
                position: BreakpointPosition::System,
                ttl: CacheTtl::FiveMinutes,
            },
            Breakpoint {
                position: BreakpointPosition::Message { index: 0 },
                ttl: CacheTtl::FiveMinutes,
            },
        ];
        let body = build_body(&r, &model(), &caps);
        assert_eq!(body["prompt_cache_key"], "sess-1");
        assert_eq!(
            body["tools"][0]["cache_control"],
            json!({"type": "ephemeral"})
        );
        assert_eq!(
            body["messages"][0]["content"],
            json!([{"type": "text", "text": "sys", "cache_control": {"type": "ephemeral"}}])
        );
        assert_eq!(
            body["messages"][1]["content"],
            json!([{"type": "text", "text": "hi", "cache_control": {"type": "ephemeral"}}])
        );
    }

    #[test]
    fn reasoning_styles() {
        let body = |style, level| {
            let mut r = Request::new("m");
            r.thinking = level;
            let caps = Capabilities {
                reasoning: style,
                ..Capabilities::default()
            };
            build_body(&r, &model(), &caps)
        };
        assert_eq!(
            body(ReasoningStyle::ReasoningObject, ThinkingLevel::Low)["reasoning"],
            json!({"effort": "low"})
        );
        assert_eq!(
            body(ReasoningStyle::EnableThinking, ThinkingLevel::Medium)["thinking_budget"],
            8192
        );
        assert_eq!(
            body(ReasoningStyle::EnableThinking, ThinkingLevel::Off)["enable_thinking"],
            false
        );
        assert_eq!(
            body(ReasoningStyle::OpenaiEffort, ThinkingLevel::Off).get("reasoning_effort"),
            None
        );
        assert_eq!(
            body(ReasoningStyle::AlwaysOn, ThinkingLevel::High).get("reasoning_effort"),
            None
        );
    }
}
