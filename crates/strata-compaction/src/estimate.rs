//! Token estimates: the last response's real usage plus chars/4 for what came after it.

use strata_context::Context;
use strata_session::{AgentMessage, ContentBlock, MessageContent, StopReason, Usage};

/// Characters an image counts for in tool results and custom messages (Pi: 1200 tokens).
const IMAGE_CHARS: u64 = 4800;

/// Length as JavaScript counts it (UTF-16 code units), so estimates match Pi's.
pub(crate) fn js_len(text: &str) -> u64 {
    text.encode_utf16().count() as u64
}

fn ceil_quarter(chars: u64) -> u64 {
    chars.div_ceil(4)
}

/// Context size a response's usage stands for: its total, else the sum of its parts
/// (the output counts: it is in the next request's context).
pub fn usage_context_tokens(usage: &Usage) -> u64 {
    if usage.total_tokens > 0 {
        usage.total_tokens
    } else {
        usage.input + usage.output + usage.cache_read + usage.cache_write
    }
}

fn content_chars(content: &MessageContent, images: bool) -> u64 {
    match content {
        MessageContent::Text(text) => js_len(text),
        MessageContent::Blocks(blocks) => block_chars(blocks, images),
    }
}

fn block_chars(blocks: &[ContentBlock], images: bool) -> u64 {
    blocks
        .iter()
        .map(|block| match block {
            ContentBlock::Text(text) => js_len(&text.text),
            ContentBlock::Image(_) if images => IMAGE_CHARS,
            _ => 0,
        })
        .sum()
}

/// Pi's `estimateTokens`: `ceil(chars / 4)` with its per-role rules (user images ignored,
/// 4800 chars per image in tool results and custom messages, tool calls as name + JSON args).
pub fn estimate_message_tokens(message: &AgentMessage) -> u64 {
    let chars = match message {
        AgentMessage::User(user) => content_chars(&user.content, false),
        AgentMessage::Assistant(assistant) => assistant
            .content
            .iter()
            .map(|block| match block {
                ContentBlock::Text(text) => js_len(&text.text),
                ContentBlock::Thinking(thinking) => js_len(&thinking.thinking),
                ContentBlock::ToolCall(call) => {
                    js_len(&call.name)
                        + serde_json::to_string(&call.arguments)
                            .map(|json| js_len(&json))
                            .unwrap_or(0)
                }
                _ => 0,
            })
            .sum(),
        AgentMessage::ToolResult(result) => block_chars(&result.content, true),
        AgentMessage::Custom(custom) => content_chars(&custom.content, true),
        AgentMessage::BashExecution(bash) => js_len(&bash.command) + js_len(&bash.output),
        AgentMessage::BranchSummary(summary) => js_len(&summary.summary),
        AgentMessage::CompactionSummary(summary) => js_len(&summary.summary),
        AgentMessage::System(system) => {
            content_chars(&system.content, false)
                + system
                    .section_changes()
                    .filter_map(|(_, text)| text)
                    .map(|text| js_len(&text))
                    .sum::<u64>()
                + system
                    .tools_added
                    .as_ref()
                    .and_then(|tools| serde_json::to_string(tools).ok())
                    .map_or(0, |json| js_len(&json))
        }
        AgentMessage::Unknown(_) => 0,
    };
    ceil_quarter(chars)
}

/// The usage of an assistant message that has valid usage (not an error or aborted turn).
fn valid_usage(message: &AgentMessage) -> Option<&Usage> {
    match message {
        AgentMessage::Assistant(assistant)
            if !matches!(
                assistant.stop_reason,
                StopReason::Error | StopReason::Aborted
            ) =>
        {
            Some(&assistant.usage)
        }
        _ => None,
    }
}

/// A context-size estimate and where it came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ContextEstimate {
    /// The estimate: `usage_tokens + trailing_tokens`.
    pub tokens: u64,
    /// Tokens reported by the last valid response's usage (0 without one).
    pub usage_tokens: u64,
    /// chars/4 of the messages after that response (all messages without one).
    pub trailing_tokens: u64,
    /// Index of the message whose usage was used.
    pub last_usage_index: Option<usize>,
}

