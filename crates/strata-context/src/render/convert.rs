//! Pi's message conversion, done identically: `convertToLlm` (bash executions, custom
//! messages and summaries become user messages) and the parts of `transformMessages` that
//! decide what history is sent (thinking across models, error and aborted turns dropped).
//! Texts are byte-exact copies of Pi's.

use strata_provider::{ContentBlock, Message, Role, ToolResultContent};
use strata_session::{
    AgentMessage, AssistantMessage, BashExecutionMessage, ContentBlock as PiBlock, MessageContent,
    StopReason,
};

use crate::chain::ModelRef;

/// Pi's `COMPACTION_SUMMARY_PREFIX`.
pub const COMPACTION_SUMMARY_PREFIX: &str = "The conversation history before this point was compacted into the following summary:\n\n<summary>\n";
/// Pi's `COMPACTION_SUMMARY_SUFFIX`.
pub const COMPACTION_SUMMARY_SUFFIX: &str = "\n</summary>";
/// Pi's `BRANCH_SUMMARY_PREFIX`.
pub const BRANCH_SUMMARY_PREFIX: &str =
    "The following is a summary of a branch that this conversation came back from:\n\n<summary>\n";
/// Pi's `BRANCH_SUMMARY_SUFFIX`.
pub const BRANCH_SUMMARY_SUFFIX: &str = "</summary>";
/// The text of the error result Pi synthesizes for a tool call that never got one.
pub const NO_RESULT_PROVIDED: &str = "No result provided";

/// How a context message takes part in the conversation once converted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// Sent as a user message that is not a tool result (a patch may follow it).
    User,
    /// An assistant turn that is sent.
    Assistant,
    /// A tool result.
    ToolResult,
    /// Not sent: an error or aborted turn (still ends pending tool calls, as in Pi).
    DroppedAssistant,
    /// Not sent at all (`!!cmd`, unknown roles).
    Skipped,
}

/// What the conversion does with `message`, without converting it.
pub(crate) fn kind_of(message: &AgentMessage) -> Kind {
    match message {
        AgentMessage::User(_)
        | AgentMessage::Custom(_)
        | AgentMessage::BranchSummary(_)
        | AgentMessage::CompactionSummary(_) => Kind::User,
        AgentMessage::BashExecution(bash) if bash.exclude_from_context == Some(true) => {
            Kind::Skipped
        }
        AgentMessage::BashExecution(_) => Kind::User,
        AgentMessage::Assistant(assistant) => match assistant.stop_reason {
            StopReason::Error | StopReason::Aborted => Kind::DroppedAssistant,
            _ => Kind::Assistant,
        },
        AgentMessage::ToolResult(_) => Kind::ToolResult,
        // System messages reach a request as chapters 2 and 3's prompt and patches.
        AgentMessage::System(_) | AgentMessage::Unknown(_) => Kind::Skipped,
    }
}

/// Converts one context message; `None` for messages that are not sent.
///
/// `model` is the model the request goes to: an assistant turn from another model has its
/// thinking turned into text and its redacted thinking dropped, as Pi does.
pub(crate) fn convert(message: &AgentMessage, model: Option<&ModelRef>) -> Option<Message> {
    match message {
        AgentMessage::User(user) => Some(user_message(content_blocks(&user.content))),
        AgentMessage::Custom(custom) => Some(user_message(content_blocks(&custom.content))),
        AgentMessage::BashExecution(bash) if bash.exclude_from_context != Some(true) => {
            Some(Message::user_text(bash_execution_text(bash)))
        }
        AgentMessage::BashExecution(_) => None,
        AgentMessage::BranchSummary(summary) => Some(Message::user_text(format!(
            "{BRANCH_SUMMARY_PREFIX}{}{BRANCH_SUMMARY_SUFFIX}",
            summary.summary
        ))),
        AgentMessage::CompactionSummary(summary) => Some(Message::user_text(format!(
            "{COMPACTION_SUMMARY_PREFIX}{}{COMPACTION_SUMMARY_SUFFIX}",
            summary.summary
        ))),
        AgentMessage::Assistant(assistant) => match assistant.stop_reason {
            StopReason::Error | StopReason::Aborted => None,
            _ => Some(assistant_message(assistant, model)),
        },
        AgentMessage::ToolResult(result) => Some(Message {
            role: Role::User,
            content: vec![ContentBlock::ToolResult {
                tool_call_id: result.tool_call_id.clone(),
                content: result
                    .content
                    .iter()
                    .filter_map(tool_result_content)
                    .collect(),
                is_error: result.is_error,
            }],
        }),
        AgentMessage::System(_) | AgentMessage::Unknown(_) => None,
    }
}

