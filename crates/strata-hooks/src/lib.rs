//! Command hooks in the format users already have: the `hooks` block of Claude Code's
//! `settings.json` (user and project level) and Codex's `hooks.json`, where the two agree.
//!
//! - [`HookSet`] holds the hooks loaded from one or more files ([`HookSet::load`] reads the
//!   standard places; project files only when the project is trusted).
//! - [`HookRunner`] runs the hooks an event matches, concurrently, each with JSON on stdin and
//!   a timeout, and folds their answers into one [`Outcome`].
//! - [`ToolNames`] maps strata's tool names and arguments to the names Claude Code's matchers
//!   and scripts expect (`bash` is `Bash`, `path` is also `file_path`), and back for a
//!   rewritten input.
//!
//! Every field strata reads and what it does with it: `docs/hooks.md`.

mod config;
mod error;
mod event;
mod ops;
mod outcome;
mod runner;
mod tools;

pub use config::{HookCommand, HookFiles, HookSet, HooksSettings, Matcher, MatcherGroup, Scope};
pub use error::HookError;
pub use event::{HookEvent, HookInput};
pub use ops::OpCall;
pub use outcome::{HookRun, Outcome, PreToolDecision, RunStatus};
pub use runner::{HookResponder, HookRunner, MAX_OUTPUT_BYTES};
pub use tools::ToolNames;
