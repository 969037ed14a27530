//! A `message` entry's message, shared, and possibly still the JSON its line held.
//!
//! A view that only prints a context (`strata context --format pi`) need not build typed
//! messages: [`crate::Tree::entries_at`] with [`MessageRead::KeepJson`] checks that a message
//! (user, assistant, tool result, bashExecution, custom) is canonical JSON (what Pi's
//! `JSON.stringify` writes) of the shape its type reads, so that it keeps exactly the messages
//! a typed read keeps, and keeps that JSON instead: where it is in the session file, or in
//! memory for a line held there. Reading the message parses it then, once; printing it
//! re-indents those bytes ([`crate::fast::canonical::reindent_canonical`]).

use std::fs::File;
use std::ops::Deref;
use std::sync::{Arc, OnceLock};

use serde::Serialize;

use crate::entry::Role;
use crate::fast::canonical;
use crate::message::{
    AgentMessage, AssistantMessage, BashExecutionMessage, CustomMessage, ToolResultMessage,
    UserMessage,
};
use crate::shape::{Kind, Shaped};

/// How [`crate::Tree::entries_at`] reads `message` lines.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MessageRead {
    /// Every message parsed into its type.
    Parse,
    /// Messages whose lines are canonical JSON of their type's shape kept as that JSON
    /// ([`LazyMessage::json`]), parsed when first read.
    KeepJson,
}

/// A message shared between an entry and the contexts built from it: reading it
/// ([`Deref`]) gives the typed message, parsed on first use when it was loaded as JSON.
#[derive(Clone)]
pub struct LazyMessage(Arc<Inner>);

struct Inner {
    parsed: OnceLock<AgentMessage>,
    /// The message's JSON, when it was kept as JSON.
    json: Option<Json>,
    role: Role,
}

/// Where a kept message's JSON is.
enum Json {
    /// In memory.
    Held(Box<str>),
    /// In the session file, read when the message is printed or parsed: a view that only
    /// prints a long session's context holds none of its messages' bytes.
    InFile(FileSpan),
}

/// Bytes of a session file: the JSON of a message kept there ([`LazyMessage::file_span`]).
#[derive(Debug, Clone)]
pub struct FileSpan {
    /// The file, open for reading.
    pub file: Arc<File>,
    /// Where the JSON starts.
    pub at: u64,
    /// How long it is.
    pub len: usize,
}

impl LazyMessage {
    /// A message already parsed.
    pub fn new(message: AgentMessage) -> Self {
        let role = role_of(&message);
        Self(Arc::new(Inner {
            parsed: OnceLock::from(message),
            json: None,
            role,
        }))
    }

    /// `json` (a message of `role`) if it is canonical JSON of the shape that role's type
    /// reads ([`crate::fast::canonical`]); `None` otherwise, or for a role not kept as JSON.
    pub fn from_json(role: Role, json: &str) -> Option<Self> {
        let kind = kept_kind(role)?;
        canonical::has_shape(json.as_bytes(), kind).then(|| Self::checked(role, json))
    }

    /// `json`, already checked to be canonical and of `role`'s shape.
    pub(crate) fn checked(role: Role, json: &str) -> Self {
        Self(Arc::new(Inner {
            parsed: OnceLock::new(),
            json: Some(Json::Held(json.into())),
            role,
        }))
    }

    /// A message of `role` whose JSON, checked to be canonical and of its shape, is `span`
    /// of a session file; read again when printed or parsed.
    pub(crate) fn in_file(role: Role, span: FileSpan) -> Self {
        Self(Arc::new(Inner {
            parsed: OnceLock::new(),
            json: Some(Json::InFile(span)),
            role,
        }))
    }

    /// The message's JSON as Pi holds it, when it was kept as JSON in memory
    /// ([`Self::from_json`]): its line's bytes, or JSON made from them in their key order (a
    /// context edit's). A message kept in its file answers [`Self::file_span`] instead.
    pub fn line_json(&self) -> Option<&str> {
        match &self.0.json {
            Some(Json::Held(json)) => Some(json),
            _ => None,
        }
    }

