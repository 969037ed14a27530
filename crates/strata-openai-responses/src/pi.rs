//! The input items of a session Pi 1.x started ([`Dialect::Pi`]), in Pi 1.6's shapes
//! (pi-ai `openai-responses`, recorded from Pi 1.6 on strata-mock), so that the prefix Pi's
//! requests cached is read: the system prompt as one message whose content is a string;
//! each assistant text its own `message` item under the id Pi replays (its `textSignature`,
//! else `msg_pi_<n>`); a `function_call` with its `fc_` item id apart from its `call_id`; a
//! tool's output as one string, with Pi's placeholders when it holds no text.
//!
//! [`Dialect::Pi`]: strata_provider::Dialect::Pi

use serde_json::{Value, json};
use strata_provider::{
    Capabilities, ContentBlock, Message, Modality, Model, Protocol, Request, Role,
    ToolResultContent,
};

/// The role Pi gives instructions: the row's (developer where it takes it) for a reasoning
/// model, `system` otherwise.
pub(crate) fn instruction_role(model: &Model, caps: &Capabilities) -> &'static str {
    if model.reasoning {
        caps.system_role.as_str()
    } else {
        "system"
    }
}

/// The input items for `request`'s messages, led by its system prompt `with_system` (when
/// it is not sent as `instructions`).
pub(crate) fn input(
    request: &Request,
    model: &Model,
    caps: &Capabilities,
    with_system: bool,
) -> Vec<Value> {
    let role = instruction_role(model, caps);
    let mut input = Vec::new();
    let system = request.system_text();
    if with_system && !system.is_empty() {
        input.push(json!({"role": role, "content": system}));
    }
    for (index, message) in request.messages.iter().enumerate() {
        push_message(&mut input, message, index, role, model);
    }
    input
}

fn push_message(
    input: &mut Vec<Value>,
    message: &Message,
    index: usize,
    role: &str,
    model: &Model,
) {
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
                        ..
                    } => {
                        flush(input, &mut parts);
                        input.push(json!({
                            "type": "function_call_output",
                            "call_id": call_id(tool_call_id),
                            "output": tool_output(content, model),
                        }));
                    }
                    _ => {}
                }
            }
            flush(input, &mut parts);
        }
        Role::Assistant => {
            let mut texts = 0;
            for block in &message.content {
                match block {
                    ContentBlock::Thinking { signature, .. } => {
                        // Pi replays the reasoning item it stored, whatever it holds.
                        if let Some(item) = signature
                            .as_deref()
                            .and_then(|s| serde_json::from_str::<Value>(s).ok())
                            .filter(Value::is_object)
                        {
                            input.push(item);
                        }
                    }
                    ContentBlock::Text { text, signature } => {
                        input.push(text_item(text, signature.as_deref(), index, texts));
                        texts += 1;
                    }
                    ContentBlock::ToolCall {
                        id,
                        name,
                        arguments,
                    } => {
                        let arguments = match arguments {
                            Value::String(raw) => raw.clone(),
                            other => other.to_string(),
                        };
                        let mut item = serde_json::Map::new();
                        item.insert("type".into(), json!("function_call"));
                        // Pi stores `call_id|item_id`; the item id goes back only as an `fc_` id.
                        if let Some((_, item_id)) = id.split_once('|')
                            && item_id.starts_with("fc_")
                        {
                            item.insert("id".into(), json!(item_id));
                        }
                        item.insert("call_id".into(), json!(call_id(id)));
                        item.insert("name".into(), json!(name));
                        item.insert("arguments".into(), json!(arguments));
                        input.push(Value::Object(item));
                    }
                    ContentBlock::ProviderItem { api, item }
                        if api == Protocol::OpenaiResponses.as_str() =>
                    {
                        input.push(item.clone());
                    }
                    _ => {}
                }
            }
        }
        Role::System => {
            let text = message.joined_text();
            if !text.is_empty() {
                input.push(json!({"role": role, "content": text}));
            }
        }
    }
}

/// The call id of a stored `call_id|item_id`.
fn call_id(id: &str) -> &str {
    id.split_once('|').map_or(id, |(call, _)| call)
}

/// An assistant text as its own output message item. Its id is the one Pi stored with it (a
/// `{"v":1,"id":…,"phase":…}` signature or a bare id), else Pi's stand-in from the message's
/// position: `msg_pi_<n>`, `msg_pi_<n>_<k>` for the k-th text after the first.
fn text_item(text: &str, signature: Option<&str>, index: usize, nth: usize) -> Value {
    let (id, phase) = match signature.map(parse_signature) {
        Some((id, phase)) => (id, phase),
        None if nth == 0 => (format!("msg_pi_{index}"), None),
        None => (format!("msg_pi_{index}_{nth}"), None),
    };
    let mut item = json!({
        "type": "message",
        "role": "assistant",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
        "status": "completed",
        "id": id,
    });
    if let Some(phase) = phase {
        item["phase"] = json!(phase);
    }
    item
}

