//! Session entries: every line after the header, typed by `type`.

use std::collections::BTreeMap;
use std::ops::Range;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::fast::lazy::LazyMessage;
use crate::id::EntryId;
use crate::message::{AgentMessage, Extra, MessageContent, SystemMessage, Usage};
use crate::serde_util::{FieldKey, present};

/// Fields every entry has: `id`, `parentId` (null for a root) and `timestamp` (ISO 8601).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EntryBase {
    /// This entry's id.
    pub id: EntryId,
    /// The parent's id; `None` (JSON `null`) for a root.
    #[serde(default)]
    pub parent_id: Option<EntryId>,
    /// When it was written, ISO 8601 (`2026-01-15T10:00:01.000Z`).
    #[serde(default)]
    pub timestamp: String,
}

impl EntryBase {
    /// A base to fill a new entry with; `Session::append` replaces id and parent, and the
    /// timestamp too when it is empty.
    pub fn pending() -> Self {
        Self {
            id: EntryId::new(""),
            parent_id: None,
            timestamp: String::new(),
        }
    }
}

/// A session entry, by its `type`.
// The rare large variants are boxed: a built context holds each entry it parsed, messages by
// the thousand, and at 768 bytes an entry took more memory than most messages' text.
#[derive(Debug, Clone, PartialEq)]
pub enum Entry {
    /// `message`: one conversation message.
    Message(MessageEntry),
    /// `compaction`: a summary replacing the history before `firstKeptEntryId`.
    Compaction(Box<CompactionEntry>),
    /// `branch_summary`: the summary of a branch the user left.
    BranchSummary(Box<BranchSummaryEntry>),
    /// `model_change`.
    ModelChange(ModelChangeEntry),
    /// `thinking_level_change`.
    ThinkingLevelChange(ThinkingLevelChangeEntry),
    /// `custom`: extension state, never in context.
    Custom(CustomEntry),
    /// `custom_message`: an extension's message that enters context.
    CustomMessage(CustomMessageEntry),
    /// `label`: sets or clears a bookmark on another entry.
    Label(LabelEntry),
    /// `session_info`: the session's display name.
    SessionInfo(SessionInfoEntry),
    /// `usage` (Pi 1.x): usage of a request that is not a message (e.g. a cache-warm ping);
    /// counted in totals, never in context.
    Usage(Box<UsageEntry>),
    /// strata's `system` entry from before Pi 1.x's system messages: read (and migrated in
    /// memory by context building), no longer written.
    System(SystemEntry),
    /// `context_edit`: Pi 1.x's `{targetId, replacement}`, or strata's earlier
    /// `{targets, action}` (read, no longer written).
    ContextEdit(Box<ContextEditEntry>),
    /// strata `leaf`: the current position moved to `parentId` without appending.
    Leaf(LeafEntry),
    /// Any other type, kept as raw JSON.
    Unknown(UnknownEntry),
}

/// The kind of an entry, known without parsing it fully.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EntryKind {
    /// `message`, with its role.
    Message(Role),
    /// `compaction`.
    Compaction,
    /// `branch_summary`.
    BranchSummary,
    /// `model_change`.
    ModelChange,
    /// `thinking_level_change`.
    ThinkingLevelChange,
    /// `custom`.
    Custom,
    /// `custom_message`.
    CustomMessage,
    /// `label`.
    Label,
    /// `session_info`.
    SessionInfo,
    /// `usage`.
    Usage,
    /// strata `system`.
    System,
    /// strata `context_edit`.
    ContextEdit,
    /// strata `leaf`.
    Leaf,
    /// Any other type.
    Unknown,
}

/// The role of a `message` entry, known without parsing it fully.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Role {
    /// `user`.
    User,
    /// `assistant`.
    Assistant,
    /// `toolResult`.
    ToolResult,
    /// `bashExecution`.
    BashExecution,
    /// `custom` (or v2's `hookMessage`).
    Custom,
    /// `system` (Pi 1.x).
    System,
    /// Any other role, or one the fast scan could not see.
    Other,
}

