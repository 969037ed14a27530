//! Rendered [`Request`] → `GenerateContentRequest` body.

use std::collections::HashMap;

use serde_json::{Map, Value, json};
use strata_provider::{
    Capabilities, ContentBlock, Message, Model, ReasoningStyle, Request, Role, ThinkingLevel,
    ToolResultContent,
};

/// Builds the `generateContent` / `streamGenerateContent` body.
///
/// Breakpoints are dropped: Gemini caches implicitly. The system chapter goes to
/// `systemInstruction`; mid-conversation system messages (which Gemini has no role for) go
/// as user turns, where render only puts them for providers that accept them.
pub fn build_body(model: &Model, request: &Request, caps: &Capabilities) -> Value {
    let mut body = Map::new();
    let names: HashMap<&str, &str> = request
        .messages
        .iter()
        .flat_map(Message::tool_calls)
        .map(|(id, name, _)| (id, name))
        .collect();
    let contents = merge_user_runs(request.messages.iter().filter_map(|m| content(m, &names)));
    body.insert("contents".into(), Value::Array(contents));
    if !request.system.is_empty() {
        let parts: Vec<Value> = request
            .system
            .iter()
            .map(|b| json!({"text": b.text}))
            .collect();
        body.insert("systemInstruction".into(), json!({"parts": parts}));
    }
    if !request.tools.is_empty() {
        let declarations: Vec<Value> = request
            .tools
            .iter()
            .map(|t| {
                json!({
                    "name": t.name,
                    "description": t.description,
                    "parametersJsonSchema": t.parameters,
                })
            })
            .collect();
        body.insert(
            "tools".into(),
            json!([{"functionDeclarations": declarations}]),
        );
    }
    let mut generation = Map::new();
    if let Some(max) = request
        .max_tokens
        .map(u64::from)
        .or((model.max_output > 0).then_some(model.max_output))
    {
        generation.insert("maxOutputTokens".into(), json!(max));
    }
    if model.reasoning
        && request.thinking != ThinkingLevel::Off
        && let Some(config) = thinking_config(caps.reasoning, request.thinking)
    {
        generation.insert("thinkingConfig".into(), config);
    }
    if !generation.is_empty() {
        body.insert("generationConfig".into(), Value::Object(generation));
    }
    Value::Object(body)
}

/// `thinkingConfig` for a reasoning style and level (`None` when the style sends nothing).
pub fn thinking_config(style: ReasoningStyle, level: ThinkingLevel) -> Option<Value> {
    match style {
        ReasoningStyle::GoogleBudget => level
            .default_budget_tokens()
            .map(|budget| json!({"thinkingBudget": budget, "includeThoughts": true})),
        ReasoningStyle::GoogleLevel => {
            // The `ThinkingLevel` enum's names, as google-genai and Pi send them.
            let name = match level {
                ThinkingLevel::Off => return None,
                ThinkingLevel::Minimal => "MINIMAL",
                ThinkingLevel::Low => "LOW",
                ThinkingLevel::Medium => "MEDIUM",
                ThinkingLevel::High | ThinkingLevel::Xhigh => "HIGH",
            };
            Some(json!({"thinkingLevel": name, "includeThoughts": true}))
        }
        _ => None,
    }
}

/// Folds runs of `user` contents into one: Gemini answers consecutive user turns (parallel
/// tool results, a reminder after a tool result, a steer after an aborted turn) with
/// 400 "Please ensure that multiturn requests alternate between user and model". Model
/// turns are left alone, so thought signatures stay on the parts they came with. Merging
/// only touches the run at the end of the request, so earlier bytes stay a stable prefix.
fn merge_user_runs(contents: impl Iterator<Item = Value>) -> Vec<Value> {
    let mut merged: Vec<Value> = Vec::new();
    for content in contents {
        if content["role"] == "user"
            && let Some(last) = merged.last_mut()
            && last["role"] == "user"
            && let (Some(into), Some(parts)) = (
                last.get_mut("parts").and_then(Value::as_array_mut),
                content["parts"].as_array(),
            )
        {
            into.extend(parts.iter().cloned());
            continue;
        }
        merged.push(content);
    }
    merged
}

fn inline_data(media_type: &str, data: &str) -> Value {
    json!({"inlineData": {"mimeType": media_type, "data": data}})
}

