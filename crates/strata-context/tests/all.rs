//! Public-API tests of strata-context, in one binary.
#![expect(
    clippy::panic,
    reason = "a failing test panics naming the fixture and leaf"
)]
#![expect(
    clippy::expect_used,
    reason = "test helpers fail loudly on bad test data"
)]

#[path = "all/pi_fixtures.rs"]
mod pi_fixtures;
#[path = "all/properties.rs"]
mod properties;
#[path = "render/mod.rs"]
mod render;
#[path = "all/sidecar.rs"]
mod sidecar;
#[path = "all/strata_entries.rs"]
mod strata_entries;
#[path = "all/support.rs"]
mod support;
