//! Moving the session's leaf in its tree, with or without a branch summary.

use super::*;

impl Agent {
    /// Moves the session to `target` (`None`: before the first entry), as `/tree` does. With
    /// `summarize`, the abandoned path is summarised (newest first within the window less the
    /// reserve) and stored as a `branch_summary` at the target, as Pi stores it, and the summary
    /// request's usage is recorded on that entry (Pi 1.x's `usage` field; when the summary
    /// fails and the session stays where it was, in a `usage` entry); without, a `leaf` entry records the move so
    /// it survives a restart. Returns the entry written.
    pub async fn navigate(
        &mut self,
        target: Option<&EntryId>,
        summarize: bool,
        instructions: Option<&str>,
    ) -> Result<EntryId, AgentError> {
        // A branch leaves the last request behind: nothing of it is worth keeping warm.
        self.last_sent = None;
        let old_leaf = self.session.leaf().cloned();
        let Some(old_leaf) = old_leaf.filter(|_| summarize) else {
            let id = self.session.move_leaf(target)?;
            // A new path: what was prepared for the old one does not fit; the user is now
            // reading the tree and typing, time to prepare for this one.
            self.precompute_while_idle();
            return Ok(id);
        };
        let budget = self
            .config
            .model
            .context_window
            .saturating_sub(self.compaction_settings().reserve_tokens);
        let preparation = strata_compaction::prepare_branch_summary(
            self.session.tree(),
            &old_leaf,
            target,
            budget,
        )?;
        let (provider, model, mut options) = self.summarizer();
        options.session_id = Some(self.session.header().id.clone());
        let summary = strata_compaction::summarize_branch(
            &*provider,
            &model,
            &preparation,
            &options,
            instructions,
            false,
        )
        .await;
        let summary = match summary {
            Ok(summary) => summary,
            Err(failure) => {
                // The session stays where it was; an answered request is billed all the same.
                self.record_summary_usage("branch_summary", &failure.usage, &failure.cost)?;
                return Err(failure.error.into());
            }
        };
        let details = Some(summary.details.to_details());
        // Pi 1.x's place for the summary request's usage: the entry's own `usage`.
        let usage = (summary.usage.total_tokens() > 0)
            .then(|| strata_compaction::session_usage(&summary.usage, &summary.cost));
        let id = self.session.branch_with_summary_usage(
            target,
            &summary.summary,
            details,
            None,
            usage,
        )?;
        self.precompute_while_idle();
        Ok(id)
    }
}
