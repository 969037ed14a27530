//! strata adapter for Amazon Bedrock ConverseStream (`POST /model/{modelId}/converse-stream`).
//!
//! - [`request::build_body`]: rendered request → Converse body with `cachePoint` blocks.
//! - [`eventstream`]: sans-IO decoder of AWS event-stream binary frames.
//! - [`stream::ConverseParser`]: frames → normalized [`strata_provider::Event`]s.
//! - [`sigv4`]: AWS Signature Version 4; [`credentials`]: env and profile resolution.
//! - [`provider::BedrockProvider`]: the [`strata_provider::Provider`] over HTTP.

pub mod credentials;
pub mod eventstream;
pub mod provider;
pub mod request;
pub mod sigv4;
pub mod stream;
pub mod usage;

pub use credentials::{AwsCredentials, BedrockAuth, ResolvedAws};
pub use provider::BedrockProvider;
pub use request::build_body;
pub use stream::{ConverseParser, EventStreamFrames};
pub use usage::normalize_usage;
