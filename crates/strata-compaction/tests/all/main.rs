//! Public-API tests of strata-compaction (one binary).
#![expect(
    clippy::expect_used,
    reason = "test helpers fail loudly on bad test data"
)]

mod anthropic_wire;
mod branch;
mod chapters;
mod compact;
mod cut;
mod fold;
mod mask;
mod measured;
mod support;
mod trigger;
