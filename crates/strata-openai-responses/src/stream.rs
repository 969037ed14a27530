//! Sans-IO parser for the Responses SSE stream: one frame in, normalized events out.
//!
//! The parser never touches the network: it implements [`StreamParser`], and the shared
//! driver of `strata_provider::transport` feeds it SSE frames. `response.completed` and
//! `response.incomplete` are terminal; a stream that closes before one of them (or
//! `response.failed` / `error`) ends as [`ProviderError::Truncated`] — the driver's policy.

use std::borrow::Cow;
use std::collections::HashMap;

use serde::Deserialize;
use serde_json::Value;
use strata_provider::transport::{
    self, Frame, FrameOutcome, ParseError, StreamParser, parse_arguments,
};
use strata_provider::{
    CacheDiagnosis, ContentBlock, Event, Message, MessageAssembler, Protocol, ProviderError,
    StopReason, Usage,
};

use crate::usage::normalize_usage;

/// Which content block an output item (or one of its parts) became.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Slot {
    /// Text of a message item's content part.
    Text { item: String, part: u64 },
    /// Summary or reasoning text of a reasoning item.
    Reasoning { item: String },
    /// A function call item.
    Call { item: String },
    /// An item kept whole and replayed as it came (the hosted tool search's items).
    Whole { item: String },
}

/// Output items the parser keeps whole: the hosted `tool_search`'s call and its output (the
/// definitions it loaded), which the next request must carry unchanged (openai-python 3.57.0
/// `ResponseToolSearchCall`, `ResponseToolSearchOutputItem`).
const WHOLE_ITEMS: [&str; 2] = ["tool_search_call", "tool_search_output"];

/// A tool call being streamed.
#[derive(Debug, Clone)]
struct PendingCall {
    index: usize,
    call_id: String,
    name: String,
    arguments: String,
    ended: bool,
}

/// State of one Responses stream.
#[derive(Debug, Default)]
pub struct ResponsesParser {
    slots: HashMap<Slot, usize>,
    calls: HashMap<String, PendingCall>,
    next_index: usize,
    assembler: MessageAssembler,
    usage: Usage,
    terminal: bool,
    last_event: String,
    summary_parts: HashMap<String, u64>,
    /// The last delta's slot, so a run of deltas to one part skips the map and its key.
    last_delta: Option<(Slot, usize)>,
}

/// Delta events, most of a stream's frames, read without building a JSON tree.
const DELTA_EVENTS: [&str; 5] = [
    "response.output_text.delta",
    "response.refusal.delta",
    "response.reasoning_summary_text.delta",
    "response.reasoning_text.delta",
    "response.function_call_arguments.delta",
];

/// The fields of a delta event the parser reads.
#[derive(Deserialize)]
struct DeltaEvent<'a> {
    #[serde(rename = "type", borrow, default)]
    kind: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    item_id: Cow<'a, str>,
    #[serde(default)]
    content_index: u64,
    #[serde(borrow, default)]
    delta: Cow<'a, str>,
}

impl ResponsesParser {
    /// A parser at the start of a stream.
    pub fn new() -> Self {
        Self::default()
    }

    /// Whether the terminal event has been seen.
    pub fn is_finished(&self) -> bool {
        self.terminal
    }

    fn slot(&mut self, slot: Slot) -> usize {
        if let Some(i) = self.slots.get(&slot) {
            return *i;
        }
        let i = self.next_index;
        self.next_index += 1;
        self.slots.insert(slot, i);
        i
    }

    fn emit(&mut self, out: &mut Vec<Event>, event: Event) {
        self.assembler.push(&event);
        out.push(event);
    }

    /// The slot of a delta to `item` (and `part`, for text), remembered for the next delta.
    fn delta_slot(&mut self, reasoning: bool, item: &str, part: u64) -> usize {
        if let Some((slot, index)) = &self.last_delta {
            let same = match slot {
                Slot::Text { item: i, part: p } => !reasoning && i == item && *p == part,
                Slot::Reasoning { item: i } => reasoning && i == item,
                Slot::Call { .. } | Slot::Whole { .. } => false,
            };
            if same {
                return *index;
            }
        }
        let slot = if reasoning {
            Slot::Reasoning {
                item: item.to_owned(),
            }
        } else {
            Slot::Text {
                item: item.to_owned(),
                part,
            }
        };
        let index = self.slot(slot.clone());
        self.last_delta = Some((slot, index));
        index
    }

