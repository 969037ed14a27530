//! strata-subagents' integration tests: one binary.

mod spawn;
