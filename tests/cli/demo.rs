//! End-to-end tests of `strata demo` (being built).
