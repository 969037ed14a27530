//! Pi's serialized transcript: the conversation as `[User]: …` text, so the summarizer reads
//! it as a document instead of continuing it.

use strata_context::render::{
    BRANCH_SUMMARY_PREFIX, BRANCH_SUMMARY_SUFFIX, COMPACTION_SUMMARY_PREFIX,
    COMPACTION_SUMMARY_SUFFIX, bash_execution_text,
};
use strata_session::{AgentMessage, ContentBlock, MessageContent};

use crate::estimate::js_len;

/// Longest tool result kept in a transcript, in characters (Pi's `TOOL_RESULT_MAX_CHARS`).
pub const TOOL_RESULT_MAX_CHARS: usize = 2000;

/// Keeps the first `max_chars` UTF-16 units and says how many were cut, as Pi does.
pub fn truncate_for_summary(text: &str, max_chars: usize) -> String {
    let length = js_len(text) as usize;
    if length <= max_chars {
        return text.to_owned();
    }
    let mut units = 0;
    let mut end = 0;
    for (index, c) in text.char_indices() {
        if units + c.len_utf16() > max_chars {
            break;
        }
        units += c.len_utf16();
        end = index + c.len_utf8();
    }
    format!(
        "{}\n\n[... {} more characters truncated]",
        &text[..end],
        length - units
    )
}

fn content_text(content: &MessageContent) -> String {
    match content {
        MessageContent::Text(text) => text.clone(),
        MessageContent::Blocks(blocks) => blocks_text(blocks),
    }
}

fn blocks_text(blocks: &[ContentBlock]) -> String {
    blocks
        .iter()
        .filter_map(|block| match block {
            ContentBlock::Text(text) => Some(text.text.as_str()),
            _ => None,
        })
        .collect()
}

/// Pi's `serializeConversation` over messages as `convertToLlm` would send them: parts joined
/// by a blank line, tool results cut to 2000 characters, images dropped.
pub fn serialize_conversation<'a>(messages: impl IntoIterator<Item = &'a AgentMessage>) -> String {
    let mut parts: Vec<String> = Vec::new();
    let user = |parts: &mut Vec<String>, text: String| {
        if !text.is_empty() {
            parts.push(format!("[User]: {text}"));
        }
    };
    for message in messages {
        match message {
            AgentMessage::User(message) => user(&mut parts, content_text(&message.content)),
            AgentMessage::Custom(message) => user(&mut parts, content_text(&message.content)),
            AgentMessage::BashExecution(bash) if bash.exclude_from_context != Some(true) => {
                user(&mut parts, bash_execution_text(bash));
            }
            // The prompt is not conversation: summaries never restate it.
            AgentMessage::BashExecution(_) | AgentMessage::System(_) | AgentMessage::Unknown(_) => {
            }
            AgentMessage::BranchSummary(summary) => user(
                &mut parts,
                format!(
                    "{BRANCH_SUMMARY_PREFIX}{}{BRANCH_SUMMARY_SUFFIX}",
                    summary.summary
                ),
            ),
            AgentMessage::CompactionSummary(summary) => user(
                &mut parts,
                format!(
                    "{COMPACTION_SUMMARY_PREFIX}{}{COMPACTION_SUMMARY_SUFFIX}",
                    summary.summary
                ),
            ),
            AgentMessage::Assistant(assistant) => {
                let mut texts = Vec::new();
                let mut thinking = Vec::new();
                let mut calls = Vec::new();
                for block in &assistant.content {
                    match block {
                        ContentBlock::Text(text) => texts.push(text.text.as_str()),
                        ContentBlock::Thinking(block) => thinking.push(block.thinking.as_str()),
                        ContentBlock::ToolCall(call) => {
                            let arguments = call
                                .arguments
                                .as_object()
                                .map(|map| {
                                    map.iter()
                                        .map(|(key, value)| {
                                            format!(
                                                "{key}={}",
                                                serde_json::to_string(value).unwrap_or_default()
                                            )
                                        })
                                        .collect::<Vec<_>>()
                                        .join(", ")
                                })
                                .unwrap_or_default();
                            calls.push(format!("{}({arguments})", call.name));
                        }
                        _ => {}
                    }
                }
                if !thinking.is_empty() {
                    parts.push(format!("[Assistant thinking]: {}", thinking.join("\n")));
                }
                if !texts.is_empty() {
                    parts.push(format!("[Assistant]: {}", texts.join("\n")));
                }
                if !calls.is_empty() {
                    parts.push(format!("[Assistant tool calls]: {}", calls.join("; ")));
                }
            }
            AgentMessage::ToolResult(result) => {
                let text = blocks_text(&result.content);
                if !text.is_empty() {
                    parts.push(format!(
                        "[Tool result]: {}",
                        truncate_for_summary(&text, TOOL_RESULT_MAX_CHARS)
                    ));
                }
            }
        }
    }
    parts.join("\n\n")
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn message(value: serde_json::Value) -> AgentMessage {
        serde_json::from_value(value).expect("message")
    }

    #[test]
    fn pi_format_with_tool_results_cut() {
        let messages = [
            message(
                json!({"role":"user","content":[{"type":"text","text":"fix "},{"type":"text","text":"it"}],"timestamp":0}),
            ),
            message(
                json!({"role":"assistant","content":[{"type":"thinking","thinking":"hmm"},{"type":"text","text":"Reading."},{"type":"toolCall","id":"c1","name":"read","arguments":{"path":"a.rs","offset":2}}],"api":"x","provider":"p","model":"m","usage":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"totalTokens":0,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}},"stopReason":"toolUse","timestamp":0}),
            ),
            message(
                json!({"role":"toolResult","toolCallId":"c1","toolName":"read","content":[{"type":"text","text":"x".repeat(2005)}],"isError":false,"timestamp":0}),
            ),
        ];
        let text = serialize_conversation(&messages);
        let expected = format!(
            "[User]: fix it\n\n[Assistant thinking]: hmm\n\n[Assistant]: Reading.\n\n[Assistant tool calls]: read(path=\"a.rs\", offset=2)\n\n[Tool result]: {}\n\n[... 5 more characters truncated]",
            "x".repeat(2000)
        );
        assert_eq!(text, expected);
    }

    #[test]
    fn truncation_counts_utf16_units_and_keeps_whole_chars() {
        assert_eq!(truncate_for_summary("ab", 2), "ab");
        assert_eq!(
            truncate_for_summary("a😀b", 2),
            "a\n\n[... 3 more characters truncated]"
        );
    }
}
