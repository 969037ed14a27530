//! End-to-end tests of the `strata` binary: each runs the built executable as a user would.

mod context;
mod fork;
mod listing;
mod support;
mod tree;
