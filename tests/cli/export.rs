//! End-to-end tests of `strata export` (being built).
