//! The active context policy in words, for `/context` and `strata config`: when the session
//! compacts, how it asks for the summary, whether stale tool outputs are masked, and how a
//! system or tool change reaches the model on this provider row.

use strata_compaction::{CompactionSettings, CompactionTrigger, SummaryMode};
use strata_provider::Capabilities;

/// One line per policy of `settings` (compaction, summary, masking).
pub fn explain_compaction(settings: &CompactionSettings) -> Vec<String> {
    let mut lines = Vec::new();
    if !settings.enabled {
        lines.push("compaction: off (no trigger, no overflow recovery)".to_owned());
        return lines;
    }
    lines.push(match settings.trigger {
        CompactionTrigger::Window => format!(
            "compaction trigger: window — when the context passes the window minus {} tokens",
            settings.reserve_tokens
        ),
        CompactionTrigger::Cost => format!(
            "compaction trigger: cost — when re-reading the context over the requests still \
             expected costs more than summarising it once, and the context has grown to the \
             size where a compaction cycle costs least at this cache's prices and the growth \
             measured (in a small window that size lies past the limit: window minus {} tokens \
             compacts then, as it always does)",
            settings.reserve_tokens
        ),
    });
    lines.push(match settings.summary_mode {
        SummaryMode::CacheFriendly => {
            "summary request: cache-friendly — the session's own cached request plus one \
             instruction"
                .to_owned()
        }
        SummaryMode::Transcript => {
            "summary request: transcript — the conversation as text in a fresh request".to_owned()
        }
    });
    let masking = &settings.masking;
    lines.push(if masking.enabled {
        format!(
            "observation masking: on — tool outputs of {}+ tokens before the latest {} task(s) \
             become stubs (context edits; a stub keeps the call, the length and up to {} \
             heading or name: value lines, the full output stays in the session file) when the \
             reads saved exceed the rewrite at this cache's write price (free right after a \
             compaction or once the cache has expired)",
            masking.min_output_tokens,
            masking.keep_recent_tasks.max(1),
            strata_compaction::KEY_LINES
        )
    } else {
        "observation masking: off".to_owned()
    });
    lines.push(if masking.enabled && masking.fold_tasks {
        format!(
            "task folding: on — a finished task before the latest {} becomes its prompt and one \
             note (each call, what it showed, then the answer; context edits, the session file \
             keeps everything) when the reads saved exceed the rewrite",
            masking.keep_recent_tasks.max(1)
        )
    } else {
        "task folding: off".to_owned()
    });
    lines
}

/// How a system-prompt or tool change reaches the model on a provider with `capabilities`.
pub fn explain_system_changes(capabilities: &Capabilities) -> String {
    if capabilities.mid_conversation_system {
        "system changes: a mid-conversation system message after the next user message (the \
         prefix is kept)"
            .to_owned()
    } else if capabilities.system_reminders {
        "system changes: a <system-reminder> after the next user message (no mid-conversation \
         system messages on this row; the prefix is kept)"
            .to_owned()
    } else {
        "system changes: folded into the system chapter (this row's fallback; the prefix is \
         written again)"
            .to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_policy_is_named_with_its_setting() {
        let mut settings = CompactionSettings::default();
        // The defaults the bench chose: the cost trigger and masking.
        let lines = explain_compaction(&settings);
        assert!(
            lines[0].starts_with("compaction trigger: cost"),
            "{lines:?}"
        );
        assert!(lines[2].contains("masking: on"), "{lines:?}");
        assert!(lines[3].starts_with("task folding: on"), "{lines:?}");
        settings.masking.fold_tasks = false;
        assert_eq!(explain_compaction(&settings)[3], "task folding: off");
        settings.trigger = CompactionTrigger::Window;
        settings.masking.enabled = false;
        let lines = explain_compaction(&settings);
        assert!(lines[0].contains("window"), "{lines:?}");
        assert!(lines.iter().any(|l| l == "observation masking: off"));
        assert!(lines.iter().any(|l| l == "task folding: off"));
        settings.enabled = false;
        assert_eq!(explain_compaction(&settings).len(), 1);
    }

    #[test]
    fn system_changes_follow_the_row() {
        let mut caps = Capabilities::default();
        assert!(explain_system_changes(&caps).contains("folded"));
        caps.system_reminders = true;
        assert!(explain_system_changes(&caps).contains("system-reminder"));
        caps.mid_conversation_system = true;
        assert!(explain_system_changes(&caps).contains("mid-conversation system message"));
    }
}
