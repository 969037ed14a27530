//! The Messages request body, rendered from a provider-neutral [`Request`].
//!
//! Chapter order is kept (tools → system → messages) so the provider's prefix cache sees the
//! same bytes turn after turn. Breakpoints become `cache_control` markers on the last tool,
//! the last system block and the last cacheable block of a message.
//!
//! In [`Dialect::Pi`] (a session Pi 1.x started) the blocks take Pi 1.6's shapes
//! (`pi-ai` `anthropic-messages`): each tool with `eager_input_streaming` and its schema
//! rebuilt as `type`, `properties`, `required`; a tool result's text as one string with
//! `is_error` always said; blank text left out; thinking with `display`. The cached prefix Pi
//! wrote is then read.

use serde_json::{Map, Value, json};
use strata_provider::{
    Breakpoint, BreakpointPosition, CacheTtl, Capabilities, ContentBlock, Dialect, Message, Model,
    Prewarm, Protocol, ReasoningStyle, Request, Role, ThinkingLevel, ToolDefinition,
    ToolResultContent,
};

/// The `anthropic-version` header value.
pub const ANTHROPIC_VERSION: &str = "2023-06-01";

/// Output cap when neither the request nor the model says (Pi's simple-path ceiling).
const DEFAULT_MAX_TOKENS: u64 = 32_000;

/// The JSON body for `request` to `model`, shaped by `caps`.
pub fn build_body(request: &Request, model: &Model, caps: &Capabilities) -> Value {
    let markers = Markers::new(&request.breakpoints, caps);
    let mut body = Map::new();
    body.insert("model".into(), Value::String(request.model.clone()));

    let dialect = request.dialect;
    let (max_tokens, mut thinking, effort) = thinking_params(request, model, caps);
    // The thinking object is part of the messages' cache identity: Pi asks for summarized
    // thinking, and says "disabled" when a reasoning model's thinking is off.
    if dialect == Dialect::Pi {
        match thinking.as_mut() {
            Some(Value::Object(thinking)) => {
                thinking.insert("display".into(), json!("summarized"));
            }
            _ if model.reasoning && request.thinking == ThinkingLevel::Off => {
                thinking = Some(json!({"type": "disabled"}));
            }
            _ => {}
        }
    }
    // `max_tokens: 0` warms the cache without output (anthropic-python 2.17.0), where the row
    // documents it; elsewhere the fewest tokens the API takes.
    let max_tokens = if max_tokens == 0 && caps.prewarm != Prewarm::ZeroMaxTokens {
        1
    } else {
        max_tokens
    };
    body.insert("max_tokens".into(), json!(max_tokens));
    body.insert("stream".into(), Value::Bool(true));

    if !request.tools.is_empty() {
        let last = request.tools.len() - 1;
        let tools: Vec<Value> = request
            .tools
            .iter()
            .enumerate()
            .map(|(i, t)| {
                let mut tool = tool_json(t, caps, dialect);
                if i == last {
                    markers.attach(&mut tool, Slot::Tools);
                }
                tool
            })
            .collect();
        body.insert("tools".into(), Value::Array(tools));
    }

    if !request.system.is_empty() {
        let last = request.system.len() - 1;
        let system: Vec<Value> = request
            .system
            .iter()
            .enumerate()
            .map(|(i, b)| {
                let mut block = json!({"type": "text", "text": b.text});
                if i == last {
                    markers.attach(&mut block, Slot::System);
                }
                block
            })
            .collect();
        body.insert("system".into(), Value::Array(system));
    }

    body.insert(
        "messages".into(),
        Value::Array(messages_json(request, caps, &markers)),
    );
    if let Some(thinking) = thinking {
        body.insert("thinking".into(), thinking);
    }
    if let Some(effort) = effort {
        body.insert("output_config".into(), json!({ "effort": effort }));
    }
    if let (Some(key), Some(param)) = (request.cache_key.as_ref(), caps.cache_key.as_ref())
        && param.location == strata_provider::ParamLocation::Body
    {
        body.insert(param.name.clone(), Value::String(key.clone()));
    }
    Value::Object(body)
}

/// Whether a `tool_addition` defines its tool inline: the row allows it and the tool is not
/// in the tools chapter (beta `inline-tools-2026-09-15` needed).
pub fn uses_inline_tools(request: &Request, caps: &Capabilities) -> bool {
    caps.inline_tools
        && caps.tool_addition
        && caps.mid_conversation_system
        && request.messages.iter().any(|m| {
            m.role == Role::System
                && m.content.iter().any(|b| match b {
                    ContentBlock::ToolAddition { tools } => {
                        tools.iter().any(|t| !declared(request, &t.name))
                    }
                    _ => false,
                })
        })
}

