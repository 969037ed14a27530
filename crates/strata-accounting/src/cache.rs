//! Why a request read less from the prompt cache than the request before it held: every such
//! request classified once, here, for `strata stats`, the TUI and the HTML export alike.
//!
//! A break is *expected* when the session says why the prefix had to change (a compaction, a
//! branch summary, a model switch, an idle gap longer than the cache lifetime, a tool-set
//! change, a context edit, a move to another branch); it is *unexpected* when nothing in the
//! session explains it — the prefix changed under unchanged messages. Aborted requests are not
//! judged, and a prompt under the model's cache minimum is reported as such, not as a break.

use std::collections::HashSet;

use serde::Serialize;
use strata_provider::{CacheDiagnosis, Catalog, DiagnosedChange};
use strata_session::{AgentMessage, Entry, EntryKind, Role, Tree};

use crate::record::{RequestKind, RequestRecord};

/// The cache minimum assumed for a model the capability table does not know.
pub const MIN_CACHEABLE: u64 = 1024;

const FIVE_MINUTES_MS: i64 = 5 * 60 * 1000;
const ONE_HOUR_MS: i64 = 60 * 60 * 1000;

/// Why a request did not read the prefix the previous request cached.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "cause", rename_all = "snake_case")]
pub enum BreakCause {
    /// A compaction replaced the history with its summary (or this is its summary request).
    Compaction {
        /// The compaction entry.
        entry: String,
    },
    /// The conversation moved to another branch with a summary of the one left.
    BranchSummary {
        /// The branch-summary entry.
        entry: String,
    },
    /// The request went to another model, which shares no cache with the one before.
    ModelSwitch {
        /// `provider/model` before.
        from: String,
        /// `provider/model` now.
        to: String,
    },
    /// The session was idle longer than the cache lifetime.
    TtlExpiry {
        /// Seconds between the two requests.
        idle_secs: u64,
        /// The lifetime the cache was written with.
        ttl_secs: u64,
    },
    /// Tools were added or removed (the change was priced when it was made).
    ToolChange {
        /// The entry that changed the tool set.
        entry: String,
    },
    /// A context edit replaced or dropped an earlier message.
    ContextEdit {
        /// The message edited (the prefix changes from there).
        target: String,
    },
    /// The conversation moved to another branch without a summary.
    BranchSwitch {
        /// The last entry both branches share (`None`: they share none).
        fork: Option<String>,
    },
    /// Nothing in the session explains it: the prompt's bytes changed under unchanged messages.
    ChangedPrefix {
        /// The last entry the previous request saw: the change is at or before it.
        through: Option<String>,
        /// Byte offset of the first difference, where the renderer reported it (live only).
        byte: Option<u64>,
        /// The chapter (`tools`, `system`, `messages`) holding that byte (live only).
        chapter: Option<String>,
    },
}

impl BreakCause {
    /// Whether the session explains the break (everything but a changed prefix).
    pub fn is_expected(&self) -> bool {
        !matches!(self, Self::ChangedPrefix { .. })
    }

    /// A few words for a footer: `compaction`, `model switch`, `prefix changed in system`.
    pub fn short(&self) -> String {
        match self {
            Self::Compaction { .. } => "compaction".into(),
            Self::BranchSummary { .. } => "branch summary".into(),
            Self::ModelSwitch { .. } => "new model".into(),
            Self::TtlExpiry { .. } => "cache expired".into(),
            Self::ToolChange { .. } => "tool change".into(),
            Self::ContextEdit { .. } => "context edit".into(),
            Self::BranchSwitch { .. } => "branch switch".into(),
            Self::ChangedPrefix {
                chapter: Some(chapter),
                ..
            } => format!("prefix changed in {chapter}"),
            Self::ChangedPrefix { .. } => "prefix changed".into(),
        }
    }

