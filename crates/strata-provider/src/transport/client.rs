//! The HTTP client: POST a JSON body, retry before the first byte, classify failures.

use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use bytes::Bytes;
use futures::{Stream, StreamExt};
use reqwest::header::HeaderMap;
use tokio_util::sync::CancellationToken;

use super::HttpRequest;
use super::classify::{classify_response, scrub};
use super::retry::RetryPolicy;
use crate::error::{ApiKey, ProviderError};

/// The response body after the first chunk, as a stream of byte chunks.
pub type ByteStream = Pin<Box<dyn Stream<Item = Result<Bytes, ProviderError>> + Send>>;

/// Settings of an [`HttpClient`].
#[derive(Debug, Clone)]
pub struct TransportConfig {
    /// Retry limits and backoff.
    pub retry: RetryPolicy,
    /// Time allowed to open a connection.
    pub connect_timeout: Duration,
    /// Time allowed from sending the request to the response headers. Streaming APIs send
    /// them at once, before any thinking; a server that never does is silent, and with the
    /// default retries it fails within [`TransportConfig::silent_server_bound`].
    pub header_timeout: Duration,
    /// Time allowed from sending the request to the first body byte (a server that accepts
    /// and never answers); the attempt then fails as a retryable transport error.
    pub first_byte_timeout: Duration,
    /// Longest silence between two body chunks before the stream counts as dropped (the
    /// idle-stream timeout: a reply that stalls mid-way).
    pub read_timeout: Duration,
    /// `User-Agent` header.
    pub user_agent: String,
}

impl Default for TransportConfig {
    fn default() -> Self {
        Self {
            retry: RetryPolicy::default(),
            // A silent server costs at most (retries + 1) × these, each retry announced to
            // the retry observer: under a minute with the headers' limit. The first body
            // byte may wait for a reasoning model's first token.
            connect_timeout: Duration::from_secs(10),
            header_timeout: Duration::from_secs(10),
            first_byte_timeout: Duration::from_secs(120),
            read_timeout: Duration::from_secs(120),
            user_agent: concat!("strata/", env!("CARGO_PKG_VERSION")).to_owned(),
        }
    }
}

impl TransportConfig {
    /// The longest a server that accepts the connection and never answers can hold a request
    /// before it fails: every attempt waits for headers, with the backoff between them.
    pub fn silent_server_bound(&self) -> Duration {
        // The longest backoff (jitter at its top), as `RetryPolicy::delay` computes it.
        let waits: Duration = (0..self.retry.max_retries)
            .map(|attempt| {
                self.retry
                    .base_delay
                    .saturating_mul(2u32.saturating_pow(attempt.min(30)))
                    .min(self.retry.max_delay)
            })
            .sum();
        self.header_timeout
            .min(self.first_byte_timeout)
            .saturating_mul(self.retry.max_retries.saturating_add(1))
            + waits
    }
}

/// A successful response whose first body bytes have arrived.
pub struct StreamingResponse {
    /// HTTP status (2xx).
    pub status: u16,
    /// Response headers.
    pub headers: HeaderMap,
    /// The first non-empty chunk of the body.
    pub first_chunk: Bytes,
    /// The rest of the body; dropping it aborts the HTTP request.
    pub body: ByteStream,
    /// Attempts it took (1 = no retry).
    pub attempts: u32,
}

impl std::fmt::Debug for StreamingResponse {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StreamingResponse")
            .field("status", &self.status)
            .field("first_chunk_len", &self.first_chunk.len())
            .field("attempts", &self.attempts)
            .finish_non_exhaustive()
    }
}

/// A retry about to happen: which attempt failed, how long the client waits, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RetryNotice {
    /// The failed attempt (1 = the first send).
    pub attempt: u32,
    /// The wait before the next send.
    pub wait: Duration,
    /// The error of the failed attempt (keys scrubbed).
    pub error: String,
}

/// Called before each retry, so a front end can say why the answer is late.
pub type RetryObserver = Arc<dyn Fn(&RetryNotice) + Send + Sync>;

