//! Time to first token on the mock's latency model: what a request costs before its first
//! output event, from what the mock knows of it (how it came, how many bytes, how much of its
//! prompt the cache served). The mock answers at once; this figure is what benches compare
//! transports and cache plays on, as the cache accounting is what they compare bills on.
//!
//! The parts follow OpenAI's account of the Responses WebSocket mode (the guide at
//! developers.openai.com/api/docs/guides/websocket-mode: a turn on an open socket "skips the
//! connection setup and re-sends only the new input", the previous response's state is held
//! in memory): an HTTP request pays a per-request setup, every request pays for the bytes it
//! uploads and the server's reading of them, and the prompt's prefill is paid per uncached
//! token and far less per cached one. The rates are round assumptions, not measurements; a
//! comparison on them says which way and roughly how far, never a provider's figure.

/// The rates of the model.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LatencyModel {
    /// Per HTTP request: connection reuse or setup, routing, authentication, loading the
    /// conversation (none for a message on an open socket).
    pub request_setup_ms: f64,
    /// Upload bandwidth, bytes per millisecond.
    pub upload_bytes_per_ms: f64,
    /// The server reading (parsing, tokenizing) what it received, bytes per millisecond.
    pub read_bytes_per_ms: f64,
    /// Prefill of uncached prompt tokens, tokens per millisecond.
    pub prefill_tokens_per_ms: f64,
    /// Loading cached prompt tokens, tokens per millisecond.
    pub cached_tokens_per_ms: f64,
}

impl Default for LatencyModel {
    fn default() -> Self {
        Self {
            request_setup_ms: 60.0,
            // 20 Mbit/s up.
            upload_bytes_per_ms: 2_500.0,
            read_bytes_per_ms: 20_000.0,
            prefill_tokens_per_ms: 10.0,
            cached_tokens_per_ms: 500.0,
        }
    }
}

/// What one request brought to the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RequestShape {
    /// Sent on an open socket (no per-request setup).
    pub on_socket: bool,
    /// Bytes uploaded.
    pub upload_bytes: u64,
    /// Prompt tokens the cache did not serve.
    pub uncached_tokens: u64,
    /// Prompt tokens read from the cache.
    pub cached_tokens: u64,
}

impl LatencyModel {
    /// Milliseconds from sending `request` to its first output event.
    pub fn time_to_first_token_ms(&self, request: RequestShape) -> f64 {
        let setup = if request.on_socket {
            0.0
        } else {
            self.request_setup_ms
        };
        let bytes = request.upload_bytes as f64;
        setup
            + bytes / self.upload_bytes_per_ms
            + bytes / self.read_bytes_per_ms
            + request.uncached_tokens as f64 / self.prefill_tokens_per_ms
            + request.cached_tokens as f64 / self.cached_tokens_per_ms
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_socket_turn_with_fewer_bytes_comes_sooner_than_the_same_prompt_over_http() {
        let model = LatencyModel::default();
        let http = RequestShape {
            on_socket: false,
            upload_bytes: 400_000,
            uncached_tokens: 500,
            cached_tokens: 100_000,
        };
        let socket = RequestShape {
            on_socket: true,
            upload_bytes: 2_000,
            ..http
        };
        let (h, s) = (
            model.time_to_first_token_ms(http),
            model.time_to_first_token_ms(socket),
        );
        // 60 + 160 + 20 + 50 + 200 against 0 + 0.8 + 0.1 + 50 + 200.
        assert!((h - 490.0).abs() < 1e-9, "{h}");
        assert!((s - 250.9).abs() < 1e-9, "{s}");
    }
}
