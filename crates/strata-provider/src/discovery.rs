//! Asking a server that serves its own models (llama.cpp, Ollama, vLLM, LM Studio, any
//! OpenAI-compatible server) which models it has and how large their context windows are.
//!
//! Parsing is separate from the HTTP calls so the server shapes are tested on their own. The
//! shapes, from each server's documents and source:
//! - every server: `GET {base}/models` → `{"data": [{"id": …}, …]}` (OpenAI's list);
//! - vLLM adds `max_model_len` to each entry;
//! - llama.cpp's `llama-server` reports the per-slot window at `GET /props` as
//!   `default_generation_settings.n_ctx` (its `/v1/models` entries carry `meta.n_ctx_train`,
//!   the training length, which the server may not have allocated);
//! - Ollama's `POST /api/show {"model": id}` has `model_info["<arch>.context_length"]` and,
//!   when the Modelfile sets it, `num_ctx` in `parameters`;
//! - LM Studio's `GET /api/v0/models` has `loaded_context_length` (when loaded) and
//!   `max_context_length`.

use std::time::Duration;

use serde_json::Value;

use crate::error::ApiKey;
use crate::table::{ProviderRow, ServerKind};
use crate::transport::auth::{auth_header, join_url};

/// How long a listing or window query may take: local servers answer at once or not at all.
pub const DISCOVERY_TIMEOUT: Duration = Duration::from_secs(3);

/// One model a server says it serves.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ServedModel {
    /// Model id to send.
    pub id: String,
    /// Context window, when the listing reports one.
    pub context_window: Option<u64>,
}

/// Why a server could not be asked.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DiscoveryError {
    /// No connection, a time-out, or an unreadable answer.
    #[error("{url}: {message}")]
    Unreachable {
        /// The URL asked.
        url: String,
        /// What went wrong.
        message: String,
    },
    /// The server answered with an error status.
    #[error("{url}: status {status}")]
    Status {
        /// The URL asked.
        url: String,
        /// HTTP status.
        status: u16,
    },
}

/// The server root: `base_url` without a trailing `/v1` (where `/props` and `/api/*` live).
pub fn server_root(base_url: &str) -> &str {
    let trimmed = base_url.trim_end_matches('/');
    trimmed.strip_suffix("/v1").unwrap_or(trimmed)
}

/// Models in an OpenAI-style list, with vLLM's `max_model_len` or LM Studio's lengths when
/// present. Entries without an id are skipped.
pub fn parse_model_list(body: &Value) -> Vec<ServedModel> {
    let Some(entries) = body.get("data").and_then(Value::as_array) else {
        return Vec::new();
    };
    entries
        .iter()
        .filter_map(|entry| {
            let id = entry.get("id")?.as_str()?.to_owned();
            let window = [
                "max_model_len",
                "loaded_context_length",
                "max_context_length",
            ]
            .iter()
            .find_map(|field| entry.get(*field).and_then(Value::as_u64))
            .filter(|n| *n > 0);
            Some(ServedModel {
                id,
                context_window: window,
            })
        })
        .collect()
}

/// llama.cpp's per-slot window from `GET /props`.
pub fn parse_llama_cpp_props(body: &Value) -> Option<u64> {
    body.pointer("/default_generation_settings/n_ctx")
        .and_then(Value::as_u64)
        .filter(|n| *n > 0)
}

/// Ollama's window from `POST /api/show`: `num_ctx` when the model sets one, else the
/// model's trained `*.context_length`.
pub fn parse_ollama_show(body: &Value) -> Option<u64> {
    let num_ctx = body
        .get("parameters")
        .and_then(Value::as_str)
        .and_then(|text| {
            text.lines().find_map(|line| {
                let mut words = line.split_whitespace();
                (words.next() == Some("num_ctx"))
                    .then(|| words.next()?.parse::<u64>().ok())
                    .flatten()
            })
        });
    let trained = body
        .get("model_info")
        .and_then(Value::as_object)
        .and_then(|info| {
            info.iter()
                .find(|(key, _)| key.ends_with(".context_length"))
                .and_then(|(_, v)| v.as_u64())
        });
    num_ctx.or(trained).filter(|n| *n > 0)
}

/// Asks servers of a row what they serve.
#[derive(Debug, Clone)]
pub struct Discovery {
    client: reqwest::Client,
    kind: ServerKind,
    auth: Option<(&'static str, String)>,
    base_url: String,
}

impl Discovery {
    /// A client for `row`'s server at `base_url` (the row's own unless overridden), sending
    /// `key` the way the row sends it. `None` when the row serves no models of its own.
    pub fn new(row: &ProviderRow, base_url: &str, key: Option<&ApiKey>) -> Option<Self> {
        let server = row.server?;
        let client = reqwest::Client::builder()
            .timeout(DISCOVERY_TIMEOUT)
            .build()
            .ok()?;
        Some(Self {
            client,
            kind: server.kind,
            auth: key.and_then(|k| auth_header(row.auth, k)),
            base_url: base_url.to_owned(),
        })
    }