    /// One sentence saying why, naming the entry, model, gap or byte.
    pub fn describe(&self) -> String {
        match self {
            Self::Compaction { entry } => {
                format!("compaction {entry} replaced the history with its summary")
            }
            Self::BranchSummary { entry } => {
                format!("branch summary {entry}: the conversation moved to another branch")
            }
            Self::ModelSwitch { from, to } => {
                format!("model switch {from} → {to}: each model has its own cache")
            }
            Self::TtlExpiry {
                idle_secs,
                ttl_secs,
            } => format!(
                "idle {} — longer than the cache lifetime of {}",
                duration(*idle_secs),
                duration(*ttl_secs)
            ),
            Self::ToolChange { entry } => {
                format!("the tool set changed at {entry} (priced when it was made)")
            }
            Self::ContextEdit { target } => {
                format!("a context edit rewrote message {target} and everything after it")
            }
            Self::BranchSwitch { fork: Some(fork) } => {
                format!("moved to another branch, which leaves this one after {fork}")
            }
            Self::BranchSwitch { fork: None } => {
                "moved to another branch sharing no entry with this one".into()
            }
            Self::ChangedPrefix {
                byte: Some(byte),
                chapter,
                ..
            } => format!(
                "unexpected: the prompt changed at byte {byte}{}",
                chapter
                    .as_ref()
                    .map(|c| format!(" (in the {c} chapter)"))
                    .unwrap_or_default()
            ),
            Self::ChangedPrefix {
                through: Some(through),
                ..
            } => format!(
                "unexpected: the prompt changed at or before {through}, though the session's messages did not"
            ),
            Self::ChangedPrefix { .. } => {
                "unexpected: the prompt changed though the session's messages did not".into()
            }
        }
    }
}

fn duration(secs: u64) -> String {
    match secs {
        0..120 => format!("{secs} s"),
        120..7200 => format!("{} min", secs / 60),
        _ => format!("{:.1} h", secs as f64 / 3600.0),
    }
}

/// A request that read less than half of what the previous request's prompt held.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CacheBreak {
    /// 1-based request number.
    pub request: usize,
    /// Its label (entry id and kind).
    pub id: String,
    /// Tokens the previous prompt held.
    pub previous_prompt: u64,
    /// Tokens this request read from cache.
    pub cache_read: u64,
    /// Why.
    pub cause: BreakCause,
    /// What the provider itself said about this request, where the row asked it.
    pub provider: Option<CacheDiagnosis>,
}

/// A request where the provider's own cache diagnosis and strata's classification disagree:
/// one of them has a bug.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Disagreement {
    /// 1-based request number.
    pub request: usize,
    /// Its label.
    pub id: String,
    /// What strata concluded (a break's cause, or that the request read the prefix).
    pub strata: String,
    /// What the provider reported.
    pub provider: String,
}

impl Disagreement {
    /// One sentence for `strata stats`.
    pub fn describe(&self) -> String {
        format!(
            "request {} ({}): strata says {}, the provider says {}",
            self.request, self.id, self.strata, self.provider
        )
    }
}

/// Whether the provider's diagnosis `provider` can describe the same break as `cause`.
fn agrees(cause: &BreakCause, provider: &CacheDiagnosis) -> bool {
    use DiagnosedChange as D;
    let change = provider.change();
    let in_prompt = matches!(
        change,
        Some(D::Tools | D::System | D::Messages | D::SystemOrMessages)
    );
    match cause {
        BreakCause::ModelSwitch { .. } => change == Some(D::Model),
        // A tool change that broke the cache was folded into the first two chapters.
        BreakCause::ToolChange { .. } => {
            matches!(change, Some(D::Tools | D::System | D::SystemOrMessages))
        }
        BreakCause::Compaction { .. } => in_prompt,
        BreakCause::BranchSummary { .. }
        | BreakCause::BranchSwitch { .. }
        | BreakCause::ContextEdit { .. } => {
            matches!(change, Some(D::Messages | D::SystemOrMessages))
        }
        // The prefix was the same; it had expired. A provider that compared it says so by
        // naming no change.
        BreakCause::TtlExpiry { .. } => change.is_none(),
        BreakCause::ChangedPrefix { chapter, .. } => match (chapter.as_deref(), change) {
            (Some("tools"), Some(D::Tools)) => true,
            (Some("system"), Some(D::System | D::SystemOrMessages)) => true,
            (Some("messages"), Some(D::Messages | D::SystemOrMessages)) => true,
            (None, _) => in_prompt,
            _ => false,
        },
    }
}

/// A request whose prompt was under its model's cache minimum: nothing could be cached, so
/// reading nothing is no break.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BelowMinimum {
    /// 1-based request number.
    pub request: usize,
    /// Its label.
    pub id: String,
    /// Its prompt tokens.
    pub prompt: u64,
    /// The model's cache minimum.
    pub minimum: u64,
}

