//! Rendered [`Request`] → Converse body (`system`, `messages`, `toolConfig`,
//! `inferenceConfig`, `additionalModelRequestFields`), with `cachePoint` blocks.

use serde_json::{Map, Value, json};
use strata_provider::{
    BreakpointPosition, CacheTtl, Capabilities, ContentBlock, Model, ReasoningStyle, Request, Role,
    ThinkingLevel, ToolResultContent,
};

/// Builds the ConverseStream body for `request` to `model`.
///
/// Breakpoints become `cachePoint` blocks (with `ttl` only for the 1-hour lifetime) when the
/// capabilities say the model uses them. A mid-conversation system message is a `role:
/// "system"` message where the row has them (`mid_conversation_system`), its tool changes
/// `toolAddition` / `toolRemoval` blocks naming tools of the tool configuration; elsewhere it is
/// sent as user text. Consecutive messages of one role are merged because Converse requires
/// alternation.
pub fn build_body(model: &Model, request: &Request, caps: &Capabilities) -> Value {
    let breakpoints = caps.uses_breakpoints();
    let cache_point = |position: BreakpointPosition| -> Option<Value> {
        if !breakpoints {
            return None;
        }
        let bp = request
            .breakpoints
            .iter()
            .find(|b| b.position == position)?;
        let mut point = json!({"type": "default"});
        if bp.ttl == CacheTtl::OneHour && caps.supports_ttl(CacheTtl::OneHour) {
            point["ttl"] = json!("1h");
        }
        Some(json!({"cachePoint": point}))
    };
    let mut body = Map::new();

    let mut messages: Vec<Value> = Vec::new();
    for (i, message) in request.messages.iter().enumerate() {
        let role = match message.role {
            Role::Assistant => "assistant",
            Role::System if caps.mid_conversation_system => "system",
            Role::User | Role::System => "user",
        };
        let mut content = blocks(message.role, &message.content, caps);
        if let Some(point) = cache_point(BreakpointPosition::Message { index: i }) {
            content.push(point);
        }
        if content.is_empty() {
            continue;
        }
        match messages.last_mut() {
            Some(last) if last["role"] == role => {
                if let Some(existing) = last["content"].as_array_mut() {
                    existing.extend(content);
                }
            }
            _ => messages.push(json!({"role": role, "content": content})),
        }
    }
    body.insert("messages".into(), Value::Array(messages));

    if !request.system.is_empty() {
        let mut system: Vec<Value> = request
            .system
            .iter()
            .map(|b| json!({"text": b.text}))
            .collect();
        system.extend(cache_point(BreakpointPosition::System));
        body.insert("system".into(), Value::Array(system));
    }

    if !request.tools.is_empty() {
        let mut tools: Vec<Value> = request
            .tools
            .iter()
            .map(|t| {
                json!({"toolSpec": {
                    "name": t.name,
                    "description": t.description,
                    "inputSchema": {"json": t.parameters},
                }})
            })
            .collect();
        tools.extend(cache_point(BreakpointPosition::Tools));
        body.insert("toolConfig".into(), json!({"tools": tools}));
    }

    let max_tokens = request
        .max_tokens
        .map(u64::from)
        .or((model.max_output > 0).then_some(model.max_output));
    if let Some(max) = max_tokens {
        body.insert("inferenceConfig".into(), json!({"maxTokens": max}));
    }

    if model.reasoning && request.thinking != ThinkingLevel::Off {
        let fields = match caps.reasoning {
            ReasoningStyle::AnthropicBudget => request.thinking.default_budget_tokens().map(|b| {
                // The budget must stay below the output cap.
                let budget =
                    max_tokens.map_or(u64::from(b), |m| u64::from(b).min(m.saturating_sub(1)));
                json!({"thinking": {"type": "enabled", "budget_tokens": budget}})
            }),
            ReasoningStyle::AnthropicAdaptive => {
                let effort = match request.thinking {
                    ThinkingLevel::Off | ThinkingLevel::Minimal | ThinkingLevel::Low => "low",
                    ThinkingLevel::Medium => "medium",
                    ThinkingLevel::High | ThinkingLevel::Xhigh => "high",
                };
                Some(json!({"thinking": {"type": "adaptive"}, "output_config": {"effort": effort}}))
            }
            _ => None,
        };
        if let Some(fields) = fields {
            body.insert("additionalModelRequestFields".into(), fields);
        }
    }
    Value::Object(body)
}

