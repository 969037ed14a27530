//! The session runtime driven directly — no terminal, no JSON — against strata-mock over HTTP
//! through the Anthropic adapter: every front end gets exactly these behaviours.

#![expect(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "test helpers outside #[test] functions unwrap and panic like the tests do"
)]

mod support;

mod background;
mod behaviour;
mod fold_cuts;
mod notices;
mod reads;
mod replay;
mod rules;