/// Every request of a session judged for the cache.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct CacheReport {
    /// Requests that read much less than the previous prompt held, each with its cause.
    pub breaks: Vec<CacheBreak>,
    /// Requests too small to be cached.
    pub below_minimum: Vec<BelowMinimum>,
    /// 1-based numbers of aborted or failed requests, which are not judged.
    pub aborted: Vec<usize>,
    /// Requests where the provider's diagnosis contradicts strata's classification.
    pub disagreements: Vec<Disagreement>,
}

impl CacheReport {
    /// Breaks the session does not explain.
    pub fn unexpected(&self) -> impl Iterator<Item = &CacheBreak> {
        self.breaks.iter().filter(|b| !b.cause.is_expected())
    }

    /// Breaks the session explains.
    pub fn expected(&self) -> impl Iterator<Item = &CacheBreak> {
        self.breaks.iter().filter(|b| b.cause.is_expected())
    }

    /// The break at 1-based request `request`, if any.
    pub fn break_at(&self, request: usize) -> Option<&CacheBreak> {
        self.breaks.iter().find(|b| b.request == request)
    }
}

/// The prompt size under which `provider/model` caches nothing, per the capability table
/// ([`MIN_CACHEABLE`] for a model it does not know, 0 for a row that caches nothing at all).
pub fn cache_minimum(catalog: &Catalog, provider: &str, model: &str) -> u64 {
    if catalog.model(provider, model).is_none() {
        return MIN_CACHEABLE;
    }
    u64::from(catalog.capabilities(provider, model).min_cacheable_tokens)
}

/// Judges every request of `records` (read from `tree`, in file order) for the cache:
/// a request reading less than half of the previous non-aborted request's prompt, when that
/// prompt was at least its model's minimum, is a break, with the cause the tree shows.
/// Without a tree (a log that is not a session) only model switches and idle gaps explain.
pub fn cache_report(
    tree: Option<&Tree>,
    records: &[RequestRecord],
    catalog: &Catalog,
) -> CacheReport {
    let mut report = CacheReport::default();
    let mut previous: Option<(&RequestRecord, String, u64)> = None;
    // The model a summary request (which records none) went to: the conversation's.
    let mut current_model = (String::new(), String::new());
    let mut hour_writes = false;
    for (index, record) in records.iter().enumerate() {
        let number = index + 1;
        if record.aborted {
            report.aborted.push(number);
            continue;
        }
        if !record.model.is_empty() {
            current_model = (record.provider.clone(), record.model.clone());
        }
        let qualified = format!("{}/{}", current_model.0, current_model.1);
        let minimum = cache_minimum(catalog, &current_model.0, &current_model.1);
        let prompt = record.usage.prompt_tokens();
        if prompt > 0
            && prompt < minimum
            && record.usage.cache_read == 0
            && record.usage.cache_write() == 0
        {
            report.below_minimum.push(BelowMinimum {
                request: number,
                id: record.label(),
                prompt,
                minimum,
            });
        }
        if let Some((before, before_model, before_minimum)) = &previous {
            let previous_prompt = before.usage.prompt_tokens();
            if previous_prompt >= (*before_minimum).max(1)
                && record.usage.cache_read * 2 < previous_prompt
            {
                let ttl = if hour_writes {
                    ONE_HOUR_MS
                } else {
                    FIVE_MINUTES_MS
                };
                let cause = cause(tree, before, before_model, record, &qualified, ttl);
                if let Some(provider) = &record.provider_diagnosis
                    && !agrees(&cause, provider)
                {
                    report.disagreements.push(Disagreement {
                        request: number,
                        id: record.label(),
                        strata: cause.describe(),
                        provider: provider.describe(),
                    });
                }
                report.breaks.push(CacheBreak {
                    request: number,
                    id: record.label(),
                    previous_prompt,
                    cache_read: record.usage.cache_read,
                    cause,
                    provider: record.provider_diagnosis.clone(),
                });
            } else if let Some(provider) = &record.provider_diagnosis
                && provider.change().is_some()
                && provider.missed_tokens.unwrap_or(0) * 2 > previous_prompt
            {
                // The provider says most of the prefix was missed, yet it was read.
                report.disagreements.push(Disagreement {
                    request: number,
                    id: record.label(),
                    strata: format!(
                        "the request read {} of the {previous_prompt} tokens the previous prompt held",
                        record.usage.cache_read
                    ),
                    provider: provider.describe(),
                });
            }
        }
        hour_writes |= record.usage.cache_write_1h > 0;
        previous = Some((record, qualified, minimum));
    }
    report
}