    /// The message's JSON when it was kept as JSON, read from its session file if it is
    /// there (`None` also when that read fails).
    pub fn json(&self) -> Option<std::borrow::Cow<'_, str>> {
        match &self.0.json {
            Some(Json::Held(json)) => Some(std::borrow::Cow::Borrowed(json)),
            Some(Json::InFile(span)) => span.read().map(std::borrow::Cow::Owned),
            None => None,
        }
    }

    /// Where the message's JSON is in its session file, when it was kept there: a printer
    /// reads the spans of consecutive messages in one read ([`crate::fast::canonical`] re-indents
    /// them, and refuses bytes that changed since they were checked).
    pub fn file_span(&self) -> Option<&FileSpan> {
        match &self.0.json {
            Some(Json::InFile(span)) => Some(span),
            _ => None,
        }
    }

    /// The role, known without parsing (`Other` for a role this crate does not type).
    pub fn role_kind(&self) -> Role {
        self.0.role
    }

    /// The typed message (parsed now if it was kept as JSON). A message kept in its file that
    /// can no longer be read there (the file was cut or rewritten since) reads as an empty
    /// unknown message; a printer reading the span itself reports that instead.
    pub fn get(&self) -> &AgentMessage {
        self.0.parsed.get_or_init(|| match &self.0.json {
            Some(Json::Held(json)) => parse_as(self.0.role, json),
            Some(Json::InFile(span)) => match span.read() {
                Some(json) => parse_as(self.0.role, &json),
                None => AgentMessage::Unknown(serde_json::Map::new()),
            },
            None => AgentMessage::Unknown(serde_json::Map::new()),
        })
    }

    /// The typed message, moved out when this is its only holder.
    pub fn into_message(self) -> AgentMessage {
        self.get();
        match Arc::try_unwrap(self.0) {
            Ok(inner) => inner
                .parsed
                .into_inner()
                .unwrap_or(AgentMessage::Unknown(serde_json::Map::new())),
            Err(shared) => Self(shared).get().clone(),
        }
    }

    /// Whether two handles share one message.
    pub fn ptr_eq(a: &Self, b: &Self) -> bool {
        Arc::ptr_eq(&a.0, &b.0)
    }
}

fn role_of(message: &AgentMessage) -> Role {
    match message {
        AgentMessage::User(_) => Role::User,
        AgentMessage::Assistant(_) => Role::Assistant,
        AgentMessage::ToolResult(_) => Role::ToolResult,
        AgentMessage::BashExecution(_) => Role::BashExecution,
        AgentMessage::Custom(_) => Role::Custom,
        AgentMessage::System(_) => Role::System,
        _ => Role::Other,
    }
}

impl FileSpan {
    /// The span's bytes as text; `None` when they cannot be read or are not UTF-8 (the file
    /// changed since they were checked).
    pub fn read(&self) -> Option<String> {
        let mut bytes = vec![0; self.len];
        crate::tree::read_exact_at(&self.file, &mut bytes, self.at).ok()?;
        String::from_utf8(bytes).ok()
    }
}

/// Reads kept messages' JSON from their session file ([`LazyMessage::file_span`]): the spans
/// of consecutive messages, close behind each other in one file, in one read into one buffer
/// that is reused.
#[derive(Default)]
pub struct SpanReader {
    buffer: Vec<u8>,
    /// The file and offset the buffer holds bytes of.
    held: Option<(Arc<File>, u64)>,
}

/// Spans at most this far apart are read together (the gap is the lines' other fields).
const SPAN_GAP: u64 = 64 * 1024;

/// One read covers at most this much.
const SPAN_RUN: u64 = 1 << 20;

