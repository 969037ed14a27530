//! Public-API tests of strata-provider (one integration binary).

#![expect(
    clippy::expect_used,
    clippy::panic,
    clippy::unwrap_used,
    reason = "test helpers outside #[test] functions fail loudly on purpose"
)]

mod catalog;
mod complete;
mod drift;
mod pi_models;
mod props;
mod user_config;
