//! strata's rules layer (issue 39).
//!
//! - [`Mode`]s (`plan`, `ask`, `edits`, `auto`) and rules in Claude Code's syntax
//!   ([`Rule`]), read from Claude Code's `settings.json` files as they are and from strata's
//!   `[permissions]` section ([`settings`]); [`Policy::decide`] judges a call (deny wins) and
//!   names the rule and file behind the decision; [`Gate`] adds the user's answers.
//! - [`sandbox`]: the OS sandbox the bash tool runs in (Landlock on Linux), applied by a
//!   helper that restricts itself and then execs the shell.
//! - [`checkpoint`]: every file change strata's tools make, content-addressed beside the
//!   session file, and restoring the files to any entry.
//!
//! The crate knows nothing of the agent, the session format or the front ends.

pub mod call;
pub mod checkpoint;
mod error;
pub mod gate;
pub mod mode;
pub mod policy;
pub mod rule;
pub mod sandbox;
pub mod settings;

pub use call::{CallKind, CallView};
pub use error::{RuleError, SettingsError};
pub use gate::{Answer, Gate, Judgement, Passage, PendingAsk, PermissionRequest};
pub use mode::Mode;
pub use policy::{Decision, List, Policy, Source, Verdict};
pub use rule::{Bases, Rule};
pub use settings::{ClaudePermissions, PermissionsConfig, Places};
