//! strata-subagents' integration tests: one binary.

#![expect(
    clippy::unwrap_used,
    reason = "test helpers outside #[test] functions unwrap like the tests do"
)]

mod background;
mod spawn;
