//! Summary requests: recognising the compaction, split-turn and branch-summary requests of
//! strata and Pi, and Claude Code's compaction request, by their fixed instruction text; and
//! the default summary the scripted model writes when the scenario has no `[[summary]]` entry
//! left.
//!
//! The phrases below are copied from the harnesses' prompts (strata-compaction's
//! `prompt.rs`; Pi's `core/compaction/*.js`), not imported: the simulator must not depend on
//! the code it tests.

use serde::{Deserialize, Serialize};

use crate::scenario::Conversation;

/// Which summary a request asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SummaryKind {
    /// The history before a compaction's cut (first summary or update).
    History,
    /// The early part of a turn split by a compaction.
    TurnPrefix,
    /// Both in one answer (strata's cache-friendly split turn): the history summary, a line
    /// holding [`SPLIT_TURN_MARKER`], then the turn-prefix summary.
    SplitTurn,
    /// A branch the user leaves when navigating the session tree.
    Branch,
}

/// Opening of strata's cache-friendly requests (the session's request plus one instruction).
const STRATA_CHECKPOINT: &str = "[Context checkpoint request — not a message from the user]";
/// In strata's cache-friendly turn-prefix instruction only.
const STRATA_TURN_START: &str = "<turn-start>";
/// The line between the two parts of a split-turn answer; strata's cache-friendly split-turn
/// instruction asks for it by name.
pub const SPLIT_TURN_MARKER: &str = "=== TURN CONTEXT ===";
/// strata's summarizer system prompt (transcript form), first sentence.
const STRATA_SYSTEM: &str = "You turn a transcript of a session between a user and an AI coding assistant into a structured summary";
/// Pi's summarizer system prompt, the opening Pi 0.73 ("... an AI coding assistant") and
/// Pi 1.6 ("... an AI assistant") share.
const PI_SYSTEM: &str = "You are a context summarization assistant. Your task is to read a conversation between a user and an AI";
/// Pi 1.6's turn-prefix request: the serialized turn under this heading, the instruction
/// under [`PI_INSTRUCTIONS_HEADING`] (Pi 0.73 and the other requests use `<conversation>`).
const PI_CONVERSATION_HEADING: &str = "# Conversation\n";
/// Where Pi 1.6's turn-prefix instruction starts.
const PI_INSTRUCTIONS_HEADING: &str = "\n# Instructions\n";

/// Claude Code's compaction request: the session's own request plus a user text block that
/// opens with a "no tools" warning and goes on, a few lines later, with the task sentence.
const CLAUDE_CODE_OPENING: &str = "CRITICAL: Respond with TEXT ONLY.";
/// The task sentence of Claude Code's compaction request.
const CLAUDE_CODE_COMPACT: &str =
    "Your task is to create a detailed summary of the conversation so far";
/// Most bytes between the opening and the task sentence.
const CLAUDE_CODE_OPENING_SPAN: usize = 800;

/// Instruction phrases of transcript-form requests, with the summary each asks for.
const TRANSCRIPT_PHRASES: &[(&str, SummaryKind)] = &[
    // strata
    (
        "The transcript above is a session to summarize.",
        SummaryKind::History,
    ),
    (
        "The transcript above holds NEW messages.",
        SummaryKind::History,
    ),
    (
        "The transcript above is the EARLY PART of a turn",
        SummaryKind::TurnPrefix,
    ),
    (
        "The transcript above is a branch of the session the user has left.",
        SummaryKind::Branch,
    ),
    // Pi
    (
        "The messages above are a conversation to summarize.",
        SummaryKind::History,
    ),
    (
        "The messages above are NEW conversation messages to incorporate into the existing summary",
        SummaryKind::History,
    ),
    (
        "This is the PREFIX of a turn that was too large to keep.",
        SummaryKind::TurnPrefix,
    ),
    // Pi 1.6's turn-prefix instruction
    (
        "The messages above are earlier context from an ongoing conversation.",
        SummaryKind::TurnPrefix,
    ),
    (
        "Create a structured summary of this conversation branch",
        SummaryKind::Branch,
    ),
];

/// Prefixes of the user messages harnesses insert to carry an earlier summary.
const SUMMARY_CARRIERS: &[&str] = &[
    "The conversation history before this point was compacted",
    "The following is a summary of a branch",
    "The user explored a different conversation branch",
];

