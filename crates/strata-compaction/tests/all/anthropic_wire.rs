//! A minimal Anthropic Messages client for the measured comparison, written from Anthropic's
//! documented wire format (non-streaming): `cache_control` at each breakpoint, usage read from
//! `input_tokens`, `cache_read_input_tokens` and `cache_creation`.

use async_trait::async_trait;
use serde_json::{Value, json};
use strata_provider::{
    BreakpointPosition, Completion, ContentBlock, EventStream, Message, Model, Protocol, Provider,
    ProviderError, Request, Role, StopReason, StreamOptions, ToolResultContent, Usage,
};

/// Posts to `{base_url}/v1/messages` without streaming.
pub struct AnthropicWire {
    pub base_url: String,
    client: reqwest::Client,
}

impl AnthropicWire {
    pub fn new(base_url: String) -> Self {
        Self {
            base_url,
            client: reqwest::Client::new(),
        }
    }
}

fn cache_control(request: &Request, position: BreakpointPosition) -> Option<Value> {
    request
        .breakpoints
        .iter()
        .find(|breakpoint| breakpoint.position == position)
        .map(|breakpoint| json!({"type": "ephemeral", "ttl": breakpoint.ttl.as_str()}))
}

fn block(block: &ContentBlock) -> Option<Value> {
    Some(match block {
        ContentBlock::Text { text, .. } => json!({"type": "text", "text": text}),
        ContentBlock::ToolCall {
            id,
            name,
            arguments,
        } => {
            json!({"type": "tool_use", "id": id, "name": name, "input": arguments})
        }
        ContentBlock::ToolResult {
            tool_call_id,
            content,
            is_error,
        } => {
            let content: Vec<Value> = content
                .iter()
                .filter_map(|part| match part {
                    ToolResultContent::Text { text } => Some(json!({"type": "text", "text": text})),
                    ToolResultContent::Image { .. } => None,
                })
                .collect();
            json!({"type": "tool_result", "tool_use_id": tool_call_id, "content": content, "is_error": is_error})
        }
        _ => return None,
    })
}

pub fn body(request: &Request, max_tokens: u32) -> Value {
    let mut tools: Vec<Value> = request
        .tools
        .iter()
        .map(|tool| json!({"name": tool.name, "description": tool.description, "input_schema": tool.parameters}))
        .collect();
    if let (Some(last), Some(control)) = (
        tools.last_mut(),
        cache_control(request, BreakpointPosition::Tools),
    ) {
        last["cache_control"] = control;
    }
    let mut system: Vec<Value> = request
        .system
        .iter()
        .map(|block| json!({"type": "text", "text": block.text}))
        .collect();
    if let (Some(last), Some(control)) = (
        system.last_mut(),
        cache_control(request, BreakpointPosition::System),
    ) {
        last["cache_control"] = control;
    }
    let messages: Vec<Value> = request
        .messages
        .iter()
        .enumerate()
        .map(|(index, message)| {
            let role = match message.role {
                Role::Assistant => "assistant",
                _ => "user",
            };
            let mut content: Vec<Value> = message.content.iter().filter_map(block).collect();
            if let (Some(last), Some(control)) = (
                content.last_mut(),
                cache_control(request, BreakpointPosition::Message { index }),
            ) {
                last["cache_control"] = control;
            }
            json!({"role": role, "content": content})
        })
        .collect();
    let mut body = json!({
        "model": request.model,
        "max_tokens": request.max_tokens.unwrap_or(max_tokens),
        "messages": messages,
        "stream": false,
    });
    if !tools.is_empty() {
        body["tools"] = Value::Array(tools);
    }
    if !system.is_empty() {
        body["system"] = Value::Array(system);
    }
    body
}

#[async_trait]
impl Provider for AnthropicWire {
    fn protocol(&self) -> Protocol {
        Protocol::AnthropicMessages
    }

    async fn stream(
        &self,
        _model: &Model,
        _request: &Request,
        _options: &StreamOptions,
    ) -> Result<EventStream, ProviderError> {
        Err(ProviderError::Cancelled)
    }

    async fn complete(
        &self,
        model: &Model,
        request: &Request,
        _options: &StreamOptions,
    ) -> Result<Completion, ProviderError> {
        let max_tokens = u32::try_from(model.max_output).unwrap_or(u32::MAX);
        let response = self
            .client
            .post(format!("{}/v1/messages", self.base_url))
            .json(&body(request, max_tokens))
            .send()
            .await
            .map_err(|error| ProviderError::Truncated {
                reason: error.to_string(),
            })?;
        let value: Value = response
            .json()
            .await
            .map_err(|error| ProviderError::Truncated {
                reason: error.to_string(),
            })?;
        let number = |v: &Value| v.as_u64().unwrap_or(0);
        let usage_json = &value["usage"];
        let usage = Usage {
            input: number(&usage_json["input_tokens"]),
            output: number(&usage_json["output_tokens"]),
            cache_read: number(&usage_json["cache_read_input_tokens"]),
            cache_write_5m: number(&usage_json["cache_creation"]["ephemeral_5m_input_tokens"]),
            cache_write_1h: number(&usage_json["cache_creation"]["ephemeral_1h_input_tokens"]),
            cache_storage: 0,
            cache_create: 0,
        };
        let text: String = value["content"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|block| block["type"] == "text")
            .filter_map(|block| block["text"].as_str())
            .collect();
        let stop_reason = match value["stop_reason"].as_str() {
            Some("max_tokens") => StopReason::MaxTokens,
            Some("tool_use") => StopReason::ToolUse,
            Some("end_turn") => StopReason::EndTurn,
            other => {
                return Err(ProviderError::Truncated {
                    reason: format!("unexpected reply {other:?}: {value}"),
                });
            }
        };
        Ok(Completion {
            message: Message {
                role: Role::Assistant,
                content: vec![ContentBlock::text(text)],
            },
            stop_reason,
            cost: usage.cost(&model.prices),
            usage,
        })
    }
}