/// The error result Pi inserts for a call left without one.
pub(crate) fn missing_result(tool_call_id: &str) -> Message {
    Message {
        role: Role::User,
        content: vec![ContentBlock::ToolResult {
            tool_call_id: tool_call_id.to_owned(),
            content: vec![ToolResultContent::Text {
                text: NO_RESULT_PROVIDED.to_owned(),
            }],
            is_error: true,
        }],
    }
}

/// Pi's `bashExecutionToText`.
pub fn bash_execution_text(bash: &BashExecutionMessage) -> String {
    let mut text = format!("Ran `{}`\n", bash.command);
    if bash.output.is_empty() {
        text.push_str("(no output)");
    } else {
        text.push_str(&format!("```\n{}\n```", bash.output));
    }
    if bash.cancelled {
        text.push_str("\n\n(command cancelled)");
    } else if let Some(Some(code)) = bash.exit_code
        && code != 0
    {
        text.push_str(&format!("\n\nCommand exited with code {code}"));
    }
    if bash.truncated
        && let Some(path) = bash
            .full_output_path
            .as_deref()
            .filter(|path| !path.is_empty())
    {
        text.push_str(&format!("\n\n[Output truncated. Full output: {path}]"));
    }
    text
}

fn user_message(content: Vec<ContentBlock>) -> Message {
    Message {
        role: Role::User,
        content,
    }
}

fn content_blocks(content: &MessageContent) -> Vec<ContentBlock> {
    match content {
        MessageContent::Text(text) => vec![ContentBlock::text(text.clone())],
        MessageContent::Blocks(blocks) => blocks.iter().filter_map(plain_block).collect(),
    }
}

/// Text and image blocks as they are; other block types have no place in a user message.
fn plain_block(block: &PiBlock) -> Option<ContentBlock> {
    match block {
        PiBlock::Text(text) => Some(ContentBlock::text(text.text.clone())),
        PiBlock::Image(image) => Some(ContentBlock::Image {
            media_type: image.mime_type.clone(),
            data: image.data.clone(),
        }),
        PiBlock::Thinking(_) | PiBlock::ToolCall(_) | PiBlock::Unknown(_) => None,
    }
}

fn tool_result_content(block: &PiBlock) -> Option<ToolResultContent> {
    match block {
        PiBlock::Text(text) => Some(ToolResultContent::Text {
            text: text.text.clone(),
        }),
        PiBlock::Image(image) => Some(ToolResultContent::Image {
            media_type: image.mime_type.clone(),
            data: image.data.clone(),
        }),
        PiBlock::Thinking(_) | PiBlock::ToolCall(_) | PiBlock::Unknown(_) => None,
    }
}

/// Whether `assistant` was produced by the model the request goes to. The context knows
/// provider and model id, not the wire API Pi also compares; with no model resolved, every
/// turn counts as the same model.
fn same_model(assistant: &AssistantMessage, model: Option<&ModelRef>) -> bool {
    model.is_none_or(|model| {
        model.provider == assistant.provider && model.model_id == assistant.model
    })
}

