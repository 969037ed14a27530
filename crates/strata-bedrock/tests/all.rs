//! Public-API tests of strata-bedrock: binary event-stream fixtures, the mock server over
//! real HTTP, and the capability-table rows.

#![expect(
    clippy::panic,
    clippy::unwrap_used,
    reason = "test helpers outside #[test] functions fail loudly on purpose"
)]

mod conformance_bodies;
mod fixtures;
mod mock;
mod props;
mod rows;