    /// A text, refusal, reasoning or argument delta of `kind`.
    fn delta(
        &mut self,
        kind: &str,
        item: &str,
        part: u64,
        delta: Cow<'_, str>,
        out: &mut Vec<Event>,
    ) {
        if delta.is_empty() {
            return;
        }
        match kind {
            "response.output_text.delta" | "response.refusal.delta" => {
                let index = self.delta_slot(false, item, part);
                let text = delta.into_owned();
                self.emit(out, Event::TextDelta { index, text });
            }
            "response.function_call_arguments.delta" => {
                if let Some(call) = self.calls.get_mut(item) {
                    call.arguments.push_str(&delta);
                    let index = call.index;
                    let arguments = delta.into_owned();
                    self.emit(out, Event::ToolCallDelta { index, arguments });
                }
            }
            // Summary and full reasoning text.
            _ => {
                let index = self.delta_slot(true, item, 0);
                let text = delta.into_owned();
                self.emit(
                    out,
                    Event::ThinkingDelta {
                        index,
                        text,
                        signature: None,
                    },
                );
            }
        }
    }

    fn frame(
        &mut self,
        event: &str,
        data: &str,
        out: &mut Vec<Event>,
    ) -> Result<FrameOutcome, ParseError> {
        let data = data.trim();
        if data.is_empty() || data == "[DONE]" {
            return Ok(FrameOutcome::Known);
        }
        if DELTA_EVENTS.contains(&event) {
            let d: DeltaEvent<'_> = serde_json::from_str(data)?;
            if d.kind.as_deref().is_none_or(|k| k == event) {
                self.last_event.clear();
                self.last_event.push_str(event);
                self.delta(event, &d.item_id, d.content_index, d.delta, out);
                return Ok(FrameOutcome::Known);
            }
        }
        let value: Value = serde_json::from_str(data)?;
        let kind = value
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or(event)
            .to_owned();
        self.last_event.clone_from(&kind);
        let mut outcome = FrameOutcome::Known;
        let str_of = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).unwrap_or("").to_owned();
        match kind.as_str() {
            "response.created" => {
                let response = value.get("response").unwrap_or(&Value::Null);
                self.emit(
                    out,
                    Event::Start {
                        model: str_of(response, "model"),
                        response_id: response
                            .get("id")
                            .and_then(Value::as_str)
                            .map(str::to_owned),
                    },
                );
            }
            "response.output_item.added" => {
                let item = value.get("item").unwrap_or(&Value::Null);
                let item_id = str_of(item, "id");
                match item.get("type").and_then(Value::as_str) {
                    Some("function_call") => {
                        let index = self.slot(Slot::Call {
                            item: item_id.clone(),
                        });
                        let call = PendingCall {
                            index,
                            call_id: str_of(item, "call_id"),
                            name: str_of(item, "name"),
                            arguments: String::new(),
                            ended: false,
                        };
                        let start = Event::ToolCallStart {
                            index,
                            id: call.call_id.clone(),
                            name: call.name.clone(),
                        };
                        self.calls.insert(item_id, call);
                        self.emit(out, start);
                    }
                    Some("reasoning") => {
                        self.slot(Slot::Reasoning { item: item_id });
                    }
                    Some(kind) if WHOLE_ITEMS.contains(&kind) => {
                        // Its place among the items is taken now; the item comes with `done`.
                        self.slot(Slot::Whole { item: item_id });
                    }
                    _ => {}
                }
            }
            "response.output_text.delta"
            | "response.refusal.delta"
            | "response.reasoning_summary_text.delta"
            | "response.reasoning_text.delta"
            | "response.function_call_arguments.delta" => {
                let part = value
                    .get("content_index")
                    .and_then(Value::as_u64)
                    .unwrap_or(0);
                let item = str_of(&value, "item_id");
                let delta = str_of(&value, "delta");
                self.delta(&kind, &item, part, Cow::Owned(delta), out);
            }
            "response.reasoning_summary_part.added" => {
                // Summary parts are separate paragraphs; join them as Pi does.
                let item = str_of(&value, "item_id");
                let seen = self.summary_parts.entry(item.clone()).or_insert(0);
                *seen += 1;
                if *seen > 1 {
                    let index = self.slot(Slot::Reasoning { item });
                    self.emit(
                        out,
                        Event::ThinkingDelta {
                            index,
                            text: "\n\n".into(),
                            signature: None,
                        },
                    );
                }
            }
            "response.function_call_arguments.done" => {
                let item = str_of(&value, "item_id");
                if let Some(call) = self.calls.get_mut(&item)
                    && let Some(arguments) = value.get("arguments").and_then(Value::as_str)
                {
                    call.arguments = arguments.to_owned();
                }
            }
            "response.output_item.done" => {
                let item = value.get("item").unwrap_or(&Value::Null);
                let item_id = str_of(item, "id");
                match item.get("type").and_then(Value::as_str) {
                    Some("function_call") => {
                        let call = self.calls.entry(item_id.clone()).or_insert_with(|| {
                            // `added` was never seen: the done item alone describes the call.
                            PendingCall {
                                index: usize::MAX,
                                call_id: str_of(item, "call_id"),
                                name: str_of(item, "name"),
                                arguments: String::new(),
                                ended: false,
                            }
                        });
                        if let Some(arguments) = item.get("arguments").and_then(Value::as_str) {
                            call.arguments = arguments.to_owned();
                        }
                        let mut call = call.clone();
                        if call.index == usize::MAX {
                            call.index = self.slot(Slot::Call {
                                item: item_id.clone(),
                            });
                        }
                        if let Some(stored) = self.calls.get_mut(&item_id) {
                            stored.ended = true;
                            stored.index = call.index;
                        }
                        let arguments =
                            parse_arguments(&call.call_id, &call.name, &call.arguments)?;
                        let end = Event::ToolCallEnd {
                            index: call.index,
                            id: call.call_id,
                            name: call.name,
                            arguments,
                        };
                        self.emit(out, end);
                    }
                    Some(kind) if WHOLE_ITEMS.contains(&kind) => {
                        let index = self.slot(Slot::Whole { item: item_id });
                        self.assembler.put(
                            index,
                            ContentBlock::ProviderItem {
                                api: Protocol::OpenaiResponses.as_str().to_owned(),
                                item: item.clone(),
                            },
                        );
                    }
                    Some("reasoning") => {
                        // The whole item is the opaque state replayed on the next turn
                        // (its encrypted_content above all); it rides on the thinking block.
                        let index = self.slot(Slot::Reasoning { item: item_id });
                        self.emit(
                            out,
                            Event::ThinkingDelta {
                                index,
                                text: String::new(),
                                signature: Some(item.to_string()),
                            },
                        );
                    }
                    _ => {}
                }
            }
            "response.completed" | "response.incomplete" => {
                let response = value.get("response").unwrap_or(&Value::Null);
                if let Some(usage) = response.get("usage").filter(|u| u.is_object()) {
                    self.usage = normalize_usage(usage);
                    self.emit(out, Event::Usage(self.usage));
                }
                if let Some(diagnosis) = diagnosis(response.get("prompt_cache_diagnostics")) {
                    self.emit(out, Event::CacheDiagnosis(diagnosis));
                }
                let stop_reason = if kind == "response.incomplete" {
                    match response
                        .get("incomplete_details")
                        .and_then(|d| d.get("reason"))
                        .and_then(Value::as_str)
                    {
                        Some("content_filter") => StopReason::Refusal,
                        _ => StopReason::MaxTokens,
                    }
                } else if self.calls.values().any(|c| c.ended) {
                    StopReason::ToolUse
                } else {
                    StopReason::EndTurn
                };
                self.terminal = true;
                out.push(Event::Done {
                    stop_reason,
                    message: self.assembler.message(),
                    usage: self.usage,
                });
                outcome = FrameOutcome::Terminal;
            }
            "response.failed" => {
                self.terminal = true;
                let error = value
                    .get("response")
                    .and_then(|r| r.get("error"))
                    .unwrap_or(&Value::Null);
                return Err(ParseError::Provider(classify_stream_error(error, data)));
            }
            "error" => {
                self.terminal = true;
                let error = value.get("error").unwrap_or(&value);
                return Err(ParseError::Provider(classify_stream_error(error, data)));
            }
            "response.in_progress"
            | "response.queued"
            | "response.content_part.added"
            | "response.content_part.done"
            | "response.output_text.done"
            | "response.refusal.done"
            | "response.reasoning_summary_part.done"
            | "response.reasoning_summary_text.done"
            | "response.reasoning_text.done"
            | "response.output_text.annotation.added" => {}
            _ => outcome = FrameOutcome::Unknown,
        }
        Ok(outcome)
    }
}

