//! Why a compaction or a branch summary failed.

use strata_context::ContextError;
use strata_provider::ProviderError;

/// A compaction or branch summary that could not be made; each variant says why.
#[derive(Debug, thiserror::Error)]
pub enum CompactionError {
    /// The session tree could not be read.
    #[error("cannot read the session: {0}")]
    Context(#[from] ContextError),
    /// The summary request failed at the provider.
    #[error("{part} summary request failed: {source}")]
    Provider {
        /// Which summary (`history`, `turn prefix`, `branch`).
        part: &'static str,
        /// The provider's error.
        #[source]
        source: ProviderError,
    },
    /// The summary hit the output cap; a cut summary is never accepted.
    #[error(
        "{part} summary was cut at max_tokens ({max_tokens}); raise compaction.reserve_tokens or use a model with more output"
    )]
    Truncated {
        /// Which summary.
        part: &'static str,
        /// The cap it hit.
        max_tokens: u32,
    },
    /// The model answered without a summary (no text, or a tool call instead).
    #[error("{part} summary request returned no summary text (stop reason {stop_reason})")]
    EmptySummary {
        /// Which summary.
        part: &'static str,
        /// The stop reason reported.
        stop_reason: String,
    },
    /// The summary is not smaller than what it would replace.
    #[error(
        "the summary (~{summary_tokens} tokens) is not smaller than what it replaces (~{replaced_tokens} tokens); compaction refused"
    )]
    NotSmaller {
        /// Estimated tokens of the summary.
        summary_tokens: u64,
        /// Estimated tokens of the summarized messages and previous summary.
        replaced_tokens: u64,
    },
    /// A setting is out of range.
    #[error("invalid setting {field}: {reason}")]
    InvalidSetting {
        /// The config key, e.g. `compaction.trigger_percent`.
        field: String,
        /// What is wrong with it.
        reason: String,
    },
}