/// A reqwest client plus the retry policy; cheap to clone, share one per process.
#[derive(Clone)]
pub struct HttpClient {
    client: reqwest::Client,
    retry: RetryPolicy,
    on_retry: Option<RetryObserver>,
    first_byte_timeout: Duration,
    header_timeout: Duration,
    read_timeout: Duration,
}

impl std::fmt::Debug for HttpClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpClient")
            .field("retry", &self.retry)
            .field("on_retry", &self.on_retry.is_some())
            .finish_non_exhaustive()
    }
}

impl HttpClient {
    /// A client with `config` (rustls, no proxy magic beyond reqwest's defaults).
    pub fn new(config: &TransportConfig) -> Result<Self, ProviderError> {
        let client = reqwest::Client::builder()
            .connect_timeout(config.connect_timeout)
            .read_timeout(config.read_timeout)
            .user_agent(config.user_agent.clone())
            .build()
            .map_err(|e| ProviderError::Transport {
                message: format!("could not build the HTTP client: {e}"),
            })?;
        Ok(Self {
            client,
            retry: config.retry,
            on_retry: None,
            first_byte_timeout: config.first_byte_timeout,
            header_timeout: config.header_timeout,
            read_timeout: config.read_timeout,
        })
    }

    /// Wraps an existing reqwest client (its own timeouts apply, plus the default
    /// first-byte timeout).
    pub fn with_client(client: reqwest::Client, retry: RetryPolicy) -> Self {
        let defaults = TransportConfig::default();
        Self {
            client,
            retry,
            on_retry: None,
            first_byte_timeout: defaults.first_byte_timeout,
            header_timeout: defaults.header_timeout,
            read_timeout: defaults.read_timeout,
        }
    }

    /// Tells the retry observer, if any, that attempt `attempt` failed with `error` and the
    /// next starts after `wait`.
    pub(crate) fn notify_retry(&self, attempt: u32, wait: Duration, error: &ProviderError) {
        tracing::debug!(attempt, ?wait, %error, "retrying provider request");
        if let Some(observer) = &self.on_retry {
            observer(&RetryNotice {
                attempt,
                wait,
                error: error.to_string(),
            });
        }
    }

    /// The retry policy for `request` (its own limit, else the client's).
    pub(crate) fn policy_for(&self, request: &HttpRequest) -> RetryPolicy {
        RetryPolicy {
            max_retries: request.max_retries.unwrap_or(self.retry.max_retries),
            ..self.retry
        }
    }

    /// Calls `observer` before every retry this client makes.
    pub fn with_retry_observer(mut self, observer: RetryObserver) -> Self {
        self.on_retry = Some(observer);
        self
    }

    /// The retry policy.
    pub fn retry_policy(&self) -> RetryPolicy {
        self.retry
    }

    /// Sends `request`, re-sending retryable failures until the first body byte arrives.
    ///
    /// Errors: the classified [`ProviderError`] of the last attempt (keys scrubbed), or
    /// [`ProviderError::Cancelled`] as soon as `cancel` fires. After the first byte nothing
    /// is re-sent: an SSE POST is never reconnected, since that would repeat the prompt.
    pub async fn post_json(
        &self,
        request: &HttpRequest,
        cancel: &CancellationToken,
    ) -> Result<StreamingResponse, ProviderError> {
        let policy = self.policy_for(request);
        let mut attempt = 0;
        loop {
            let result = tokio::select! {
                biased;
                () = cancel.cancelled() => return Err(ProviderError::Cancelled),
                r = self.attempt(request) => r,
            };
            let error = match result {
                Ok(mut response) => {
                    response.attempts = attempt + 1;
                    return Ok(response);
                }
                Err(error) => error,
            };
            let Some(wait) = policy.delay(attempt, &error) else {
                return Err(error);
            };
            self.notify_retry(attempt + 1, wait, &error);
            tokio::select! {
                biased;
                () = cancel.cancelled() => return Err(ProviderError::Cancelled),
                () = tokio::time::sleep(wait) => {}
            }
            attempt += 1;
        }
    }

