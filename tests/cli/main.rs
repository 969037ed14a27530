//! End-to-end tests of the `strata` binary: each runs the built executable as a user would.

#![expect(
    clippy::expect_used,
    reason = "test helpers fail loudly when the binary cannot run"
)]

mod context;
mod fork;
mod listing;
mod support;
mod tree;