impl SpanReader {
    /// The bytes of `span`; when they are not held, the spans in `next` that follow it closely
    /// in the same file are read with them.
    pub fn bytes<'s, 'n>(
        &'s mut self,
        span: &FileSpan,
        next: impl IntoIterator<Item = &'n FileSpan>,
    ) -> std::io::Result<&'s [u8]> {
        let held = match &self.held {
            Some((file, at)) if Arc::ptr_eq(file, &span.file) && span.at >= *at => {
                let start = (span.at - at) as usize;
                (start + span.len <= self.buffer.len()).then_some(start)
            }
            _ => None,
        };
        let start = match held {
            Some(start) => start,
            None => {
                let mut end = span.at + span.len as u64;
                for following in next {
                    let following_end = following.at + following.len as u64;
                    if !Arc::ptr_eq(&following.file, &span.file)
                        || following.at < end
                        || following.at > end + SPAN_GAP
                        || following_end - span.at > SPAN_RUN
                    {
                        break;
                    }
                    end = following_end;
                }
                self.held = None;
                self.buffer.clear();
                self.buffer.resize((end - span.at) as usize, 0);
                crate::tree::read_exact_at(&span.file, &mut self.buffer, span.at)?;
                self.held = Some((Arc::clone(&span.file), span.at));
                0
            }
        };
        Ok(&self.buffer[start..start + span.len])
    }
}

/// The shape a message of `role` is checked against to be kept as JSON; `None` for the roles
/// read whole (system messages, which are projected field by field, and unknown ones).
pub(crate) fn kept_kind(role: Role) -> Option<&'static Kind> {
    match role {
        Role::User => Some(&UserMessage::KIND),
        Role::Assistant => Some(&AssistantMessage::KIND),
        Role::ToolResult => Some(&ToolResultMessage::KIND),
        Role::BashExecution => Some(&BashExecutionMessage::KIND),
        Role::Custom => Some(&CustomMessage::KIND),
        _ => None,
    }
}

/// Parses JSON whose shape was checked for `role`: it reads. Should it not (a shape check
/// that accepts what the type refuses), the message is kept whole as an unknown one rather
/// than lost.
fn parse_as(role: Role, json: &str) -> AgentMessage {
    fn typed<M: serde::de::DeserializeOwned + crate::entry::HasExtra>(
        json: &str,
        wrap: fn(M) -> AgentMessage,
    ) -> Result<AgentMessage, serde_json::Error> {
        let mut message: M = serde_json::from_str(json)?;
        // As a message line's parse does: the role is the variant, not an extra field.
        message.extra_mut().shift_remove("role");
        Ok(wrap(message))
    }
    let parsed = match role {
        Role::User => typed(json, AgentMessage::User),
        Role::Assistant => typed(json, AgentMessage::Assistant),
        Role::ToolResult => typed(json, AgentMessage::ToolResult),
        Role::BashExecution => typed(json, AgentMessage::BashExecution),
        Role::Custom => typed(json, AgentMessage::Custom),
        _ => serde_json::from_str(json),
    };
    parsed.unwrap_or_else(|error| {
        debug_assert!(false, "a message of checked shape did not parse: {error}");
        AgentMessage::Unknown(serde_json::from_str(json).unwrap_or_default())
    })
}

impl Deref for LazyMessage {
    type Target = AgentMessage;

    fn deref(&self) -> &AgentMessage {
        self.get()
    }
}

impl AsRef<AgentMessage> for LazyMessage {
    fn as_ref(&self) -> &AgentMessage {
        self.get()
    }
}

impl From<AgentMessage> for LazyMessage {
    fn from(message: AgentMessage) -> Self {
        Self::new(message)
    }
}

impl std::fmt::Debug for LazyMessage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.get().fmt(f)
    }
}

impl PartialEq for LazyMessage {
    fn eq(&self, other: &Self) -> bool {
        Self::ptr_eq(self, other) || self.get() == other.get()
    }
}

impl Serialize for LazyMessage {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.get().serialize(serializer)
    }
}

impl<'de> serde::Deserialize<'de> for LazyMessage {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        AgentMessage::deserialize(deserializer).map(Self::new)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;
    use crate::entry::{Entry, FastParse};

