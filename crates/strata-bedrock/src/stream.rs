//! Sans-IO parser for ConverseStream: event-stream messages in, normalized events out.
//!
//! [`EventStreamFrames`] turns AWS event-stream messages into the shared driver's frames
//! (the frame's event name is the `:event-type`, or `exception:<type>` / `error:<code>`);
//! [`ConverseParser`] interprets them. The turn ends with `messageStop` followed by
//! `metadata` (usage); a stream that closes before `metadata` is
//! [`ProviderError::Truncated`]. Exceptions are classified by their `:exception-type`.

use std::collections::HashMap;

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
        self.last_event = kind.to_owned();
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
            "contentBlockDelta" => {
                let block = block_of(&value);
                let delta = value.get("delta").unwrap_or(&Value::Null);
                if let Some(text) = delta.get("text").and_then(Value::as_str) {
                    if !text.is_empty() {
                        let index = self.slot(block);
                        self.emit(
                            out,
                            Event::TextDelta {
                                index,
                                text: text.to_owned(),
                            },
                        );
                    }
                } else if let Some(input) = delta.pointer("/toolUse/input").and_then(Value::as_str)
                {
                    if let Some(call) = self.calls.get_mut(&block)
                        && !input.is_empty()
                    {
                        call.input.push_str(input);
                        let index = call.index;
                        self.emit(
                            out,
                            Event::ToolCallDelta {
                                index,
                                arguments: input.to_owned(),
                            },
                        );
                    }
                } else if let Some(reasoning) = delta.get("reasoningContent") {
                    let index = self.slot(block);
                    if let Some(text) = reasoning.get("text").and_then(Value::as_str) {
                        if !text.is_empty() {
                            self.emit(
                                out,
                                Event::ThinkingDelta {
                                    index,
                                    text: text.to_owned(),
                                    signature: None,
                                },
                            );
                        }
                    } else if let Some(signature) =
                        reasoning.get("signature").and_then(Value::as_str)
                    {
                        self.emit(
                            out,
                            Event::ThinkingDelta {
                                index,
                                text: String::new(),
                                signature: Some(signature.to_owned()),
                            },
                        );
                    } else if let Some(redacted) =
                        reasoning.get("redactedContent").and_then(Value::as_str)
                    {
                        // The event grammar has no redacted delta: the block becomes a
                        // signature-only thinking block, marked redacted at the end.
                        self.emit(
                            out,
                            Event::ThinkingDelta {
                                index,
                                text: String::new(),
                                signature: Some(redacted.to_owned()),
                            },
                        );
                        self.redacted.push(redacted.to_owned());
                    }
                } else {
                    outcome = FrameOutcome::Unknown;
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
        loop {
            let message = self
                .decoder
                .next_message()
                .map_err(|e| ProviderError::Decode {
                    message: e.to_string(),
                })?;
            let Some(message) = message else {
                return Ok(Flow::Continue);
            };
            self.name.clear();
            match message.header(":message-type") {
                Some("exception") => {
                    self.name.push_str("exception:");
                    self.name
                        .push_str(message.header(":exception-type").unwrap_or("exception"));
                }
                Some("error") => {
                    self.name.push_str("error:");
                    self.name
                        .push_str(message.header(":error-code").unwrap_or("error"));
                }
                _ => self
                    .name
                    .push_str(message.header(":event-type").unwrap_or("")),
            }
            let error_text = message.header(":error-message").map(str::to_owned);
            let payload = match error_text {
                Some(text) if message.payload.is_empty() => text,
                _ => String::from_utf8(message.payload).map_err(|_| ProviderError::Decode {
                    message: format!("event-stream payload of `{}` is not UTF-8", self.name),
                })?,
            };
            if sink(Frame {
                event: Some(&self.name),
                data: &payload,
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
