//! strata-subagents' integration tests: one binary.

#![expect(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "test helpers outside #[test] functions unwrap and panic like the tests do"
)]

mod background;
mod spawn;
