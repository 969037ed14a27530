//! Sans-IO parser of the Messages SSE stream.
//!
//! `message_start` → per block `content_block_start` / `content_block_delta`… /
//! `content_block_stop` → `message_delta` (stop reason, cumulative usage) → `message_stop`.
//! `ping` may come anywhere; `error` ends the stream with the provider's error.

use std::borrow::Cow;

use serde::Deserialize;
use strata_provider::transport::{
    Frame, FrameOutcome, MessageBuilder, ParseError, StreamParser, classify_stream_error,
};
use strata_provider::{CacheDiagnosis, Event, Message, Protocol, StopReason, Usage};

/// Parses one Messages stream into [`Event`]s and the assembled message.
#[derive(Debug, Default)]
pub struct AnthropicParser {
    builder: MessageBuilder,
    usage: Usage,
    stop_reason: Option<StopReason>,
    started: bool,
}

impl AnthropicParser {
    /// A parser at the start of a stream.
    pub fn new() -> Self {
        Self::default()
    }

    /// Usage so far.
    pub fn usage(&self) -> Usage {
        self.usage
    }

    /// Keeps the block `content_block_start` opens in `data` whole, as the provider sent it.
    fn keep_whole(&mut self, key: u64, data: &str) -> Result<(), ParseError> {
        let mut start: serde_json::Value = serde_json::from_str(data)?;
        let block = start["content_block"].take();
        self.builder
            .item_start(key, Protocol::AnthropicMessages.as_str(), block);
        Ok(())
    }
}

/// Anthropic's usage object (in `message_start.message` and `message_delta`).
#[derive(Debug, Default, Deserialize)]
pub struct WireUsage {
    /// Uncached input (after the last breakpoint).
    pub input_tokens: Option<u64>,
    /// Output tokens (cumulative in `message_delta`).
    pub output_tokens: Option<u64>,
    /// Tokens read from the cache.
    pub cache_read_input_tokens: Option<u64>,
    /// Tokens written to the cache (all TTLs).
    pub cache_creation_input_tokens: Option<u64>,
    /// Writes split by TTL.
    pub cache_creation: Option<CacheCreation>,
}

/// The 5m / 1h split of cache writes.
#[derive(Debug, Default, Deserialize)]
pub struct CacheCreation {
    /// Written with a 5-minute TTL.
    #[serde(default)]
    pub ephemeral_5m_input_tokens: u64,
    /// Written with a 1-hour TTL.
    #[serde(default)]
    pub ephemeral_1h_input_tokens: u64,
}

/// Folds an Anthropic usage object into `usage`; absent fields keep their value.
///
/// Input excludes cached tokens here (the three input counts add up to the prompt). Without
/// the TTL split every write counts as 5-minute.
pub fn normalize_usage(usage: &mut Usage, wire: &WireUsage) {
    if let Some(v) = wire.input_tokens {
        usage.input = v;
    }
    if let Some(v) = wire.output_tokens {
        usage.output = v;
    }
    if let Some(v) = wire.cache_read_input_tokens {
        usage.cache_read = v;
    }
    match (&wire.cache_creation, wire.cache_creation_input_tokens) {
        (Some(split), total) => {
            usage.cache_write_5m = split.ephemeral_5m_input_tokens;
            usage.cache_write_1h = split.ephemeral_1h_input_tokens;
            // Some endpoints fill the total but leave the split at zero.
            if let Some(total) = total
                && usage.cache_write() < total
            {
                usage.cache_write_5m = total - usage.cache_write_1h;
            }
        }
        // `message_delta` repeats the total without the split: keep the split it matches.
        (None, Some(total)) if total == usage.cache_write() => {}
        (None, Some(total)) => {
            usage.cache_write_1h = usage.cache_write_1h.min(total);
            usage.cache_write_5m = total - usage.cache_write_1h;
        }
        (None, None) => {}
    }
}

#[derive(Deserialize)]
struct MessageStart<'a> {
    #[serde(borrow)]
    message: StartMessage<'a>,
}

#[derive(Deserialize)]
struct StartMessage<'a> {
    #[serde(borrow, default)]
    id: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    model: Option<Cow<'a, str>>,
    #[serde(default)]
    usage: WireUsage,
    #[serde(default)]
    diagnostics: Option<WireDiagnostics>,
}