impl Role {
    pub(crate) fn from_str(role: &str, legacy: bool) -> Self {
        match role {
            "user" => Self::User,
            "assistant" => Self::Assistant,
            "toolResult" => Self::ToolResult,
            "bashExecution" => Self::BashExecution,
            "custom" => Self::Custom,
            "system" => Self::System,
            "hookMessage" if legacy => Self::Custom,
            _ => Self::Other,
        }
    }
}

impl EntryKind {
    /// The kind for a `type` tag (message role unknown).
    pub fn from_type(tag: &str) -> Self {
        match tag {
            "message" => Self::Message(Role::Other),
            "compaction" => Self::Compaction,
            "branch_summary" => Self::BranchSummary,
            "model_change" => Self::ModelChange,
            "thinking_level_change" => Self::ThinkingLevelChange,
            "custom" => Self::Custom,
            "custom_message" => Self::CustomMessage,
            "label" => Self::Label,
            "session_info" => Self::SessionInfo,
            "usage" => Self::Usage,
            "system" => Self::System,
            "context_edit" => Self::ContextEdit,
            "leaf" => Self::Leaf,
            _ => Self::Unknown,
        }
    }
}

/// `message`: one conversation message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MessageEntry {
    /// id, parent, timestamp.
    #[serde(flatten)]
    pub base: EntryBase,
    /// The message, shared: context assembly hands it on without copying it.
    pub message: LazyMessage,
    /// Unknown fields, kept.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `compaction`: history before `firstKeptEntryId` replaced by `summary`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CompactionEntry {
    /// id, parent, timestamp.
    #[serde(flatten)]
    pub base: EntryBase,
    /// The summary text.
    pub summary: String,
    /// The first entry kept after the summary; absent only in migrated v1 files whose index was invalid.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_kept_entry_id: Option<EntryId>,
    /// Context tokens before compaction.
    #[serde(default)]
    pub tokens_before: u64,
    /// `{readFiles, modifiedFiles}` or extension data.
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub details: Option<Value>,
    /// Whether an extension produced it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from_hook: Option<bool>,
    /// The summary requests' usage (counted in totals).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
    /// Pi 1.x's checkpoint: the replayed system prompt and tools at this point; the
    /// compacted context starts with it. Written with its `role: "system"`, as Pi writes it.
    #[serde(default, with = "checkpoint", skip_serializing_if = "Option::is_none")]
    pub system_message: Option<SystemMessage>,
    /// strata before Pi 1.x: every system prompt section at this point (read, not written).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system: Option<BTreeMap<String, String>>,
    /// strata before Pi 1.x: the tool definitions live at this point (read, not written).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<ToolDefinition>>,
    /// Unknown fields, kept.
    #[serde(flatten)]
    pub extra: Extra,
}

/// A compaction's `systemMessage`: a system message with its `role` tag.
mod checkpoint {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};
    use serde_json::{Map, Value};

    use crate::message::SystemMessage;

    pub(super) fn serialize<S: Serializer>(
        message: &Option<SystemMessage>,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Tagged<'a> {
            role: &'static str,
            #[serde(flatten)]
            message: &'a SystemMessage,
        }
        message
            .as_ref()
            .map(|message| Tagged {
                role: "system",
                message,
            })
            .serialize(serializer)
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Option<SystemMessage>, D::Error> {
        let Some(mut map) = Option::<Map<String, Value>>::deserialize(deserializer)? else {
            return Ok(None);
        };
        if map.get("role").and_then(Value::as_str) == Some("system") {
            map.shift_remove("role");
        }
        serde_json::from_value(Value::Object(map))
            .map(Some)
            .map_err(serde::de::Error::custom)
    }
}

