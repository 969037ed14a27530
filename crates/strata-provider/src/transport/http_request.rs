//! One POST to send, as a provider builds it: plain data, so a request can be printed
//! (`strata context --format request`) by code that sends nothing.

use bytes::Bytes;

use crate::error::{ApiKey, ProviderError};

/// One POST to send: URL, headers (auth included) and the serialized body.
#[derive(Debug, Clone)]
pub struct HttpRequest {
    /// Full URL.
    pub url: String,
    /// Headers in sending order.
    pub headers: Vec<(String, String)>,
    /// The JSON body.
    pub body: Bytes,
    /// Secrets to scrub from any error text (the API key, tokens).
    pub secrets: Vec<ApiKey>,
    /// Re-sends allowed before the first byte; `None` uses the client's policy.
    pub max_retries: Option<u32>,
}

impl HttpRequest {
    /// A POST of `body` to `url` with `content-type: application/json`.
    pub fn json(url: impl Into<String>, body: impl Into<Bytes>) -> Self {
        Self {
            url: url.into(),
            headers: vec![("content-type".into(), "application/json".into())],
            body: body.into(),
            secrets: Vec::new(),
            max_retries: None,
        }
    }

    /// A POST of `body` serialized as JSON; a body that cannot be serialized is an
    /// `InvalidRequest` saying so.
    pub fn json_of(
        url: impl Into<String>,
        body: &impl serde::Serialize,
    ) -> Result<Self, ProviderError> {
        let bytes = serde_json::to_vec(body).map_err(|e| ProviderError::InvalidRequest {
            status: 0,
            request_id: None,
            body: format!("could not serialize the request: {e}"),
        })?;
        Ok(Self::json(url, bytes))
    }

    /// Adds a header.
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// The value of header `name` (case-insensitive), for tests and logs.
    pub fn header_value(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}
