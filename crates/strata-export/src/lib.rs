//! A session tree as one self-contained HTML page (`strata export`, the TUI's `/export`,
//! rpc's `export_html`): every branch (a `leaf` marker is no branch), the current leaf
//! marked, messages by role with their markdown rendered (raw HTML escaped), tool calls with
//! their command or path and edits as coloured diffs, code highlighted, tool output and
//! thinking collapsible, compaction and branch summaries, a searchable sidebar of the tree,
//! and a chart of every request's cache read / write / uncached tokens and cost with each
//! cache break marked and explained by [`strata_accounting`]. Styles and script are inline
//! (the script is strata's own); nothing is fetched.
//!
//! ```no_run
//! # fn run() -> Result<(), strata_session::SessionError> {
//! let opened = strata_session::Session::open("session.jsonl")?;
//! let page = strata_export::page(&opened.session, &opened.diagnostics);
//! assert!(page.starts_with("<!DOCTYPE html>"));
//! # Ok(()) }
//! ```

mod chart;
mod file;
mod highlight;
mod html;
mod markdown;
mod permissions;
mod render;
mod tools;

pub use file::{ExportError, Exported, Overwrite, export_html, write_output};
pub use html::escape;
pub use render::page;