/// `branch_summary`: what happened on a branch the user left.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BranchSummaryEntry {
    /// id, parent, timestamp.
    #[serde(flatten)]
    pub base: EntryBase,
    /// The position navigated to (Pi writes the target here, `"root"` for none).
    #[serde(default)]
    pub from_id: String,
    /// The summary text (an empty one produces no message).
    #[serde(default)]
    pub summary: String,
    /// `{readFiles, modifiedFiles}` or extension data.
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub details: Option<Value>,
    /// Whether an extension produced it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from_hook: Option<bool>,
    /// The summary request's usage (counted in totals).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
    /// Unknown fields, kept.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `usage`: a request's usage that is no message (Pi's kinds include `cache_warm`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UsageEntry {
    /// id, parent, timestamp.
    #[serde(flatten)]
    pub base: EntryBase,
    /// What the request was (`cache_warm`, …; unknown kinds are ordinary usage).
    #[serde(default)]
    pub kind: String,
    /// Provider name.
    #[serde(default)]
    pub provider: String,
    /// Model id.
    #[serde(default)]
    pub model: String,
    /// Token counts and cost.
    #[serde(default)]
    pub usage: Usage,
    /// A free-form note.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// Unknown fields, kept.
    #[serde(flatten)]
    pub extra: Extra,
}

/// The `kind` of a usage entry recording a keep-warm ping.
pub const CACHE_WARM_KIND: &str = "cache_warm";

/// `model_change`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelChangeEntry {
    /// id, parent, timestamp.
    #[serde(flatten)]
    pub base: EntryBase,
    /// Provider name.
    pub provider: String,
    /// Model id.
    pub model_id: String,
    /// Unknown fields, kept.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `thinking_level_change`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ThinkingLevelChangeEntry {
    /// id, parent, timestamp.
    #[serde(flatten)]
    pub base: EntryBase,
    /// `off`, `minimal`, `low`, `medium`, `high` or `xhigh`.
    pub thinking_level: String,
    /// Unknown fields, kept.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `custom`: extension state, never sent to the model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CustomEntry {
    /// id, parent, timestamp.
    #[serde(flatten)]
    pub base: EntryBase,
    /// The extension's identifier.
    pub custom_type: String,
    /// The extension's data.
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub data: Option<Value>,
    /// Unknown fields, kept.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `custom_message`: an extension's message that enters context as a user message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CustomMessageEntry {
    /// id, parent, timestamp.
    #[serde(flatten)]
    pub base: EntryBase,
    /// The extension's identifier.
    pub custom_type: String,
    /// Text or text/image blocks.
    pub content: MessageContent,
    /// Whether the UI shows it.
    #[serde(default)]
    pub display: bool,
    /// Extension data, never sent.
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub details: Option<Value>,
    /// Unknown fields, kept.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `label`: sets (or, without `label`, clears) the bookmark of `targetId`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LabelEntry {
    /// id, parent, timestamp.
    #[serde(flatten)]
    pub base: EntryBase,
    /// The labelled entry.
    pub target_id: EntryId,
    /// The label; absent or empty clears it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    /// Unknown fields, kept.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `session_info`: the session's display name (the latest one wins; empty clears).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionInfoEntry {
    /// id, parent, timestamp.
    #[serde(flatten)]
    pub base: EntryBase,
    /// The name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Unknown fields, kept.
    #[serde(flatten)]
    pub extra: Extra,
}

/// A tool definition as sent to the model: name, description, JSON Schema parameters.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolDefinition {
    /// The tool's name.
    pub name: String,
    /// What it does, for the model.
    #[serde(default)]
    pub description: String,
    /// JSON Schema of its arguments.
    #[serde(default)]
    pub parameters: Value,
    /// Unknown fields, kept.
    #[serde(flatten)]
    pub extra: Extra,
}

/// strata `system`: new full text of changed sections, tools added (full definitions) and removed (names).
/// The first one on a chain is the snapshot; later ones are patches.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SystemEntry {
    /// id, parent, timestamp.
    #[serde(flatten)]
    pub base: EntryBase,
    /// Section name → its full new text.
    #[serde(default)]
    pub sections: BTreeMap<String, String>,
    /// Tools declared by this entry.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tools_added: Vec<ToolDefinition>,
    /// Names of tools withdrawn by this entry.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tools_removed: Vec<String>,
    /// Unknown fields, kept.
    #[serde(flatten)]
    pub extra: Extra,
}

/// What a context edit does to its targets.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum ContextAction {
    /// `exclude`: the targets produce no message.
    Exclude,
    /// Any other action, kept (and ignored by context building).
    Other(String),
}

