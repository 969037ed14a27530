//! The messages of a session Pi 1.x started ([`Dialect::Pi`]), in Pi 1.6's shapes (pi-ai
//! `openai-completions`, recorded from Pi 1.6 on strata-mock), so that the prefix Pi's
//! requests cached is read: a user turn's content as a list of parts; a tool message as
//! `role`, `content`, `tool_call_id`, its text as stored (no `Error:` prefix) or Pi's
//! placeholder; an assistant turn's texts joined with nothing between them, its reasoning
//! under the field its signature names.
//!
//! [`Dialect::Pi`]: strata_provider::Dialect::Pi

use serde_json::{Map, Value, json};
use strata_provider::{
    Capabilities, ContentBlock, Message, Modality, Model, Request, Role, ToolResultContent,
};

/// What the assistant says between tool results and a user turn where the server needs it.
const TOOL_RESULTS_ACK: &str = "I have processed the tool results.";

/// The fields Pi puts an assistant turn's reasoning under, named by its thinking signature.
const REASONING_FIELDS: &[&str] = &["reasoning", "reasoning_content", "reasoning_text"];

/// The messages for `request`.
pub(crate) fn messages(request: &Request, model: &Model, caps: &Capabilities) -> Vec<Value> {
    // Pi gives instructions the developer role only for a reasoning model.
    let role = if model.reasoning {
        caps.system_role.as_str()
    } else {
        "system"
    };
    let mut out = Vec::new();
    let system = request.system_text();
    if !system.is_empty() {
        out.push(json!({"role": role, "content": system}));
    }
    let mut names: Vec<(&str, &str)> = Vec::new();
    // Images from a run of tool results, sent after the run in one user message.
    let mut images: Vec<Value> = Vec::new();
    let mut after_results = false;
    for message in &request.messages {
        let results_only = message.role == Role::User
            && !message.content.is_empty()
            && message
                .content
                .iter()
                .all(|b| matches!(b, ContentBlock::ToolResult { .. }));
        if !results_only && after_results {
            flush_images(&mut out, &mut images, caps, message.role == Role::User);
            after_results = false;
        }
        match message.role {
            Role::System => {
                let text = message.joined_text();
                if !text.is_empty() {
                    out.push(json!({"role": role, "content": text}));
                }
            }
            Role::User if results_only => {
                for block in &message.content {
                    if let ContentBlock::ToolResult {
                        tool_call_id,
                        content,
                        ..
                    } = block
                    {
                        out.push(tool_message(tool_call_id, content, caps, &names));
                        if model.input.contains(&Modality::Image) {
                            images.extend(content.iter().filter_map(|part| match part {
                                ToolResultContent::Image { media_type, data } => {
                                    Some(image_part(media_type, data))
                                }
                                ToolResultContent::Text { .. } => None,
                            }));
                        }
                    }
                }
                after_results = true;
            }
            Role::User => {
                let parts: Vec<Value> = message
                    .content
                    .iter()
                    .filter_map(|block| match block {
                        ContentBlock::Text { text, .. } if !text.is_empty() => {
                            Some(json!({"type": "text", "text": text}))
                        }
                        ContentBlock::Image { media_type, data } => {
                            Some(image_part(media_type, data))
                        }
                        _ => None,
                    })
                    .collect();
                if !parts.is_empty() {
                    out.push(json!({"role": "user", "content": parts}));
                }
            }
            Role::Assistant => {
                names.extend(message.tool_calls().map(|(id, name, _)| (id, name)));
                if let Some(m) = assistant_message(message, model, caps) {
                    out.push(m);
                }
            }
        }
    }
    if after_results {
        flush_images(&mut out, &mut images, caps, false);
    }
    out
}

/// Sends the images a run of tool results held, in a user message after it, as Pi does.
/// Where the server wants an assistant turn between tool results and a user turn (the
/// images', or `user_next`), Pi's acknowledgement goes first.
fn flush_images(
    out: &mut Vec<Value>,
    images: &mut Vec<Value>,
    caps: &Capabilities,
    user_next: bool,
) {
    let ack = caps.wire.requires_assistant_after_tool_result;
    if ack && (user_next || !images.is_empty()) {
        out.push(json!({"role": "assistant", "content": TOOL_RESULTS_ACK}));
    }
    if !images.is_empty() {
        let mut parts =
            vec![json!({"type": "text", "text": "Attached image(s) from tool result:"})];
        parts.append(images);
        out.push(json!({"role": "user", "content": parts}));
    }
}

fn image_part(media_type: &str, data: &str) -> Value {
    json!({"type": "image_url", "image_url": {"url": format!("data:{media_type};base64,{data}")}})
}