/// `message.diagnostics` (anthropic-python 2.17.0 `BetaDiagnostics`): `cache_miss_reason` is
/// null while the comparison is pending, and the whole object null when nothing diverged.
#[derive(Deserialize)]
struct WireDiagnostics {
    #[serde(default)]
    cache_miss_reason: Option<WireMissReason>,
}

#[derive(Deserialize)]
struct WireMissReason {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    cache_missed_input_tokens: Option<u64>,
}

#[derive(Deserialize)]
struct BlockStart<'a> {
    index: u64,
    #[serde(borrow)]
    content_block: BlockHead<'a>,
}

#[derive(Deserialize)]
struct BlockHead<'a> {
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
    #[serde(borrow, default)]
    id: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    name: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    text: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    thinking: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    signature: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    data: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct BlockDelta<'a> {
    index: u64,
    #[serde(borrow)]
    delta: Delta<'a>,
}

#[derive(Deserialize)]
struct Delta<'a> {
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
    #[serde(borrow, default)]
    text: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    thinking: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    signature: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    partial_json: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct BlockStop {
    index: u64,
}

#[derive(Deserialize)]
struct MessageDelta<'a> {
    #[serde(borrow, default)]
    delta: Option<MessageDeltaBody<'a>>,
    #[serde(default)]
    usage: Option<WireUsage>,
}

#[derive(Deserialize)]
struct MessageDeltaBody<'a> {
    #[serde(borrow, default)]
    stop_reason: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct ErrorEvent<'a> {
    #[serde(borrow)]
    error: ErrorBody<'a>,
}

#[derive(Deserialize)]
struct ErrorBody<'a> {
    #[serde(rename = "type", borrow, default)]
    kind: Cow<'a, str>,
    #[serde(borrow, default)]
    message: Cow<'a, str>,
}

#[derive(Deserialize)]
struct TypeOnly<'a> {
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
}

/// Maps Anthropic's `stop_reason`.
pub fn stop_reason(reason: &str) -> Option<StopReason> {
    Some(match reason {
        "end_turn" => StopReason::EndTurn,
        "max_tokens" => StopReason::MaxTokens,
        "stop_sequence" => StopReason::StopSequence,
        "tool_use" => StopReason::ToolUse,
        "pause_turn" => StopReason::PauseTurn,
        "refusal" => StopReason::Refusal,
        "model_context_window_exceeded" => StopReason::ContextWindowExceeded,
        _ => return None,
    })
}