impl Serialize for ContextAction {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(match self {
            Self::Exclude => "exclude",
            Self::Other(other) => other,
        })
    }
}

impl<'de> Deserialize<'de> for ContextAction {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        Ok(if text == "exclude" {
            Self::Exclude
        } else {
            Self::Other(text)
        })
    }
}

/// `context_edit`: Pi 1.x's `{targetId, replacement}` (`replacement: null` omits the
/// target from context, `{content}` replaces its content), or strata's earlier
/// `{targets, action}` (`exclude` omits every target).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ContextEditEntry {
    /// id, parent, timestamp.
    #[serde(flatten)]
    pub base: EntryBase,
    /// Pi 1.x: the entry edited.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_id: Option<EntryId>,
    /// Pi 1.x: `Some(None)` for `null` (omit), `Some(Some(_))` for new content, `None` when
    /// absent.
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub replacement: Option<Option<Replacement>>,
    /// strata before Pi 1.x: the entries affected.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub targets: Vec<EntryId>,
    /// strata before Pi 1.x: what happens to them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub action: Option<ContextAction>,
    /// Unknown fields, kept.
    #[serde(flatten)]
    pub extra: Extra,
}

/// A context edit's new content for its target.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Replacement {
    /// A string or content blocks; absent leaves the target without content, as in Pi.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<Value>,
    /// Unknown fields, kept.
    #[serde(flatten)]
    pub extra: Extra,
}

/// What one edit does to one target.
#[derive(Debug, Clone, PartialEq)]
pub enum EditEffect<'a> {
    /// The target produces no message.
    Omit,
    /// The target's content is replaced.
    Replace(&'a Replacement),
}

impl ContextEditEntry {
    /// Each target and what this edit does to it: Pi's one target, or an earlier strata
    /// edit's `exclude` targets (other actions do nothing).
    pub fn effects(&self) -> Vec<(&EntryId, EditEffect<'_>)> {
        if let Some(target) = &self.target_id {
            return match &self.replacement {
                Some(Some(replacement)) => vec![(target, EditEffect::Replace(replacement))],
                Some(None) => vec![(target, EditEffect::Omit)],
                // Without `replacement` the edit is malformed (Pi fails on it): it does nothing.
                None => Vec::new(),
            };
        }
        match self.action {
            Some(ContextAction::Exclude) => self
                .targets
                .iter()
                .map(|target| (target, EditEffect::Omit))
                .collect(),
            _ => Vec::new(),
        }
    }
}

/// strata `leaf`: the position moved to `parentId` (null: before the first entry).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LeafEntry {
    /// id, parent (the new position), timestamp.
    #[serde(flatten)]
    pub base: EntryBase,
    /// Unknown fields, kept.
    #[serde(flatten)]
    pub extra: Extra,
}

/// An entry of a type this crate does not know, kept whole.
#[derive(Debug, Clone, PartialEq)]
pub struct UnknownEntry {
    /// Its `type`.
    pub entry_type: String,
    /// id, parent, timestamp.
    pub base: EntryBase,
    /// Every other field.
    pub extra: Extra,
}

impl Entry {
    /// id, parent and timestamp.
    pub fn base(&self) -> &EntryBase {
        match self {
            Self::Message(e) => &e.base,
            Self::Compaction(e) => &e.base,
            Self::BranchSummary(e) => &e.base,
            Self::ModelChange(e) => &e.base,
            Self::ThinkingLevelChange(e) => &e.base,
            Self::Custom(e) => &e.base,
            Self::CustomMessage(e) => &e.base,
            Self::Label(e) => &e.base,
            Self::SessionInfo(e) => &e.base,
            Self::Usage(e) => &e.base,
            Self::System(e) => &e.base,
            Self::ContextEdit(e) => &e.base,
            Self::Leaf(e) => &e.base,
            Self::Unknown(e) => &e.base,
        }
    }

