//! Between the provider's normalized types and the session's Pi-shaped messages.

use serde_json::Map;
use strata_provider::{
    ContentBlock as WireBlock, Cost as WireCost, Message as WireMessage, StopReason as WireStop,
    Usage as WireUsage,
};
use strata_session::{
    AgentMessage, AssistantMessage, ContentBlock, ImageContent, StopReason, TextContent,
    ThinkingContent, ToolCall, ToolResultMessage, Usage,
};
use strata_tools::{ToolContent, ToolOutput};

/// Who produced an assistant message, as Pi records it (`api`, `provider`, `model`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Origin {
    /// Wire protocol name, e.g. `anthropic-messages`.
    pub api: String,
    /// Provider id from the capability table.
    pub provider: String,
    /// Model id.
    pub model: String,
}

/// The session's stop reason for the provider's.
pub fn stop_reason(stop: WireStop) -> StopReason {
    match stop {
        WireStop::EndTurn | WireStop::StopSequence | WireStop::PauseTurn => StopReason::Stop,
        WireStop::MaxTokens | WireStop::ContextWindowExceeded => StopReason::Length,
        WireStop::ToolUse => StopReason::ToolUse,
        WireStop::Refusal => StopReason::Other("refusal".into()),
    }
}

/// Usage and cost in the session's shape (`input` is uncached input, as in Pi), the 1-hour
/// share of the writes kept in `cacheWrite1h`.
pub fn usage(usage: &WireUsage, cost: &WireCost) -> Usage {
    strata_accounting::session_usage(usage, cost)
}

/// The assistant message to store for a provider message.
pub fn assistant(
    message: &WireMessage,
    stop: StopReason,
    usage: Usage,
    origin: &Origin,
    error: Option<String>,
    timestamp: i64,
) -> AssistantMessage {
    let content = message.content.iter().filter_map(block).collect();
    AssistantMessage {
        content,
        api: origin.api.clone(),
        provider: origin.provider.clone(),
        model: origin.model.clone(),
        usage,
        stop_reason: stop,
        error_message: error,
        thinking_level: None,
        timestamp,
        extra: Map::new(),
    }
}

fn block(block: &WireBlock) -> Option<ContentBlock> {
    Some(match block {
        WireBlock::Text { text, signature } => ContentBlock::Text(TextContent {
            text: text.clone(),
            text_signature: signature.clone(),
            ..TextContent::default()
        }),
        WireBlock::Thinking {
            text,
            signature,
            redacted,
        } => ContentBlock::Thinking(ThinkingContent {
            thinking: text.clone(),
            thinking_signature: signature.clone(),
            redacted: redacted.then_some(true),
            extra: Map::new(),
        }),
        WireBlock::ToolCall {
            id,
            name,
            arguments,
        } => ContentBlock::ToolCall(ToolCall {
            id: id.clone(),
            name: name.clone(),
            arguments: arguments.clone(),
            ..ToolCall::default()
        }),
        WireBlock::Image { media_type, data } => ContentBlock::Image(ImageContent {
            data: data.clone(),
            mime_type: media_type.clone(),
            extra: Map::new(),
        }),
        // Kept whole for the next request (a provider's own tool search).
        WireBlock::ProviderItem { api, item } => {
            ContentBlock::Unknown(WireBlock::provider_item_json(api, item))
        }
        _ => return None,
    })
}

/// The tool result message to store for a tool's output.
pub fn tool_result(call: &ToolCall, output: &ToolOutput, timestamp: i64) -> AgentMessage {
    let content = output
        .content
        .iter()
        .map(|part| match part {
            ToolContent::Text { text } => ContentBlock::Text(TextContent {
                text: text.clone(),
                ..TextContent::default()
            }),
            ToolContent::Image { media_type, data } => ContentBlock::Image(ImageContent {
                data: data.clone(),
                mime_type: media_type.clone(),
                extra: Map::new(),
            }),
        })
        .collect();
    AgentMessage::ToolResult(ToolResultMessage {
        tool_call_id: call.id.clone(),
        tool_name: call.name.clone(),
        content,
        details: (!output.details.is_null()).then(|| output.details.clone()),
        is_error: output.is_error,
        timestamp,
        extra: Map::new(),
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use strata_provider::Role;

    use super::*;

    #[test]
    fn a_provider_item_is_stored_whole_and_reads_back_as_the_item_that_came() {
        // Keys out of alphabetical order: the session must keep the provider's bytes.
        let item = json!({"type": "tool_search_output", "status": "completed", "id": "tso_1",
            "execution": "server", "tools": [{"type": "function", "name": "mcp__s__echo",
            "parameters": {"type": "object"}, "defer_loading": true}]});
        let wire = WireMessage {
            role: Role::Assistant,
            content: vec![
                WireBlock::ProviderItem {
                    api: "openai-responses".into(),
                    item: item.clone(),
                },
                WireBlock::text("done"),
            ],
        };
        let origin = Origin {
            api: "openai-responses".into(),
            provider: "openai".into(),
            model: "gpt-5.5".into(),
        };
        let stored = assistant(&wire, StopReason::Stop, Usage::default(), &origin, None, 1);
        assert_eq!(stored.content.len(), 2, "{:?}", stored.content);
        let line = serde_json::to_string(&AgentMessage::Assistant(stored)).expect("serializes");
        let item_text = item.to_string();
        assert!(line.contains(&item_text), "{line}");
        assert!(line.contains(r#""type":"providerItem""#), "{line}");

        let read: AgentMessage = serde_json::from_str(&line).expect("the line reads back");
        let AgentMessage::Assistant(read) = read else {
            panic!("an assistant message")
        };
        let ContentBlock::Unknown(map) = &read.content[0] else {
            panic!("kept as a block Pi skips: {:?}", read.content[0])
        };
        assert_eq!(
            WireBlock::from_provider_item_json(map),
            Some(WireBlock::ProviderItem {
                api: "openai-responses".into(),
                item
            })
        );
    }
}