fn image(media_type: &str, data: &str) -> Value {
    let format = media_type.strip_prefix("image/").unwrap_or(media_type);
    let format = if format == "jpg" { "jpeg" } else { format };
    json!({"image": {"format": format, "source": {"bytes": data}}})
}

fn blocks(role: Role, content: &[ContentBlock], caps: &Capabilities) -> Vec<Value> {
    // Tool changes are blocks only inside a system-role message.
    let in_system = role == Role::System && caps.mid_conversation_system;
    let mut out = Vec::new();
    for block in content {
        match block {
            ContentBlock::Text { text, .. } => {
                if !text.trim().is_empty() {
                    out.push(json!({"text": text}));
                }
            }
            ContentBlock::Image { media_type, data } => out.push(image(media_type, data)),
            ContentBlock::Thinking {
                text,
                signature,
                redacted,
            } => {
                if role != Role::Assistant {
                    continue;
                }
                // Unsigned reasoning cannot be replayed; Converse would reject it.
                match (signature, redacted) {
                    (Some(sig), true) => {
                        out.push(json!({"reasoningContent": {"redactedContent": sig}}));
                    }
                    (Some(sig), false) => out.push(json!({"reasoningContent": {
                        "reasoningText": {"text": text, "signature": sig}
                    }})),
                    (None, _) => {}
                }
            }
            ContentBlock::ToolCall {
                id,
                name,
                arguments,
            } => {
                let input = match arguments {
                    Value::Object(_) => arguments.clone(),
                    Value::Null => json!({}),
                    other => json!({"value": other}),
                };
                out.push(json!({"toolUse": {"toolUseId": id, "name": name, "input": input}}));
            }
            ContentBlock::ToolResult {
                tool_call_id,
                content,
                is_error,
            } => {
                let mut parts: Vec<Value> = content
                    .iter()
                    .map(|c| match c {
                        ToolResultContent::Text { text } => json!({"text": text}),
                        ToolResultContent::Image { media_type, data } => image(media_type, data),
                    })
                    .collect();
                if parts.is_empty() {
                    parts.push(json!({"text": ""}));
                }
                out.push(json!({"toolResult": {
                    "toolUseId": tool_call_id,
                    "content": parts,
                    "status": if *is_error { "error" } else { "success" },
                }}));
            }
            ContentBlock::ToolAddition { tools } if in_system && caps.tool_addition => {
                out.extend(
                    tools
                        .iter()
                        .map(|t| json!({"toolAddition": {"tool": {"name": t.name}}})),
                );
            }
            ContentBlock::ToolRemoval { names } if in_system && caps.tool_removal => {
                out.extend(
                    names
                        .iter()
                        .map(|name| json!({"toolRemoval": {"tool": {"name": name}}})),
                );
            }
            ContentBlock::ToolAddition { tools } => {
                let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
                out.push(json!({"text": format!("Tools now available: {}.", names.join(", "))}));
            }
            ContentBlock::ToolRemoval { names } => {
                out.push(
                    json!({"text": format!("Tools no longer available: {}.", names.join(", "))}),
                );
            }
            // Another provider's own item means nothing here.
            ContentBlock::ProviderItem { .. } => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use strata_provider::{
        Breakpoint, CacheStyle, Message, Modality, Prices, SystemBlock, ToolDefinition,
    };

    fn model() -> Model {
        Model {
            provider: "amazon-bedrock".into(),
            id: "anthropic.claude-sonnet-4-5-20250929-v1:0".into(),
            name: "Claude Sonnet 4.5".into(),
            context_window: 200_000,
            max_output: 64_000,
            input: vec![Modality::Text, Modality::Image],
            reasoning: true,
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

    #[test]
    fn cache_points_follow_each_chapter() {
        let mut request = Request::new("m");
        request.tools.push(ToolDefinition {
            name: "read".into(),
            description: "Read".into(),
            parameters: json!({"type": "object"}),
            defer_loading: false,
        });
        request.system.push(SystemBlock::text("sys"));
        request.messages.push(Message::user_text("hi"));
        request.messages.push(Message {
            role: Role::Assistant,
            content: vec![
                ContentBlock::Thinking {
                    text: "t".into(),
                    signature: Some("sig".into()),
                    redacted: false,
                },
                ContentBlock::ToolCall {
                    id: "tu1".into(),
                    name: "read".into(),
                    arguments: json!({"path": "a"}),
                },
            ],
        });
        request.messages.push(Message {
            role: Role::User,
            content: vec![ContentBlock::ToolResult {
                tool_call_id: "tu1".into(),
                content: vec![ToolResultContent::Text { text: "A".into() }],
                is_error: true,
            }],
        });
        request.messages.push(Message::system_text("now be brief"));
        request.thinking = ThinkingLevel::Low;
        request.max_tokens = Some(1000);
        for position in [
            BreakpointPosition::Tools,
            BreakpointPosition::System,
            BreakpointPosition::Message { index: 3 },
        ] {
            request.breakpoints.push(Breakpoint {
                position,
                ttl: if position == BreakpointPosition::System {
                    CacheTtl::OneHour
                } else {
                    CacheTtl::FiveMinutes
                },
            });
        }
        assert_eq!(
            build_body(&model(), &request, &caps()),
            json!({
                "messages": [
                    {"role": "user", "content": [{"text": "hi"}]},
                    {"role": "assistant", "content": [
                        {"reasoningContent": {"reasoningText": {"text": "t", "signature": "sig"}}},
                        {"toolUse": {"toolUseId": "tu1", "name": "read", "input": {"path": "a"}}},
                    ]},
                    {"role": "user", "content": [
                        {"toolResult": {"toolUseId": "tu1", "content": [{"text": "A"}], "status": "error"}},
                        {"text": "now be brief"},
                        {"cachePoint": {"type": "default"}},
                    ]},
                ],
                "system": [{"text": "sys"}, {"cachePoint": {"type": "default", "ttl": "1h"}}],
                "toolConfig": {"tools": [
                    {"toolSpec": {"name": "read", "description": "Read", "inputSchema": {"json": {"type": "object"}}}},
                    {"cachePoint": {"type": "default"}},
                ]},
                "inferenceConfig": {"maxTokens": 1000},
                "additionalModelRequestFields": {"thinking": {"type": "enabled", "budget_tokens": 999}},
            })
        );
    }

    #[test]
    fn no_cache_points_without_explicit_caching() {
        let mut request = Request::new("m");
        request.system.push(SystemBlock::text("sys"));
        request.messages.push(Message::user_text("hi"));
        request.breakpoints.push(Breakpoint {
            position: BreakpointPosition::System,
            ttl: CacheTtl::FiveMinutes,
        });
        let body = build_body(&model(), &request, &Capabilities::default());
        assert_eq!(body["system"], json!([{"text": "sys"}]));
        assert!(body.get("additionalModelRequestFields").is_none());
    }
    #[test]
    fn system_messages_and_tool_changes_where_the_row_has_them() {
        let mut request = Request::new("m");
        request.system.push(SystemBlock::text("sys"));
        request.messages.push(Message::user_text("hi"));
        request.messages.push(Message {
            role: Role::System,
            content: vec![
                ContentBlock::text("be brief"),
                ContentBlock::ToolRemoval {
                    names: vec!["bash".into()],
                },
                ContentBlock::ToolAddition {
                    tools: vec![ToolDefinition {
                        name: "grep".into(),
                        description: "Search".into(),
                        parameters: json!({"type": "object"}),
                        defer_loading: false,
                    }],
                },
            ],
        });
        request.messages.push(Message::user_text("go"));
        let with = Capabilities {
            mid_conversation_system: true,
            tool_addition: true,
            tool_removal: true,
            ..caps()
        };
        assert_eq!(
            build_body(&model(), &request, &with)["messages"],
            json!([
                {"role": "user", "content": [{"text": "hi"}]},
                {"role": "system", "content": [
                    {"text": "be brief"},
                    {"toolRemoval": {"tool": {"name": "bash"}}},
                    {"toolAddition": {"tool": {"name": "grep"}}},
                ]},
                {"role": "user", "content": [{"text": "go"}]},
            ])
        );
        // The fallback: user text, merged with its neighbours.
        assert_eq!(
            build_body(&model(), &request, &caps())["messages"],
            json!([
                {"role": "user", "content": [
                    {"text": "hi"},
                    {"text": "be brief"},
                    {"text": "Tools no longer available: bash."},
                    {"text": "Tools now available: grep."},
                    {"text": "go"},
                ]},
            ])
        );
    }
}