    /// id, parent and timestamp, to change.
    pub fn base_mut(&mut self) -> &mut EntryBase {
        match self {
            Self::Message(e) => &mut e.base,
            Self::Compaction(e) => &mut e.base,
            Self::BranchSummary(e) => &mut e.base,
            Self::ModelChange(e) => &mut e.base,
            Self::ThinkingLevelChange(e) => &mut e.base,
            Self::Custom(e) => &mut e.base,
            Self::CustomMessage(e) => &mut e.base,
            Self::Label(e) => &mut e.base,
            Self::SessionInfo(e) => &mut e.base,
            Self::Usage(e) => &mut e.base,
            Self::System(e) => &mut e.base,
            Self::ContextEdit(e) => &mut e.base,
            Self::Leaf(e) => &mut e.base,
            Self::Unknown(e) => &mut e.base,
        }
    }

    /// This entry's id.
    pub fn id(&self) -> &EntryId {
        &self.base().id
    }

    /// The parent's id (`None` for a root).
    pub fn parent_id(&self) -> Option<&EntryId> {
        self.base().parent_id.as_ref()
    }

    /// ISO 8601 time it was written.
    pub fn timestamp(&self) -> &str {
        &self.base().timestamp
    }

    /// The `type` string as written in JSON.
    pub fn type_name(&self) -> &str {
        match self {
            Self::Message(_) => "message",
            Self::Compaction(_) => "compaction",
            Self::BranchSummary(_) => "branch_summary",
            Self::ModelChange(_) => "model_change",
            Self::ThinkingLevelChange(_) => "thinking_level_change",
            Self::Custom(_) => "custom",
            Self::CustomMessage(_) => "custom_message",
            Self::Label(_) => "label",
            Self::SessionInfo(_) => "session_info",
            Self::Usage(_) => "usage",
            Self::System(_) => "system",
            Self::ContextEdit(_) => "context_edit",
            Self::Leaf(_) => "leaf",
            Self::Unknown(e) => &e.entry_type,
        }
    }

    /// The kind (type and, for messages, role).
    pub fn kind(&self) -> EntryKind {
        match self {
            // Known without parsing a message kept as its line's JSON.
            Self::Message(e) => EntryKind::Message(e.message.role_kind()),
            Self::Unknown(_) => EntryKind::Unknown,
            other => EntryKind::from_type(other.type_name()),
        }
    }

    /// The entry as one JSON line (no newline), `type` first.
    pub fn to_json_line(&self) -> Result<String, serde_json::Error> {
        serde_json::to_string(self)
    }

    /// Parses one entry from a JSON object (the `type` field selects the variant).
    pub fn from_json_map(mut map: Map<String, Value>) -> Result<Self, serde_json::Error> {
        let tag = match map.get("type") {
            Some(Value::String(tag)) => tag.clone(),
            _ => return Err(serde::de::Error::missing_field("type")),
        };
        map.shift_remove("type");
        Self::from_map_with_type(&tag, map)
    }

    fn from_map_with_type(tag: &str, map: Map<String, Value>) -> Result<Self, serde_json::Error> {
        let value = Value::Object(map);
        Ok(match tag {
            "message" => Self::Message(serde_json::from_value(value)?),
            "compaction" => Self::Compaction(serde_json::from_value(value)?),
            "branch_summary" => Self::BranchSummary(serde_json::from_value(value)?),
            "model_change" => Self::ModelChange(serde_json::from_value(value)?),
            "thinking_level_change" => Self::ThinkingLevelChange(serde_json::from_value(value)?),
            "custom" => Self::Custom(serde_json::from_value(value)?),
            "custom_message" => Self::CustomMessage(serde_json::from_value(value)?),
            "label" => Self::Label(serde_json::from_value(value)?),
            "session_info" => Self::SessionInfo(serde_json::from_value(value)?),
            "usage" => Self::Usage(serde_json::from_value(value)?),
            "system" => Self::System(serde_json::from_value(value)?),
            "context_edit" => Self::ContextEdit(serde_json::from_value(value)?),
            "leaf" => Self::Leaf(serde_json::from_value(value)?),
            _ => {
                let Value::Object(mut map) = value else {
                    return Err(serde::de::Error::custom("entry is not an object"));
                };
                let base = EntryBase {
                    id: match map.shift_remove("id") {
                        Some(Value::String(id)) => EntryId::from(id),
                        _ => return Err(serde::de::Error::missing_field("id")),
                    },
                    parent_id: match map.shift_remove("parentId") {
                        Some(Value::String(id)) => Some(EntryId::from(id)),
                        _ => None,
                    },
                    timestamp: match map.shift_remove("timestamp") {
                        Some(Value::String(ts)) => ts,
                        _ => String::new(),
                    },
                };
                Self::Unknown(UnknownEntry {
                    entry_type: tag.to_owned(),
                    base,
                    extra: map,
                })
            }
        })
    }

