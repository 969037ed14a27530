//! The output cap: what a reply costs in output tokens, and what a model stopped by the
//! request's cap (`max_tokens`, `max_output_tokens`, …) sends instead.
//!
//! Output is produced in order — thinking, text, then tool calls — and stops when the cap is
//! reached: thinking and text are cut to the tokens that fit; a tool call that does not fit
//! whole is not sent at all, since a client cannot run half a call. The cut reply stops with
//! [`Stop::MaxTokens`] and its output tokens are exactly those sent.

use crate::scenario::{Reply, Stop};
use crate::tokens::Tokenizer;

/// The output tokens of a reply.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct OutputTokens {
    /// Every output token, thinking included.
    pub total: u64,
    /// Of them, thinking tokens.
    pub reasoning: u64,
}

/// Counts the output tokens of `reply`: thinking, text, and each call's name and arguments.
pub fn count(reply: &Reply, tokenizer: &Tokenizer) -> OutputTokens {
    let reasoning = reply.thinking.as_deref().map_or(0, |t| tokenizer.count(t));
    let text = reply.text.as_deref().map_or(0, |t| tokenizer.count(t));
    let calls: u64 = reply
        .tool_calls
        .iter()
        .map(|call| call_tokens(call, tokenizer))
        .sum();
    OutputTokens {
        total: reasoning + text + calls,
        reasoning,
    }
}

fn call_tokens(call: &crate::scenario::ToolCall, tokenizer: &Tokenizer) -> u64 {
    tokenizer.count(&call.name) + tokenizer.count(&call.arguments_json())
}

/// The reply a model stopped at `cap` output tokens sends, or `None` when `reply` fits.
pub fn cut(reply: &Reply, cap: u64, tokenizer: &Tokenizer) -> Option<Reply> {
    if count(reply, tokenizer).total <= cap {
        return None;
    }
    let mut budget = cap;
    let mut take = |text: &Option<String>| -> Option<String> {
        let text = text.as_deref()?;
        let kept = tokenizer.prefix(text, budget);
        budget -= tokenizer.count(&kept);
        (!kept.is_empty()).then_some(kept)
    };
    let thinking = take(&reply.thinking);
    // Thinking that was cut leaves nothing for the text.
    let text = if thinking.as_deref() == reply.thinking.as_deref() {
        take(&reply.text)
    } else {
        None
    };
    let mut tool_calls = Vec::new();
    if text.as_deref() == reply.text.as_deref() && thinking.as_deref() == reply.thinking.as_deref()
    {
        for call in &reply.tool_calls {
            let cost = call_tokens(call, tokenizer);
            if cost > budget {
                break;
            }
            budget -= cost;
            tool_calls.push(call.clone());
        }
    }
    Some(Reply {
        thinking,
        text,
        tool_calls,
        stop: Stop::MaxTokens,
        turn: reply.turn,
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::scenario::ToolCall;

    fn reply(thinking: Option<&str>, text: Option<&str>, calls: usize) -> Reply {
        Reply {
            thinking: thinking.map(str::to_owned),
            text: text.map(str::to_owned),
            tool_calls: (0..calls)
                .map(|i| ToolCall {
                    id: format!("c{i}"),
                    name: "bash".into(),
                    arguments: json!({"command": "cargo test --workspace"}),
                })
                .collect(),
            stop: if calls > 0 {
                Stop::ToolUse
            } else {
                Stop::EndTurn
            },
            turn: Some(0),
        }
    }

    #[test]
    fn a_reply_within_the_cap_is_not_cut() {
        let tokenizer = Tokenizer::new();
        let full = reply(Some("plan it"), Some("done"), 1);
        let total = count(&full, &tokenizer).total;
        assert_eq!(cut(&full, total, &tokenizer), None);
        assert!(cut(&full, total - 1, &tokenizer).is_some());
    }

    #[test]
    fn thinking_is_cut_first_and_leaves_nothing_after_it() {
        let tokenizer = Tokenizer::new();
        let full = reply(Some("one two three four five six"), Some("answer"), 1);
        let sent = cut(&full, 3, &tokenizer).unwrap();
        assert_eq!(sent.thinking.as_deref(), Some("one two three"));
        assert_eq!((sent.text.as_deref(), sent.tool_calls.len()), (None, 0));
        assert_eq!(sent.stop, Stop::MaxTokens);
        assert_eq!(count(&sent, &tokenizer).total, 3);
    }

    #[test]
    fn a_call_that_does_not_fit_whole_is_dropped_and_text_is_kept() {
        let tokenizer = Tokenizer::new();
        let full = reply(None, Some("Running the tests."), 2);
        let text = tokenizer.count("Running the tests.");
        let one_call = count(&reply(None, None, 1), &tokenizer).total;
        let sent = cut(&full, text + one_call + 1, &tokenizer).unwrap();
        assert_eq!(sent.text.as_deref(), Some("Running the tests."));
        assert_eq!(sent.tool_calls.len(), 1);
        assert_eq!(count(&sent, &tokenizer).total, text + one_call);
        let only_call = cut(&reply(None, None, 1), 1, &tokenizer).unwrap();
        assert_eq!(only_call.text, None);
        assert!(only_call.tool_calls.is_empty());
        assert_eq!(count(&only_call, &tokenizer).total, 0);
    }
}
