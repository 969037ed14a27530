//! Context assembly for strata: a session tree becomes the [`Context`] a request is built from,
//! in three steps.
//!
//! 1. [`branch`]: the path from a leaf to the root, cut at the latest compaction exactly as Pi's
//!    `buildSessionContext` cuts it: `[compaction] + [kept entries] + [entries after it]`, with
//!    model and thinking level resolved over the whole path.
//! 2. [`project`]: context edits on the chain exclude their targets; every other entry becomes
//!    zero or more items (messages, or a `system` change).
//! 3. [`flatten`]: one ordered message list, the system prompt (snapshot and patches where they
//!    happened), the tool ledger, the model and the thinking level.
//!
//! [`Assembler`] does the same incrementally for a session being appended to. [`to_pi_json`]
//! gives Pi's `{messages, thinkingLevel, model}`, [`to_json`] strata's shape and [`to_text`] a
//! view for a person.
//!
//! ```no_run
//! use strata_context::{build, to_text};
//! use strata_session::Session;
//!
//! let opened = Session::open("session.jsonl")?;
//! let tree = opened.session.tree();
//! let context = build(tree, tree.leaf())?;
//! print!("{}", to_text(&context));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod assemble;
mod chain;
mod error;
mod flatten;
mod ledger;
mod parallel;
mod pi;
mod project;
pub mod render;
mod source;
mod system;
mod text;
mod timestamp;

pub use assemble::{Assembler, Assembly};
pub use chain::{Chain, DEFAULT_THINKING_LEVEL, Link, ModelRef, branch, branch_with, path_to_root};
pub use error::ContextError;
pub use flatten::{Context, ContextMessage, PlacedSystemMessage, flatten};
pub use ledger::{LedgerTool, ToolLedger};
pub use pi::{to_json, to_pi_json, write_pi_json};
pub use project::{ChainStart, Projected, ProjectedChain, Projection, SystemChange, project};
pub use render::{
    DEFER_LOADING_FIELD, DYNAMIC_TOOLS_RECENT_MESSAGES, RenderNote, RenderOptions, RenderPolicy,
    RenderReport, Rendered, Renderer, guessed_tools, render, render_with,
};
pub use source::{EntrySource, LoadedEntry, SourcePath};
pub use system::{
    SECTION_ORDER, SectionName, Sections, SnapshotSource, SystemPatch, SystemPrompt, join_sections,
};
pub use text::to_text;
pub use timestamp::{epoch_millis, epoch_millis_of, parse_iso8601};

use strata_session::{EntryId, MessageRead};

/// Builds the context for `leaf` in one go: [`branch`], [`project`], [`flatten`].
pub fn build(source: &impl EntrySource, leaf: Option<&EntryId>) -> Result<Context, ContextError> {
    Ok(flatten(project(&branch(source, leaf)?)))
}

/// [`build`] for a context that is only printed ([`write_pi_json`]): messages may stay the
/// JSON their lines hold ([`MessageRead::KeepJson`]), parsed only where something reads them,
/// and [`write_pi_json`] prints such a message from those bytes where they are what Pi prints.
pub fn build_for_print(
    source: &impl EntrySource,
    leaf: Option<&EntryId>,
) -> Result<Context, ContextError> {
    Ok(flatten(project(&branch_with(
        source,
        leaf,
        MessageRead::KeepJson,
    )?)))
}