    /// Parses one entry line whose `type` (and, for messages, role) is already known, without
    /// an intermediate JSON tree.
    pub(crate) fn from_line_with_kind<P: LineParser>(
        tag: &str,
        role: Role,
        line: &str,
    ) -> Result<Self, P::Error> {
        fn message_as<P: LineParser, M: serde::de::DeserializeOwned + HasExtra>(
            line: &str,
            wrap: fn(M) -> AgentMessage,
        ) -> Result<MessageEntry, P::Error> {
            // `type` is not kept by `MessageLine`; the message's `role` is, and goes here.
            let mut parsed: MessageLine<M> = P::parse(line)?;
            remove_known(parsed.message.extra_mut(), "role");
            Ok(MessageEntry {
                base: parsed.base,
                message: LazyMessage::new(wrap(parsed.message)),
                extra: parsed.extra,
            })
        }
        if tag == "message" {
            let entry = match role {
                Role::User => message_as::<P, _>(line, AgentMessage::User)?,
                Role::Assistant => message_as::<P, _>(line, AgentMessage::Assistant)?,
                Role::ToolResult => message_as::<P, _>(line, AgentMessage::ToolResult)?,
                Role::BashExecution => message_as::<P, _>(line, AgentMessage::BashExecution)?,
                Role::Custom => message_as::<P, _>(line, AgentMessage::Custom)?,
                Role::System => message_as::<P, _>(line, AgentMessage::System)?,
                Role::Other => return Self::from_line_with_type::<P>(tag, line),
            };
            return Ok(Self::Message(entry));
        }
        Self::from_line_with_type::<P>(tag, line)
    }

    /// A `message` line of `role` whose message is kept as JSON ([`LazyMessage`]): the entry
    /// with `keep` making the message from the JSON's span in the line. `None` when the line
    /// does not read so (the role is not kept as JSON, the line is not canonical, or the
    /// message lacks its type's shape): it is parsed instead.
    pub(crate) fn message_keeping_json(
        role: Role,
        line: &str,
        keep: impl FnOnce(Range<usize>) -> LazyMessage,
    ) -> Option<Self> {
        let kind = crate::fast::lazy::kept_kind(role)?;
        // One pass over the line's bytes finds the message and checks it; serde reads only
        // the rest of the line (id, parent, timestamp, other fields), the message cut out.
        let span = crate::fast::canonical::value_span(line.as_bytes(), "message", kind)?;
        let rest = [line.get(..span.start)?, "null", line.get(span.end..)?].concat();
        let parsed: MessageLine<serde::de::IgnoredAny> = serde_json::from_str(&rest).ok()?;
        Some(Self::Message(MessageEntry {
            base: parsed.base,
            message: keep(span),
            extra: parsed.extra,
        }))
    }

    /// Parses one entry line whose `type` is already known.
    pub(crate) fn from_line_with_type<P: LineParser>(
        tag: &str,
        line: &str,
    ) -> Result<Self, P::Error> {
        fn typed<P: LineParser, T: serde::de::DeserializeOwned + HasExtra>(
            line: &str,
        ) -> Result<T, P::Error> {
            let mut value: T = P::parse(line)?;
            remove_known(value.extra_mut(), "type");
            Ok(value)
        }
        Ok(match tag {
            "message" => Self::Message(typed::<P, _>(line)?),
            "compaction" => Self::Compaction(Box::new(typed::<P, _>(line)?)),
            "branch_summary" => Self::BranchSummary(Box::new(typed::<P, _>(line)?)),
            "model_change" => Self::ModelChange(typed::<P, _>(line)?),
            "thinking_level_change" => Self::ThinkingLevelChange(typed::<P, _>(line)?),
            "custom" => Self::Custom(typed::<P, _>(line)?),
            "custom_message" => Self::CustomMessage(typed::<P, _>(line)?),
            "label" => Self::Label(typed::<P, _>(line)?),
            "session_info" => Self::SessionInfo(typed::<P, _>(line)?),
            "usage" => Self::Usage(Box::new(typed::<P, _>(line)?)),
            "system" => Self::System(typed::<P, _>(line)?),
            "context_edit" => Self::ContextEdit(Box::new(typed::<P, _>(line)?)),
            "leaf" => Self::Leaf(typed::<P, _>(line)?),
            _ => Self::from_json_map(P::parse(line)?)?,
        })
    }
}

