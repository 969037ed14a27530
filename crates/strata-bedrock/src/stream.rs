//! Sans-IO parser for ConverseStream: event-stream messages in, normalized events out.
//!
//! The turn ends with `messageStop` followed by `metadata` (usage); a stream that closes
//! before `metadata` is [`ProviderError::Truncated`]. Exceptions arrive as messages with
//! `:message-type exception` and are classified by their `:exception-type`.

use std::collections::HashMap;

use serde_json::Value;
use strata_provider::{Event, Message, MessageAssembler, ProviderError, StopReason, Usage};

use crate::eventstream::{EventMessage, EventStreamDecoder};
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
    decoder: EventStreamDecoder,
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

    /// Feeds received bytes (any split) and returns the events of every whole message.
    pub fn push_bytes(&mut self, bytes: &[u8]) -> Result<Vec<Event>, ProviderError> {
        self.decoder.push(bytes);
        let mut out = Vec::new();
        loop {
            let message = self
                .decoder
                .next_message()
                .map_err(|e| ProviderError::Decode {
                    message: e.to_string(),
                })?;
            let Some(message) = message else {
                return Ok(out);
            };
            out.extend(self.push_message(&message)?);
        }
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

    /// Interprets one decoded message.
    pub fn push_message(&mut self, message: &EventMessage) -> Result<Vec<Event>, ProviderError> {
        let payload = String::from_utf8_lossy(&message.payload).into_owned();
        match message.header(":message-type") {
            Some("exception") => {
                self.done = true;
                let kind = message.header(":exception-type").unwrap_or("exception");
                return Err(classify_exception(kind, &payload));
            }
            Some("error") => {
                self.done = true;
                let code = message.header(":error-code").unwrap_or("error");
                let text = message.header(":error-message").unwrap_or(&payload);
                return Err(classify_exception(code, text));
            }
            _ => {}
        }
        let kind = message.header(":event-type").unwrap_or("").to_owned();
        self.last_event.clone_from(&kind);
        let value: Value = if payload.trim().is_empty() {
            Value::Object(serde_json::Map::new())
        } else {
            serde_json::from_str(&payload).map_err(|e| ProviderError::Decode {
                message: format!("invalid JSON in ConverseStream `{kind}` event: {e}: {payload}"),
            })?
        };
        let block_of = |v: &Value| {
            v.get("contentBlockIndex")
                .and_then(Value::as_u64)
                .unwrap_or(0)
        };
        let mut out = Vec::new();
        match kind.as_str() {
            "messageStart" => {
                let model = self.model.clone();
                self.emit(
                    &mut out,
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
                    self.emit(&mut out, start);
                }
            }
            "contentBlockDelta" => {
                let block = block_of(&value);
                let delta = value.get("delta").unwrap_or(&Value::Null);
                if let Some(text) = delta.get("text").and_then(Value::as_str) {
                    if !text.is_empty() {
                        let index = self.slot(block);
                        self.emit(
                            &mut out,
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
                            &mut out,
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
                                &mut out,
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
                            &mut out,
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
                            &mut out,
                            Event::ThinkingDelta {
                                index,
                                text: String::new(),
                                signature: Some(redacted.to_owned()),
                            },
                        );
                        self.redacted.push(redacted.to_owned());
                    }
                } else {
                    tracing::debug!(delta = %delta, "ignoring unknown ConverseStream delta");
                }
            }
            "contentBlockStop" => {
                let block = block_of(&value);
                if let Some(call) = self.calls.remove(&block) {
                    let arguments = parse_arguments(&call.input);
                    self.emit(
                        &mut out,
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
                }
            }
            other => {
                tracing::debug!(event = other, "ignoring unknown ConverseStream event");
            }
        }
        Ok(out)
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

    /// Ends the stream: `Ok` after `metadata`, else [`ProviderError::Truncated`].
    pub fn finish(&self) -> Result<(), ProviderError> {
        if self.done {
            return Ok(());
        }
        let pending = self.decoder.buffered();
        Err(ProviderError::Truncated {
            reason: format!(
                "ConverseStream closed before metadata (last event: {}, {pending} byte(s) of an unfinished frame)",
                if self.last_event.is_empty() {
                    "none"
                } else {
                    &self.last_event
                }
            ),
        })
    }

    /// The assistant message assembled so far (the partial message after an error).
    pub fn partial_message(&self) -> Message {
        self.message()
    }
}

/// Tool input as JSON; text that is not JSON is kept as a string so it is not lost.
pub fn parse_arguments(raw: &str) -> Value {
    if raw.trim().is_empty() {
        return Value::Object(serde_json::Map::new());
    }
    serde_json::from_str(raw).unwrap_or_else(|_| Value::String(raw.to_owned()))
}

/// Maps a Bedrock exception (by its type name) to the error the caller must act on.
pub fn classify_exception(kind: &str, body: &str) -> ProviderError {
    let status = match kind {
        "throttlingException" | "ThrottlingException" => 429,
        "serviceUnavailableException" | "ServiceUnavailableException" => 503,
        "modelNotReadyException" | "ModelNotReadyException" => 503,
        "internalServerException" | "InternalServerException" => 500,
        "modelStreamErrorException" | "ModelStreamErrorException" => 500,
        "modelTimeoutException" | "ModelTimeoutException" => 504,
        "accessDeniedException" | "AccessDeniedException" => 403,
        "UnrecognizedClientException" | "ExpiredTokenException" => 403,
        "resourceNotFoundException" | "ResourceNotFoundException" => 404,
        _ => 400,
    };
    let body = if body.contains(kind) {
        body.to_owned()
    } else {
        format!("{kind}: {body}")
    };
    let error = ProviderError::from_http(status, None, body, None);
    match error {
        // Bedrock words overflow as "Input is too long for requested model" and similar.
        ProviderError::InvalidRequest { body, .. }
            if body.to_ascii_lowercase().contains("too long") =>
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