    async fn attempt(&self, request: &HttpRequest) -> Result<StreamingResponse, ProviderError> {
        match tokio::time::timeout(self.first_byte_timeout, self.attempt_untimed(request)).await {
            Ok(result) => result,
            Err(_) => Err(self.first_byte_timed_out()),
        }
    }

    /// No byte came back in time (the read timeout also bounds the wait for headers).
    fn first_byte_timed_out(&self) -> ProviderError {
        let limit = self.first_byte_timeout.min(self.read_timeout);
        ProviderError::Transport {
            message: format!(
                "no answer within {}s of sending the request (first-byte timeout)",
                limit.as_secs_f64()
            ),
        }
    }

    async fn attempt_untimed(
        &self,
        request: &HttpRequest,
    ) -> Result<StreamingResponse, ProviderError> {
        let secrets = &request.secrets;
        let mut builder = self.client.post(&request.url);
        for (name, value) in &request.headers {
            builder = builder.header(name, value);
        }
        let sent = tokio::time::timeout(
            self.header_timeout,
            builder.body(request.body.clone()).send(),
        )
        .await
        .map_err(|_| ProviderError::Transport {
            message: format!(
                "no response headers within {}s of sending the request (the server is silent)",
                self.header_timeout.as_secs_f64()
            ),
        })?;
        let response = sent.map_err(|e| {
            if e.is_timeout() && !e.is_connect() {
                self.first_byte_timed_out()
            } else {
                let what = format!("request to {} failed", url_for_errors(&request.url));
                transport_error(&what, &e, secrets)
            }
        })?;
        let status = response.status().as_u16();
        let headers = response.headers().clone();
        if !response.status().is_success() {
            let body = response
                .bytes()
                .await
                .map_err(|e| transport_error("reading the error body failed", &e, secrets))?;
            let text = String::from_utf8_lossy(&body);
            return Err(classify_response(
                status,
                &headers,
                &text,
                secrets,
                SystemTime::now(),
            ));
        }
        let owned_secrets = secrets.clone();
        let idle = self.read_timeout;
        let mut body: ByteStream = Box::pin(response.bytes_stream().map(move |r| {
            r.map_err(|e| {
                if e.is_timeout() {
                    ProviderError::Transport {
                        message: format!(
                            "the stream went silent for {}s (idle-stream timeout)",
                            idle.as_secs_f64()
                        ),
                    }
                } else {
                    transport_error("the stream broke", &e, &owned_secrets)
                }
            })
        }));
        loop {
            match body.next().await {
                Some(Ok(chunk)) if chunk.is_empty() => continue,
                Some(Ok(first_chunk)) => {
                    return Ok(StreamingResponse {
                        status,
                        headers,
                        first_chunk,
                        body,
                        attempts: 1,
                    });
                }
                Some(Err(error)) => return Err(error),
                None => {
                    return Err(ProviderError::Transport {
                        message: "the connection closed before the first byte".into(),
                    });
                }
            }
        }
    }
}

/// `scheme://host[:port]/path` of `url`: the query (where some providers put the key) and
/// any user info left out, so an error can say where it tried.
fn url_for_errors(url: &str) -> String {
    let without_query = url.split(['?', '#']).next().unwrap_or(url);
    match without_query.split_once("://") {
        Some((scheme, rest)) => {
            let (authority, path) = rest.split_once('/').map_or((rest, ""), |(a, p)| (a, p));
            let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
            if path.is_empty() {
                format!("{scheme}://{host}")
            } else {
                format!("{scheme}://{host}/{path}")
            }
        }
        None => without_query.to_owned(),
    }
}

/// A reqwest error as [`ProviderError::Transport`], without the URL and without secrets.
fn transport_error(what: &str, error: &reqwest::Error, secrets: &[ApiKey]) -> ProviderError {
    use std::error::Error as _;
    let mut message = format!("{what}: {}", WithoutUrl(error));
    let mut source = error.source();
    while let Some(s) = source {
        message.push_str(": ");
        message.push_str(&s.to_string());
        source = s.source();
    }
    ProviderError::Transport {
        message: scrub(&message, secrets),
    }
}