/// A `message` line with its message read as `M`, in one pass over the line (a derived
/// struct with `#[serde(flatten)]` fields would first copy the whole line into serde's buffer).
struct MessageLine<M> {
    base: EntryBase,
    message: M,
    extra: Extra,
}

impl<'de, M: Deserialize<'de>> Deserialize<'de> for MessageLine<M> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct LineVisitor<M>(std::marker::PhantomData<M>);

        impl<'de, M: Deserialize<'de>> serde::de::Visitor<'de> for LineVisitor<M> {
            type Value = MessageLine<M>;

            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a message entry")
            }

            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut access: A,
            ) -> Result<Self::Value, A::Error> {
                use serde::de::Error as _;
                let (mut id, mut parent_id, mut timestamp, mut message) = (None, None, None, None);
                let mut extra = Extra::new();
                // A key given twice takes its last value, as `JSON.parse` does.
                while let Some(FieldKey(key)) = access.next_key()? {
                    match &*key {
                        "id" => id = Some(access.next_value::<EntryId>()?),
                        "parentId" => parent_id = Some(access.next_value::<Option<EntryId>>()?),
                        "timestamp" => timestamp = Some(access.next_value::<String>()?),
                        "message" => message = Some(access.next_value::<M>()?),
                        // The caller dispatched on it and drops it from `extra` whatever it
                        // says: not kept, it costs no map.
                        "type" => {
                            access.next_value::<serde::de::IgnoredAny>()?;
                        }
                        _ => {
                            let value: Value = access.next_value()?;
                            extra.insert(key.into_owned(), value);
                        }
                    }
                }
                Ok(MessageLine {
                    base: EntryBase {
                        id: id.ok_or_else(|| A::Error::missing_field("id"))?,
                        parent_id: parent_id.flatten(),
                        timestamp: timestamp.unwrap_or_default(),
                    },
                    message: message.ok_or_else(|| A::Error::missing_field("message"))?,
                    extra,
                })
            }
        }

        deserializer.deserialize_map(LineVisitor(std::marker::PhantomData))
    }
}

/// How an entry line is deserialized: [`FastParse`] on every read, [`FieldParse`] again when
/// that failed, to name the field.
pub(crate) trait LineParser {
    /// What a failure says.
    type Error: From<serde_json::Error>;
    /// Deserializes one line.
    fn parse<T: serde::de::DeserializeOwned>(line: &str) -> Result<T, Self::Error>;
}

/// Plain `serde_json`.
pub(crate) struct FastParse;

impl LineParser for FastParse {
    type Error = serde_json::Error;
    fn parse<T: serde::de::DeserializeOwned>(line: &str) -> Result<T, Self::Error> {
        serde_json::from_str(line)
    }
}

/// `serde_json` tracking the path to the value being read (slower: only to explain a failure).
pub(crate) struct FieldParse;

/// A failed parse with the path of the field it failed in (`message.content[0].text`).
#[derive(Debug)]
pub(crate) struct FieldError {
    /// The path; `None` when the failure is not inside a field.
    pub field: Option<String>,
    /// What serde found.
    pub error: serde_json::Error,
}

impl From<serde_json::Error> for FieldError {
    fn from(error: serde_json::Error) -> Self {
        Self { field: None, error }
    }
}