impl StreamParser for ResponsesParser {
    fn on_frame(
        &mut self,
        frame: Frame<'_>,
        out: &mut Vec<Event>,
    ) -> Result<FrameOutcome, ParseError> {
        self.frame(frame.event.unwrap_or(""), frame.data, out)
    }

    fn partial_message(&self) -> Message {
        self.assembler.message()
    }
}

/// `Response.prompt_cache_diagnostics` (openai-python 3.63.0): a miss carries its `reason` and
/// `cache_missed_tokens`; `cache_hit`, `comparison_response_not_found` and `unavailable` are
/// reported by their type.
fn diagnosis(value: Option<&Value>) -> Option<CacheDiagnosis> {
    let value = value?;
    let kind = value.get("type").and_then(Value::as_str)?;
    let reason = match kind {
        "cache_miss" => value.get("reason").and_then(Value::as_str).unwrap_or(kind),
        other => other,
    };
    Some(CacheDiagnosis {
        reason: reason.to_owned(),
        missed_tokens: value.get("cache_missed_tokens").and_then(Value::as_u64),
    })
}

/// Maps an in-stream error object (`{code, message}`) to the error the caller must act on.
pub fn classify_stream_error(error: &Value, raw: &str) -> ProviderError {
    let code = error.get("code").and_then(Value::as_str).unwrap_or("");
    let message = error.get("message").and_then(Value::as_str).unwrap_or("");
    let kind = match code {
        "invalid_api_key" | "unauthorized" => "authentication_error",
        "" => error
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or("server_error"),
        other => other,
    };
    transport::classify_stream_error(kind, message, raw)
}

