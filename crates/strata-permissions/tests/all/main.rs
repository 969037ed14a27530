//! strata-permissions' tests: one binary.

#![expect(
    clippy::unwrap_used,
    clippy::panic,
    reason = "test helpers outside #[test] functions unwrap and panic like the tests do"
)]

mod checkpoint;
mod claude_rules;
mod sandbox;
mod settings;
