//! Public-API tests of strata-session, one binary.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test helpers fail loudly"
)]

mod common;
mod fixtures;
mod fork;
mod fuzz;
mod guards;
mod props;
mod sidecar;
mod store;
mod writer;
