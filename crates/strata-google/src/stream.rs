//! Sans-IO parser for `streamGenerateContent?alt=sse`: one `GenerateContentResponse` per frame.
//!
//! Gemini has no terminal event: the turn ends when the body ends after a chunk carrying
//! `finishReason` (usage may still follow in that last chunk). The parser implements
//! [`StreamParser`] and emits `Done` from [`StreamParser::on_end`]; a body that ends before
//! any finish reason is [`ProviderError::Truncated`] (the shared driver's policy).
//!
//! `thoughtSignature` is opaque state that must go back on the part it came with:
//! - on a thought part, it is the signature of that thinking block;
//! - on any other part (function call or text), it becomes a thinking block with empty text
//!   placed right before that part's block, which [`crate::request`] folds back onto the
//!   following part when replaying.

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::Value;
use serde_json::value::RawValue;
use strata_provider::transport::{self, Frame, FrameOutcome, ParseError, StreamParser};
use strata_provider::{Event, Message, MessageAssembler, ProviderError, StopReason, Usage};

use crate::usage::UsageMetadata;

/// One `GenerateContentResponse`, read without building a JSON tree (most chunks carry one
/// text part): only the fields the parser uses.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct WireChunk<'a> {
    #[serde(borrow, default)]
    error: Option<&'a RawValue>,
    #[serde(borrow, default)]
    candidates: Option<Vec<WireCandidate<'a>>>,
    #[serde(default)]
    usage_metadata: Option<UsageMetadata>,
    #[serde(borrow, default)]
    model_version: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    response_id: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    prompt_feedback: Option<WireFeedback<'a>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct WireCandidate<'a> {
    #[serde(borrow, default)]
    content: Option<WireContent<'a>>,
    #[serde(borrow, default)]
    finish_reason: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct WireContent<'a> {
    #[serde(borrow, default)]
    parts: Option<Vec<&'a RawValue>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct WirePart<'a> {
    #[serde(borrow, default)]
    text: Option<Cow<'a, str>>,
    #[serde(default)]
    thought: Option<bool>,
    #[serde(borrow, default, alias = "thought_signature")]
    thought_signature: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    function_call: Option<WireCall<'a>>,
}

#[derive(Deserialize)]
struct WireCall<'a> {
    #[serde(borrow, default)]
    name: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    id: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    args: Option<&'a RawValue>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct WireFeedback<'a> {
    #[serde(borrow, default)]
    block_reason: Option<Cow<'a, str>>,
}

/// What the most recent block is, so consecutive text pieces extend it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Open {
    None,
    Text(usize),
    Thought(usize),
}

/// State of one Gemini stream.
#[derive(Debug)]
pub struct GeminiParser {
    assembler: MessageAssembler,
    next_index: usize,
    open: Open,
    usage: Usage,
    finish: Option<StopReason>,
    started: bool,
    calls: usize,
    response_id: String,
    frames: usize,
}

impl Default for GeminiParser {
    fn default() -> Self {
        Self::new()
    }
}

impl GeminiParser {
    /// A parser at the start of a stream.
    pub fn new() -> Self {
        Self {
            assembler: MessageAssembler::new(),
            next_index: 0,
            open: Open::None,
            usage: Usage::default(),
            finish: None,
            started: false,
            calls: 0,
            response_id: String::new(),
            frames: 0,
        }
    }

    /// Whether a finish reason has been seen.
    pub fn is_finished(&self) -> bool {
        self.finish.is_some()
    }

    fn emit(&mut self, out: &mut Vec<Event>, event: Event) {
        self.assembler.push(&event);
        out.push(event);
    }

    fn new_block(&mut self) -> usize {
        let i = self.next_index;
        self.next_index += 1;
        i
    }

    fn signature_block(&mut self, out: &mut Vec<Event>, signature: &str) {
        let index = self.new_block();
        self.open = Open::None;
        self.emit(
            out,
            Event::ThinkingDelta {
                index,
                text: String::new(),
                signature: Some(signature.to_owned()),
            },
        );
    }