/// Pi's `estimateContextTokens` over a message list.
pub fn estimate_messages<'a>(
    messages: impl IntoIterator<Item = &'a AgentMessage>,
) -> ContextEstimate {
    let messages: Vec<&AgentMessage> = messages.into_iter().collect();
    let last = messages
        .iter()
        .enumerate()
        .rev()
        .find_map(|(index, message)| valid_usage(message).map(|usage| (index, usage)));
    let (usage_tokens, start, last_usage_index) = match last {
        Some((index, usage)) => (usage_context_tokens(usage), index + 1, Some(index)),
        None => (0, 0, None),
    };
    let trailing_tokens = messages[start..]
        .iter()
        .map(|message| estimate_message_tokens(message))
        .sum();
    ContextEstimate {
        tokens: usage_tokens + trailing_tokens,
        usage_tokens,
        trailing_tokens,
        last_usage_index,
    }
}

/// Tokens the context holds: the last non-error assistant's usage total plus chars/4 of
/// every message after it (chars/4 of everything when no response has usage).
pub fn estimate_context_tokens(context: &Context) -> u64 {
    estimate_messages(
        context
            .messages
            .iter()
            .map(|message| message.message.as_ref()),
    )
    .tokens
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn message(value: serde_json::Value) -> AgentMessage {
        serde_json::from_value(value).expect("message")
    }

    #[test]
    fn per_role_rules_match_pi() {
        let user = message(
            json!({"role":"user","content":[{"type":"text","text":"abcde"},{"type":"image","data":"x","mimeType":"image/png"}],"timestamp":0}),
        );
        assert_eq!(estimate_message_tokens(&user), 2);
        let result = message(
            json!({"role":"toolResult","toolCallId":"c","toolName":"read","content":[{"type":"text","text":"abcd"},{"type":"image","data":"x","mimeType":"image/png"}],"isError":false,"timestamp":0}),
        );
        assert_eq!(estimate_message_tokens(&result), (4 + 4800) / 4);
        let call = message(
            json!({"role":"assistant","content":[{"type":"toolCall","id":"c","name":"read","arguments":{"path":"a"}}],"api":"x","provider":"p","model":"m","usage":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"totalTokens":0,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}},"stopReason":"toolUse","timestamp":0}),
        );
        // "read" + {"path":"a"} = 4 + 12 chars
        assert_eq!(estimate_message_tokens(&call), 4);
        let bash = message(
            json!({"role":"bashExecution","command":"ls","output":"a\nb","exitCode":0,"cancelled":false,"truncated":false,"timestamp":0}),
        );
        assert_eq!(estimate_message_tokens(&bash), 2);
        // UTF-16 units, as JavaScript counts: one emoji is two.
        let emoji = message(json!({"role":"user","content":"😀😀","timestamp":0}));
        assert_eq!(estimate_message_tokens(&emoji), 1);
    }

    fn assistant(total: u64, stop: &str) -> AgentMessage {
        message(
            json!({"role":"assistant","content":[{"type":"text","text":"ok"}],"api":"x","provider":"p","model":"m","usage":{"input":1,"output":2,"cacheRead":3,"cacheWrite":4,"totalTokens":total,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}},"stopReason":stop,"timestamp":0}),
        )
    }

    #[test]
    fn last_valid_usage_plus_trailing_estimate() {
        let user = message(json!({"role":"user","content":"x".repeat(40),"timestamp":0}));
        let messages = [
            user.clone(),
            assistant(1000, "stop"),
            user.clone(),
            assistant(99_999, "error"),
            user.clone(),
        ];
        let estimate = estimate_messages(&messages);
        assert_eq!(estimate.usage_tokens, 1000);
        assert_eq!(estimate.last_usage_index, Some(1));
        // two users of 10 tokens and the error turn's "ok" (1 token)
        assert_eq!(estimate.trailing_tokens, 21);
        assert_eq!(estimate.tokens, 1021);
        let zero_total = [assistant(0, "stop")];
        assert_eq!(estimate_messages(&zero_total).tokens, 10);
        assert_eq!(estimate_messages(&[user]).tokens, 10);
    }
}
