//! strata adapter for Gemini `generateContent` / `streamGenerateContent` (AI Studio and Vertex).
//!
//! - [`request::build_body`]: rendered request → `GenerateContentRequest`.
//! - [`stream::GeminiParser`]: sans-IO parser of the `alt=sse` stream.
//! - [`usage::normalize_usage`]: `usageMetadata` → [`strata_provider::Usage`].
//! - [`provider::GoogleProvider`]: the [`strata_provider::Provider`] over HTTP.
//! - [`explicit`]: explicit caches (`cachedContents`) on rows whose `explicit_cache` flag is on.
//! - [`auth`]: API key, bearer token, or an `authorized_user` or `service_account` ADC file.

pub mod auth;
pub mod explicit;
pub mod provider;
pub mod request;
pub mod stream;
pub mod usage;

pub use auth::{AdcFile, AuthorizedUser, GoogleCredentials, ServiceAccount, ServiceAccountKey};
pub use provider::{GoogleApi, GoogleProvider};
pub use request::build_body;
pub use stream::GeminiParser;
pub use usage::{UsageMetadata, normalize_usage};
