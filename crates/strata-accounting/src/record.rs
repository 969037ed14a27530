//! Every billed request a session file records, one [`RequestRecord`] each.

use serde::Serialize;
use serde_json::Value;
use strata_provider::{CacheDiagnosis, Prices, Usage};
use strata_session::{AgentMessage, Entry, EntryKind, Role, StopReason, Tree};

use crate::convert::{provider_usage, stored_diagnosis};

/// `customType` of the `custom` entry recording one keep-warm request: `data` is
/// `{usage, provider, model}` with `usage` in Pi's shape (cost included).
pub const KEEP_WARM_CUSTOM_TYPE: &str = "strata.keep_warm";

/// `customType` of a `custom` entry recording a summary request's usage where no entry field
/// can hold it (failed compactions, older branch summaries): `data` is `{kind, usage}`.
pub const USAGE_CUSTOM_TYPE: &str = "strata.usage";

/// Field of a compaction or branch-summary entry holding its summary requests' usage.
pub const USAGE_FIELD: &str = "usage";

/// What a billed request was for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RequestKind {
    /// A turn of the conversation (an assistant message).
    Answer,
    /// The summary request(s) of a compaction.
    Compaction,
    /// The summary request of a branch summary.
    BranchSummary,
    /// A summary whose usage was recorded on its own (a failed compaction, say).
    Summary,
    /// A keep-warm ping sent while the user was idle.
    KeepWarm,
}

impl RequestKind {
    /// How `strata stats` marks the kind after an entry id (empty for an answer).
    pub fn suffix(self) -> &'static str {
        match self {
            Self::Answer => "",
            Self::Compaction => " (compaction)",
            Self::BranchSummary => " (branch summary)",
            Self::Summary => " (summary)",
            Self::KeepWarm => " (keep-warm)",
        }
    }
}

/// One billed request.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RequestRecord {
    /// The entry that recorded it.
    pub id: String,
    /// What it was for.
    pub kind: RequestKind,
    /// Provider id as recorded (empty when the entry does not say).
    pub provider: String,
    /// Model id as recorded (empty when the entry does not say).
    pub model: String,
    /// Tokens, writes split by lifetime.
    pub usage: Usage,
    /// Dollars as recorded (0 when the file records none; see [`RequestRecord::price_if_missing`]).
    pub cost: f64,
    /// When the entry was written, Unix milliseconds (`None` when its timestamp is unreadable).
    pub timestamp_ms: Option<i64>,
    /// The request was stopped by the user or failed (`aborted` / `error` stop): what it read
    /// or wrote says nothing about the cache.
    pub aborted: bool,
    /// The provider's own diagnosis of the request's cache reuse, where the row asked for it.
    pub provider_diagnosis: Option<CacheDiagnosis>,
}

impl RequestRecord {
    /// The entry id with the kind's suffix, e.g. `a1b2c3d4 (keep-warm)`.
    pub fn label(&self) -> String {
        format!("{}{}", self.id, self.kind.suffix())
    }

    /// `provider/model` as recorded.
    pub fn qualified_model(&self) -> String {
        format!("{}/{}", self.provider, self.model)
    }

    /// Prices a request the file recorded no cost for, each bucket at its own rate (1-hour
    /// writes at the hour's).
    pub fn price_if_missing(&mut self, prices: &Prices) {
        if self.cost == 0.0 {
            self.cost = self.usage.cost(prices).total();
        }
    }
}

/// Every billed request in `tree`, in file order, on every branch (all were paid).
pub fn records(tree: &Tree) -> Vec<RequestRecord> {
    records_from(tree, 0)
}

/// The billed requests of the entries from position `start` on, in file order: what a
/// session's totals gain since they were counted up to `start` (a file only grows, so the
/// sum of the two parts is [`records`]' sum, in the same order).
pub fn records_from(tree: &Tree, start: usize) -> Vec<RequestRecord> {
    tree.iter()
        .skip(start)
        .filter(|entry| {
            matches!(
                entry.kind(),
                EntryKind::Message(Role::Assistant | Role::Other)
                    | EntryKind::Compaction
                    | EntryKind::BranchSummary
                    | EntryKind::Custom
                    | EntryKind::Usage
            )
        })
        .filter_map(|reference| {
            let mut record = match lean_answer(tree, &reference) {
                Some(record) => record,
                None => record_of(&reference.entry().ok()?)?,
            };
            record.timestamp_ms = reference.timestamp_millis();
            Some(record)
        })
        .collect()
}

/// The fields of an assistant message line an answer's record reads; serde steps over the
/// content without building it.
#[derive(serde::Deserialize)]
struct AnswerLine {
    message: AnswerFields,
}