/// Whether a system message is sent with `clear_at: "next_user_message"` (beta
/// `mid-conversation-system-clear-at-2026-08-21` needed): the request marks one transient and
/// the row has the field.
pub fn uses_clear_at(request: &Request, caps: &Capabilities) -> bool {
    clears(caps)
        && request.transient.iter().any(|&i| {
            request
                .messages
                .get(i)
                .is_some_and(|m| m.role == Role::System)
        })
}

fn clears(caps: &Capabilities) -> bool {
    caps.system_clear_at && caps.mid_conversation_system
}

/// Whether `name` is in the request's tools chapter.
fn declared(request: &Request, name: &str) -> bool {
    request.tools.iter().any(|t| t.name == name)
}

/// Whether the rendered body uses `tool_addition` / `tool_removal` blocks (beta header needed).
pub fn uses_tool_changes(request: &Request, caps: &Capabilities) -> bool {
    request.messages.iter().any(|m| {
        m.role == Role::System
            && m.content.iter().any(|b| match b {
                ContentBlock::ToolAddition { .. } => caps.tool_addition,
                ContentBlock::ToolRemoval { .. } => caps.tool_removal,
                _ => false,
            })
    })
}

fn tool_json(tool: &ToolDefinition, caps: &Capabilities, dialect: Dialect) -> Value {
    if tool.is_tool_search() {
        // The server-side search over the deferred tools (the renderer places it).
        return json!({"type": "tool_search_tool_regex_20251119", "name": "tool_search_tool_regex"});
    }
    let mut v = match dialect {
        Dialect::Strata => json!({
            "name": tool.name,
            "description": tool.description,
            "input_schema": tool.parameters,
        }),
        Dialect::Pi => json!({
            "name": tool.name,
            "description": tool.description,
            "eager_input_streaming": true,
            "input_schema": pi_input_schema(&tool.parameters),
        }),
    };
    if tool.defer_loading && caps.deferred_tools {
        v["defer_loading"] = Value::Bool(true);
    }
    v
}

/// A tool's schema as Pi 1.6 sends it: an object schema rebuilt from its `properties` and
/// `required`, keeping only `additionalProperties` and the shared definitions of the rest.
fn pi_input_schema(parameters: &Value) -> Value {
    let mut schema = Map::new();
    schema.insert("type".into(), json!("object"));
    schema.insert(
        "properties".into(),
        parameters.get("properties").cloned().unwrap_or(json!({})),
    );
    schema.insert(
        "required".into(),
        parameters.get("required").cloned().unwrap_or(json!([])),
    );
    for kept in ["additionalProperties", "$defs", "definitions"] {
        if let Some(value) = parameters.get(kept) {
            schema.insert(kept.into(), value.clone());
        }
    }
    Value::Object(schema)
}

/// The adaptive `effort` for a thinking level (`output_config.effort`, at the request level or
/// on a mid-conversation system message).
pub fn adaptive_effort(level: ThinkingLevel) -> &'static str {
    match level {
        ThinkingLevel::Off | ThinkingLevel::Minimal | ThinkingLevel::Low => "low",
        ThinkingLevel::Medium => "medium",
        ThinkingLevel::High => "high",
        ThinkingLevel::Xhigh => "max",
    }
}