#[cfg(test)]
mod tests {
    use super::*;
    use strata_provider::transport::StreamDriver;

    fn run(chunks: &[&str]) -> Vec<Event> {
        let mut driver = StreamDriver::sse(ResponsesParser::new());
        let mut out = Vec::new();
        for c in chunks {
            driver.feed(c.as_bytes(), &mut out);
        }
        driver.end(&mut out);
        out
    }

    #[test]
    fn unknown_events_are_skipped_and_a_missing_terminal_truncates() {
        let out = run(&[
            "event: response.web_search_call.searching\ndata: {\"type\":\"response.web_search_call.searching\",\"item_id\":\"ws_1\"}\n\n",
        ]);
        assert!(
            matches!(
                out.as_slice(),
                [Event::Error {
                    error: ProviderError::Truncated { .. },
                    ..
                }]
            ),
            "{out:?}"
        );
    }

    #[test]
    fn malformed_json_is_a_decode_error() {
        let out = run(&["event: response.output_text.delta\ndata: {\"delta\":\n\n"]);
        assert!(
            matches!(
                out.as_slice(),
                [Event::Error {
                    error: ProviderError::Decode { .. },
                    ..
                }]
            ),
            "{out:?}"
        );
    }

    #[test]
    fn context_length_code_is_overflow() {
        let err = classify_stream_error(
            &serde_json::json!({"code":"context_length_exceeded","message":"Your input exceeds the context window of this model."}),
            "",
        );
        assert!(
            matches!(err, ProviderError::ContextOverflow { status: 0, .. }),
            "{err:?}"
        );
        let err = classify_stream_error(
            &serde_json::json!({"code":"rate_limit_exceeded","message":"slow down"}),
            "",
        );
        assert!(matches!(err, ProviderError::RateLimited { .. }), "{err:?}");
    }
}