    /// One message of each kept role, with every kind of block and every typed field.
    fn bases() -> Vec<(Role, Value)> {
        vec![
            (
                Role::User,
                json!({"role": "user", "content": "hi \"there\"\n", "timestamp": 1}),
            ),
            (
                Role::User,
                json!({"role": "user", "content": [
                    {"type": "text", "text": "a", "textSignature": "s"},
                    {"type": "image", "data": "eA==", "mimeType": "image/png"}
                ], "timestamp": 1, "extra": {"k": [1, 2]}}),
            ),
            (
                Role::Assistant,
                json!({"role": "assistant", "content": [
                    {"type": "thinking", "thinking": "t", "thinkingSignature": "s", "redacted": false},
                    {"type": "text", "text": "x"},
                    {"type": "toolCall", "id": "c1", "name": "read", "arguments": {"path": "a"}, "thoughtSignature": "q"},
                    {"type": "weird", "z": 1}
                ], "api": "anthropic-messages", "provider": "anthropic", "model": "m",
                "usage": {"input": 1, "output": 2, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 3,
                    "cost": {"input": 0.1, "output": 0.2, "cacheRead": 0, "cacheWrite": 0, "total": 0.3}},
                "stopReason": "toolUse", "errorMessage": "e", "thinkingLevel": "low", "timestamp": 1}),
            ),
            (
                Role::BashExecution,
                json!({"role": "bashExecution", "command": "ls", "output": "a\nb",
                    "exitCode": null, "cancelled": false, "truncated": true,
                    "fullOutputPath": "/tmp/x", "timestamp": 1, "excludeFromContext": true}),
            ),
            (
                Role::Custom,
                json!({"role": "custom", "customType": "note", "content": [{"type": "text", "text": "n"}],
                    "display": true, "details": {"k": 1}, "timestamp": 1}),
            ),
            (
                Role::ToolResult,
                json!({"role": "toolResult", "toolCallId": "c1", "toolName": "read",
                    "content": [{"type": "text", "text": "out"}], "details": {"a": 1},
                    "isError": false, "timestamp": 1}),
            ),
        ]
    }

    /// Values every field is tried with.
    fn replacements() -> Vec<Value> {
        vec![
            Value::Null,
            json!(1),
            json!(-1),
            json!(1.5),
            json!(true),
            json!("s"),
            json!([]),
            json!([1]),
            json!([{"type": "text", "text": "t"}]),
            json!({}),
            json!({"type": "text"}),
            json!({"type": "text", "text": "t"}),
        ]
    }

    /// Every value in `value` with one change: each key removed, each value (and element)
    /// replaced, and, in tagged objects, the tag moved last or given twice. The flag says
    /// whether the change is to a block's tag layout, which the check may refuse.
    fn mutants(value: &Value) -> Vec<(Value, bool)> {
        let mut out = Vec::new();
        match value {
            Value::Object(map) => {
                for key in map.keys() {
                    let mut removed = map.clone();
                    removed.shift_remove(key);
                    out.push((Value::Object(removed), key == "type"));
                    for replacement in replacements() {
                        let mut replaced = map.clone();
                        replaced.insert(key.clone(), replacement);
                        out.push((Value::Object(replaced), key == "type"));
                    }
                    for (inner, layout) in mutants(&map[key]) {
                        let mut nested = map.clone();
                        nested.insert(key.clone(), inner);
                        out.push((Value::Object(nested), layout));
                    }
                }
                if let Some(tag) = map.get("type") {
                    let mut last = map.clone();
                    last.shift_remove("type");
                    last.insert("type".into(), tag.clone());
                    out.push((Value::Object(last), true));
                }
            }
            Value::Array(items) => {
                for (at, item) in items.iter().enumerate() {
                    for replacement in replacements() {
                        let mut replaced = items.clone();
                        replaced[at] = replacement;
                        out.push((Value::Array(replaced), true));
                    }
                    for (inner, layout) in mutants(item) {
                        let mut nested = items.clone();
                        nested[at] = inner;
                        out.push((Value::Array(nested), layout));
                    }
                }
            }
            _ => {}
        }
        out
    }

