//! Public-API tests of strata-tools, one binary.

#![expect(
    clippy::unwrap_used,
    reason = "test helpers outside #[test] functions unwrap like the tests do"
)]

mod common;

mod bash;
mod batch;
mod definitions;
mod edit;
mod read;
mod search;
mod write;
