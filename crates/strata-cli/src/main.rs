//! The strata command-line coding agent.

fn main() {}