/// Displays a reqwest error's kind without its URL (a query string may carry a key).
struct WithoutUrl<'a>(&'a reqwest::Error);

impl std::fmt::Display for WithoutUrl<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let e = self.0;
        let kind = if e.is_timeout() {
            "timed out"
        } else if e.is_connect() {
            "could not connect"
        } else if e.is_body() || e.is_decode() {
            "body error"
        } else if e.is_request() {
            "request error"
        } else {
            "error"
        };
        match e.status() {
            Some(s) => write!(f, "{kind} (status {s})"),
            None => f.write_str(kind),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::TcpListener;

    #[test]
    fn errors_name_where_they_tried_without_query_or_user_info() {
        assert_eq!(
            url_for_errors("https://user:pw@api.example.com:8443/v1/messages?key=secret#x"),
            "https://api.example.com:8443/v1/messages"
        );
        assert_eq!(url_for_errors("http://127.0.0.1:1"), "http://127.0.0.1:1");
    }

    /// A server that answers the n-th connection with `replies[n]` (raw HTTP), then closes.
    async fn serve(replies: Vec<&'static str>) -> (String, tokio::task::JoinHandle<usize>) {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/v1/x", listener.local_addr().unwrap());
        let handle = tokio::spawn(async move {
            let mut served = 0;
            for reply in replies {
                let (mut socket, _) = listener.accept().await.unwrap();
                let mut buf = vec![0u8; 64 * 1024];
                let _ = socket.read(&mut buf).await;
                socket.write_all(reply.as_bytes()).await.unwrap();
                socket.shutdown().await.ok();
                served += 1;
            }
            served
        });
        (url, handle)
    }

    fn client() -> HttpClient {
        HttpClient::new(&TransportConfig {
            retry: RetryPolicy {
                max_retries: 2,
                base_delay: Duration::from_millis(5),
                max_delay: Duration::from_secs(2),
            },
            ..TransportConfig::default()
        })
        .unwrap()
    }

    const OK: &str = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: 12\r\nconnection: close\r\n\r\ndata: hi\n\n\n\n";

    #[test]
    fn a_silent_server_is_given_up_on_within_a_minute_by_default() {
        let bound = TransportConfig::default().silent_server_bound();
        assert!(bound < Duration::from_secs(60), "{bound:?}");
    }

    #[tokio::test]
    async fn a_server_that_sends_no_headers_fails_each_attempt_on_the_header_timeout() {
        // Accepts every connection and reads the request, then says nothing.
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/v1/x", listener.local_addr().unwrap());
        tokio::spawn(async move {
            let mut held = Vec::new();
            while let Ok((mut socket, _)) = listener.accept().await {
                let mut buf = vec![0u8; 64 * 1024];
                let _ = socket.read(&mut buf).await;
                held.push(socket);
            }
        });
        let heard = Arc::new(std::sync::Mutex::new(Vec::new()));
        let sink = Arc::clone(&heard);
        let quick = HttpClient::new(&TransportConfig {
            retry: RetryPolicy {
                max_retries: 2,
                base_delay: Duration::from_millis(5),
                max_delay: Duration::from_secs(2),
            },
            header_timeout: Duration::from_millis(200),
            ..TransportConfig::default()
        })
        .unwrap();
        let observed = quick.with_retry_observer(Arc::new(move |notice: &RetryNotice| {
            sink.lock().unwrap().push(notice.error.clone());
        }));
        let err = observed
            .post_json(&HttpRequest::json(url, "{}"), &CancellationToken::new())
            .await
            .unwrap_err();
        assert!(
            err.to_string().contains("no response headers within 0.2s"),
            "{err}"
        );
        // Each retry was announced (a front end shows it) with the same reason.
        let heard = heard.lock().unwrap();
        assert_eq!(heard.len(), 2, "{heard:?}");
        assert!(
            heard.iter().all(|e| e.contains("the server is silent")),
            "{heard:?}"
        );
    }

    #[tokio::test]
    async fn a_connection_dropped_before_the_first_byte_is_retried() {
        let dropped = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: 100\r\nconnection: close\r\n\r\n";
        let (url, server) = serve(vec![dropped, OK]).await;
        let request = HttpRequest::json(url, "{}");
        let response = client()
            .post_json(&request, &CancellationToken::new())
            .await
            .unwrap();
        assert_eq!(response.attempts, 2);
        assert_eq!(&response.first_chunk[..], b"data: hi\n\n\n\n");
        assert_eq!(server.await.unwrap(), 2);
    }

    #[tokio::test]
    async fn the_retry_observer_hears_each_retry_before_it_happens() {
        let limited = "HTTP/1.1 429 Too Many Requests\r\nretry-after: 0\r\ncontent-length: 2\r\nconnection: close\r\n\r\n{}";
        let (url, _server) = serve(vec![limited, limited, OK]).await;
        let heard = Arc::new(std::sync::Mutex::new(Vec::new()));
        let sink = Arc::clone(&heard);
        let observed = client().with_retry_observer(Arc::new(move |notice: &RetryNotice| {
            sink.lock().unwrap().push(notice.clone());
        }));
        let response = observed
            .post_json(&HttpRequest::json(url, "{}"), &CancellationToken::new())
            .await
            .unwrap();
        assert_eq!(response.attempts, 3);
        let heard = heard.lock().unwrap();
        let attempts: Vec<u32> = heard.iter().map(|n| n.attempt).collect();
        assert_eq!(attempts, [1, 2]);
        assert!(
            heard[0].error.contains("429") || heard[0].error.to_lowercase().contains("rate"),
            "{}",
            heard[0].error
        );
    }

    #[tokio::test]
    async fn rate_limits_honour_retry_after_and_errors_lose_the_key() {
        let limited = "HTTP/1.1 429 Too Many Requests\r\nretry-after: 0\r\ncontent-length: 2\r\nconnection: close\r\n\r\n{}";
        let (url, server) = serve(vec![limited, OK]).await;
        let request = HttpRequest::json(url, "{}");
        let response = client()
            .post_json(&request, &CancellationToken::new())
            .await
            .unwrap();
        assert_eq!(response.attempts, 2);
        server.await.unwrap();

        let denied = "HTTP/1.1 401 Unauthorized\r\nrequest-id: req_7\r\ncontent-length: 30\r\nconnection: close\r\n\r\ninvalid x-api-key: sk-secret-1";
        let (url, _server) = serve(vec![denied]).await;
        let mut request = HttpRequest::json(url, "{}");
        request.secrets.push(ApiKey::new("sk-secret-1"));
        let err = client()
            .post_json(&request, &CancellationToken::new())
            .await
            .unwrap_err();
        assert!(
            matches!(err, ProviderError::Auth { status: 401, .. }),
            "{err:?}"
        );
        assert_eq!(err.request_id(), Some("req_7"));
        assert!(!err.to_string().contains("sk-secret-1"), "{err}");
    }

    #[tokio::test]
    async fn cancellation_during_backoff_returns_at_once() {
        let busy = "HTTP/1.1 429 Too Many Requests\r\nretry-after: 1\r\ncontent-length: 0\r\nconnection: close\r\n\r\n";
        let (url, _server) = serve(vec![busy]).await;
        let request = HttpRequest::json(url, "{}");
        let cancel = CancellationToken::new();
        let trigger = cancel.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(50)).await;
            trigger.cancel();
        });
        let started = std::time::Instant::now();
        let err = client().post_json(&request, &cancel).await.unwrap_err();
        assert_eq!(err, ProviderError::Cancelled);
        assert!(started.elapsed() < Duration::from_millis(800));
    }

    #[tokio::test]
    async fn a_refused_connection_is_a_transport_error() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/", listener.local_addr().unwrap());
        drop(listener);
        let request = HttpRequest {
            max_retries: Some(0),
            ..HttpRequest::json(url, "{}")
        };
        let err = client()
            .post_json(&request, &CancellationToken::new())
            .await
            .unwrap_err();
        assert!(matches!(err, ProviderError::Transport { .. }), "{err:?}");
        assert!(err.is_retryable());
    }
}
