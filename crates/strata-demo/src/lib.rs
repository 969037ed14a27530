//! `strata demo`: a real coding task against strata-mock, in process, with the bill.
//!
//! The scripted model (bundled `demo/scenario.toml`, sequence playback) asks for the tool
//! calls; the agent really runs them in a temporary copy of the bundled repository
//! (`demo/repo`: a POSIX shell library whose `max` is wrong, and its tests). The session reads,
//! runs the failing tests with bash, edits, runs them again, gains grep/find/ls, compacts twice
//! and returns to an earlier entry with a branch summary. The same session is played six
//! times — the strata renderer and a naive one that rewrites its prefix on every change, on
//! each of three cache models (Anthropic explicit breakpoints, OpenAI automatic prefix,
//! DeepSeek disk cache) — each on a fresh mock and a fresh copy, and every figure is
//! strata-mock's own accounting of the requests it received.
//!
//! This crate holds the mock (axum, the tokenizer tables) so that a `strata` built without
//! its `demo` feature links none of it.
//!
//! ```no_run
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let catalog = strata_provider::Catalog::builtin()?;
//! let dir = tempfile::tempdir()?;
//! let report = strata_demo::play_all(&catalog, dir.path(), None).await?;
//! strata_demo::print_tables(&report, &mut std::io::stdout())?;
//! # Ok(()) }
//! ```

pub mod bill;
pub mod bundle;
mod error;
mod report;
pub mod script;

pub use error::DemoError;
pub use report::{Comparison, Report, RunReport, play_all, print_bill, print_tables};
pub use script::{KEEP_RECENT_TOKENS, Play, Progress, TARGETS, Target};