fn content(message: &Message, names: &HashMap<&str, &str>) -> Option<Value> {
    let role = match message.role {
        Role::Assistant => "model",
        Role::User | Role::System => "user",
    };
    let mut parts: Vec<Value> = Vec::new();
    // A signature-only thinking block belongs on the part that follows it.
    let mut carried: Option<&str> = None;
    for block in &message.content {
        let mut part = match block {
            ContentBlock::Text { text, .. } => {
                if text.is_empty() {
                    continue;
                }
                json!({"text": text})
            }
            ContentBlock::Image { media_type, data } => inline_data(media_type, data),
            ContentBlock::Thinking {
                text, signature, ..
            } => {
                if text.is_empty() {
                    if let (Some(previous), Some(_)) = (carried, signature) {
                        parts.push(json!({"text": "", "thoughtSignature": previous}));
                    }
                    if signature.is_some() {
                        carried = signature.as_deref();
                    }
                    continue;
                }
                if message.role != Role::Assistant {
                    continue;
                }
                let mut part = json!({"text": text, "thought": true});
                if let Some(sig) = signature {
                    part["thoughtSignature"] = json!(sig);
                }
                part
            }
            ContentBlock::ToolCall {
                id,
                name,
                arguments,
            } => {
                let args = match arguments {
                    Value::Object(_) => arguments.clone(),
                    Value::Null => json!({}),
                    other => json!({"value": other}),
                };
                let mut call = json!({"name": name, "args": args});
                if !id.is_empty() {
                    call["id"] = json!(id);
                }
                json!({"functionCall": call})
            }
            ContentBlock::ToolResult {
                tool_call_id,
                content,
                is_error,
            } => {
                let text: Vec<&str> = content
                    .iter()
                    .filter_map(|c| match c {
                        ToolResultContent::Text { text } => Some(text.as_str()),
                        ToolResultContent::Image { .. } => None,
                    })
                    .collect();
                let key = if *is_error { "error" } else { "output" };
                let name = names.get(tool_call_id.as_str()).copied().unwrap_or("");
                let response = json!({
                    "name": name,
                    "id": tool_call_id,
                    "response": {key: text.join("\n")},
                });
                parts.push(json!({"functionResponse": response}));
                for c in content {
                    if let ToolResultContent::Image { media_type, data } = c {
                        parts.push(inline_data(media_type, data));
                    }
                }
                continue;
            }
            ContentBlock::ToolAddition { tools } => {
                let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
                json!({"text": format!("Tools now available: {}.", names.join(", "))})
            }
            ContentBlock::ToolRemoval { names } => {
                json!({"text": format!("Tools no longer available: {}.", names.join(", "))})
            }
            // Another provider's own item means nothing here.
            ContentBlock::ProviderItem { .. } => continue,
        };
        if let Some(sig) = carried.take() {
            part["thoughtSignature"] = json!(sig);
        }
        parts.push(part);
    }
    if let Some(sig) = carried {
        parts.push(json!({"text": "", "thoughtSignature": sig}));
    }
    (!parts.is_empty()).then(|| json!({"role": role, "parts": parts}))
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use strata_provider::{Modality, Prices, SystemBlock, ToolDefinition};

    fn model() -> Model {
        Model {
            provider: "google".into(),
            id: "gemini-2.5-flash".into(),
            name: "Gemini 2.5 Flash".into(),
            context_window: 1_048_576,
            max_output: 65_536,
            input: vec![Modality::Text, Modality::Image],
            reasoning: true,
            prices: Prices::default(),
        }
    }

    #[test]
    fn signatures_return_to_their_parts() {
        let mut request = Request::new("gemini-2.5-flash");
        request.system.push(SystemBlock::text("sys"));
        request.tools.push(ToolDefinition {
            name: "read".into(),
            description: "Read".into(),
            parameters: json!({"type": "object"}),
            defer_loading: false,
        });
        request.thinking = ThinkingLevel::Medium;
        request.messages.push(Message::user_text("go"));
        request.messages.push(Message {
            role: Role::Assistant,
            content: vec![
                ContentBlock::Thinking {
                    text: "plan".into(),
                    signature: None,
                    redacted: false,
                },
                ContentBlock::Thinking {
                    text: String::new(),
                    signature: Some("SIG".into()),
                    redacted: false,
                },
                ContentBlock::ToolCall {
                    id: "c1".into(),
                    name: "read".into(),
                    arguments: json!({"path": "a"}),
                },
            ],
        });
        request.messages.push(Message {
            role: Role::User,
            content: vec![ContentBlock::ToolResult {
                tool_call_id: "c1".into(),
                content: vec![ToolResultContent::Text { text: "A".into() }],
                is_error: false,
            }],
        });
        let caps = Capabilities {
            reasoning: ReasoningStyle::GoogleBudget,
            ..Capabilities::default()
        };
        assert_eq!(
            build_body(&model(), &request, &caps),
            json!({
                "contents": [
                    {"role": "user", "parts": [{"text": "go"}]},
                    {"role": "model", "parts": [
                        {"text": "plan", "thought": true},
                        {"functionCall": {"name": "read", "args": {"path": "a"}, "id": "c1"}, "thoughtSignature": "SIG"},
                    ]},
                    {"role": "user", "parts": [
                        {"functionResponse": {"name": "read", "id": "c1", "response": {"output": "A"}}},
                    ]},
                ],
                "systemInstruction": {"parts": [{"text": "sys"}]},
                "tools": [{"functionDeclarations": [{"name": "read", "description": "Read", "parametersJsonSchema": {"type": "object"}}]}],
                "generationConfig": {"maxOutputTokens": 65_536, "thinkingConfig": {"thinkingBudget": 8192, "includeThoughts": true}},
            })
        );
    }

    #[test]
    fn consecutive_user_turns_are_sent_as_one() {
        let mut request = Request::new("gemini-2.5-flash");
        request.messages.push(Message::user_text("go"));
        request.messages.push(Message {
            role: Role::Assistant,
            content: vec![
                ContentBlock::ToolCall {
                    id: "c1".into(),
                    name: "read".into(),
                    arguments: json!({"path": "a"}),
                },
                ContentBlock::ToolCall {
                    id: "c2".into(),
                    name: "read".into(),
                    arguments: json!({"path": "b"}),
                },
            ],
        });
        for (id, text) in [("c1", "A"), ("c2", "B")] {
            request.messages.push(Message {
                role: Role::User,
                content: vec![ContentBlock::ToolResult {
                    tool_call_id: id.into(),
                    content: vec![ToolResultContent::Text { text: text.into() }],
                    is_error: false,
                }],
            });
        }
        request.messages.push(Message::user_text(
            "<system-reminder>AGENTS.md changed</system-reminder>",
        ));
        let body = build_body(&model(), &request, &Capabilities::default());
        let roles: Vec<&str> = body["contents"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|c| c["role"].as_str())
            .collect();
        assert_eq!(roles, ["user", "model", "user"]);
        assert_eq!(
            body["contents"][2]["parts"],
            json!([
                {"functionResponse": {"name": "read", "id": "c1", "response": {"output": "A"}}},
                {"functionResponse": {"name": "read", "id": "c2", "response": {"output": "B"}}},
                {"text": "<system-reminder>AGENTS.md changed</system-reminder>"},
            ])
        );
    }

    #[test]
    fn trailing_signature_becomes_an_empty_signed_part() {
        let message = Message {
            role: Role::Assistant,
            content: vec![
                ContentBlock::text("done"),
                ContentBlock::Thinking {
                    text: String::new(),
                    signature: Some("S".into()),
                    redacted: false,
                },
            ],
        };
        assert_eq!(
            content(&message, &HashMap::new()),
            Some(
                json!({"role": "model", "parts": [{"text": "done"}, {"text": "", "thoughtSignature": "S"}]})
            )
        );
    }

    #[test]
    fn thinking_levels_for_gemini_3() {
        assert_eq!(
            thinking_config(ReasoningStyle::GoogleLevel, ThinkingLevel::Xhigh),
            Some(json!({"thinkingLevel": "HIGH", "includeThoughts": true}))
        );
        assert_eq!(
            thinking_config(ReasoningStyle::GoogleLevel, ThinkingLevel::Off),
            None
        );
        assert_eq!(
            thinking_config(ReasoningStyle::OpenaiEffort, ThinkingLevel::High),
            None
        );
    }
}
