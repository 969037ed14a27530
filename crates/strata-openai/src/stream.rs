//! Sans-IO parser of the Chat Completions chunk stream.
//!
//! `data: {chat.completion.chunk}` frames, then `data: [DONE]`. Text, reasoning
//! (`reasoning_content` or `reasoning`) and tool-call fragments keyed by `index` arrive in
//! `choices[0].delta`; `finish_reason` comes on a late chunk and usage on a last chunk with
//! empty `choices` (`stream_options.include_usage`).

use std::borrow::Cow;

use serde::Deserialize;
use strata_provider::transport::{
    Frame, FrameOutcome, MessageBuilder, ParseError, StreamParser, classify_stream_error,
};
use strata_provider::{Event, Message, StopReason, Usage, UsageDialect};

/// Builder keys: text and reasoning get fixed keys, tool call `i` gets `TOOL_KEY + i`.
const REASONING_KEY: u64 = 0;
const TEXT_KEY: u64 = 1;
const TOOL_KEY: u64 = 1 << 32;

/// Parses one Chat Completions stream into [`Event`]s and the assembled message.
#[derive(Debug)]
pub struct ChatParser {
    dialect: UsageDialect,
    builder: MessageBuilder,
    usage: Usage,
    stop_reason: Option<StopReason>,
    started: bool,
}

impl ChatParser {
    /// A parser reading usage in `dialect`.
    pub fn new(dialect: UsageDialect) -> Self {
        Self {
            dialect,
            builder: MessageBuilder::new(),
            usage: Usage::default(),
            stop_reason: None,
            started: false,
        }
    }
}

#[derive(Deserialize)]
struct Chunk<'a> {
    #[serde(borrow, default)]
    id: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    model: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    choices: Vec<Choice<'a>>,
    #[serde(default)]
    usage: Option<WireUsage>,
    #[serde(default)]
    error: Option<serde_json::Value>,
}

#[derive(Deserialize)]
struct Choice<'a> {
    #[serde(borrow, default)]
    delta: Option<Delta<'a>>,
    #[serde(borrow, default)]
    finish_reason: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct Delta<'a> {
    #[serde(borrow, default)]
    content: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    reasoning_content: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    reasoning: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    tool_calls: Vec<ToolCallDelta<'a>>,
}

#[derive(Deserialize)]
struct ToolCallDelta<'a> {
    #[serde(default)]
    index: u64,
    #[serde(borrow, default)]
    id: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    function: Option<FunctionDelta<'a>>,
}

#[derive(Deserialize)]
struct FunctionDelta<'a> {
    #[serde(borrow, default)]
    name: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    arguments: Option<Cow<'a, str>>,
}

/// The usage object of Chat Completions and its compatible dialects.
#[derive(Debug, Default, Deserialize)]
pub struct WireUsage {
    /// Whole prompt, cached tokens included.
    #[serde(default)]
    pub prompt_tokens: u64,
    /// Output, reasoning included.
    #[serde(default)]
    pub completion_tokens: u64,
    /// Cache details.
    #[serde(default)]
    pub prompt_tokens_details: Option<PromptDetails>,
    /// DeepSeek: prompt tokens read from the cache.
    #[serde(default)]
    pub prompt_cache_hit_tokens: Option<u64>,
    /// DeepSeek: prompt tokens not in the cache.
    #[serde(default)]
    pub prompt_cache_miss_tokens: Option<u64>,
    /// Moonshot v1: cached tokens at the top level.
    #[serde(default)]
    pub cached_tokens: Option<u64>,
}

/// `prompt_tokens_details`.
#[derive(Debug, Default, Deserialize)]
pub struct PromptDetails {
    /// Tokens read from the cache.
    #[serde(default)]
    pub cached_tokens: Option<u64>,
    /// Tokens written to the cache (GPT-5.6+, OpenRouter).
    #[serde(default)]
    pub cache_write_tokens: Option<u64>,
}

/// Normalizes a usage object: `input` becomes the uncached part of the prompt.
///
/// `completion_tokens` already includes reasoning tokens, so they are not added again.
pub fn normalize_usage(wire: &WireUsage, dialect: UsageDialect) -> Usage {
    let details = wire.prompt_tokens_details.as_ref();
    let detail_read = details.and_then(|d| d.cached_tokens).unwrap_or(0);
    let write = details.and_then(|d| d.cache_write_tokens).unwrap_or(0);
    let read = match dialect {
        UsageDialect::DeepseekHitMiss => wire.prompt_cache_hit_tokens.unwrap_or(detail_read),
        UsageDialect::TopLevelCachedTokens => wire.cached_tokens.unwrap_or(detail_read),
        UsageDialect::Standard => detail_read,
    };
    let input = match (dialect, wire.prompt_cache_miss_tokens) {
        (UsageDialect::DeepseekHitMiss, Some(miss)) => miss,
        _ => wire
            .prompt_tokens
            .saturating_sub(read)
            .saturating_sub(write),
    };
    Usage {
        input,
        output: wire.completion_tokens,
        cache_read: read,
        cache_write_5m: write,
        cache_write_1h: 0,
        cache_storage: 0,
        cache_create: 0,
    }
}

/// Maps a `finish_reason`.
pub fn stop_reason(reason: &str) -> StopReason {
    match reason {
        "length" => StopReason::MaxTokens,
        "tool_calls" | "function_call" => StopReason::ToolUse,
        "content_filter" => StopReason::Refusal,
        "model_context_window_exceeded" => StopReason::ContextWindowExceeded,
        _ => StopReason::EndTurn,
    }
}