/// Pi's text signature: version 1 JSON with the id and an optional phase, or a bare id.
fn parse_signature(signature: &str) -> (String, Option<String>) {
    if signature.starts_with('{')
        && let Ok(parsed) = serde_json::from_str::<Value>(signature)
        && parsed.get("v").and_then(Value::as_u64) == Some(1)
        && let Some(id) = parsed.get("id").and_then(Value::as_str)
    {
        let phase = parsed
            .get("phase")
            .and_then(Value::as_str)
            .filter(|phase| matches!(*phase, "commentary" | "final_answer"))
            .map(str::to_owned);
        return (id.to_owned(), phase);
    }
    (signature.to_owned(), None)
}

fn input_image(media_type: &str, data: &str) -> Value {
    json!({"type": "input_image", "detail": "auto", "image_url": format!("data:{media_type};base64,{data}")})
}

/// A tool's output as Pi sends it: its text (parts joined by a line break) as one string,
/// a placeholder when there is none; with images for a model that reads them, a list.
fn tool_output(content: &[ToolResultContent], model: &Model) -> Value {
    let text: Vec<&str> = content
        .iter()
        .filter_map(|part| match part {
            ToolResultContent::Text { text } => Some(text.as_str()),
            ToolResultContent::Image { .. } => None,
        })
        .collect();
    let text = text.join("\n");
    let has_text = !text.trim().is_empty();
    let images: Vec<Value> = content
        .iter()
        .filter_map(|part| match part {
            ToolResultContent::Image { media_type, data } => Some(input_image(media_type, data)),
            ToolResultContent::Text { .. } => None,
        })
        .collect();
    if images.is_empty() || !model.input.contains(&Modality::Image) {
        return json!(if has_text {
            text.as_str()
        } else if images.is_empty() {
            "(no tool output)"
        } else {
            "(see attached image)"
        });
    }
    let mut parts = Vec::new();
    if has_text {
        parts.push(json!({"type": "input_text", "text": text}));
    }
    parts.extend(images);
    Value::Array(parts)
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;
    use serde_json::{Value, json};
    use strata_provider::{
        CacheKeyParam, Capabilities, ContentBlock, Dialect, Message, Modality, Model,
        ParamLocation, Prices, ReasoningStyle, Request, Role, SystemBlock, SystemRole,
        ThinkingLevel, ToolDefinition, ToolResultContent,
    };

    use crate::request::{SystemPlacement, build_request};

    fn model(reasoning: bool) -> Model {
        Model {
            provider: "strata-mock".into(),
            id: "gpt-5.2".into(),
            name: "gpt-5.2".into(),
            context_window: 400_000,
            max_output: 8192,
            input: vec![Modality::Text, Modality::Image],
            reasoning,
            prices: Prices::default(),
        }
    }

    /// The row strata makes of a Pi models.json provider on `openai-responses`.
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

    fn result(id: &str, content: Vec<ToolResultContent>) -> Message {
        Message {
            role: Role::User,
            content: vec![ContentBlock::ToolResult {
                tool_call_id: id.into(),
                content,
                is_error: false,
            }],
        }
    }

    /// A session as Pi 1.6 stores a Responses conversation: ids `call|fc_item`, text
    /// signatures holding the output message's id, reasoning items as thinking signatures.
    fn pi_conversation() -> Request {
        let mut r = Request::new("gpt-5.2");
        r.dialect = Dialect::Pi;
        r.system = vec![SystemBlock::text("You are Pi.\n\n<cwd>\n/p\n</cwd>")];
        r.tools.push(ToolDefinition {
            name: "read".into(),
            description: "Read file contents".into(),
            parameters: json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}),
            defer_loading: false,
        });
        r.thinking = ThinkingLevel::Medium;
        r.max_tokens = Some(8192);
        r.messages.push(Message::user_text("fix the greeting"));
        r.messages.push(Message {
            role: Role::Assistant,
            content: vec![
                ContentBlock::Thinking {
                    text: "plan".into(),
                    signature: Some(
                        r#"{"type":"reasoning","id":"rs_1","summary":[],"encrypted_content":"e"}"#
                            .into(),
                    ),
                    redacted: false,
                },
                ContentBlock::Text {
                    text: "Let me read the file.".into(),
                    signature: Some(r#"{"v":1,"id":"msg_1","phase":"commentary"}"#.into()),
                },
                ContentBlock::ToolCall {
                    id: "call_1|fc_1".into(),
                    name: "read".into(),
                    arguments: json!({"path": "a.rs"}),
                },
            ],
        });
        r.messages.push(result(
            "call_1|fc_1",
            vec![
                ToolResultContent::Text {
                    text: "line 1".into(),
                },
                ToolResultContent::Text {
                    text: "line 2".into(),
                },
            ],
        ));
        r.messages.push(Message {
            role: Role::Assistant,
            content: vec![
                ContentBlock::text("Unsigned."),
                ContentBlock::text("Second."),
                ContentBlock::ToolCall {
                    id: "call_2|item_2".into(),
                    name: "read".into(),
                    arguments: json!({"path": "b.png"}),
                },
            ],
        });
        r.messages.push(result(
            "call_2|item_2",
            vec![ToolResultContent::Image {
                media_type: "image/png".into(),
                data: "AAAA".into(),
            }],
        ));
        r
    }

    fn body(request: &Request, model: &Model) -> Value {
        build_request(
            model,
            request,
            &caps(),
            SystemPlacement::Message,
            Some("session-1"),
        )
        .body
    }

    /// Pi 1.6's Responses shapes (pi-ai `openai-responses`, recorded on strata-mock).
    #[test]
    fn the_pi_dialect_writes_pis_input_items() {
        let body = body(&pi_conversation(), &model(true));
        assert_eq!(
            body["input"],
            json!([
                {"role": "developer", "content": "You are Pi.\n\n<cwd>\n/p\n</cwd>"},
                {"role": "user", "content": [{"type": "input_text", "text": "fix the greeting"}]},
                {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "e"},
                {"type": "message", "role": "assistant",
                 "content": [{"type": "output_text", "text": "Let me read the file.", "annotations": []}],
                 "status": "completed", "id": "msg_1", "phase": "commentary"},
                {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "read",
                 "arguments": "{\"path\":\"a.rs\"}"},
                {"type": "function_call_output", "call_id": "call_1", "output": "line 1\nline 2"},
                {"type": "message", "role": "assistant",
                 "content": [{"type": "output_text", "text": "Unsigned.", "annotations": []}],
                 "status": "completed", "id": "msg_pi_3"},
                {"type": "message", "role": "assistant",
                 "content": [{"type": "output_text", "text": "Second.", "annotations": []}],
                 "status": "completed", "id": "msg_pi_3_1"},
                // Not an `fc_` item id: Pi leaves the id out.
                {"type": "function_call", "call_id": "call_2", "name": "read",
                 "arguments": "{\"path\":\"b.png\"}"},
                {"type": "function_call_output", "call_id": "call_2",
                 "output": [{"type": "input_image", "detail": "auto", "image_url": "data:image/png;base64,AAAA"}]},
            ])
        );
        // Key order is part of the bytes the cache reads.
        let call = body["input"][4].as_object().unwrap();
        let keys: Vec<&str> = call.keys().map(String::as_str).collect();
        assert_eq!(keys, ["type", "id", "call_id", "name", "arguments"]);
        assert!(body.get("tool_choice").is_none(), "Pi sends no tool_choice");
        assert!(body.get("parallel_tool_calls").is_none());
        assert_eq!(body["prompt_cache_key"], json!("session-1"));
        assert_eq!(
            body["reasoning"],
            json!({"effort": "medium", "summary": "auto"})
        );
        assert_eq!(body["store"], json!(false));
    }

    /// What Pi sends where a tool result has no text, a model reads no images, a model does
    /// not reason, or its thinking is off.
    #[test]
    fn pis_placeholders_system_role_and_effort_off() {
        let mut request = pi_conversation();
        let mut blind = model(false);
        blind.input = vec![Modality::Text];
        request.messages.push(Message {
            role: Role::Assistant,
            content: vec![ContentBlock::ToolCall {
                id: "call_3".into(),
                name: "read".into(),
                arguments: json!({}),
            }],
        });
        request.messages.push(result("call_3", vec![]));
        let body = body(&request, &blind);
        assert_eq!(body["input"][0]["role"], json!("system"));
        assert_eq!(body["input"][9]["output"], json!("(see attached image)"));
        assert_eq!(
            body["input"][10],
            json!({"type": "function_call", "call_id": "call_3", "name": "read", "arguments": "{}"})
        );
        assert_eq!(body["input"][11]["output"], json!("(no tool output)"));
        assert!(
            body.get("reasoning").is_none(),
            "no reasoning for a model without it"
        );

        request.thinking = ThinkingLevel::Off;
        let off = build_request(
            &model(true),
            &request,
            &caps(),
            SystemPlacement::Message,
            None,
        )
        .body;
        assert_eq!(off["reasoning"], json!({"effort": "none"}));
        assert!(off.get("include").is_none());
    }

    /// strata's own dialect is unchanged by the text signatures a Pi session carries.
    #[test]
    fn strata_s_dialect_keeps_its_shapes() {
        let mut request = pi_conversation();
        request.dialect = Dialect::Strata;
        let body = body(&request, &model(true));
        assert_eq!(
            body["input"][0],
            json!({"role": "developer", "content": [{"type": "input_text", "text": "You are Pi.\n\n<cwd>\n/p\n</cwd>"}]})
        );
        assert_eq!(body["input"][3]["id"], json!("msg_strata_3"));
        assert_eq!(body["input"][4]["call_id"], json!("call_1|fc_1"));
        assert_eq!(body["tool_choice"], json!("auto"));
    }
}