fn assistant_message(assistant: &AssistantMessage, model: Option<&ModelRef>) -> Message {
    let same = same_model(assistant, model);
    let content = assistant
        .content
        .iter()
        .filter_map(|block| match block {
            PiBlock::Thinking(thinking) => {
                let redacted = thinking.redacted == Some(true);
                if redacted {
                    // Opaque to any other model.
                    return same.then(|| ContentBlock::Thinking {
                        text: thinking.thinking.clone(),
                        signature: thinking.thinking_signature.clone(),
                        redacted: true,
                    });
                }
                if same && thinking.thinking_signature.is_some() {
                    return Some(ContentBlock::Thinking {
                        text: thinking.thinking.clone(),
                        signature: thinking.thinking_signature.clone(),
                        redacted: false,
                    });
                }
                if thinking.thinking.trim().is_empty() {
                    return None;
                }
                if same {
                    return Some(ContentBlock::Thinking {
                        text: thinking.thinking.clone(),
                        signature: None,
                        redacted: false,
                    });
                }
                Some(ContentBlock::text(thinking.thinking.clone()))
            }
            // The signature goes along: on OpenAI Responses it is the output message's id,
            // which Pi's requests repeat (the Pi dialect sends it back).
            PiBlock::Text(text) => Some(ContentBlock::Text {
                text: text.text.clone(),
                signature: text.text_signature.clone(),
            }),
            PiBlock::ToolCall(call) => Some(ContentBlock::ToolCall {
                id: call.id.clone(),
                name: call.name.clone(),
                arguments: call.arguments.clone(),
            }),
            PiBlock::Image(image) => Some(ContentBlock::Image {
                media_type: image.mime_type.clone(),
                data: image.data.clone(),
            }),
            // A provider's own item goes back as it came; the provider crate sends it only to
            // its own API.
            PiBlock::Unknown(block) => ContentBlock::from_provider_item_json(block),
        })
        .collect();
    Message {
        role: Role::Assistant,
        content,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Map, Value, json};
    use strata_session::BashExecutionMessage;

    fn bash(output: &str, exit_code: Option<Option<i64>>, cancelled: bool) -> BashExecutionMessage {
        BashExecutionMessage {
            command: "ls -la".into(),
            output: output.into(),
            exit_code,
            cancelled,
            truncated: false,
            full_output_path: None,
            timestamp: 0,
            exclude_from_context: None,
            extra: Map::new(),
        }
    }

    #[test]
    fn bash_text_matches_pi() {
        assert_eq!(
            bash_execution_text(&bash("a\nb", Some(Some(0)), false)),
            "Ran `ls -la`\n```\na\nb\n```"
        );
        assert_eq!(
            bash_execution_text(&bash("", Some(Some(2)), false)),
            "Ran `ls -la`\n(no output)\n\nCommand exited with code 2"
        );
        assert_eq!(
            bash_execution_text(&bash("x", Some(None), true)),
            "Ran `ls -la`\n```\nx\n```\n\n(command cancelled)"
        );
        let mut truncated = bash("x", None, false);
        truncated.truncated = true;
        truncated.full_output_path = Some("/tmp/out".into());
        assert_eq!(
            bash_execution_text(&truncated),
            "Ran `ls -la`\n```\nx\n```\n\n[Output truncated. Full output: /tmp/out]"
        );
    }

    #[test]
    fn thinking_from_another_model_becomes_text() {
        let message: AgentMessage = serde_json::from_value(json!({
            "role": "assistant", "api": "a", "provider": "p", "model": "m", "stopReason": "stop",
            "content": [
                {"type": "thinking", "thinking": "hmm", "thinkingSignature": "sig"},
                {"type": "thinking", "thinking": "", "thinkingSignature": "opaque", "redacted": true},
                {"type": "thinking", "thinking": "  "},
                {"type": "text", "text": "done"}
            ]
        }))
        .unwrap();
        let same = ModelRef {
            provider: "p".into(),
            model_id: "m".into(),
        };
        let other = ModelRef {
            provider: "q".into(),
            model_id: "m".into(),
        };
        let kept = convert(&message, Some(&same)).map(|m| m.content.len());
        assert_eq!(
            kept,
            Some(3),
            "same model: signed and redacted thinking kept, blank dropped"
        );
        let moved = convert(&message, Some(&other)).map(|m| m.content);
        assert_eq!(
            moved,
            Some(vec![ContentBlock::text("hmm"), ContentBlock::text("done")])
        );
    }

    /// Pi's text signature (on Responses, the output message's id) rides along for the Pi
    /// dialect to send back.
    #[test]
    fn an_assistant_text_keeps_its_signature() {
        let message: AgentMessage = serde_json::from_value(json!({
            "role": "assistant", "api": "openai-responses", "provider": "p", "model": "m",
            "stopReason": "stop",
            "content": [
                {"type": "text", "text": "signed", "textSignature": "{\"v\":1,\"id\":\"msg_1\"}"},
                {"type": "text", "text": "plain"}
            ]
        }))
        .unwrap();
        assert_eq!(
            convert(&message, None).map(|m| m.content),
            Some(vec![
                ContentBlock::Text {
                    text: "signed".into(),
                    signature: Some(r#"{"v":1,"id":"msg_1"}"#.into()),
                },
                ContentBlock::text("plain"),
            ])
        );
    }

    #[test]
    fn a_provider_item_in_the_session_renders_as_it_came() {
        let item = json!({"type": "tool_search_output", "id": "tso_1", "execution": "server",
            "status": "completed", "tools": [{"type": "function", "name": "f", "defer_loading": true}]});
        let stored = ContentBlock::provider_item_json("openai-responses", &item);
        let message: AgentMessage = serde_json::from_value(json!({
            "role": "assistant", "api": "openai-responses", "provider": "openai", "model": "m",
            "stopReason": "toolUse",
            "content": [Value::Object(stored), {"type": "text", "text": "done"}]
        }))
        .unwrap();
        // The session line keeps the block as written, so the next request sends the same bytes.
        let line = serde_json::to_value(&message).unwrap();
        assert_eq!(line["content"][0]["type"], json!("providerItem"));
        assert_eq!(line["content"][0]["item"].to_string(), item.to_string());
        let rendered = convert(&message, None).map(|m| m.content);
        assert_eq!(
            rendered,
            Some(vec![
                ContentBlock::ProviderItem {
                    api: "openai-responses".into(),
                    item
                },
                ContentBlock::text("done")
            ])
        );
    }
}
