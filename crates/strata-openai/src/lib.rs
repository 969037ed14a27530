//! strata adapter for OpenAI Chat Completions and every OpenAI-compatible provider.
//!
//! One protocol, many vendors: DeepSeek, Moonshot, Mistral, xAI, Z.ai, Cerebras, Groq,
//! OpenRouter, Together, DashScope, local servers (Ollama, LM Studio, vLLM, llama.cpp) and
//! more. Their differences are the row's compat flags ([`WireQuirks`], [`Capabilities`]):
//! system or developer role, `max_tokens` or `max_completion_tokens`, the reasoning parameter
//! style, the cache key (body or header), explicit `cache_control` markers, usage dialect.
//!
//! - [`OpenAiChatProvider::for_row`] builds the adapter for a row; it implements [`Provider`].
//! - [`request::build_body`] renders a [`Request`] as the Chat Completions body.
//! - [`stream::ChatParser`] is the sans-IO parser of the chunk stream.
//!
//! [`WireQuirks`]: strata_provider::WireQuirks
//! [`Capabilities`]: strata_provider::Capabilities
//! [`Provider`]: strata_provider::Provider
//! [`Request`]: strata_provider::Request

mod pi;
pub mod provider;
pub mod request;
pub mod stream;

pub use provider::OpenAiChatProvider;
pub use request::build_body;
pub use stream::{ChatParser, normalize_usage};
