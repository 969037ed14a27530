//! Public-API tests of strata-openai-responses: SSE fixtures, the mock server over real
//! HTTP, and one request per capability-table row.

#![expect(
    clippy::panic,
    clippy::unwrap_used,
    reason = "test helpers outside #[test] functions fail loudly on purpose"
)]

mod additional_tools;
mod conformance_bodies;
mod fixtures;
mod mock;
mod rows;
mod support;
mod websocket;