/// strata's checkpoint instruction when it opens the last user message or one of its text
/// blocks: a threshold compaction right after a prompt sends the instruction in the same user
/// message as the prompt (the adapter merges consecutive user messages), and the mock sees
/// the blocks joined by newlines.
fn checkpoint_block(last: &str) -> Option<&str> {
    if last.starts_with(STRATA_CHECKPOINT) {
        return Some(last);
    }
    last.find(&format!("\n{STRATA_CHECKPOINT}"))
        .map(|at| &last[at + 1..])
}

impl SummaryKind {
    /// The summary a request asks for, or `None` when it is an ordinary turn.
    ///
    /// A request is a summary request when its last message is strata's checkpoint
    /// instruction, or when it carries a summarizer system prompt (strata's or Pi's), or when
    /// its last message is a `<conversation>` transcript ending in one of the known
    /// instructions. Phrases met anywhere else (a session that discusses these prompts) do
    /// not count.
    pub fn recognise(conversation: &Conversation) -> Option<Self> {
        let last = conversation.last_user_text.as_deref()?;
        if let Some(checkpoint) = checkpoint_block(last) {
            return Some(
                match (
                    checkpoint.contains(STRATA_TURN_START),
                    checkpoint.contains(SPLIT_TURN_MARKER),
                ) {
                    (true, true) => Self::SplitTurn,
                    (true, false) => Self::TurnPrefix,
                    (false, _) => Self::History,
                },
            );
        }
        if is_claude_code_compaction(last) {
            return Some(Self::History);
        }
        let system = &conversation.system_text;
        let summarizer = system.contains(STRATA_SYSTEM) || system.contains(PI_SYSTEM);
        let opening = last.trim_start();
        let headed = opening.starts_with(PI_CONVERSATION_HEADING);
        let transcript = opening.starts_with("<conversation>") || headed;
        if !summarizer && !transcript {
            return None;
        }
        // The instructions follow the transcript; search only after it.
        let instructions = if headed {
            last.rfind(PI_INSTRUCTIONS_HEADING)
                .map_or("", |at| &last[at..])
        } else {
            last.rfind("</conversation>")
                .map_or(last, |end| &last[end..])
        };
        let phrased = TRANSCRIPT_PHRASES
            .iter()
            .find(|(phrase, _)| instructions.contains(phrase))
            .map(|(_, kind)| *kind);
        match phrased {
            Some(kind) => Some(kind),
            // Custom branch instructions replace the phrase; the system prompt still tells.
            None if summarizer => Some(Self::History),
            None => None,
        }
    }

    /// The name shown in records and output.
    pub fn name(self) -> &'static str {
        match self {
            Self::History => "history",
            Self::TurnPrefix => "turn prefix",
            Self::SplitTurn => "split turn",
            Self::Branch => "branch",
        }
    }
}

/// Whether `text` holds Claude Code's compaction instruction: its opening at the start of a
/// line (other text blocks, such as system reminders, may come before it), and the task
/// sentence shortly after.
fn is_claude_code_compaction(text: &str) -> bool {
    text.match_indices(CLAUDE_CODE_OPENING).any(|(at, _)| {
        let line_start = at == 0 || text[..at].ends_with('\n');
        let after = &text[at..];
        let span = after
            .char_indices()
            .map(|(i, _)| i)
            .take_while(|i| *i <= CLAUDE_CODE_OPENING_SPAN)
            .last()
            .unwrap_or(0);
        line_start && after[..span].contains(CLAUDE_CODE_COMPACT)
    })
}

/// The user requests a summary request covers, oldest first: the `[User]:` lines of a
/// transcript, or the conversation's user messages before the checkpoint instruction.
fn user_requests(conversation: &Conversation) -> Vec<String> {
    let last = conversation.last_user_text.as_deref().unwrap_or_default();
    let texts: Vec<String> = if last.trim_start().starts_with("<conversation>") {
        let start = last
            .find("<conversation>")
            .map_or(0, |at| at + "<conversation>".len());
        let end = last
            .rfind("</conversation>")
            .unwrap_or(last.len())
            .max(start);
        last[start..end]
            .split("\n\n")
            .map(str::trim_start)
            .filter_map(|part| part.strip_prefix("[User]: "))
            .map(str::to_owned)
            .collect()
    } else {
        let count = conversation.user_texts.len().saturating_sub(1);
        conversation.user_texts[..count].to_vec()
    };
    texts
        .into_iter()
        .filter(|text| {
            !SUMMARY_CARRIERS
                .iter()
                .any(|carrier| text.starts_with(carrier))
        })
        .map(|text| first_line(&text))
        .filter(|text| !text.is_empty())
        .collect()
}

/// The first line of `text`, at most 160 characters.
fn first_line(text: &str) -> String {
    let line = text.trim().lines().next().unwrap_or_default().trim();
    match line.char_indices().nth(160) {
        Some((cut, _)) => format!("{}…", &line[..cut]),
        None => line.to_owned(),
    }
}

