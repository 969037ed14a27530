//! End-to-end tests of the `strata` binary: each runs the built executable as a user would.

#![expect(
    clippy::expect_used,
    reason = "test helpers fail loudly when the binary cannot run"
)]
#![expect(
    clippy::unwrap_used,
    reason = "test helpers outside #[test] functions unwrap like the tests do"
)]

mod byom;
mod context;
mod demo;
mod export;
mod first_run;
mod fork;
mod json_mode;
mod key;
mod listing;
mod mcp;
mod mcp_login;
mod notices;
mod permissions;
mod pi_session;
mod readme;
mod readme_cost;
mod rpc;
mod run;
mod sent;
mod subagents;
mod support;
mod tools;
mod tree;
mod tui;
mod tui_habits;
mod tui_rewind;
