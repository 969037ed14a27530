//! Sans-IO parser for ConverseStream: event-stream messages in, normalized events out.
//!
//! [`EventStreamFrames`] turns AWS event-stream messages into the shared driver's frames
//! (the frame's event name is the `:event-type`, or `exception:<type>` / `error:<code>`);
//! [`ConverseParser`] interprets them. The turn ends with `messageStop` followed by
//! `metadata` (usage); a stream that closes before `metadata` is
//! [`ProviderError::Truncated`]. Exceptions are classified by their `:exception-type`.

use std::borrow::Cow;
use std::collections::HashMap;

use serde::Deserialize;
use serde_json::Value;
use strata_provider::{Event, Message, MessageAssembler, ProviderError, StopReason, Usage};

use strata_provider::transport::{
    self, Flow, Frame, FrameDecoder, FrameOutcome, ParseError, StreamParser, parse_arguments,
};

use crate::eventstream::EventStreamDecoder;
use crate::usage::normalize_usage;

/// A tool call being streamed.
#[derive(Debug, Clone)]
struct PendingCall {
    index: usize,
    id: String,
    name: String,
    input: String,
}

/// A `contentBlockDelta` event, most of a stream's messages, read without a JSON tree.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct WireDelta<'a> {
    #[serde(default)]
    content_block_index: u64,
    #[serde(borrow, default)]
    delta: Option<WireDeltaBody<'a>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct WireDeltaBody<'a> {
    #[serde(borrow, default)]
    text: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    tool_use: Option<WireToolUse<'a>>,
    #[serde(borrow, default)]
    reasoning_content: Option<WireReasoning<'a>>,
}

#[derive(Deserialize)]
struct WireToolUse<'a> {
    #[serde(borrow, default)]
    input: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct WireReasoning<'a> {
    #[serde(borrow, default)]
    text: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    signature: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    redacted_content: Option<Cow<'a, str>>,
}

/// State of one ConverseStream response.
#[derive(Debug, Default)]
pub struct ConverseParser {
    assembler: MessageAssembler,
    /// Bedrock's `contentBlockIndex` → our block index.
    blocks: HashMap<u64, usize>,
    calls: HashMap<u64, PendingCall>,
    next_index: usize,
    stop: Option<StopReason>,
    usage: Usage,
    done: bool,
    last_event: String,
    model: String,
    /// Signatures that are redacted reasoning payloads.
    redacted: Vec<String>,
}

impl ConverseParser {
    /// A parser for a response from `model`.
    pub fn new(model: impl Into<String>) -> Self {
        Self {
            model: model.into(),
            ..Self::default()
        }
    }

    /// Whether the terminal `metadata` event has been seen.
    pub fn is_finished(&self) -> bool {
        self.done
    }

    fn slot(&mut self, block: u64) -> usize {
        if let Some(i) = self.blocks.get(&block) {
            return *i;
        }
        let i = self.next_index;
        self.next_index += 1;
        self.blocks.insert(block, i);
        i
    }

    fn emit(&mut self, out: &mut Vec<Event>, event: Event) {
        self.assembler.push(&event);
        out.push(event);
    }

    /// A text, tool-input or reasoning delta.
    fn content_delta(&mut self, wire: WireDelta<'_>, out: &mut Vec<Event>) -> FrameOutcome {
        let block = wire.content_block_index;
        let Some(delta) = wire.delta else {
            return FrameOutcome::Unknown;
        };
        if let Some(text) = delta.text {
            if !text.is_empty() {
                let index = self.slot(block);
                let text = text.into_owned();
                self.emit(out, Event::TextDelta { index, text });
            }
        } else if let Some(input) = delta.tool_use.and_then(|t| t.input) {
            if let Some(call) = self.calls.get_mut(&block)
                && !input.is_empty()
            {
                call.input.push_str(&input);
                let index = call.index;
                let arguments = input.into_owned();
                self.emit(out, Event::ToolCallDelta { index, arguments });
            }
        } else if let Some(reasoning) = delta.reasoning_content {
            let index = self.slot(block);
            if let Some(text) = reasoning.text {
                if !text.is_empty() {
                    let text = text.into_owned();
                    let signature = None;
                    self.emit(
                        out,
                        Event::ThinkingDelta {
                            index,
                            text,
                            signature,
                        },
                    );
                }
            } else if let Some(signature) = reasoning.signature {
                let signature = Some(signature.into_owned());
                let text = String::new();
                self.emit(
                    out,
                    Event::ThinkingDelta {
                        index,
                        text,
                        signature,
                    },
                );
            } else if let Some(redacted) = reasoning.redacted_content {
                // The event grammar has no redacted delta: the block becomes a
                // signature-only thinking block, marked redacted at the end.
                let redacted = redacted.into_owned();
                let signature = Some(redacted.clone());
                let text = String::new();
                self.emit(
                    out,
                    Event::ThinkingDelta {
                        index,
                        text,
                        signature,
                    },
                );
                self.redacted.push(redacted);
            }
        } else {
            return FrameOutcome::Unknown;
        }
        FrameOutcome::Known
    }