    async fn get_json(&self, url: String, post: Option<Value>) -> Result<Value, DiscoveryError> {
        let mut request = match &post {
            Some(body) => self.client.post(&url).json(body),
            None => self.client.get(&url),
        };
        if let Some((name, value)) = &self.auth {
            request = request.header(*name, value);
        }
        let unreachable = |e: reqwest::Error| DiscoveryError::Unreachable {
            url: url.clone(),
            message: if e.is_timeout() {
                "no answer in time".to_owned()
            } else if e.is_connect() {
                "no server is listening".to_owned()
            } else {
                "the answer could not be read".to_owned()
            },
        };
        let response = request.send().await.map_err(unreachable)?;
        let status = response.status();
        if !status.is_success() {
            return Err(DiscoveryError::Status {
                url,
                status: status.as_u16(),
            });
        }
        response.json::<Value>().await.map_err(unreachable)
    }

    /// The models the server lists.
    pub async fn list(&self) -> Result<Vec<ServedModel>, DiscoveryError> {
        let url = match self.kind {
            ServerKind::LmStudio => join_url(server_root(&self.base_url), "/api/v0/models"),
            _ => join_url(&self.base_url, "/models"),
        };
        let body = self.get_json(url, None).await?;
        Ok(parse_model_list(&body))
    }

    /// The context window the server reports for `model`, `None` when it reports none.
    pub async fn context_window(&self, model: &str) -> Result<Option<u64>, DiscoveryError> {
        match self.kind {
            ServerKind::LlamaCpp => {
                let url = join_url(server_root(&self.base_url), "/props");
                Ok(parse_llama_cpp_props(&self.get_json(url, None).await?))
            }
            ServerKind::Ollama => {
                let url = join_url(server_root(&self.base_url), "/api/show");
                let body = serde_json::json!({ "model": model });
                Ok(parse_ollama_show(&self.get_json(url, Some(body)).await?))
            }
            ServerKind::Vllm | ServerKind::LmStudio | ServerKind::OpenaiCompatible => Ok(self
                .list()
                .await?
                .into_iter()
                .find(|m| m.id == model)
                .and_then(|m| m.context_window)),
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn lists_read_each_servers_window_field() {
        // vLLM
        let vllm = json!({"object": "list", "data": [
            {"id": "Qwen/Qwen3-8B", "object": "model", "max_model_len": 40960}]});
        assert_eq!(
            parse_model_list(&vllm),
            vec![ServedModel {
                id: "Qwen/Qwen3-8B".into(),
                context_window: Some(40960)
            }]
        );
        // LM Studio's own API: the loaded length wins over the maximum.
        let lm = json!({"data": [
            {"id": "a", "state": "loaded", "loaded_context_length": 8192, "max_context_length": 32768},
            {"id": "b", "state": "not-loaded", "max_context_length": 32768}]});
        let windows: Vec<_> = parse_model_list(&lm)
            .into_iter()
            .map(|m| m.context_window)
            .collect();
        assert_eq!(windows, [Some(8192), Some(32768)]);
        // Ollama and llama.cpp list ids only (llama.cpp's n_ctx_train is not the window).
        let plain = json!({"data": [{"id": "qwen3:8b", "owned_by": "library"},
            {"id": "m.gguf", "meta": {"n_ctx_train": 131072}}, {"object": "model"}]});
        let listed = parse_model_list(&plain);
        assert_eq!(listed.len(), 2);
        assert!(listed.iter().all(|m| m.context_window.is_none()));
        assert!(parse_model_list(&json!({"error": "x"})).is_empty());
    }

    #[test]
    fn llama_cpp_and_ollama_report_windows_elsewhere() {
        let props = json!({"default_generation_settings": {"n_ctx": 8192, "params": {}},
            "total_slots": 4});
        assert_eq!(parse_llama_cpp_props(&props), Some(8192));
        assert_eq!(parse_llama_cpp_props(&json!({})), None);
        let show = json!({"parameters": "temperature 0.6\nnum_ctx 16384\nstop \"<|im_end|>\"",
            "model_info": {"general.architecture": "qwen3", "qwen3.context_length": 40960}});
        assert_eq!(parse_ollama_show(&show), Some(16384));
        let trained = json!({"model_info": {"llama.context_length": 131072}});
        assert_eq!(parse_ollama_show(&trained), Some(131072));
        assert_eq!(parse_ollama_show(&json!({"parameters": "num_ctx x"})), None);
    }

    #[test]
    fn the_root_drops_v1() {
        assert_eq!(
            server_root("http://127.0.0.1:8080/v1"),
            "http://127.0.0.1:8080"
        );
        assert_eq!(
            server_root("http://127.0.0.1:8080/v1/"),
            "http://127.0.0.1:8080"
        );
        assert_eq!(server_root("http://h/api"), "http://h/api");
    }
}
