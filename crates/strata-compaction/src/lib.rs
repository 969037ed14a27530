//! Compaction for strata sessions: when to compact, where to cut, how to ask for the summary
//! so that its input is read from the prompt cache, and what to record.
//!
//! 1. [`estimate_context_tokens`] and [`should_compact`]: the last response's real usage plus
//!    chars/4 for what followed, against `window - reserve_tokens` (or a percentage).
//!    With [`CompactionTrigger::Cost`] a context is also due earlier, when
//!    [`cost_says_compact`]: re-reading it over the expected remaining requests costs more than
//!    summarising it and writing the smaller context once.
//! 2. [`prepare`]: the cut (never at a tool result, a turn larger than the budget split), the
//!    messages to summarize (from the previous compaction's first kept entry on), the previous
//!    summary and the accumulated file lists.
//! 3. [`compact`]: the summary requests, by default [`cache_friendly_request`] (the session's
//!    own request plus one instruction: read from cache, nothing written), else
//!    [`transcript_request`] (Pi's serialized form). A split turn is one cache-friendly
//!    request answered in two parts, or two concurrent transcript requests.
//!    [`compact_accounted`] also reports what a failed compaction's answered requests cost.
//! 4. [`compaction_entry`]: the entry with the folded system snapshot, the live tool set and
//!    the summary's usage.
//!
//! Branch summaries: [`prepare_branch_summary`] and [`summarize_branch`].
//!
//! ```no_run
//! # async fn run(
//! #     session: &mut strata_session::Session,
//! #     provider: &dyn strata_provider::Provider,
//! #     model: &strata_provider::Model,
//! #     capabilities: &strata_provider::Capabilities,
//! # ) -> Result<(), Box<dyn std::error::Error>> {
//! use strata_compaction::*;
//! let settings = CompactionSettings::default().for_model(&model.provider, &model.id);
//! let tree = session.tree();
//! let Some(leaf) = tree.leaf().cloned() else { return Ok(()) };
//! let context = strata_context::build(tree, Some(&leaf))?;
//! if should_compact(estimate_context_tokens(&context), model.context_window, &settings)
//!     && let Some(preparation) = prepare(tree, &leaf, &settings)?
//! {
//!     let main_request = strata_context::render(&context, capabilities);
//!     let options = strata_provider::StreamOptions::default();
//!     let result = compact(provider, model, &main_request, &preparation, &settings, &options).await?;
//!     session.append_compaction(compaction_entry(&result, &context))?;
//! }
//! # Ok(()) }
//! ```

mod branch;
mod compact;
mod cost;
mod cut;
mod error;
mod estimate;
mod files;
mod fold;
mod mask;
mod prepare;
pub mod prompt;
mod request;
mod serialize;
mod settings;

pub use branch::{
    BRANCH_SUMMARY_MAX_TOKENS, BranchPreparation, BranchSummary, NO_CONTENT,
    branch_summary_request, prepare_branch_summary, summarize_branch,
};
pub use compact::{
    CompactionFailure, CompactionResult, SUMMARY_MODE_FIELD, USAGE_CUSTOM_TYPE, USAGE_FIELD,
    compact, compact_accounted, compact_with_focus, compaction_entry, recorded_usage, usage_record,
};
pub use cost::{
    CachePrices, CompactionTrigger, CostEstimate, EXPECTED_SUMMARY_TOKENS, cost_says_compact,
};
pub use cut::{CutPoint, find_cut_point, find_turn_start, is_valid_cut};
pub use error::CompactionError;
pub use estimate::{
    ContextEstimate, estimate_context_tokens, estimate_message_tokens, estimate_messages,
    usage_context_tokens,
};
pub use files::{FileLists, FileOps};
pub use fold::{FOLD_OPENING, FoldPlan, FoldedTask, fold_replacement, plan_folding};
pub use mask::{
    EXPLICIT_LOOKBACK_BLOCKS, KEY_LINES, MaskEntry, MaskEntryKind, MaskPlan, MaskingOutlook,
    MaskingSettings, STUB_OPENING, STUB_TOKENS, StubFacts, key_lines, mask_entries, plan_masking,
    stub_text,
};
pub use prepare::{Preparation, prepare};
pub use request::{
    SummaryPart, TRANSCRIPT_CACHE_KEY_SUFFIX, cache_friendly_instruction, cache_friendly_request,
    transcript_request,
};
pub use serialize::{TOOL_RESULT_MAX_CHARS, serialize_conversation, truncate_for_summary};
pub use settings::{
    CompactionOverride, CompactionReason, CompactionSettings, DEFAULT_KEEP_RECENT_TOKENS,
    DEFAULT_MAX_TOOL_SHARE, DEFAULT_RESERVE_TOKENS, OverflowRecovery, SummaryMode,
    is_context_overflow, resolve_summary_mode, should_compact,
};
/// Provider usage in the session's shape: one conversion, in strata-accounting.
pub use strata_accounting::session_usage;
