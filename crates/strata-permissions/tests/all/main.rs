//! strata-permissions' tests: one binary.

mod checkpoint;
mod claude_rules;
mod sandbox;
mod settings;
