//! The agent loop against a scripted in-process provider: files really change, the session
//! stays well-formed, and the system chapter stays byte-stable.

#![expect(
    clippy::unwrap_used,
    reason = "test helpers outside #[test] functions unwrap like the tests do"
)]

mod compaction;
mod folding;
mod hooks;
mod loop_;
mod masking;
mod mock;
mod provider_cache;
mod rules;
mod scripted;
mod system;
mod tool_share;
