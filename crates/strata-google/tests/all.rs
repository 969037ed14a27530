//! Public-API tests of strata-google: SSE fixtures, the mock server (AI Studio and Vertex
//! routes) over real HTTP, token refresh, and the capability-table rows.

#![expect(
    clippy::panic,
    clippy::unwrap_used,
    reason = "test helpers outside #[test] functions fail loudly on purpose"
)]

mod auth;
mod explicit;
mod fixtures;
mod mock;
mod rows;
mod service_account;