    fn line_of(message: &str) -> String {
        format!(
            r#"{{"type":"message","id":"m1","parentId":null,"timestamp":"2026-01-15T10:00:00.000Z","message":{message}}}"#
        )
    }

    #[test]
    fn the_shape_check_keeps_what_the_typed_read_keeps() {
        let (mut checked, mut refused_but_typed) = (0_usize, 0_usize);
        for (role, base) in bases() {
            let mut cases = vec![(base.clone(), false)];
            cases.extend(mutants(&base));
            for (message, layout) in cases {
                let json = serde_json::to_string(&message).unwrap();
                let typed =
                    Entry::from_line_with_kind::<FastParse>("message", role, &line_of(&json));
                match (LazyMessage::from_json(role, &json), typed) {
                    (Some(lazy), Ok(Entry::Message(entry))) => {
                        checked += 1;
                        assert_eq!(lazy.role_kind(), role);
                        assert_eq!(lazy.line_json(), Some(json.as_str()));
                        assert_eq!(lazy.get(), &*entry.message, "{json}");
                    }
                    (Some(_), typed) => {
                        panic!("checked, but the typed read gives {typed:?}: {json}")
                    }
                    (None, Ok(_)) => {
                        // Only a block's tag layout may be refused by the check and read.
                        assert!(layout, "refused, but the typed read keeps it: {json}");
                        refused_but_typed += 1;
                    }
                    (None, Err(_)) => {}
                }
            }
        }
        // 290 and 91 when written: a change here means the corpus or a rule moved.
        assert!(checked > 250, "{checked} mutants checked");
        assert!(
            refused_but_typed < checked / 2,
            "{refused_but_typed} refused"
        );
    }

    #[test]
    fn a_line_keeps_its_message_json_only_where_its_role_is_kept() {
        let user = r#"{"role":"user","content":"hi","timestamp":1}"#;
        let Some(Entry::Message(entry)) =
            Entry::message_keeping_json(Role::User, &line_of(user), |span| {
                LazyMessage::checked(Role::User, &line_of(user)[span])
            })
        else {
            panic!("a user message is kept as JSON");
        };
        assert_eq!(entry.message.line_json(), Some(user));
        assert_eq!(entry.base.id.as_str(), "m1");
        assert!(entry.extra.is_empty(), "{:?}", entry.extra);
        assert_eq!(
            Entry::Message(entry.clone()).kind(),
            crate::EntryKind::Message(Role::User)
        );
        // Read, it is the message the typed read builds, `role` not kept as an extra field.
        let AgentMessage::User(read) = entry.message.get() else {
            panic!("user");
        };
        assert!(read.extra.is_empty());
        let system = r#"{"role":"system","content":"s","timestamp":1}"#;
        assert!(
            Entry::message_keeping_json(Role::System, &line_of(system), |_| unreachable!())
                .is_none()
        );
        let escaped = r#"{"role":"user","content":"\u0041","timestamp":1}"#;
        assert!(
            Entry::message_keeping_json(Role::User, &line_of(escaped), |_| unreachable!())
                .is_none()
        );
        let wrong = r#"{"role":"user","content":7,"timestamp":1}"#;
        assert!(
            Entry::message_keeping_json(Role::User, &line_of(wrong), |_| unreachable!()).is_none()
        );
    }

    #[test]
    fn a_shared_message_moves_out_or_is_copied() {
        let message =
            LazyMessage::from_json(Role::User, r#"{"role":"user","content":"a","timestamp":2}"#)
                .expect("shape");
        let other = message.clone();
        assert!(LazyMessage::ptr_eq(&message, &other));
        assert_eq!(message.timestamp(), Some(2));
        assert_eq!(other.into_message(), *message);
        assert!(matches!(message.into_message(), AgentMessage::User(_)));
    }
}