    /// Interprets one `GenerateContentResponse` (a stream chunk, or a whole non-streamed
    /// answer); `Done` follows from [`StreamParser::on_end`].
    pub fn chunk(&mut self, data: &str, out: &mut Vec<Event>) -> Result<FrameOutcome, ParseError> {
        let data = data.trim();
        if data.is_empty() {
            return Ok(FrameOutcome::Known);
        }
        self.frames += 1;
        if !data.starts_with('{') {
            // Valid JSON that is not a response object is not ours; invalid JSON is corrupt.
            serde_json::from_str::<&RawValue>(data)?;
            return Ok(FrameOutcome::Unknown);
        }
        let chunk: WireChunk<'_> = serde_json::from_str(data)?;
        if let Some(error) = chunk.error {
            let error: Value = serde_json::from_str(error.get())?;
            return Err(ParseError::Provider(classify_error(&error, data)));
        }
        if !self.started {
            self.started = true;
            self.response_id = chunk.response_id.as_deref().unwrap_or("").to_owned();
            let model = chunk.model_version.as_deref().unwrap_or("").to_owned();
            let response_id = (!self.response_id.is_empty()).then(|| self.response_id.clone());
            self.emit(out, Event::Start { model, response_id });
        }
        if let Some(meta) = chunk.usage_metadata {
            // Several chunks carry usage; each is cumulative, the last wins.
            self.usage = meta.usage();
            out.push(Event::Usage(self.usage));
        }
        let candidate = chunk.candidates.and_then(|c| c.into_iter().next());
        let Some(candidate) = candidate else {
            if let Some(reason) = chunk.prompt_feedback.and_then(|f| f.block_reason) {
                tracing::debug!(%reason, "Gemini blocked the prompt");
                self.finish = Some(StopReason::Refusal);
            }
            return Ok(FrameOutcome::Known);
        };
        let parts = candidate.content.and_then(|c| c.parts).unwrap_or_default();
        for part in parts {
            self.push_part(part, out)?;
        }
        if let Some(reason) = candidate.finish_reason.as_deref() {
            let stop = match reason {
                "MAX_TOKENS" => StopReason::MaxTokens,
                "SAFETY" | "RECITATION" | "BLOCKLIST" | "PROHIBITED_CONTENT" | "SPII"
                | "IMAGE_SAFETY" | "LANGUAGE" => StopReason::Refusal,
                _ if self.calls > 0 => StopReason::ToolUse,
                "STOP" => StopReason::EndTurn,
                other => {
                    tracing::debug!(reason = other, "Gemini finish reason mapped to end of turn");
                    StopReason::EndTurn
                }
            };
            self.finish = Some(stop);
        }
        Ok(FrameOutcome::Known)
    }

    fn done(&self) -> Event {
        Event::Done {
            stop_reason: self.finish.unwrap_or(StopReason::EndTurn),
            message: self.assembler.message(),
            usage: self.usage,
        }
    }

    fn push_part(&mut self, raw: &RawValue, out: &mut Vec<Event>) -> Result<(), ParseError> {
        let part: WirePart<'_> = serde_json::from_str(raw.get())?;
        let signature = part.thought_signature.as_deref();
        if let Some(call) = part.function_call {
            if let Some(sig) = signature {
                self.signature_block(out, sig);
            }
            let name = call.name.as_deref().unwrap_or("").to_owned();
            self.calls += 1;
            let id = match call.id.as_deref() {
                Some(id) if !id.is_empty() => id.to_owned(),
                _ => format!("{name}_{}_{}", self.response_id, self.calls),
            };
            let arguments = match call.args {
                Some(args) => serde_json::from_str(args.get())?,
                None => Value::Object(serde_json::Map::new()),
            };
            let index = self.new_block();
            self.open = Open::None;
            self.emit(
                out,
                Event::ToolCallStart {
                    index,
                    id: id.clone(),
                    name: name.clone(),
                },
            );
            // Gemini sends arguments whole; one delta keeps the grammar uniform for UIs.
            self.emit(
                out,
                Event::ToolCallDelta {
                    index,
                    arguments: arguments.to_string(),
                },
            );
            self.emit(
                out,
                Event::ToolCallEnd {
                    index,
                    id,
                    name,
                    arguments,
                },
            );
            return Ok(());
        }
        let Some(text) = part.text.as_deref() else {
            let empty = raw.get().split_whitespace().collect::<String>() == "{}";
            if signature.is_some() || !empty {
                tracing::debug!(part = raw.get(), "ignoring Gemini part of unknown kind");
            }
            if let Some(sig) = signature {
                self.signature_block(out, sig);
            }
            return Ok(());
        };
        if part.thought == Some(true) {
            let index = match self.open {
                Open::Thought(i) => i,
                _ => {
                    let i = self.new_block();
                    self.open = Open::Thought(i);
                    i
                }
            };
            if !text.is_empty() || signature.is_some() {
                self.emit(
                    out,
                    Event::ThinkingDelta {
                        index,
                        text: text.to_owned(),
                        signature: signature.map(str::to_owned),
                    },
                );
            }
            if signature.is_some() {
                // A signed thought part is complete; the next thought starts a new block.
                self.open = Open::None;
            }
            return Ok(());
        }
        if !text.is_empty() {
            let index = match self.open {
                Open::Text(i) => i,
                _ => {
                    let i = self.new_block();
                    self.open = Open::Text(i);
                    i
                }
            };
            self.emit(
                out,
                Event::TextDelta {
                    index,
                    text: text.to_owned(),
                },
            );
        }
        if let Some(sig) = signature {
            self.signature_block(out, sig);
        }
        Ok(())
    }
}