impl ChatParser {
    fn on_chunk(&mut self, chunk: Chunk<'_>, out: &mut Vec<Event>) -> Result<(), ParseError> {
        if let Some(error) = chunk.error {
            let text = |k: &str| error.get(k).map(|v| v.to_string()).unwrap_or_default();
            let kind = format!("{} {}", text("type"), text("code"));
            return Err(ParseError::Provider(classify_stream_error(
                &kind,
                &text("message"),
                &error.to_string(),
            )));
        }
        if !self.started {
            self.started = true;
            out.push(Event::Start {
                model: chunk.model.map(Cow::into_owned).unwrap_or_default(),
                response_id: chunk.id.map(Cow::into_owned),
            });
        }
        for choice in chunk.choices {
            if let Some(delta) = choice.delta {
                let reasoning = delta.reasoning_content.or(delta.reasoning);
                if let Some(r) = reasoning.as_deref().filter(|r| !r.is_empty()) {
                    self.builder.thinking(REASONING_KEY, r, out);
                }
                if let Some(t) = delta.content.as_deref().filter(|t| !t.is_empty()) {
                    self.builder.text(TEXT_KEY, t, out);
                }
                for call in delta.tool_calls {
                    let key = TOOL_KEY + call.index;
                    let (name, args) = match call.function {
                        Some(f) => (f.name, f.arguments),
                        None => (None, None),
                    };
                    if self.builder.has_tool_call(key) {
                        self.builder
                            .tool_call_identity(key, call.id.as_deref(), None);
                    } else {
                        let id = call
                            .id
                            .map(Cow::into_owned)
                            .unwrap_or_else(|| format!("call_{}", call.index));
                        self.builder
                            .tool_call_start(key, &id, name.as_deref().unwrap_or(""), out);
                    }
                    if let Some(a) = args.as_deref() {
                        self.builder.tool_call_delta(key, a, out);
                    }
                }
            }
            if let Some(reason) = choice.finish_reason {
                self.stop_reason = Some(stop_reason(&reason));
            }
        }
        if let Some(u) = chunk.usage {
            self.usage = normalize_usage(&u, self.dialect);
            out.push(Event::Usage(self.usage));
        }
        Ok(())
    }
}

impl StreamParser for ChatParser {
    fn on_frame(
        &mut self,
        frame: Frame<'_>,
        out: &mut Vec<Event>,
    ) -> Result<FrameOutcome, ParseError> {
        let data = frame.data.trim();
        if data == "[DONE]" {
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
            return Ok(FrameOutcome::Terminal);
        }
        match frame.event {
            None | Some("message") => {}
            // Some servers name an error frame; anything else named is not ours.
            Some("error") => {
                return Err(ParseError::Provider(classify_stream_error(
                    "error", data, data,
                )));
            }
            Some(_) => return Ok(FrameOutcome::Unknown),
        }
        if data.is_empty() {
            return Ok(FrameOutcome::Unknown);
        }
        let chunk: Chunk<'_> = serde_json::from_str(data)?;
        self.on_chunk(chunk, out)?;
        Ok(FrameOutcome::Known)
    }

    fn partial_message(&self) -> Message {
        self.builder.message()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn wire(json: &str) -> WireUsage {
        serde_json::from_str(json).unwrap()
    }

    #[test]
    fn cache_writes_and_reads_partition_the_prompt() {
        // GPT-5.6+ and OpenRouter report writes next to reads; both are inside prompt_tokens.
        let usage = normalize_usage(
            &wire(
                r#"{"prompt_tokens":10000,"completion_tokens":300,"prompt_tokens_details":{"cached_tokens":6000,"cache_write_tokens":3000}}"#,
            ),
            UsageDialect::Standard,
        );
        assert_eq!(
            usage,
            Usage {
                input: 1000,
                output: 300,
                cache_read: 6000,
                cache_write_5m: 3000,
                cache_write_1h: 0,
                cache_storage: 0,
                cache_create: 0,
            }
        );
        assert_eq!(usage.prompt_tokens(), 10_000);
    }

    #[test]
    fn each_dialect_reads_its_own_cache_field() {
        let deepseek = normalize_usage(
            &wire(
                r#"{"prompt_tokens":5000,"completion_tokens":10,"prompt_cache_hit_tokens":4800,"prompt_cache_miss_tokens":200}"#,
            ),
            UsageDialect::DeepseekHitMiss,
        );
        assert_eq!((deepseek.input, deepseek.cache_read), (200, 4800));
        let moonshot = normalize_usage(
            &wire(r#"{"prompt_tokens":5000,"completion_tokens":10,"cached_tokens":4096}"#),
            UsageDialect::TopLevelCachedTokens,
        );
        assert_eq!((moonshot.input, moonshot.cache_read), (904, 4096));
        // A server that sends nothing about the cache: everything is uncached input.
        let plain = normalize_usage(
            &wire(r#"{"prompt_tokens":5000,"completion_tokens":10}"#),
            UsageDialect::Standard,
        );
        assert_eq!(
            (plain.input, plain.cache_read, plain.cache_write()),
            (5000, 0, 0)
        );
    }

    #[test]
    fn finish_reasons_map_to_stop_reasons() {
        assert_eq!(stop_reason("stop"), StopReason::EndTurn);
        assert_eq!(stop_reason("length"), StopReason::MaxTokens);
        assert_eq!(stop_reason("tool_calls"), StopReason::ToolUse);
        assert_eq!(stop_reason("content_filter"), StopReason::Refusal);
    }
}