#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct AnswerFields {
    #[serde(default)]
    provider: String,
    #[serde(default)]
    model: String,
    usage: strata_session::Usage,
    stop_reason: StopReason,
}

/// An assistant message's record read from its line without building the message: most of
/// a session's bytes are the content a record never looks at. `None` where the line is not
/// a current-format assistant message whose record fields read: the typed read decides then
/// (older formats are migrated as before). A message whose content alone is damaged still
/// has its request counted: the provider billed it.
fn lean_answer(tree: &Tree, reference: &strata_session::EntryRef<'_>) -> Option<RequestRecord> {
    if reference.kind() != EntryKind::Message(Role::Assistant)
        || tree.version() < strata_session::CURRENT_VERSION
    {
        return None;
    }
    let line = reference.read_line().ok()?;
    let fields = serde_json::from_str::<AnswerLine>(&line).ok()?.message;
    Some(answer_record(
        reference.id().as_str(),
        &fields.provider,
        &fields.model,
        &fields.usage,
        &fields.stop_reason,
    ))
}

/// A request recorded with its stored usage (the timestamp is the entry's, set by the caller).
fn stored_record(
    id: &str,
    kind: RequestKind,
    provider: &str,
    model: &str,
    stored: &strata_session::Usage,
) -> RequestRecord {
    RequestRecord {
        id: id.to_owned(),
        kind,
        provider: provider.to_owned(),
        model: model.to_owned(),
        usage: provider_usage(stored),
        cost: stored.cost.total,
        timestamp_ms: None,
        aborted: false,
        provider_diagnosis: stored_diagnosis(stored),
    }
}

/// An assistant message's request, from the typed message or its line alike: a stop by the
/// user or an error marks it aborted.
fn answer_record(
    id: &str,
    provider: &str,
    model: &str,
    usage: &strata_session::Usage,
    stop: &StopReason,
) -> RequestRecord {
    RequestRecord {
        aborted: matches!(stop, StopReason::Aborted | StopReason::Error),
        ..stored_record(id, RequestKind::Answer, provider, model, usage)
    }
}

/// The billed request `entry` records, if any: an assistant message, a compaction or branch
/// summary with its summary usage, a Pi 1.x `usage` entry (kind `cache_warm` is a keep-warm
/// ping), or, in files from before Pi 1.x's shapes, a `custom` entry of
/// [`USAGE_CUSTOM_TYPE`] or [`KEEP_WARM_CUSTOM_TYPE`].
pub fn record_of(entry: &Entry) -> Option<RequestRecord> {
    let id = entry.base().id.as_str();
    let record = |kind, provider: &str, model: &str, stored: &strata_session::Usage| {
        stored_record(id, kind, provider, model, stored)
    };
    match entry {
        Entry::Message(message) => match &*message.message {
            AgentMessage::Assistant(m) => Some(answer_record(
                id,
                &m.provider,
                &m.model,
                &m.usage,
                &m.stop_reason,
            )),
            _ => None,
        },
        Entry::Compaction(compaction) => compaction
            .usage
            .clone()
            .or_else(|| usage_field(&compaction.extra))
            .map(|usage| record(RequestKind::Compaction, "", "", &usage)),
        Entry::BranchSummary(summary) => summary
            .usage
            .clone()
            .or_else(|| usage_field(&summary.extra))
            .map(|usage| record(RequestKind::BranchSummary, "", "", &usage)),
        Entry::Usage(entry) => {
            let kind = if entry.kind == strata_session::CACHE_WARM_KIND {
                RequestKind::KeepWarm
            } else {
                RequestKind::Summary
            };
            Some(record(kind, &entry.provider, &entry.model, &entry.usage))
        }
        Entry::Custom(custom) => {
            let data = custom.data.as_ref()?;
            let usage = stored_usage(data.get("usage")?)?;
            let text = |key: &str| data.get(key).and_then(Value::as_str).unwrap_or("");
            match custom.custom_type.as_str() {
                KEEP_WARM_CUSTOM_TYPE => Some(record(
                    RequestKind::KeepWarm,
                    text("provider"),
                    text("model"),
                    &usage,
                )),
                USAGE_CUSTOM_TYPE => Some(record(
                    RequestKind::Summary,
                    text("provider"),
                    text("model"),
                    &usage,
                )),
                _ => None,
            }
        }
        _ => None,
    }
}

fn usage_field(extra: &strata_session::Extra) -> Option<strata_session::Usage> {
    stored_usage(extra.get(USAGE_FIELD)?)
}

fn stored_usage(value: &Value) -> Option<strata_session::Usage> {
    value
        .is_object()
        .then(|| serde_json::from_value(value.clone()).ok())
        .flatten()
}
