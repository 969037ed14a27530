//! The texts of summary requests. Section headers and the formats other code parses (the
//! split-turn merge, the branch preamble) are Pi's; the prose is strata's own.

/// System prompt of a transcript-form summary request.
pub const SUMMARIZER_SYSTEM_PROMPT: &str = "You turn a transcript of a session between a user and an AI coding assistant into a structured summary, in exactly the format the request gives.

You are not a participant: do not continue the conversation, do not answer questions asked in it, do not call tools. Output the summary and nothing else.";

/// The structured format of a history summary (Pi's sections).
pub const SUMMARY_FORMAT: &str = "Use exactly this format:

## Goal
[What the user wants to achieve; several items if the session moved between tasks.]

## Constraints & Preferences
- [Requirements, constraints and preferences the user stated]
- [Or \"(none)\"]

## Progress
### Done
- [x] [Finished tasks and changes]

### In Progress
- [ ] [Work under way]

### Blocked
- [What stops progress, if anything]

## Key Decisions
- **[Decision]**: [Why, briefly]

## Next Steps
1. [What comes next, in order]

## Critical Context
- [Data, examples, references needed to carry on]
- [Or \"(none)\"]

Keep every section short. Quote file paths, function names and error messages exactly.";

/// The format of an update of an earlier summary.
pub const UPDATE_FORMAT: &str = "Rules for the update:
- Keep everything the earlier summary says unless it is clearly obsolete.
- Add the progress, decisions and context the newer messages bring.
- Move items from \"In Progress\" to \"Done\" once they are finished.
- Rewrite \"Next Steps\" to match where the work stands now.
- Quote file paths, function names and error messages exactly.

Use exactly this format:

## Goal
[The earlier goals, plus any new ones]

## Constraints & Preferences
- [The earlier ones, plus any new ones]

## Progress
### Done
- [x] [Earlier done items and newly finished ones]

### In Progress
- [ ] [Current work]

### Blocked
- [Current blockers; drop resolved ones]

## Key Decisions
- **[Decision]**: [Why, briefly] (keep earlier decisions, add new ones)

## Next Steps
1. [Updated to the current state]

## Critical Context
- [Earlier context that still matters, plus new]

Keep every section short. Quote file paths, function names and error messages exactly.";

/// The format of a turn-prefix summary (Pi's sections).
pub const TURN_PREFIX_FORMAT: &str =
    "Summarize it so the kept remainder of the turn makes sense on its own:

## Original Request
[What the user asked for in this turn]

## Early Progress
- [Decisions taken and work done in this early part]

## Context for Suffix
- [What one must know to follow the work that is kept]

Be brief: only what the kept remainder needs.";

/// The format of a branch summary (Pi's sections, without Critical Context).
pub const BRANCH_FORMAT: &str = "Use exactly this format:

## Goal
[What the user was trying to achieve on this branch]

## Constraints & Preferences
- [Requirements, constraints and preferences stated]
- [Or \"(none)\"]

## Progress
### Done
- [x] [Finished tasks and changes]

### In Progress
- [ ] [Work begun but not finished]

### Blocked
- [What stopped progress, if anything]

## Key Decisions
- **[Decision]**: [Why, briefly]

## Next Steps
1. [What would continue this work]

Keep every section short. Quote file paths, function names and error messages exactly.";

/// Joins the history summary and the turn-prefix summary of a split turn (Pi's format).
pub const SPLIT_TURN_SEPARATOR: &str = "\n\n---\n\n**Turn Context (split turn):**\n\n";

/// The history part of a split turn when nothing precedes the turn (Pi's text).
pub const NO_PRIOR_HISTORY: &str = "No prior history.";

/// Pi's prefix of a branch summary.
pub const BRANCH_SUMMARY_PREAMBLE: &str = "The user explored a different conversation branch before returning here.\nSummary of that exploration:\n\n";

/// Appends `/compact <focus>` text the way Pi does.
pub(crate) fn with_focus(prompt: String, focus: Option<&str>) -> String {
    match focus.map(str::trim).filter(|focus| !focus.is_empty()) {
        Some(focus) => format!("{prompt}\n\nAdditional focus: {focus}"),
        None => prompt,
    }
}

/// The transcript-form text of a history summary request.
pub(crate) fn transcript_history(
    conversation: &str,
    previous_summary: Option<&str>,
    focus: Option<&str>,
) -> String {
    let mut text = format!("<conversation>\n{conversation}\n</conversation>\n\n");
    let prompt = match previous_summary {
        Some(previous) => {
            text.push_str(&format!(
                "<previous-summary>\n{previous}\n</previous-summary>\n\n"
            ));
            format!(
                "The transcript above holds NEW messages. Fold them into the earlier summary given in <previous-summary> tags.\n\n{UPDATE_FORMAT}"
            )
        }
        None => format!(
            "The transcript above is a session to summarize. Write a structured checkpoint another model will continue the work from.\n\n{SUMMARY_FORMAT}"
        ),
    };
    text.push_str(&with_focus(prompt, focus));
    text
}

/// The transcript-form text of a turn-prefix summary request.
pub(crate) fn transcript_turn_prefix(conversation: &str) -> String {
    format!(
        "<conversation>\n{conversation}\n</conversation>\n\nThe transcript above is the EARLY PART of a turn too large to keep whole; the later part stays in context word for word.\n\n{TURN_PREFIX_FORMAT}"
    )
}

/// Opening of every cache-friendly instruction: the conversation above is the material.
const CACHE_FRIENDLY_OPENING: &str = "[Context checkpoint request — not a message from the user]
Stop the task here. Do not call tools and do not answer anything asked in the conversation. Write a structured summary of the conversation above for another model to continue the work from, and output only that summary.";

/// The cache-friendly instruction for the history summary: the conversation above is the
/// session's own; `kept_from` quotes the first kept message.
pub(crate) fn cache_friendly_history(
    kept_from: &str,
    split_turn_start: Option<&str>,
    has_previous_summary: bool,
    focus: Option<&str>,
) -> String {
    let end = split_turn_start.unwrap_or(kept_from);
    let mut text = format!(
        "{CACHE_FRIENDLY_OPENING}\n\nScope: summarize the conversation up to, but not including, the message that begins:\n<boundary>\n{end}\n</boundary>\nThat message and everything after it stay in context word for word; leave them out."
    );
    if has_previous_summary {
        text.push_str(&format!(
            "\n\nThe conversation opens with an earlier summary inside <summary> tags. Update it with the messages that follow it, within the scope above.\n\n{UPDATE_FORMAT}"
        ));
    } else {
        text.push_str(&format!("\n\n{SUMMARY_FORMAT}"));
    }
    with_focus(text, focus)
}

/// The line a cache-friendly split-turn answer puts between its two parts (strata-mock knows
/// it by this text).
pub const SPLIT_TURN_MARKER: &str = "=== TURN CONTEXT ===";

/// The cache-friendly instruction for a split turn in one answer: the history before the
/// turn, the marker line, then the early part of the turn. One request reads the session's
/// cached prefix once, where two (history, turn prefix) read it twice.
pub(crate) fn cache_friendly_split_turn(
    turn_start: &str,
    kept_from: &str,
    has_previous_summary: bool,
    focus: Option<&str>,
) -> String {
    let history_format = if has_previous_summary {
        format!(
            "The conversation opens with an earlier summary inside <summary> tags. Update it with the messages that follow it, within the scope of part 1.\n\n{UPDATE_FORMAT}"
        )
    } else {
        SUMMARY_FORMAT.to_owned()
    };
    let text = format!(
        "{CACHE_FRIENDLY_OPENING}\n\nThis checkpoint has two parts; write both, part 1 first, then a line holding only {SPLIT_TURN_MARKER}, then part 2.\n\nPart 1. Scope: the conversation up to, but not including, the turn that begins with the message\n<turn-start>\n{turn_start}\n</turn-start>\n\n{history_format}\n\nPart 2. Scope: only that turn, up to, but not including, the message that begins\n<boundary>\n{kept_from}\n</boundary>\nThat turn is too large to keep whole; from the boundary on it stays in context word for word.\n\n{TURN_PREFIX_FORMAT}"
    );
    with_focus(text, focus)
}

/// Splits a split-turn answer at the marker line into the history and the turn-prefix
/// summaries; `None` when the marker is missing or a part is empty.
pub(crate) fn split_turn_parts(answer: &str) -> Option<(&str, &str)> {
    let at = answer
        .match_indices(SPLIT_TURN_MARKER)
        .find(|(at, _)| {
            let line_start = *at == 0 || answer[..*at].ends_with('\n');
            let rest = &answer[at + SPLIT_TURN_MARKER.len()..];
            line_start && (rest.is_empty() || rest.starts_with('\n') || rest.starts_with("\r\n"))
        })
        .map(|(at, _)| at)?;
    let history = answer[..at].trim();
    let prefix = answer[at + SPLIT_TURN_MARKER.len()..].trim();
    (!history.is_empty() && !prefix.is_empty()).then_some((history, prefix))
}

/// The cache-friendly instruction for the early part of a split turn.
pub(crate) fn cache_friendly_turn_prefix(turn_start: &str, kept_from: &str) -> String {
    format!(
        "{CACHE_FRIENDLY_OPENING}\n\nScope: only the turn that begins with the message\n<turn-start>\n{turn_start}\n</turn-start>\nup to, but not including, the message that begins\n<boundary>\n{kept_from}\n</boundary>\nThat turn is too large to keep whole; from the boundary on it stays in context word for word.\n\n{TURN_PREFIX_FORMAT}"
    )
}

/// The transcript-form text of a branch summary request.
pub(crate) fn transcript_branch(conversation: &str, instructions: &str) -> String {
    format!("<conversation>\n{conversation}\n</conversation>\n\n{instructions}")
}

/// The default branch summary instructions, with an optional focus.
pub(crate) fn branch_instructions(custom: Option<&str>, replace: bool) -> String {
    let base = format!(
        "The transcript above is a branch of the session the user has left. Summarize it so it can serve as context on returning.\n\n{BRANCH_FORMAT}"
    );
    match custom.map(str::trim).filter(|custom| !custom.is_empty()) {
        Some(custom) if replace => custom.to_owned(),
        custom => with_focus(base, custom),
    }
}