    fn event(
        &mut self,
        kind: &str,
        payload: &str,
        out: &mut Vec<Event>,
    ) -> Result<FrameOutcome, ParseError> {
        if let Some(exception) = kind
            .strip_prefix("exception:")
            .or_else(|| kind.strip_prefix("error:"))
        {
            self.done = true;
            return Err(ParseError::Provider(classify_exception(exception, payload)));
        }
        self.last_event.clear();
        self.last_event.push_str(kind);
        if kind == "contentBlockDelta" {
            let delta: WireDelta<'_> = serde_json::from_str(payload)?;
            return Ok(self.content_delta(delta, out));
        }
        let value: Value = if payload.trim().is_empty() {
            Value::Object(serde_json::Map::new())
        } else {
            serde_json::from_str(payload)?
        };
        let mut outcome = FrameOutcome::Known;
        let block_of = |v: &Value| {
            v.get("contentBlockIndex")
                .and_then(Value::as_u64)
                .unwrap_or(0)
        };
        match kind {
            "messageStart" => {
                let model = self.model.clone();
                self.emit(
                    out,
                    Event::Start {
                        model,
                        response_id: None,
                    },
                );
            }
            "contentBlockStart" => {
                let block = block_of(&value);
                if let Some(tool) = value.pointer("/start/toolUse") {
                    let index = self.slot(block);
                    let call = PendingCall {
                        index,
                        id: tool
                            .get("toolUseId")
                            .and_then(Value::as_str)
                            .unwrap_or("")
                            .to_owned(),
                        name: tool
                            .get("name")
                            .and_then(Value::as_str)
                            .unwrap_or("")
                            .to_owned(),
                        input: String::new(),
                    };
                    let start = Event::ToolCallStart {
                        index,
                        id: call.id.clone(),
                        name: call.name.clone(),
                    };
                    self.calls.insert(block, call);
                    self.emit(out, start);
                }
            }
            "contentBlockStop" => {
                let block = block_of(&value);
                if let Some(call) = self.calls.remove(&block) {
                    let arguments = parse_arguments(&call.id, &call.name, &call.input)?;
                    self.emit(
                        out,
                        Event::ToolCallEnd {
                            index: call.index,
                            id: call.id,
                            name: call.name,
                            arguments,
                        },
                    );
                }
            }
            "messageStop" => {
                let reason = value
                    .get("stopReason")
                    .and_then(Value::as_str)
                    .unwrap_or("");
                self.stop = Some(match reason {
                    "tool_use" => StopReason::ToolUse,
                    "max_tokens" => StopReason::MaxTokens,
                    "stop_sequence" => StopReason::StopSequence,
                    "guardrail_intervened" | "content_filtered" => StopReason::Refusal,
                    "model_context_window_exceeded" => StopReason::ContextWindowExceeded,
                    _ => StopReason::EndTurn,
                });
            }
            "metadata" => {
                if let Some(usage) = value.get("usage") {
                    self.usage = normalize_usage(usage);
                    out.push(Event::Usage(self.usage));
                }
                if let Some(stop_reason) = self.stop {
                    self.done = true;
                    out.push(Event::Done {
                        stop_reason,
                        message: self.message(),
                        usage: self.usage,
                    });
                    outcome = FrameOutcome::Terminal;
                }
            }
            _ => outcome = FrameOutcome::Unknown,
        }
        Ok(outcome)
    }

    fn message(&self) -> Message {
        let mut message = self.assembler.message();
        for block in &mut message.content {
            if let strata_provider::ContentBlock::Thinking {
                text,
                signature: Some(signature),
                redacted,
            } = block
                && text.is_empty()
                && self.redacted.contains(signature)
            {
                *redacted = true;
            }
        }
        message
    }
}