impl LineParser for FieldParse {
    type Error = FieldError;
    fn parse<T: serde::de::DeserializeOwned>(line: &str) -> Result<T, Self::Error> {
        let mut deserializer = serde_json::Deserializer::from_str(line);
        serde_path_to_error::deserialize(&mut deserializer).map_err(|error| {
            let path = error.path().to_string();
            FieldError {
                // `.` is the whole line (e.g. a missing field, which serde names itself).
                field: (path != ".").then_some(path),
                error: error.into_inner(),
            }
        })
    }
}

pub(crate) trait HasExtra {
    fn extra_mut(&mut self) -> &mut Extra;
}

macro_rules! has_extra {
    ($($ty:ty),*) => { $(impl HasExtra for $ty { fn extra_mut(&mut self) -> &mut Extra { &mut self.extra } })* };
}
has_extra!(
    crate::message::UserMessage,
    crate::message::AssistantMessage,
    crate::message::ToolResultMessage,
    crate::message::BashExecutionMessage,
    crate::message::CustomMessage,
    crate::message::SystemMessage,
    MessageEntry,
    CompactionEntry,
    BranchSummaryEntry,
    ModelChangeEntry,
    ThinkingLevelChangeEntry,
    CustomEntry,
    CustomMessageEntry,
    LabelEntry,
    SessionInfoEntry,
    UsageEntry,
    SystemEntry,
    ContextEditEntry,
    LeafEntry
);

impl Serialize for Entry {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Tagged<'a, T> {
            #[serde(rename = "type")]
            entry_type: &'a str,
            #[serde(flatten)]
            inner: &'a T,
        }
        let tag = self.type_name();
        match self {
            Self::Message(e) => Tagged {
                entry_type: tag,
                inner: e,
            }
            .serialize(serializer),
            Self::Compaction(e) => Tagged {
                entry_type: tag,
                inner: e,
            }
            .serialize(serializer),
            Self::BranchSummary(e) => Tagged {
                entry_type: tag,
                inner: e,
            }
            .serialize(serializer),
            Self::ModelChange(e) => Tagged {
                entry_type: tag,
                inner: e,
            }
            .serialize(serializer),
            Self::ThinkingLevelChange(e) => Tagged {
                entry_type: tag,
                inner: e,
            }
            .serialize(serializer),
            Self::Custom(e) => Tagged {
                entry_type: tag,
                inner: e,
            }
            .serialize(serializer),
            Self::CustomMessage(e) => Tagged {
                entry_type: tag,
                inner: e,
            }
            .serialize(serializer),
            Self::Label(e) => Tagged {
                entry_type: tag,
                inner: e,
            }
            .serialize(serializer),
            Self::SessionInfo(e) => Tagged {
                entry_type: tag,
                inner: e,
            }
            .serialize(serializer),
            Self::Usage(e) => Tagged {
                entry_type: tag,
                inner: e,
            }
            .serialize(serializer),
            Self::System(e) => Tagged {
                entry_type: tag,
                inner: e,
            }
            .serialize(serializer),
            Self::ContextEdit(e) => Tagged {
                entry_type: tag,
                inner: e,
            }
            .serialize(serializer),
            Self::Leaf(e) => Tagged {
                entry_type: tag,
                inner: e,
            }
            .serialize(serializer),
            Self::Unknown(e) => {
                #[derive(Serialize)]
                struct Raw<'a> {
                    #[serde(rename = "type")]
                    entry_type: &'a str,
                    #[serde(flatten)]
                    base: &'a EntryBase,
                    #[serde(flatten)]
                    extra: &'a Extra,
                }
                Raw {
                    entry_type: &e.entry_type,
                    base: &e.base,
                    extra: &e.extra,
                }
                .serialize(serializer)
            }
        }
    }
}

impl<'de> Deserialize<'de> for Entry {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let map = Map::<String, Value>::deserialize(deserializer)?;
        Self::from_json_map(map).map_err(serde::de::Error::custom)
    }
}
/// Removes a key that the surrounding type already says (`type`, `role`). A map left empty gives
/// its allocation back: thousands of parsed entries may be held at once.
fn remove_known(extra: &mut Extra, key: &str) {
    extra.shift_remove(key);
    if extra.is_empty() {
        *extra = Extra::new();
    }
}
