//! strata adapter for the Anthropic Messages API: request building, SSE streaming, usage.
//!
//! Serves every capability-table row whose protocol is `anthropic-messages` (Anthropic itself,
//! MiniMax, Kimi For Coding, Fireworks, Vercel AI Gateway, Cloudflare AI Gateway, Claude via
//! Copilot and OpenCode, …). Vendor differences come from the row's [`Capabilities`]:
//! breakpoint count and TTLs, mid-conversation system messages, tool changes and their beta
//! header, budget or adaptive thinking.
//!
//! - [`AnthropicProvider::for_row`] builds the adapter for a row; it implements [`Provider`].
//! - [`request::build_body`] renders a [`Request`] as the Messages JSON body.
//! - [`stream::AnthropicParser`] is the sans-IO parser of the SSE stream.
//! - [`thread::Threads`] sends only the new messages of a session's message thread, where the
//!   row has them, and the whole request again when the provider no longer holds it.
//!
//! [`Capabilities`]: strata_provider::Capabilities
//! [`Provider`]: strata_provider::Provider
//! [`Request`]: strata_provider::Request

pub mod provider;
pub mod request;
pub mod stream;
pub mod thread;

pub use provider::AnthropicProvider;
pub use request::{ANTHROPIC_VERSION, build_body};
pub use stream::{AnthropicParser, normalize_usage};