impl StreamParser for GeminiParser {
    fn on_frame(
        &mut self,
        frame: Frame<'_>,
        out: &mut Vec<Event>,
    ) -> Result<FrameOutcome, ParseError> {
        match frame.event {
            None | Some("message") => self.chunk(frame.data, out),
            // Gemini names no events: a named one (a proxy's keep-alive) is not ours.
            Some(_) => Ok(FrameOutcome::Unknown),
        }
    }

    fn on_end(&mut self, out: &mut Vec<Event>) -> Result<FrameOutcome, ParseError> {
        if self.finish.is_some() {
            out.push(self.done());
            Ok(FrameOutcome::Terminal)
        } else {
            tracing::debug!(
                chunks = self.frames,
                "Gemini stream ended without a finishReason"
            );
            Ok(FrameOutcome::Unknown)
        }
    }

    fn partial_message(&self) -> Message {
        self.assembler.message()
    }
}

/// Maps a Gemini error object (`{code, message, status}`) to the error the caller must act on.
pub fn classify_error(error: &Value, raw: &str) -> ProviderError {
    let code = error.get("code").and_then(Value::as_u64).unwrap_or(0);
    let status_name = error.get("status").and_then(Value::as_str).unwrap_or("");
    let message = error.get("message").and_then(Value::as_str).unwrap_or("");
    let kind = match (code, status_name) {
        (429, _) | (_, "RESOURCE_EXHAUSTED") => "rate_limit",
        (503, _) | (_, "UNAVAILABLE") => "unavailable",
        (401 | 403, _) | (_, "UNAUTHENTICATED" | "PERMISSION_DENIED") => "authentication",
        (400 | 404, _) | (_, "INVALID_ARGUMENT" | "NOT_FOUND" | "FAILED_PRECONDITION") => {
            "invalid_request"
        }
        _ => "server_error",
    };
    transport::classify_stream_error(kind, message, raw)
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use strata_provider::ContentBlock;
    use strata_provider::transport::StreamDriver;

    fn run(chunks: &[&str]) -> Vec<Event> {
        let mut driver = StreamDriver::sse(GeminiParser::new());
        let mut out = Vec::new();
        for c in chunks {
            driver.feed(format!("data: {c}\r\n\r\n").as_bytes(), &mut out);
        }
        driver.end(&mut out);
        out
    }

    #[test]
    fn signature_on_a_function_call_precedes_it() {
        let out = run(&[
            r#"{"candidates":[{"content":{"role":"model","parts":[{"text":"plan","thought":true}]}}],"responseId":"r1"}"#,
            r#"{"candidates":[{"content":{"role":"model","parts":[{"functionCall":{"name":"read","args":{"path":"a"}},"thoughtSignature":"SIG"}]},"finishReason":"STOP"}],"usageMetadata":{"promptTokenCount":10,"candidatesTokenCount":3}}"#,
        ]);
        let Some(Event::Done {
            stop_reason,
            message,
            usage,
        }) = out.last()
        else {
            panic!("no done: {out:?}")
        };
        assert_eq!(*stop_reason, StopReason::ToolUse);
        assert_eq!(usage.input, 10);
        assert_eq!(
            message.content,
            vec![
                ContentBlock::Thinking {
                    text: "plan".into(),
                    signature: None,
                    redacted: false
                },
                ContentBlock::Thinking {
                    text: String::new(),
                    signature: Some("SIG".into()),
                    redacted: false
                },
                ContentBlock::ToolCall {
                    id: "read_r1_1".into(),
                    name: "read".into(),
                    arguments: serde_json::json!({"path": "a"})
                },
            ]
        );
    }

    #[test]
    fn error_payload_is_classified() {
        let out = run(&[
            r#"{"error":{"code":429,"message":"Resource has been exhausted","status":"RESOURCE_EXHAUSTED"}}"#,
        ]);
        assert!(
            matches!(
                out.last(),
                Some(Event::Error {
                    error: ProviderError::RateLimited { .. },
                    ..
                })
            ),
            "{out:?}"
        );
        let err = classify_error(
            &serde_json::json!({"code":400,"status":"INVALID_ARGUMENT","message":"The input token count (1200000) exceeds the maximum number of tokens allowed (1048576)."}),
            "",
        );
        assert!(
            matches!(err, ProviderError::ContextOverflow { .. }),
            "{err:?}"
        );
    }

    #[test]
    fn no_finish_reason_is_truncated() {
        let mut driver = StreamDriver::sse(GeminiParser::new());
        let mut out = Vec::new();
        driver.feed(
            b"data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"Hel\"}]}}]}\r\n\r\n",
            &mut out,
        );
        driver.end(&mut out);
        assert!(
            matches!(
                out.last(),
                Some(Event::Error {
                    error: ProviderError::Truncated { .. },
                    ..
                })
            ),
            "{out:?}"
        );
        assert_eq!(driver.partial_message().text(), "Hel");
    }
}