fn tool_message(
    id: &str,
    content: &[ToolResultContent],
    caps: &Capabilities,
    names: &[(&str, &str)],
) -> Value {
    let text: Vec<&str> = content
        .iter()
        .filter_map(|part| match part {
            ToolResultContent::Text { text } => Some(text.as_str()),
            ToolResultContent::Image { .. } => None,
        })
        .collect();
    let text = text.join("\n");
    let has_images = content
        .iter()
        .any(|part| matches!(part, ToolResultContent::Image { .. }));
    let text = if !text.trim().is_empty() {
        text
    } else if has_images {
        "(see attached image)".to_owned()
    } else {
        "(no tool output)".to_owned()
    };
    let mut m = json!({"role": "tool", "content": text, "tool_call_id": id});
    if caps.wire.requires_tool_result_name
        && let Some((_, name)) = names.iter().find(|(call, _)| *call == id)
    {
        m["name"] = json!(name);
    }
    m
}

fn assistant_message(message: &Message, model: &Model, caps: &Capabilities) -> Option<Value> {
    let texts: Vec<&str> = message
        .content
        .iter()
        .filter_map(|block| match block {
            ContentBlock::Text { text, .. } if !text.trim().is_empty() => Some(text.as_str()),
            _ => None,
        })
        .collect();
    let thinking: Vec<(&str, Option<&str>)> = message
        .content
        .iter()
        .filter_map(|block| match block {
            ContentBlock::Thinking {
                text, signature, ..
            } if !text.trim().is_empty() => Some((text.as_str(), signature.as_deref())),
            _ => None,
        })
        .collect();
    let mut m = Map::new();
    m.insert("role".into(), json!("assistant"));
    let empty = if caps.wire.requires_assistant_after_tool_result {
        json!("")
    } else {
        Value::Null
    };
    m.insert("content".into(), empty);
    let text = texts.concat();
    if !thinking.is_empty() && caps.wire.requires_thinking_as_text {
        let said: Vec<&str> = thinking.iter().map(|(text, _)| *text).collect();
        let mut parts = vec![json!({"type": "text", "text": said.join("\n\n")})];
        parts.extend(texts.iter().map(|t| json!({"type": "text", "text": t})));
        m.insert("content".into(), Value::Array(parts));
    } else if !text.is_empty() {
        m.insert("content".into(), json!(text));
    }
    if !caps.wire.requires_thinking_as_text
        && let Some((_, Some(field))) = thinking.first()
        && REASONING_FIELDS.contains(field)
    {
        let said: Vec<&str> = thinking.iter().map(|(text, _)| *text).collect();
        m.insert((*field).to_owned(), json!(said.join("\n")));
    }
    let calls: Vec<Value> = message
        .tool_calls()
        .map(|(id, name, arguments)| {
            let arguments = match arguments {
                Value::String(raw) => raw.clone(),
                other => other.to_string(),
            };
            json!({"id": id, "type": "function", "function": {"name": name, "arguments": arguments}})
        })
        .collect();
    let has_calls = !calls.is_empty();
    if has_calls {
        m.insert("tool_calls".into(), Value::Array(calls));
    }
    if caps.wire.requires_reasoning_content
        && model.reasoning
        && !m.contains_key("reasoning_content")
    {
        m.insert("reasoning_content".into(), json!(""));
    }
    let has_content = match &m["content"] {
        Value::String(text) => !text.is_empty(),
        Value::Array(parts) => !parts.is_empty(),
        _ => false,
    };
    (has_content || has_calls).then_some(Value::Object(m))
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;
    use serde_json::{Value, json};
    use strata_provider::{
        Capabilities, ContentBlock, Dialect, Message, Modality, Model, Prices, Request, Role,
        SystemBlock, SystemRole, ToolDefinition, ToolResultContent,
    };

    use crate::request::build_body;

    fn model(reasoning: bool) -> Model {
        Model {
            provider: "strata-mock".into(),
            id: "gpt-4.1".into(),
            name: "gpt-4.1".into(),
            context_window: 1_000_000,
            max_output: 8192,
            input: vec![Modality::Text, Modality::Image],
            reasoning,
            prices: Prices::default(),
        }
    }

    fn caps() -> Capabilities {
        Capabilities {
            system_role: SystemRole::Developer,
            ..Capabilities::default()
        }
    }

    fn call(id: &str, text: &str) -> Message {
        Message {
            role: Role::Assistant,
            content: vec![
                ContentBlock::text(text),
                ContentBlock::text(" "),
                ContentBlock::text("More."),
                ContentBlock::ToolCall {
                    id: id.into(),
                    name: "read".into(),
                    arguments: json!({"path": "a.rs"}),
                },
            ],
        }
    }

    fn result(id: &str, content: Vec<ToolResultContent>, is_error: bool) -> Message {
        Message {
            role: Role::User,
            content: vec![ContentBlock::ToolResult {
                tool_call_id: id.into(),
                content,
                is_error,
            }],
        }
    }

    /// A session as Pi 1.6 stores a Chat Completions conversation.
    fn pi_conversation() -> Request {
        let mut r = Request::new("gpt-4.1");
        r.dialect = Dialect::Pi;
        r.system = vec![SystemBlock::text("You are Pi.")];
        r.tools.push(ToolDefinition {
            name: "read".into(),
            description: "Read file contents".into(),
            parameters: json!({"type": "object"}),
            defer_loading: false,
        });
        r.messages.push(Message::user_text("fix the greeting"));
        r.messages.push(call("call_1", "Let me read the file."));
        r.messages.push(result(
            "call_1",
            vec![ToolResultContent::Text {
                text: "error: no Cargo.toml".into(),
            }],
            true,
        ));
        r.messages.push(call("call_2", "And the picture."));
        r.messages.push(result(
            "call_2",
            vec![ToolResultContent::Image {
                media_type: "image/png".into(),
                data: "QQ==".into(),
            }],
            false,
        ));
        r.messages.push(Message::user_text("and now?"));
        r
    }

    /// Pi 1.6's Chat Completions shapes (pi-ai `openai-completions`, recorded on
    /// strata-mock), key order included.
    #[test]
    fn the_pi_dialect_writes_pis_messages() {
        let body = build_body(&pi_conversation(), &model(false), &caps());
        let assistant = |text: &str, id: &str| {
            json!({"role": "assistant", "content": text, "tool_calls": [
                {"id": id, "type": "function",
                 "function": {"name": "read", "arguments": "{\"path\":\"a.rs\"}"}}]})
        };
        let expected = json!([
            // Not a reasoning model: `system`, whatever the row's role.
            {"role": "system", "content": "You are Pi."},
            {"role": "user", "content": [{"type": "text", "text": "fix the greeting"}]},
            // Texts joined with nothing between; blank ones left out.
            assistant("Let me read the file.More.", "call_1"),
            // The text as stored: no `Error:` prefix.
            {"role": "tool", "content": "error: no Cargo.toml", "tool_call_id": "call_1"},
            assistant("And the picture.More.", "call_2"),
            {"role": "tool", "content": "(see attached image)", "tool_call_id": "call_2"},
            {"role": "user", "content": [
                {"type": "text", "text": "Attached image(s) from tool result:"},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,QQ=="}}]},
            {"role": "user", "content": [{"type": "text", "text": "and now?"}]},
        ]);
        assert_eq!(body["messages"], expected);
        let text = |v: &Value| v.to_string();
        assert_eq!(text(&body["messages"]), text(&expected), "key order");
    }

    /// A reasoning model's instructions take the row's role; its reasoning goes back under
    /// the field the thinking signature names; servers that want an assistant turn after
    /// tool results get Pi's.
    #[test]
    fn reasoning_fields_roles_and_the_acknowledgement() {
        let mut request = pi_conversation();
        request.messages[1].content.insert(
            0,
            ContentBlock::Thinking {
                text: "plan".into(),
                signature: Some("reasoning_content".into()),
                redacted: false,
            },
        );
        let mut c = caps();
        c.wire.requires_assistant_after_tool_result = true;
        let body = build_body(&request, &model(true), &c);
        let messages = body["messages"].as_array().unwrap();
        assert_eq!(messages[0]["role"], json!("developer"));
        let keys: Vec<&str> = messages[2]
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(keys, ["role", "content", "reasoning_content", "tool_calls"]);
        assert_eq!(messages[2]["reasoning_content"], json!("plan"));
        // After call_1's result, the next message is the assistant's: no acknowledgement.
        assert_eq!(messages[4]["content"], json!("And the picture.More."));
        // After call_2's result, the acknowledgement, then the images, then the user.
        let roles: Vec<&str> = messages[5..]
            .iter()
            .map(|m| m["role"].as_str().unwrap())
            .collect();
        assert_eq!(roles, ["tool", "assistant", "user", "user"]);
        assert_eq!(
            messages[6]["content"],
            json!("I have processed the tool results.")
        );
    }

    /// strata's own dialect keeps its shapes for the same conversation.
    #[test]
    fn strata_s_dialect_keeps_its_shapes() {
        let mut request = pi_conversation();
        request.dialect = Dialect::Strata;
        let body = build_body(&request, &model(false), &caps());
        assert_eq!(body["messages"][0]["role"], json!("developer"));
        assert_eq!(body["messages"][1]["content"], json!("fix the greeting"));
        assert_eq!(
            body["messages"][3],
            json!({"role": "tool", "tool_call_id": "call_1", "content": "Error: error: no Cargo.toml"})
        );
    }
}