impl StreamParser for ConverseParser {
    fn on_frame(
        &mut self,
        frame: Frame<'_>,
        out: &mut Vec<Event>,
    ) -> Result<FrameOutcome, ParseError> {
        self.event(frame.event.unwrap_or(""), frame.data, out)
    }

    fn partial_message(&self) -> Message {
        self.message()
    }
}

/// The event-stream binary framing as a [`FrameDecoder`] for the shared driver.
#[derive(Debug, Default)]
pub struct EventStreamFrames {
    decoder: EventStreamDecoder,
    name: String,
}

impl EventStreamFrames {
    /// A decoder at the start of a body.
    pub fn new() -> Self {
        Self::default()
    }

    fn drain(&mut self, sink: &mut dyn FnMut(Frame<'_>) -> Flow) -> Result<Flow, ProviderError> {
        let decode = |e: crate::eventstream::FrameError| ProviderError::Decode {
            message: e.to_string(),
        };
        loop {
            let Some(message) = self.decoder.next_raw().map_err(decode)? else {
                return Ok(Flow::Continue);
            };
            let header = |name: &str| message.string_header(name).map_err(decode);
            self.name.clear();
            match header(":message-type")? {
                Some("exception") => {
                    self.name.push_str("exception:");
                    self.name
                        .push_str(header(":exception-type")?.unwrap_or("exception"));
                }
                Some("error") => {
                    self.name.push_str("error:");
                    self.name
                        .push_str(header(":error-code")?.unwrap_or("error"));
                }
                _ => self.name.push_str(header(":event-type")?.unwrap_or("")),
            }
            let payload = if message.payload().is_empty() {
                header(":error-message")?.unwrap_or("")
            } else {
                std::str::from_utf8(message.payload()).map_err(|_| ProviderError::Decode {
                    message: format!("event-stream payload of `{}` is not UTF-8", self.name),
                })?
            };
            if sink(Frame {
                event: Some(&self.name),
                data: payload,
            }) == Flow::Stop
            {
                return Ok(Flow::Stop);
            }
        }
    }
}

impl FrameDecoder for EventStreamFrames {
    fn decode(
        &mut self,
        chunk: &[u8],
        sink: &mut dyn FnMut(Frame<'_>) -> Flow,
    ) -> Result<Flow, ProviderError> {
        self.decoder.push(chunk);
        self.drain(sink)
    }

    fn finish(&mut self, sink: &mut dyn FnMut(Frame<'_>) -> Flow) -> Result<Flow, ProviderError> {
        let flow = self.drain(sink)?;
        if self.decoder.buffered() > 0 {
            tracing::debug!(
                bytes = self.decoder.buffered(),
                "event stream ended inside a frame"
            );
        }
        Ok(flow)
    }
}

/// Maps a Bedrock exception (by its type name) to the error the caller must act on.
pub fn classify_exception(kind: &str, body: &str) -> ProviderError {
    let lower = kind.to_ascii_lowercase();
    let class = if lower.starts_with("throttling") {
        "rate_limit"
    } else if lower.starts_with("serviceunavailable") || lower.starts_with("modelnotready") {
        "unavailable"
    } else if lower.starts_with("accessdenied")
        || lower.starts_with("unrecognizedclient")
        || lower.starts_with("expiredtoken")
    {
        "authentication"
    } else if lower.starts_with("validation") || lower.starts_with("resourcenotfound") {
        "invalid_request"
    } else {
        // internalServer, modelStreamError, modelTimeout and unknown exceptions.
        "server_error"
    };
    let message = serde_json::from_str::<Value>(body)
        .ok()
        .and_then(|v| v.get("message").and_then(Value::as_str).map(str::to_owned))
        .unwrap_or_else(|| body.to_owned());
    let raw = format!("{kind}: {body}");
    let error = transport::classify_stream_error(class, &message, &raw);
    match error {
        // Bedrock words overflow as "Input is too long for requested model" and similar.
        ProviderError::InvalidRequest { body, .. }
            if message.to_ascii_lowercase().contains("too long") =>
        {
            ProviderError::ContextOverflow {
                status: 0,
                request_id: None,
                body,
            }
        }
        other => other,
    }
}