/// `max_tokens`, the `thinking` object and the adaptive `effort`, per the row's reasoning style.
fn thinking_params(
    request: &Request,
    model: &Model,
    caps: &Capabilities,
) -> (u64, Option<Value>, Option<&'static str>) {
    let model_max = if model.max_output > 0 {
        model.max_output
    } else {
        DEFAULT_MAX_TOKENS
    };
    let base = request
        .max_tokens
        .map(u64::from)
        .unwrap_or_else(|| model_max.min(DEFAULT_MAX_TOKENS));
    let level = request.thinking;
    if level == ThinkingLevel::Off || !model.reasoning {
        return (base, None, None);
    }
    match caps.reasoning {
        ReasoningStyle::AnthropicAdaptive => (
            base,
            Some(json!({"type": "adaptive"})),
            Some(adaptive_effort(level)),
        ),
        ReasoningStyle::AnthropicBudget => {
            let Some(budget) = level.default_budget_tokens().map(u64::from) else {
                return (base, None, None);
            };
            // The budget counts against max_tokens and must stay below it (Pi's rule).
            let max_tokens = (base + budget).min(model_max);
            let budget = budget.min(max_tokens.saturating_sub(1024)).max(1024);
            if budget >= max_tokens {
                return (base, None, None);
            }
            (
                max_tokens,
                Some(json!({"type": "enabled", "budget_tokens": budget})),
                None,
            )
        }
        _ => (base, None, None),
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Slot {
    Tools,
    System,
    Message(usize),
}

/// The breakpoints this row honours, each with the TTL it can take.
struct Markers {
    slots: Vec<(Slot, CacheTtl)>,
    send_ttl: bool,
}

impl Markers {
    fn new(breakpoints: &[Breakpoint], caps: &Capabilities) -> Self {
        if !caps.uses_breakpoints() {
            return Self {
                slots: Vec::new(),
                send_ttl: false,
            };
        }
        // Later breakpoints cover more of the prompt: keep the last `max_breakpoints`.
        let max = usize::from(caps.max_breakpoints);
        let skip = breakpoints.len().saturating_sub(max);
        let mut slots = Vec::new();
        let mut seen_short = false;
        for bp in &breakpoints[skip..] {
            let mut ttl = if caps.supports_ttl(bp.ttl) {
                bp.ttl
            } else {
                CacheTtl::FiveMinutes
            };
            // A 1h entry may not follow a 5m one in the same request.
            if ttl == CacheTtl::OneHour && seen_short {
                ttl = CacheTtl::FiveMinutes;
            }
            seen_short |= ttl == CacheTtl::FiveMinutes;
            let slot = match bp.position {
                BreakpointPosition::Tools => Slot::Tools,
                BreakpointPosition::System => Slot::System,
                BreakpointPosition::Message { index } => Slot::Message(index),
            };
            slots.push((slot, ttl));
        }
        Self {
            slots,
            send_ttl: caps.supports_ttl(CacheTtl::OneHour),
        }
    }

    fn ttl(&self, slot: Slot) -> Option<CacheTtl> {
        self.slots.iter().find(|(s, _)| *s == slot).map(|(_, t)| *t)
    }

    fn attach(&self, block: &mut Value, slot: Slot) -> bool {
        let Some(ttl) = self.ttl(slot) else {
            return false;
        };
        let control = if self.send_ttl {
            json!({"type": "ephemeral", "ttl": ttl.as_str()})
        } else {
            json!({"type": "ephemeral"})
        };
        if let Value::Object(map) = block {
            map.insert("cache_control".into(), control);
        }
        true
    }
}

fn api_role(role: Role, caps: &Capabilities) -> &'static str {
    match role {
        Role::User => "user",
        Role::Assistant => "assistant",
        Role::System if caps.mid_conversation_system => "system",
        // Without mid-conversation system messages the patch is read as user input.
        Role::System => "user",
    }
}

fn messages_json(request: &Request, caps: &Capabilities, markers: &Markers) -> Vec<Value> {
    let (messages, dialect) = (&request.messages, request.dialect);
    let mut out: Vec<Value> = Vec::with_capacity(messages.len());
    let mut defined = std::collections::HashSet::new();
    for (index, message) in messages.iter().enumerate() {
        let role = api_role(message.role, caps);
        let mut blocks = if message.role == Role::System {
            system_blocks(message, caps, request, &mut defined)
        } else {
            message
                .content
                .iter()
                .filter_map(|b| block_json(b, message.role, dialect))
                .collect()
        };
        if blocks.is_empty() {
            continue;
        }
        // Breakpoints sit on the last block that can carry one (not thinking).
        if let Some(last) = blocks.iter_mut().rev().find(|b| {
            !matches!(
                b.get("type").and_then(Value::as_str),
                Some("thinking" | "redacted_thinking")
            )
        }) {
            markers.attach(last, Slot::Message(index));
        }
        // A one-turn reminder stays in the array (the prefix holds) and is shown only until
        // the next user message (anthropic-python 2.17.0 `BetaSystemMessageParam.clear_at`).
        if message.role == Role::System && clears(caps) && request.transient.contains(&index) {
            out.push(json!({"role": role, "clear_at": "next_user_message", "content": blocks}));
            continue;
        }
        // The API wants alternating turns: merge into the previous message of the same role.
        if let Some(prev) = out.last_mut()
            && prev.get("role").and_then(Value::as_str) == Some(role)
            && let Some(Value::Array(existing)) = prev.get_mut("content")
        {
            existing.append(&mut blocks);
            continue;
        }
        out.push(json!({"role": role, "content": blocks}));
    }
    out
}

/// A mid-conversation system message's content: `text`, `tool_addition` and `tool_removal`
/// blocks directly (anthropic-sdk-python 2.15.0 `BetaSystemMessageParam`; the
/// `mid_conv_system` wrapper of 0.121–0.122 is gone), or (without that feature) the text
/// blocks alone for a user turn. An added tool the tools chapter does not declare is defined
/// in its block where the row allows it (anthropic-python 2.17.0
/// `BetaToolChangeToolDefinitionParam`: `definition` is what a `tools` entry holds), the
/// first time only: a name is declared once per request, so a tool added again after its
/// removal is referenced (`defined` holds the names defined inline so far).
fn system_blocks(
    message: &Message,
    caps: &Capabilities,
    request: &Request,
    defined: &mut std::collections::HashSet<String>,
) -> Vec<Value> {
    let mut inner = Vec::new();
    for block in &message.content {
        match block {
            ContentBlock::Text { text, .. } if !text.is_empty() => {
                inner.push(json!({"type": "text", "text": text}));
            }
            ContentBlock::ToolAddition { tools } if caps.tool_addition => {
                for t in tools {
                    let tool = if caps.inline_tools
                        && !declared(request, &t.name)
                        && defined.insert(t.name.clone())
                    {
                        let mut definition = tool_json(t, caps, request.dialect);
                        if let Value::Object(fields) = &mut definition {
                            // Offered from here on: nothing to load through a search.
                            fields.remove("defer_loading");
                        }
                        json!({"type": "tool_definition", "definition": definition})
                    } else {
                        json!({"type": "tool_reference", "name": t.name})
                    };
                    inner.push(json!({"type": "tool_addition", "tool": tool}));
                }
            }
            ContentBlock::ToolRemoval { names } if caps.tool_removal => {
                for name in names {
                    inner.push(json!({"type": "tool_removal", "tool": {"type": "tool_reference", "name": name}}));
                }
            }
            _ => {}
        }
    }
    if caps.mid_conversation_system {
        inner
    } else {
        inner
            .into_iter()
            .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
            .collect()
    }
}

fn image_json(media_type: &str, data: &str) -> Value {
    json!({"type": "image", "source": {"type": "base64", "media_type": media_type, "data": data}})
}

fn block_json(block: &ContentBlock, role: Role, dialect: Dialect) -> Option<Value> {
    match block {
        ContentBlock::Text { text, .. } if text.is_empty() => None,
        // Pi leaves out text that is only whitespace.
        ContentBlock::Text { text, .. } if dialect == Dialect::Pi && text.trim().is_empty() => None,
        ContentBlock::Text { text, .. } => Some(json!({"type": "text", "text": text})),
        ContentBlock::Image { media_type, data } => Some(image_json(media_type, data)),
        ContentBlock::Thinking {
            text,
            signature,
            redacted,
        } if role == Role::Assistant => match (signature, redacted) {
            (Some(sig), true) => Some(json!({"type": "redacted_thinking", "data": sig})),
            (Some(sig), false) => {
                Some(json!({"type": "thinking", "thinking": text, "signature": sig}))
            }
            // Thinking without a signature came from another provider: the API would reject it
            // as thinking, so it travels as text.
            (None, _) if !text.is_empty() => Some(json!({"type": "text", "text": text})),
            (None, _) => None,
        },
        // The provider's own tool search (`server_tool_use`, `tool_search_tool_result`): sent
        // back exactly as it came.
        ContentBlock::ProviderItem { api, item }
            if role == Role::Assistant && api == Protocol::AnthropicMessages.as_str() =>
        {
            Some(item.clone())
        }
        ContentBlock::ToolCall {
            id,
            name,
            arguments,
        } if role == Role::Assistant => Some(json!({
            "type": "tool_use",
            "id": id,
            "name": name,
            "input": if arguments.is_object() { arguments.clone() } else { json!({}) },
        })),
        ContentBlock::ToolResult {
            tool_call_id,
            content,
            is_error,
        } if dialect == Dialect::Pi => Some(json!({
            "type": "tool_result",
            "tool_use_id": tool_call_id,
            "content": pi_tool_result_content(content),
            "is_error": is_error,
        })),
        ContentBlock::ToolResult {
            tool_call_id,
            content,
            is_error,
        } => {
            let parts: Vec<Value> = content
                .iter()
                .map(|c| match c {
                    ToolResultContent::Text { text } => json!({"type": "text", "text": text}),
                    ToolResultContent::Image { media_type, data } => image_json(media_type, data),
                })
                .collect();
            let mut v =
                json!({"type": "tool_result", "tool_use_id": tool_call_id, "content": parts});
            if *is_error {
                v["is_error"] = Value::Bool(true);
            }
            Some(v)
        }
        _ => None,
    }
}

/// A tool result's content as Pi 1.6 sends it: text alone as one string (parts joined by a
/// line break); with images, the blocks, led by a placeholder text when there is no text.
fn pi_tool_result_content(content: &[ToolResultContent]) -> Value {
    let has_image = content
        .iter()
        .any(|part| matches!(part, ToolResultContent::Image { .. }));
    if !has_image {
        let texts: Vec<&str> = content
            .iter()
            .filter_map(|part| match part {
                ToolResultContent::Text { text } => Some(text.as_str()),
                ToolResultContent::Image { .. } => None,
            })
            .collect();
        return Value::String(texts.join("\n"));
    }
    let mut blocks: Vec<Value> = content
        .iter()
        .map(|part| match part {
            ToolResultContent::Text { text } => json!({"type": "text", "text": text}),
            ToolResultContent::Image { media_type, data } => image_json(media_type, data),
        })
        .collect();
    if !content
        .iter()
        .any(|part| matches!(part, ToolResultContent::Text { .. }))
    {
        blocks.insert(0, json!({"type": "text", "text": "(see attached image)"}));
    }
    Value::Array(blocks)
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use strata_provider::{CacheStyle, Modality, Prices, SystemBlock};

    fn model(reasoning: bool) -> Model {
        Model {
            provider: "anthropic".into(),
            id: "claude-test".into(),
            name: "Claude Test".into(),
            context_window: 200_000,
            max_output: 64_000,
            input: vec![Modality::Text, Modality::Image],
            reasoning,
            prices: Prices::default(),
        }
    }

    fn caps() -> Capabilities {
        Capabilities {
            cache_style: CacheStyle::ExplicitBreakpoints,
            max_breakpoints: 4,
            ttl_options: vec![CacheTtl::FiveMinutes, CacheTtl::OneHour],
            reasoning: ReasoningStyle::AnthropicBudget,
            ..Capabilities::default()
        }
    }

    fn tool(name: &str) -> ToolDefinition {
        ToolDefinition {
            name: name.into(),
            description: format!("{name} tool"),
            parameters: json!({"type": "object"}),
            defer_loading: false,
        }
    }

    #[test]
    fn breakpoints_land_on_last_tool_system_block_and_message() {
        let mut r = Request::new("claude-test");
        r.tools = vec![tool("read"), tool("bash")];
        r.system = vec![SystemBlock::text("a"), SystemBlock::text("b")];
        r.messages = vec![
            Message::user_text("hi"),
            Message::assistant_text("yo"),
            Message::user_text("go"),
        ];
        r.breakpoints = vec![
            Breakpoint {
                position: BreakpointPosition::Tools,
                ttl: CacheTtl::OneHour,
            },
            Breakpoint {
                position: BreakpointPosition::System,
                ttl: CacheTtl::OneHour,
            },
            Breakpoint {
                position: BreakpointPosition::Message { index: 2 },
                ttl: CacheTtl::FiveMinutes,
            },
        ];
        let body = build_body(&r, &model(false), &caps());
        assert_eq!(body["tools"][0].get("cache_control"), None);
        assert_eq!(
            body["tools"][1]["cache_control"],
            json!({"type": "ephemeral", "ttl": "1h"})
        );
        assert_eq!(body["system"][0].get("cache_control"), None);
        assert_eq!(
            body["system"][1]["cache_control"],
            json!({"type": "ephemeral", "ttl": "1h"})
        );
        assert_eq!(
            body["messages"][2]["content"][0]["cache_control"],
            json!({"type": "ephemeral", "ttl": "5m"})
        );
        assert_eq!(body["messages"][0]["content"][0].get("cache_control"), None);
    }

    /// Pi 1.6's shapes (pi-ai `anthropic-messages`, recorded from Pi 1.6 on strata-mock):
    /// `eager_input_streaming`, the schema as type/properties/required, a text tool result as
    /// one string with `is_error`, no blank text, summarized thinking.
    #[test]
    fn the_pi_dialect_writes_pis_shapes() {
        let mut r = Request::new("claude-test");
        r.dialect = Dialect::Pi;
        r.tools = vec![ToolDefinition {
            name: "read".into(),
            description: "Read a file".into(),
            parameters: json!({"type": "object", "required": ["path"],
                "properties": {"path": {"type": "string"}}, "title": "dropped"}),
            defer_loading: false,
        }];
        r.messages = vec![
            Message::user_text("go"),
            Message {
                role: Role::Assistant,
                content: vec![
                    ContentBlock::text("  "),
                    ContentBlock::ToolCall {
                        id: "c1".into(),
                        name: "read".into(),
                        arguments: json!({"path": "a"}),
                    },
                ],
            },
            Message {
                role: Role::User,
                content: vec![ContentBlock::ToolResult {
                    tool_call_id: "c1".into(),
                    content: vec![
                        ToolResultContent::Text { text: "one".into() },
                        ToolResultContent::Text { text: "two".into() },
                    ],
                    is_error: false,
                }],
            },
        ];
        let body = build_body(&r, &model(false), &caps());
        assert_eq!(
            body["tools"][0].to_string(),
            json!({"name": "read", "description": "Read a file", "eager_input_streaming": true,
                "input_schema": {"type": "object", "properties": {"path": {"type": "string"}},
                    "required": ["path"]}})
            .to_string()
        );
        assert_eq!(
            body["messages"][1]["content"],
            json!([{"type": "tool_use", "id": "c1", "name": "read", "input": {"path": "a"}}])
        );
        assert_eq!(
            body["messages"][2]["content"][0].to_string(),
            json!({"type": "tool_result", "tool_use_id": "c1", "content": "one\ntwo",
                "is_error": false})
            .to_string()
        );
        let image = ContentBlock::ToolResult {
            tool_call_id: "c1".into(),
            content: vec![ToolResultContent::Image {
                media_type: "image/png".into(),
                data: "AAA=".into(),
            }],
            is_error: true,
        };
        assert_eq!(
            block_json(&image, Role::User, Dialect::Pi).unwrap()["content"][0],
            json!({"type": "text", "text": "(see attached image)"})
        );
        r.thinking = ThinkingLevel::Medium;
        let body = build_body(&r, &model(true), &caps());
        assert_eq!(body["thinking"]["display"], json!("summarized"));
        r.thinking = ThinkingLevel::Off;
        let body = build_body(&r, &model(true), &caps());
        assert_eq!(body["thinking"], json!({"type": "disabled"}));
        // strata's own dialect is unchanged.
        r.dialect = Dialect::Strata;
        let body = build_body(&r, &model(true), &caps());
        assert_eq!(body.get("thinking"), None);
        assert_eq!(body["tools"][0].get("eager_input_streaming"), None);
    }

    #[test]
    fn at_most_max_breakpoints_and_no_1h_after_5m() {
        let mut r = Request::new("m");
        r.messages = (0..6)
            .map(|i| Message::user_text(format!("m{i}")))
            .collect();
        r.breakpoints = (0..6)
            .map(|i| Breakpoint {
                position: BreakpointPosition::Message { index: i },
                ttl: if i == 3 {
                    CacheTtl::FiveMinutes
                } else {
                    CacheTtl::OneHour
                },
            })
            .collect();
        let body = build_body(&r, &model(false), &caps());
        // Consecutive user messages merge into one turn.
        let blocks = body["messages"][0]["content"].as_array().unwrap();
        let marked: Vec<(usize, &str)> = blocks
            .iter()
            .enumerate()
            .filter_map(|(i, b)| {
                b.get("cache_control")
                    .map(|c| (i, c["ttl"].as_str().unwrap()))
            })
            .collect();
        assert_eq!(marked, vec![(2, "1h"), (3, "5m"), (4, "5m"), (5, "5m")]);
    }

    #[test]
    fn no_markers_for_automatic_caches() {
        let mut r = Request::new("m");
        r.system = vec![SystemBlock::text("s")];
        r.breakpoints = vec![Breakpoint {
            position: BreakpointPosition::System,
            ttl: CacheTtl::FiveMinutes,
        }];
        let c = Capabilities {
            cache_style: CacheStyle::AutomaticPrefix,
            ..caps()
        };
        assert!(
            !build_body(&r, &model(false), &c)
                .to_string()
                .contains("cache_control")
        );
    }

    #[test]
    fn thinking_budget_and_adaptive() {
        let mut r = Request::new("m");
        r.thinking = ThinkingLevel::Medium;
        let body = build_body(&r, &model(true), &caps());
        assert_eq!(
            body["thinking"],
            json!({"type": "enabled", "budget_tokens": 8192})
        );
        assert_eq!(body["max_tokens"], json!(32_000 + 8192));
        let adaptive = Capabilities {
            reasoning: ReasoningStyle::AnthropicAdaptive,
            ..caps()
        };
        let body = build_body(&r, &model(true), &adaptive);
        assert_eq!(body["thinking"], json!({"type": "adaptive"}));
        assert_eq!(body["output_config"], json!({"effort": "medium"}));
        r.thinking = ThinkingLevel::Off;
        assert_eq!(build_body(&r, &model(true), &caps()).get("thinking"), None);
    }

    #[test]
    fn a_zero_cap_warms_without_output_only_where_the_row_says_so() {
        let mut r = Request::new("m");
        r.max_tokens = Some(0);
        let warming = Capabilities {
            prewarm: Prewarm::ZeroMaxTokens,
            ..caps()
        };
        assert_eq!(build_body(&r, &model(false), &warming)["max_tokens"], 0);
        assert_eq!(build_body(&r, &model(false), &caps())["max_tokens"], 1);
    }

    #[test]
    fn mid_conversation_system_and_tool_changes_follow_the_row() {
        let mut r = Request::new("m");
        r.messages = vec![
            Message::user_text("hi"),
            Message {
                role: Role::System,
                content: vec![
                    ContentBlock::text("now also grep"),
                    ContentBlock::ToolAddition {
                        tools: vec![tool("grep")],
                    },
                    ContentBlock::ToolRemoval {
                        names: vec!["bash".into()],
                    },
                ],
            },
        ];
        let full = Capabilities {
            mid_conversation_system: true,
            tool_addition: true,
            tool_removal: true,
            ..caps()
        };
        let body = build_body(&r, &model(false), &full);
        assert_eq!(
            body["messages"][1],
            json!({"role": "system", "content": [
                {"type": "text", "text": "now also grep"},
                {"type": "tool_addition", "tool": {"type": "tool_reference", "name": "grep"}},
                {"type": "tool_removal", "tool": {"type": "tool_reference", "name": "bash"}},
            ]})
        );
        assert!(uses_tool_changes(&r, &full));
        let body = build_body(&r, &model(false), &caps());
        assert_eq!(
            body["messages"].as_array().unwrap().len(),
            1,
            "folded into the user turn"
        );
        assert_eq!(
            body["messages"][0]["content"][1],
            json!({"type": "text", "text": "now also grep"})
        );
        assert!(!uses_tool_changes(&r, &caps()));
    }

    #[test]
    fn assistant_history_keeps_signatures_and_tool_results_go_in_user_turns() {
        let mut r = Request::new("m");
        r.messages = vec![
            Message::user_text("hi"),
            Message {
                role: Role::Assistant,
                content: vec![
                    ContentBlock::Thinking {
                        text: "t".into(),
                        signature: Some("sig".into()),
                        redacted: false,
                    },
                    ContentBlock::Thinking {
                        text: String::new(),
                        signature: Some("enc".into()),
                        redacted: true,
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
                content: vec![ContentBlock::ToolResult {
                    tool_call_id: "c1".into(),
                    content: vec![
                        ToolResultContent::Text { text: "ok".into() },
                        ToolResultContent::Image {
                            media_type: "image/png".into(),
                            data: "AAA=".into(),
                        },
                    ],
                    is_error: true,
                }],
            },
        ];
        r.breakpoints = vec![Breakpoint {
            position: BreakpointPosition::Message { index: 1 },
            ttl: CacheTtl::FiveMinutes,
        }];
        let body = build_body(&r, &model(false), &caps());
        assert_eq!(
            body["messages"][1]["content"],
            json!([
                {"type": "thinking", "thinking": "t", "signature": "sig"},
                {"type": "redacted_thinking", "data": "enc"},
                {"type": "tool_use", "id": "c1", "name": "read", "input": {"path": "a"},
                 "cache_control": {"type": "ephemeral", "ttl": "5m"}},
            ])
        );
        assert_eq!(
            body["messages"][2]["content"][0],
            json!({"type": "tool_result", "tool_use_id": "c1", "is_error": true, "content": [
                {"type": "text", "text": "ok"},
                {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AAA="}},
            ]})
        );
    }

    /// A turn that searches with the provider's tool search and then calls the tool found, as
    /// the Messages stream sends it (anthropic-sdk-python 2.15.0 block shapes).
    fn tool_search_stream() -> Vec<String> {
        let frame = |value: Value| {
            let kind = value["type"].as_str().unwrap().to_owned();
            format!("event: {kind}\ndata: {value}\n\n")
        };
        let result = json!({"type": "tool_search_tool_result", "tool_use_id": "srvtoolu_1",
            "content": {"type": "tool_search_tool_search_result",
                "tool_references": [{"type": "tool_reference", "tool_name": "mcp__everything__echo"}]}});
        vec![
            frame(
                json!({"type": "message_start", "message": {"id": "msg_1", "model": "claude-test",
                "usage": {"input_tokens": 10, "output_tokens": 1}}}),
            ),
            frame(
                json!({"type": "content_block_start", "index": 0, "content_block": {
                "type": "server_tool_use", "id": "srvtoolu_1", "name": "tool_search_tool_regex", "input": {}}}),
            ),
            frame(json!({"type": "content_block_delta", "index": 0, "delta": {
                "type": "input_json_delta", "partial_json": "{\"query\": \"ec"}})),
            frame(json!({"type": "content_block_delta", "index": 0, "delta": {
                "type": "input_json_delta", "partial_json": "ho\"}"}})),
            frame(json!({"type": "content_block_stop", "index": 0})),
            frame(json!({"type": "content_block_start", "index": 1, "content_block": result})),
            frame(json!({"type": "content_block_stop", "index": 1})),
            frame(
                json!({"type": "content_block_start", "index": 2, "content_block": {
                "type": "tool_use", "id": "toolu_1", "name": "mcp__everything__echo", "input": {}}}),
            ),
            frame(json!({"type": "content_block_delta", "index": 2, "delta": {
                "type": "input_json_delta", "partial_json": "{\"message\": \"hi\"}"}})),
            frame(json!({"type": "content_block_stop", "index": 2})),
            frame(
                json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"},
                "usage": {"output_tokens": 30}}),
            ),
            frame(json!({"type": "message_stop"})),
        ]
    }

    #[test]
    fn tool_search_blocks_are_kept_and_the_next_request_extends_the_last() {
        let mut driver =
            strata_provider::transport::StreamDriver::sse(crate::stream::AnthropicParser::new());
        let mut out = Vec::new();
        for frame in tool_search_stream() {
            driver.feed(frame.as_bytes(), &mut out);
        }
        driver.end(&mut out);
        let Some(strata_provider::Event::Done { message, .. }) = out.pop() else {
            panic!("no Done");
        };
        assert_eq!(
            message.content[0],
            ContentBlock::ProviderItem {
                api: "anthropic-messages".into(),
                item: json!({"type": "server_tool_use", "id": "srvtoolu_1",
                    "name": "tool_search_tool_regex", "input": {"query": "echo"}}),
            }
        );
        assert!(
            matches!(&message.content[1], ContentBlock::ProviderItem { item, .. }
            if item["type"] == "tool_search_tool_result")
        );
        assert!(
            matches!(&message.content[2], ContentBlock::ToolCall { name, .. }
            if name == "mcp__everything__echo")
        );

        let mut c = caps();
        c.deferred_tools = true;
        let mut request = Request::new("claude-test");
        request.tools.push(ToolDefinition::tool_search());
        let mut echo = tool("mcp__everything__echo");
        echo.defer_loading = true;
        request.tools.push(echo);
        request.messages.push(Message::user_text("echo hi"));
        let before = build_body(&request, &model(false), &c);
        request.messages.push(message.clone());
        request.messages.push(Message {
            role: Role::User,
            content: vec![ContentBlock::ToolResult {
                tool_call_id: "toolu_1".into(),
                content: vec![ToolResultContent::Text { text: "hi".into() }],
                is_error: false,
            }],
        });
        let after = build_body(&request, &model(false), &c);
        let (mut rest_before, mut rest_after) = (before.clone(), after.clone());
        let messages_before = rest_before["messages"].take();
        let messages_after = rest_after["messages"].take();
        assert_eq!(rest_before, rest_after);
        let (messages_before, messages_after) = (
            messages_before.as_array().unwrap(),
            messages_after.as_array().unwrap(),
        );
        assert_eq!(
            &messages_after[..messages_before.len()],
            &messages_before[..]
        );
        // The search's blocks go back as they came, before the call.
        let replayed = &messages_after[messages_before.len()]["content"];
        let ContentBlock::ProviderItem { item: first, .. } = &message.content[0] else {
            unreachable!()
        };
        let ContentBlock::ProviderItem { item: second, .. } = &message.content[1] else {
            unreachable!()
        };
        assert_eq!(replayed[0].to_string(), first.to_string());
        assert_eq!(replayed[1].to_string(), second.to_string());
        assert_eq!(replayed[2]["type"], json!("tool_use"));
        // An OpenAI item in the history is not sent to Anthropic.
        request.messages.push(Message {
            role: Role::Assistant,
            content: vec![ContentBlock::ProviderItem {
                api: "openai-responses".into(),
                item: json!({"type": "tool_search_call"}),
            }],
        });
        let foreign = build_body(&request, &model(false), &c);
        let last = foreign["messages"].as_array().unwrap().last().cloned();
        assert!(
            !last
                .map(|m| m.to_string())
                .unwrap_or_default()
                .contains("tool_search_call"),
            "{foreign}"
        );
    }
}