impl AnthropicParser {
    fn dispatch(
        &mut self,
        kind: &str,
        data: &str,
        out: &mut Vec<Event>,
    ) -> Result<FrameOutcome, ParseError> {
        match kind {
            "content_block_delta" => {
                let d: BlockDelta<'_> = serde_json::from_str(data)?;
                let key = d.index;
                match d.delta.kind.as_ref() {
                    "text_delta" => {
                        self.builder
                            .text(key, d.delta.text.as_deref().unwrap_or(""), out);
                    }
                    "thinking_delta" => {
                        self.builder
                            .thinking(key, d.delta.thinking.as_deref().unwrap_or(""), out);
                    }
                    "signature_delta" => {
                        if let Some(sig) = d.delta.signature.as_deref() {
                            self.builder.thinking_signature(key, sig, out);
                        }
                    }
                    "input_json_delta" if self.builder.has_item(key) => {
                        self.builder
                            .item_input_delta(key, d.delta.partial_json.as_deref().unwrap_or(""));
                    }
                    "input_json_delta" => {
                        self.builder.tool_call_delta(
                            key,
                            d.delta.partial_json.as_deref().unwrap_or(""),
                            out,
                        );
                    }
                    // Citations and server-tool deltas carry nothing strata replays.
                    "citations_delta" => {}
                    _ => return Ok(FrameOutcome::Unknown),
                }
                Ok(FrameOutcome::Known)
            }
            "ping" => Ok(FrameOutcome::Known),
            "message_start" => {
                let m: MessageStart<'_> = serde_json::from_str(data)?;
                normalize_usage(&mut self.usage, &m.message.usage);
                if !self.started {
                    self.started = true;
                    out.push(Event::Start {
                        model: m.message.model.map(Cow::into_owned).unwrap_or_default(),
                        response_id: m.message.id.map(Cow::into_owned),
                    });
                }
                out.push(Event::Usage(self.usage));
                if let Some(reason) = m.message.diagnostics.and_then(|d| d.cache_miss_reason) {
                    out.push(Event::CacheDiagnosis(CacheDiagnosis {
                        reason: reason.kind,
                        missed_tokens: reason.cache_missed_input_tokens,
                    }));
                }
                Ok(FrameOutcome::Known)
            }
            "content_block_start" => {
                let s: BlockStart<'_> = serde_json::from_str(data)?;
                let b = s.content_block;
                let key = s.index;
                match b.kind.as_ref() {
                    "text" => {
                        self.builder.open_text(key);
                        if let Some(t) = b.text.as_deref() {
                            self.builder.text(key, t, out);
                        }
                    }
                    "thinking" => {
                        self.builder.open_thinking(key);
                        if let Some(t) = b.thinking.as_deref() {
                            self.builder.thinking(key, t, out);
                        }
                        if let Some(sig) = b.signature.as_deref().filter(|s| !s.is_empty()) {
                            self.builder.thinking_signature(key, sig, out);
                        }
                    }
                    "redacted_thinking" => {
                        self.builder
                            .redacted_thinking(key, b.data.as_deref().unwrap_or(""), out);
                    }
                    "tool_use" => {
                        let (Some(id), Some(name)) = (b.id.as_deref(), b.name.as_deref()) else {
                            return Err(ParseError::Corrupt(
                                "tool_use block without id or name".into(),
                            ));
                        };
                        self.builder.tool_call_start(key, id, name, out);
                    }
                    // The provider's tool search: its use and its result are kept whole and
                    // replayed as they came, so the definitions it loaded stay where they are
                    // (anthropic-sdk-python 2.15.0 `ServerToolUseBlock`,
                    // `ToolSearchToolResultBlock`).
                    "server_tool_use"
                        if b.name
                            .as_deref()
                            .is_some_and(|n| n.starts_with("tool_search_tool_")) =>
                    {
                        self.keep_whole(key, data)?;
                    }
                    "tool_search_tool_result" => self.keep_whole(key, data)?,
                    // Other server tools run at the provider; their blocks are not replayed.
                    _ => return Ok(FrameOutcome::Unknown),
                }
                Ok(FrameOutcome::Known)
            }
            "content_block_stop" => {
                let s: BlockStop = serde_json::from_str(data)?;
                if self.builder.has_tool_call(s.index) {
                    self.builder.tool_call_end(s.index, out)?;
                } else if self.builder.has_item(s.index) {
                    self.builder.item_end(s.index)?;
                }
                Ok(FrameOutcome::Known)
            }
            "message_delta" => {
                let d: MessageDelta<'_> = serde_json::from_str(data)?;
                if let Some(reason) = d.delta.and_then(|b| b.stop_reason) {
                    self.stop_reason = stop_reason(&reason);
                    if self.stop_reason.is_none() {
                        tracing::debug!(%reason, "unknown Anthropic stop reason");
                    }
                }
                if let Some(u) = d.usage {
                    normalize_usage(&mut self.usage, &u);
                    out.push(Event::Usage(self.usage));
                }
                Ok(FrameOutcome::Known)
            }
            "message_stop" => {
                self.builder.end_all_tool_calls(out)?;
                let stop_reason = self
                    .stop_reason
                    .unwrap_or(if self.builder.has_tool_calls() {
                        StopReason::ToolUse
                    } else {
                        StopReason::EndTurn
                    });
                out.push(Event::Done {
                    stop_reason,
                    message: self.builder.message(),
                    usage: self.usage,
                });
                Ok(FrameOutcome::Terminal)
            }
            "error" => {
                let e: ErrorEvent<'_> = serde_json::from_str(data)?;
                Err(ParseError::Provider(classify_stream_error(
                    &e.error.kind,
                    &e.error.message,
                    data,
                )))
            }
            _ => Ok(FrameOutcome::Unknown),
        }
    }
}

impl StreamParser for AnthropicParser {
    fn on_frame(
        &mut self,
        frame: Frame<'_>,
        out: &mut Vec<Event>,
    ) -> Result<FrameOutcome, ParseError> {
        match frame.event {
            Some(kind) => self.dispatch(kind, frame.data, out),
            // Some proxies drop `event:` lines; the JSON `type` names the event too.
            None => {
                let t: TypeOnly<'_> = serde_json::from_str(frame.data)?;
                let kind = t.kind.into_owned();
                self.dispatch(&kind, frame.data, out)
            }
        }
    }

    fn partial_message(&self) -> Message {
        self.builder.message()
    }
}
