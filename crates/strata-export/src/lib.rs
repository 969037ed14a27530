//! A session tree as one self-contained HTML page (`strata export`, the TUI's `/export`,
//! rpc's `export_html`): every branch, the current leaf marked, messages by role, tool calls
//! and results and thinking collapsible, compaction and branch summaries, per-request usage
//! and totals from [`strata_accounting`], the session name and labels. Styles and script are
//! inline; nothing is fetched.
//!
//! ```no_run
//! # fn run() -> Result<(), strata_session::SessionError> {
//! let opened = strata_session::Session::open("session.jsonl")?;
//! let page = strata_export::page(&opened.session, &opened.diagnostics);
//! assert!(page.starts_with("<!DOCTYPE html>"));
//! # Ok(()) }
//! ```

mod html;
mod render;

pub use html::escape;
pub use render::page;