fn cause(
    tree: Option<&Tree>,
    before: &RequestRecord,
    before_model: &str,
    record: &RequestRecord,
    model: &str,
    ttl_ms: i64,
) -> BreakCause {
    if before_model != model {
        return BreakCause::ModelSwitch {
            from: before_model.to_owned(),
            to: model.to_owned(),
        };
    }
    match record.kind {
        RequestKind::Compaction => {
            return BreakCause::Compaction {
                entry: record.id.clone(),
            };
        }
        RequestKind::BranchSummary => {
            return BreakCause::BranchSummary {
                entry: record.id.clone(),
            };
        }
        _ => {}
    }
    if let Some(cause) = tree.and_then(|tree| structural_cause(tree, &before.id, &record.id)) {
        return cause;
    }
    if let (Some(then), Some(now)) = (before.timestamp_ms, record.timestamp_ms)
        && now - then > ttl_ms
    {
        return BreakCause::TtlExpiry {
            idle_secs: u64::try_from((now - then) / 1000).unwrap_or(0),
            ttl_secs: u64::try_from(ttl_ms / 1000).unwrap_or(0),
        };
    }
    BreakCause::ChangedPrefix {
        through: Some(before.id.clone()),
        byte: None,
        chapter: None,
    }
}

/// What the entries on the request's path that the previous request did not see say about
/// the prefix: a compaction, a branch summary, a tool change, a context edit, or a fork.
fn structural_cause(tree: &Tree, before: &str, now: &str) -> Option<BreakCause> {
    // The previous request's own entry was not in its prompt: a compaction or branch summary
    // recorded there takes effect from this request on.
    let seen: HashSet<&str> = tree
        .path_to_root(before)
        .into_iter()
        .map(|id| id.as_str())
        .filter(|id| *id != before)
        .collect();
    let path = tree.path_from_root(now);
    let fork = path
        .iter()
        .rev()
        .find(|id| seen.contains(id.as_str()) || id.as_str() == before)
        .map(|id| id.as_str().to_owned());
    let mut found: Option<(u8, BreakCause)> = None;
    let mut keep = |rank: u8, cause: BreakCause| {
        if found.as_ref().is_none_or(|(best, _)| rank < *best) {
            found = Some((rank, cause));
        }
    };
    for id in path.iter().filter(|id| !seen.contains(id.as_str())) {
        let Some(reference) = tree.get(id.as_str()) else {
            continue;
        };
        let entry = id.as_str().to_owned();
        match reference.kind() {
            EntryKind::Compaction => keep(0, BreakCause::Compaction { entry }),
            EntryKind::BranchSummary => keep(1, BreakCause::BranchSummary { entry }),
            EntryKind::System => keep(2, BreakCause::ToolChange { entry }),
            EntryKind::Message(Role::System) => {
                if let Ok(Entry::Message(message)) = reference.entry()
                    && let AgentMessage::System(system) = &*message.message
                    && (system.tools_added.as_ref().is_some_and(|t| !t.is_empty())
                        || system.tools_removed.as_ref().is_some_and(|t| !t.is_empty()))
                {
                    keep(2, BreakCause::ToolChange { entry });
                }
            }
            EntryKind::ContextEdit => {
                let target = match reference.entry() {
                    Ok(Entry::ContextEdit(edit)) => edit
                        .target_id
                        .as_ref()
                        .or(edit.targets.first())
                        .map_or_else(|| entry.clone(), |t| t.as_str().to_owned()),
                    _ => entry,
                };
                keep(3, BreakCause::ContextEdit { target });
            }
            _ => {}
        }
    }
    if let Some((_, cause)) = found {
        return Some(cause);
    }
    (!path.iter().any(|id| id.as_str() == before)).then_some(BreakCause::BranchSwitch { fork })
}
