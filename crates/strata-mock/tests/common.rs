//! Helpers: a server per test, JSON posts, SSE parsed by hand.

use reqwest::header::HeaderMap;
use serde_json::Value;
use strata_mock::{MockConfig, MockServer, RequestRecord};

pub struct Harness {
    pub server: MockServer,
    pub client: reqwest::Client,
}

pub async fn start() -> Harness {
    start_with(MockConfig::new()).await
}

pub async fn start_with(config: MockConfig) -> Harness {
    Harness {
        server: MockServer::start(config).await.unwrap(),
        client: reqwest::Client::new(),
    }
}

pub struct Reply {
    pub status: u16,
    pub headers: HeaderMap,
    pub text: String,
}

impl Reply {
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.text).unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.text))
    }
}

impl Harness {
    pub async fn post(&self, path: &str, body: &Value) -> Reply {
        let response = self
            .client
            .post(self.server.url(path))
            .json(body)
            .send()
            .await
            .unwrap();
        let status = response.status().as_u16();
        let headers = response.headers().clone();
        let text = response.text().await.unwrap();
        Reply {
            status,
            headers,
            text,
        }
    }

    pub async fn post_raw(&self, path: &str, body: &str) -> Reply {
        let response = self
            .client
            .post(self.server.url(path))
            .header("content-type", "application/json")
            .body(body.to_owned())
            .send()
            .await
            .unwrap();
        let status = response.status().as_u16();
        let headers = response.headers().clone();
        let text = response.text().await.unwrap();
        Reply {
            status,
            headers,
            text,
        }
    }

    pub async fn post_bytes(&self, path: &str, body: &Value) -> (u16, HeaderMap, Vec<u8>) {
        let response = self
            .client
            .post(self.server.url(path))
            .json(body)
            .send()
            .await
            .unwrap();
        let status = response.status().as_u16();
        let headers = response.headers().clone();
        (status, headers, response.bytes().await.unwrap().to_vec())
    }

    pub fn last_record(&self) -> RequestRecord {
        self.server.requests().pop().unwrap()
    }
}

/// One SSE event: its `event:` name (if any) and its `data:` text.
#[derive(Debug, Clone, PartialEq)]
pub struct Sse {
    pub event: Option<String>,
    pub data: String,
}

impl Sse {
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.data)
            .unwrap_or_else(|e| panic!("bad event data ({e}): {}", self.data))
    }
}

/// Splits an SSE body into events (blank-line separated, LF or CRLF).
pub fn parse_sse(text: &str) -> Vec<Sse> {
    let normalized = text.replace("\r\n", "\n");
    normalized
        .split("\n\n")
        .filter(|chunk| !chunk.trim().is_empty())
        .map(|chunk| {
            let mut event = None;
            let mut data = Vec::new();
            for line in chunk.lines() {
                if let Some(rest) = line.strip_prefix("event:") {
                    event = Some(rest.trim().to_owned());
                } else if let Some(rest) = line.strip_prefix("data:") {
                    data.push(rest.strip_prefix(' ').unwrap_or(rest).to_owned());
                }
            }
            Sse {
                event,
                data: data.join("\n"),
            }
        })
        .collect()
}

/// The text a Gemini `streamGenerateContent` stream carried, its chunks joined.
pub fn gemini_text(events: &[Sse]) -> String {
    events
        .iter()
        .filter_map(|e| {
            e.json()["candidates"][0]["content"]["parts"][0]["text"]
                .as_str()
                .map(str::to_owned)
        })
        .collect()
}

/// Deterministic filler text of roughly `words` × 2 tokens.
pub fn filler(seed: &str, words: usize) -> String {
    (0..words).map(|i| format!("{seed}{i} ")).collect()
}

/// Tokens of a string as the mock counts them.
pub fn tokens(text: &str) -> u64 {
    strata_mock::tokens::Tokenizer::new().count(text)
}
