//! Summary requests in two forms: the session's own cached request plus one instruction, and
//! Pi's serialized transcript.

use strata_provider::{Breakpoint, BreakpointPosition, Message, Request, Role, SystemBlock};

use crate::prepare::Preparation;
use crate::prompt;
use crate::serialize::serialize_conversation;

/// Which of a compaction's summaries a request asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SummaryPart {
    /// The history before the cut (or before the split turn).
    History,
    /// The early part of a split turn.
    TurnPrefix,
    /// Both in one answer, separated by a marker line (cache-friendly form only).
    SplitTurn,
}

impl SummaryPart {
    /// The name used in errors.
    pub fn name(self) -> &'static str {
        match self {
            Self::History => "history",
            Self::TurnPrefix => "turn prefix",
            Self::SplitTurn => "split turn",
        }
    }
}

/// Suffix of the cache key of transcript-form requests, so they never route with the
/// session's own requests.
pub const TRANSCRIPT_CACHE_KEY_SUFFIX: &str = ":compaction";

/// The instruction text a cache-friendly request ends with.
pub fn cache_friendly_instruction(
    preparation: &Preparation,
    part: SummaryPart,
    focus: Option<&str>,
) -> String {
    match part {
        SummaryPart::History => prompt::cache_friendly_history(
            &preparation.kept_from_excerpt,
            preparation.turn_start_excerpt.as_deref(),
            preparation.previous_summary.is_some(),
            focus,
        ),
        SummaryPart::SplitTurn => prompt::cache_friendly_split_turn(
            preparation
                .turn_start_excerpt
                .as_deref()
                .unwrap_or_default(),
            &preparation.kept_from_excerpt,
            preparation.previous_summary.is_some(),
            focus,
        ),
        SummaryPart::TurnPrefix => prompt::cache_friendly_turn_prefix(
            preparation
                .turn_start_excerpt
                .as_deref()
                .unwrap_or_default(),
            &preparation.kept_from_excerpt,
        ),
    }
}

/// Index of the last message whose prefix the session's previous turn wrote to the cache:
/// the message right before the last assistant turn (that turn's request ended there).
fn cached_prefix_end(messages: &[Message]) -> Option<usize> {
    let last_assistant = messages
        .iter()
        .rposition(|message| message.role == Role::Assistant)?;
    last_assistant.checked_sub(1)
}

/// The session's request plus one user message asking for the summary.
///
/// `main` is the request the session would send now (rendered from the context at the leaf).
/// Tools, system and messages are kept byte for byte, and so are `thinking` and the cache key,
/// so the input is read from the cache the session's last turn wrote. The message breakpoint
/// moves to where that turn's request ended (right before the last assistant message), so it
/// reads and writes nothing new; the appended instruction carries no breakpoint. The reply is
/// never appended to the session's chain.
pub fn cache_friendly_request(
    main: &Request,
    preparation: &Preparation,
    part: SummaryPart,
    focus: Option<&str>,
    max_tokens: u32,
) -> Request {
    let mut request = main.clone();
    let ttl = main
        .breakpoints
        .iter()
        .find(|breakpoint| matches!(breakpoint.position, BreakpointPosition::Message { .. }))
        .or(main.breakpoints.first())
        .map(|breakpoint| breakpoint.ttl)
        .unwrap_or_default();
    request
        .breakpoints
        .retain(|breakpoint| !matches!(breakpoint.position, BreakpointPosition::Message { .. }));
    if !main.breakpoints.is_empty()
        && let Some(index) = cached_prefix_end(&main.messages)
    {
        request.breakpoints.push(Breakpoint {
            position: BreakpointPosition::Message { index },
            ttl,
        });
    }
    request
        .messages
        .push(Message::user_text(cache_friendly_instruction(
            preparation,
            part,
            focus,
        )));
    request.max_tokens = Some(output_cap(max_tokens, main));
    request
}

