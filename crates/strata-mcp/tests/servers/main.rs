//! strata-mcp against servers it did not write: the reference `server-everything` (npm) over
//! stdio and streamable HTTP, and a server built on the official Python SDK whose tools
//! change while it runs. `.ci/install-mcp` installs both; without them each test says it
//! skipped.

#![expect(
    clippy::unwrap_used,
    reason = "test helpers outside #[test] functions unwrap like the tests do"
)]

mod agent;
mod deps;
mod everything;
mod oauth;
mod oversize;
mod python;
