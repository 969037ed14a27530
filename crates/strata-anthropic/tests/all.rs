//! Public-API tests of strata-anthropic: SSE fixtures, capability rows, strata-mock over HTTP.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "test helpers fail loudly on unexpected data"
)]

mod conformance_bodies;
mod mock;
mod rows;
mod stream_fixtures;

use strata_anthropic::AnthropicParser;
use strata_provider::Event;
use strata_provider::transport::StreamDriver;

/// Events of `bytes` fed to a fresh driver in pieces cut at `cuts`.
pub fn drive_pieces(bytes: &[u8], cuts: &[usize]) -> Vec<Event> {
    let mut driver = StreamDriver::sse(AnthropicParser::new());
    let mut out = Vec::new();
    let mut last = 0;
    for &cut in cuts.iter().chain(std::iter::once(&bytes.len())) {
        driver.feed(&bytes[last..cut], &mut out);
        last = cut;
    }
    driver.end(&mut out);
    out
}

/// A fixture file's bytes.
pub fn fixture(name: &str) -> Vec<u8> {
    let path = format!("{}/tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}
