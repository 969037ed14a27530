//! Public-API tests of strata-mock, over real HTTP.
#![expect(
    clippy::unwrap_used,
    clippy::panic,
    reason = "test helpers fail loudly on unexpected replies"
)]

mod admin;
mod anthropic;
mod bad_requests;
mod bedrock;
mod binary;
mod chat;
mod common;
mod fault_routes;
mod faults;
mod gemini;
mod output_cap;
mod responses;
mod retention;
mod rules;
mod scenario;
mod websocket;