/// A split-turn answer: the history summary, the marker line, the turn-prefix summary.
pub fn join_split_turn(history: &str, turn_prefix: &str) -> String {
    format!("{history}\n\n{SPLIT_TURN_MARKER}\n\n{turn_prefix}")
}

/// A deterministic, well-formed summary built from the user requests the summary request
/// covers, in the format its kind asks for (Pi's section headers).
pub fn default_summary(kind: SummaryKind, conversation: &Conversation) -> String {
    if kind == SummaryKind::SplitTurn {
        return join_split_turn(
            &default_summary(SummaryKind::History, conversation),
            &default_summary(SummaryKind::TurnPrefix, conversation),
        );
    }
    let requests = user_requests(conversation);
    let goal = requests
        .first()
        .cloned()
        .unwrap_or_else(|| "Continue the work of this session.".to_owned());
    let latest = requests.last().cloned().unwrap_or_else(|| goal.clone());
    let done: Vec<String> = requests
        .iter()
        .take(requests.len().saturating_sub(1))
        .map(|request| format!("- [x] {request}"))
        .collect();
    let done = if done.is_empty() {
        "- (none yet)".to_owned()
    } else {
        done.join("\n")
    };
    let covered = format!(
        "- {} user request(s) covered; summary written by strata-mock's scripted model",
        requests.len()
    );
    match kind {
        SummaryKind::TurnPrefix => format!(
            "## Original Request\n{latest}\n\n## Early Progress\n- Work on the request began; the kept part of the turn continues it.\n\n## Context for Suffix\n{covered}"
        ),
        SummaryKind::History | SummaryKind::Branch | SummaryKind::SplitTurn => {
            let mut text = format!(
                "## Goal\n{goal}\n\n## Constraints & Preferences\n- (none)\n\n## Progress\n### Done\n{done}\n\n### In Progress\n- [ ] {latest}\n\n### Blocked\n- (none)\n\n## Key Decisions\n- **Keep going**: the work continues from the latest request\n\n## Next Steps\n1. {latest}"
            );
            if kind == SummaryKind::History {
                text.push_str(&format!("\n\n## Critical Context\n{covered}"));
            }
            text
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn conversation(system: &str, users: &[&str]) -> Conversation {
        Conversation {
            system_text: system.to_owned(),
            user_texts: users.iter().map(|u| (*u).to_owned()).collect(),
            last_user_text: users.last().map(|u| (*u).to_owned()),
            ..Conversation::default()
        }
    }

    #[test]
    fn strata_cache_friendly_requests_are_recognised_by_their_opening() {
        let history = conversation(
            "You are a coding agent.",
            &[
                "fix the bug",
                "[Context checkpoint request — not a message from the user]\nStop the task here.",
            ],
        );
        assert_eq!(SummaryKind::recognise(&history), Some(SummaryKind::History));
        let prefix = conversation(
            "",
            &[
                "[Context checkpoint request — not a message from the user]\nScope: only the turn that begins with the message\n<turn-start>\nx\n</turn-start>",
            ],
        );
        assert_eq!(
            SummaryKind::recognise(&prefix),
            Some(SummaryKind::TurnPrefix)
        );
    }

    #[test]
    fn a_checkpoint_merged_into_the_prompts_user_message_is_recognised() {
        let merged = conversation(
            "You are a coding agent.",
            &["add a test\n[Context checkpoint request — not a message from the user]\nStop."],
        );
        assert_eq!(SummaryKind::recognise(&merged), Some(SummaryKind::History));
        let quoted = conversation(
            "You are a coding agent.",
            &["what does \"[Context checkpoint request\" mean?"],
        );
        assert_eq!(SummaryKind::recognise(&quoted), None);
    }

    #[test]
    fn pi_16s_turn_prefix_request_is_recognised_and_takes_no_turn() {
        // Pi 1.6's shape (compaction.js, generateTurnPrefixSummary): headed, not tagged, and
        // its system prompt says "an AI assistant" where 0.73 said "an AI coding assistant".
        let system = "You are a context summarization assistant. Your task is to read a conversation between a user and an AI assistant, then produce a structured summary following the exact format specified.";
        let prefix = conversation(
            system,
            &[
                "# Conversation\n[User]: Task 14: review\n\n[Assistant]: Checking.\n\n# Instructions\nThe messages above are earlier context from an ongoing conversation. Later messages are stored separately and do not need to be reconstructed.",
            ],
        );
        assert_eq!(
            SummaryKind::recognise(&prefix),
            Some(SummaryKind::TurnPrefix)
        );
        // The phrase quoted inside the conversation part does not make a turn prefix.
        let quoting = conversation(
            "You are a coding agent.",
            &[
                "# Conversation\nThe messages above are earlier context from an ongoing conversation.",
            ],
        );
        assert_eq!(SummaryKind::recognise(&quoting), None);
    }

    #[test]
    fn transcripts_are_recognised_by_the_instruction_after_them() {
        let pi_branch = conversation(
            PI_SYSTEM,
            &[
                "<conversation>\n[User]: hi\n</conversation>\n\nCreate a structured summary of this conversation branch for context when returning later.",
            ],
        );
        assert_eq!(
            SummaryKind::recognise(&pi_branch),
            Some(SummaryKind::Branch)
        );
        let strata_update = conversation(
            "",
            &[
                "<conversation>\n[User]: hi\n</conversation>\n\n<previous-summary>\nx\n</previous-summary>\n\nThe transcript above holds NEW messages. Fold them in.",
            ],
        );
        assert_eq!(
            SummaryKind::recognise(&strata_update),
            Some(SummaryKind::History)
        );
    }

    #[test]
    fn a_session_that_quotes_the_phrases_is_not_a_summary_request() {
        let chat = conversation(
            "You are a coding agent.",
            &["Why does the prompt say 'The transcript above is a session to summarize.'?"],
        );
        assert_eq!(SummaryKind::recognise(&chat), None);
        let quoted = format!("Why does Claude Code say '{CLAUDE_CODE_COMPACT}'?");
        let chat = conversation("You are a coding agent.", &[quoted.as_str()]);
        assert_eq!(SummaryKind::recognise(&chat), None);
        let quoted = format!("Is '{CLAUDE_CODE_OPENING}' followed by '{CLAUDE_CODE_COMPACT}'?");
        let chat = conversation("You are a coding agent.", &[quoted.as_str()]);
        assert_eq!(SummaryKind::recognise(&chat), None);
    }

    #[test]
    fn claude_codes_compaction_request_is_recognised_by_its_opening() {
        // The last user message of Claude Code 2.1.332's compaction request (abridged).
        let request = conversation(
            "You are a Claude agent, built on Anthropic's Claude Agent SDK.",
            &[
                "Read all the files.",
                "CRITICAL: Respond with TEXT ONLY. Do NOT call any tools.\n\n- Do NOT use Read, Bash, Grep, Glob, Edit, Write, or ANY other tool.\n- You already have all the context you need in the conversation above.\n- Tool calls will be REJECTED and will waste your only turn — you will fail the task.\n- Your entire response must be plain text: an <analysis> block followed by a <summary> block.\n\nYour task is to create a detailed summary of the conversation so far, paying close attention to the user's explicit requests and your previous actions.",
            ],
        );
        assert_eq!(SummaryKind::recognise(&request), Some(SummaryKind::History));
        // A system reminder block before the instruction, joined into the same user text.
        let reminded = format!(
            "<system-reminder>\n{}</system-reminder>\n{}",
            "Attribution for git commits. ".repeat(60),
            request.last_user_text.as_deref().unwrap()
        );
        let request_with_reminder = conversation(
            "You are a Claude agent.",
            &["Read all the files.", &reminded],
        );
        assert_eq!(
            SummaryKind::recognise(&request_with_reminder),
            Some(SummaryKind::History)
        );
        let summary = default_summary(SummaryKind::History, &request);
        assert!(summary.contains("Read all the files."), "{summary}");
    }

    #[test]
    fn the_default_summary_is_built_from_the_user_requests() {
        let request = conversation(
            STRATA_SYSTEM,
            &[
                "<conversation>\n[User]: Fix the failing test.\n\n[Assistant]: Reading.\n\n[User]: Now add a changelog line.\n</conversation>\n\nThe transcript above is a session to summarize.",
            ],
        );
        let summary = default_summary(SummaryKind::History, &request);
        assert!(
            summary.starts_with("## Goal\nFix the failing test.\n"),
            "{summary}"
        );
        assert!(summary.contains("- [x] Fix the failing test."), "{summary}");
        assert!(
            summary.contains("1. Now add a changelog line."),
            "{summary}"
        );
        assert!(summary.contains("## Critical Context"), "{summary}");
        assert_eq!(summary, default_summary(SummaryKind::History, &request));
        let branch = default_summary(SummaryKind::Branch, &request);
        assert!(!branch.contains("## Critical Context"), "{branch}");
    }
}
