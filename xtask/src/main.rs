//! Workspace automation for strata: capability refresh, benchmarks, code generation checks.

fn main() {}