/// Output cap with room for the reasoning budget the request keeps.
fn output_cap(summary_tokens: u32, request: &Request) -> u32 {
    summary_tokens.saturating_add(request.thinking.default_budget_tokens().unwrap_or(0))
}

/// Pi's serialized form: the summarizer system prompt and one user message holding the
/// transcript (tool results cut to 2000 characters), no tools, no breakpoints (nothing is
/// written to the cache) and a cache key of its own. `main` gives the model, the thinking
/// level and the session's cache key.
pub fn transcript_request(
    main: &Request,
    preparation: &Preparation,
    part: SummaryPart,
    focus: Option<&str>,
    max_tokens: u32,
) -> Request {
    let text = match part {
        // The transcript form always asks for the two parts of a split turn separately.
        SummaryPart::History | SummaryPart::SplitTurn => prompt::transcript_history(
            &serialize_conversation(
                preparation
                    .messages_to_summarize
                    .iter()
                    .map(|message| message.message.as_ref()),
            ),
            preparation.previous_summary.as_deref(),
            focus,
        ),
        SummaryPart::TurnPrefix => prompt::transcript_turn_prefix(&serialize_conversation(
            preparation
                .turn_prefix
                .iter()
                .map(|message| message.message.as_ref()),
        )),
    };
    let mut request = Request::new(main.model.clone());
    request.system = vec![SystemBlock::text(prompt::SUMMARIZER_SYSTEM_PROMPT)];
    request.messages = vec![Message::user_text(text)];
    request.thinking = main.thinking;
    request.cache_key = main
        .cache_key
        .as_ref()
        .map(|key| format!("{key}{TRANSCRIPT_CACHE_KEY_SUFFIX}"));
    request.max_tokens = Some(output_cap(max_tokens, main));
    request
}

#[cfg(test)]
mod tests {
    use strata_provider::{CacheTtl, Message};

    use super::*;

    #[test]
    fn cached_prefix_ends_before_the_last_assistant_turn() {
        let messages = [
            Message::user_text("a"),
            Message::assistant_text("b"),
            Message::user_text("c"),
            Message::assistant_text("d"),
        ];
        assert_eq!(cached_prefix_end(&messages), Some(2));
        assert_eq!(cached_prefix_end(&messages[..3]), Some(0));
        assert_eq!(cached_prefix_end(&messages[..1]), None);
    }

    #[test]
    fn instruction_has_no_breakpoint_and_the_prefix_is_untouched() {
        let mut main = Request::new("m");
        main.messages = vec![
            Message::user_text("a"),
            Message::assistant_text("b"),
            Message::user_text("c"),
            Message::assistant_text("d"),
        ];
        main.breakpoints = vec![
            Breakpoint {
                position: BreakpointPosition::System,
                ttl: CacheTtl::FiveMinutes,
            },
            Breakpoint {
                position: BreakpointPosition::Message { index: 3 },
                ttl: CacheTtl::FiveMinutes,
            },
        ];
        let preparation = Preparation {
            first_kept_entry_id: strata_session::EntryId::new("k"),
            messages_to_summarize: Vec::new(),
            turn_prefix: Vec::new(),
            is_split_turn: false,
            tokens_before: 0,
            previous_summary: None,
            file_ops: crate::files::FileOps::new(),
            kept_from_excerpt: "[User]: c".into(),
            turn_start_excerpt: None,
        };
        let request = cache_friendly_request(&main, &preparation, SummaryPart::History, None, 100);
        assert_eq!(request.messages[..4], main.messages[..]);
        assert_eq!(request.messages.len(), 5);
        assert!(
            request.messages[4]
                .text()
                .contains("<boundary>\n[User]: c\n</boundary>")
        );
        let positions: Vec<_> = request.breakpoints.iter().map(|b| b.position).collect();
        assert_eq!(
            positions,
            [
                BreakpointPosition::System,
                BreakpointPosition::Message { index: 2 }
            ]
        );
        assert_eq!(request.max_tokens, Some(100));
    }
}
