//! [`BedrockProvider`]: the [`Provider`] for rows whose protocol is `bedrock-converse`.

use std::sync::Arc;
use std::time::SystemTime;

use async_trait::async_trait;
use strata_provider::transport::{Driver, HttpClient, HttpRequest, drive_with, join_url};
use strata_provider::{
    EventStream, Model, Protocol, Provider, ProviderError, ProviderRow, Request, StreamOptions,
};
use tracing::Instrument;

use crate::credentials::{BedrockAuth, ResolvedAws};
use crate::request::build_body;
use crate::sigv4::{SignableRequest, SigningScope, sign, uri_encode};
use crate::stream::{ConverseParser, EventStreamFrames};

/// Region used when neither the credentials nor the base URL name one.
pub const DEFAULT_REGION: &str = "us-east-1";

/// Streams requests to Bedrock ConverseStream, signed with SigV4 (or a Bedrock API key).
#[derive(Debug, Clone)]
pub struct BedrockProvider {
    row: ProviderRow,
    client: HttpClient,
    auth: Option<BedrockAuth>,
    region: Option<String>,
}

impl BedrockProvider {
    /// A provider for `row` with resolved AWS credentials and region.
    pub fn new(row: ProviderRow, client: HttpClient, aws: ResolvedAws) -> Self {
        Self {
            row,
            client,
            auth: Some(aws.auth),
            region: aws.region,
        }
    }

    /// A provider that authenticates only with `StreamOptions::api_key` (a Bedrock API key).
    pub fn with_api_keys_only(
        row: ProviderRow,
        client: HttpClient,
        region: Option<String>,
    ) -> Self {
        Self {
            row,
            client,
            auth: None,
            region,
        }
    }

    /// The region requests are signed for.
    pub fn region(&self) -> String {
        self.region
            .clone()
            .or_else(|| region_of(&self.row.base_url))
            .unwrap_or_else(|| DEFAULT_REGION.to_owned())
    }

    fn base_url(&self, model: &Model, options: &StreamOptions) -> String {
        if let Some(url) = &options.base_url {
            return url.clone();
        }
        let base = self.row.endpoint(&model.id).base_url;
        // The row names one regional host; the configured region picks the right one.
        match (&self.region, region_of(&base)) {
            (Some(region), Some(row_region)) if *region != row_region => {
                base.replace(&row_region, region)
            }
            _ => base,
        }
    }

    /// The HTTP request [`Provider::stream`] would send, signed at `time`.
    pub fn prepare(
        &self,
        model: &Model,
        request: &Request,
        options: &StreamOptions,
        time: SystemTime,
    ) -> Result<HttpRequest, ProviderError> {
        let caps = self.row.capabilities(&model.id);
        let base = self.base_url(model, options);
        let path = format!("/model/{}/converse-stream", uri_encode(&model.id, true));
        let url = join_url(&base, &path);
        let mut http = HttpRequest::json_of(url.clone(), &build_body(model, request, &caps))?
            .header("accept", "application/vnd.amazon.eventstream");
        http.max_retries = Some(options.max_retries);
        let auth = match (&options.api_key, &self.auth) {
            (Some(key), _) => BedrockAuth::Bearer(key.clone()),
            (None, Some(auth)) => auth.clone(),
            (None, None) => {
                return Err(ProviderError::Auth {
                    status: 0,
                    request_id: None,
                    body: format!(
                        "no AWS credentials for provider `{}`: set {} or configure a profile",
                        self.row.id,
                        self.row.auth_env.join(" or ")
                    ),
                });
            }
        };
        match auth {
            BedrockAuth::Bearer(key) => {
                http = http.header("authorization", format!("Bearer {}", key.expose()));
                http.secrets.push(key);
            }
            BedrockAuth::SigV4(credentials) => {
                let (host, full_path) =
                    split_url(&url).ok_or_else(|| ProviderError::InvalidRequest {
                        status: 0,
                        request_id: None,
                        body: format!("cannot sign a request to `{url}`: not an http(s) URL"),
                    })?;
                let region = self.region();
                let signed = sign(
                    &SignableRequest {
                        method: "POST",
                        path: &full_path,
                        query: &[],
                        headers: &[("host", &host), ("content-type", "application/json")],
                        body: &http.body,
                    },
                    &SigningScope {
                        region: &region,
                        service: "bedrock",
                        time,
                    },
                    &credentials,
                );
                for (name, value) in signed {
                    http = http.header(name, value);
                }
                http.secrets.push(credentials.secret_access_key.clone());
                if let Some(token) = &credentials.session_token {
                    http.secrets.push(token.clone());
                }
            }
        }
        for (name, value) in &self.row.endpoint(&model.id).headers {
            http = http.header(name, value);
        }
        for (name, value) in &options.headers {
            http = http.header(name, value);
        }
        Ok(http)
    }
}

/// `(host[:port], path)` of an http(s) URL.
fn split_url(url: &str) -> Option<(String, String)> {
    let rest = url
        .strip_prefix("https://")
        .or_else(|| url.strip_prefix("http://"))?;
    let (host, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "/"),
    };
    let default_port = if url.starts_with("https://") {
        ":443"
    } else {
        ":80"
    };
    Some((
        host.strip_suffix(default_port).unwrap_or(host).to_owned(),
        path.to_owned(),
    ))
}

/// The region in a `bedrock-runtime.{region}.amazonaws.com` host.
fn region_of(base_url: &str) -> Option<String> {
    let host = split_url(base_url)?.0;
    let rest = host.strip_prefix("bedrock-runtime.")?;
    let (region, _) = rest.split_once('.')?;
    Some(region.to_owned())
}

#[async_trait]
impl Provider for BedrockProvider {
    fn protocol(&self) -> Protocol {
        Protocol::BedrockConverse
    }

    fn http_request(
        &self,
        model: &Model,
        request: &Request,
        options: &StreamOptions,
    ) -> Result<HttpRequest, ProviderError> {
        self.prepare(model, request, options, SystemTime::now())
    }

    async fn stream(
        &self,
        model: &Model,
        request: &Request,
        options: &StreamOptions,
    ) -> Result<EventStream, ProviderError> {
        let http = self.http_request(model, request, options)?;
        let span =
            tracing::debug_span!("provider_request", provider = %self.row.id, model = %model.id);
        let cancel = options.cancel.clone();
        let model_id = model.id.clone();
        let driver: Driver = Arc::new(move |response| {
            drive_with(
                response.first_chunk,
                response.body,
                EventStreamFrames::new(),
                ConverseParser::new(model_id.clone()),
                cancel.clone(),
            )
        });
        self.client
            .stream_events(http, &options.cancel, driver)
            .instrument(span)
            .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_split_and_regions_parse() {
        assert_eq!(
            split_url("https://bedrock-runtime.eu-west-1.amazonaws.com/model/x/converse-stream"),
            Some((
                "bedrock-runtime.eu-west-1.amazonaws.com".to_owned(),
                "/model/x/converse-stream".to_owned()
            ))
        );
        assert_eq!(
            split_url("http://127.0.0.1:8080"),
            Some(("127.0.0.1:8080".to_owned(), "/".to_owned()))
        );
        assert_eq!(
            region_of("https://bedrock-runtime.us-east-1.amazonaws.com").as_deref(),
            Some("us-east-1")
        );
        assert_eq!(region_of("http://127.0.0.1:1"), None);
    }
}
