//! Memory slots at the loop's points: the ingress filter (a tool result before it enters the
//! context), the main compaction strategy (the summary at a compaction), background
//! pre-computation (the next summary, prepared while idle) and forgetting (which finished
//! outputs to mask). Each slot has one owner ([`MemoryPlays::owner`]); a slot nobody claimed
//! keeps strata's built-in policy, and an owner that gives no answer leaves the decision to it.
//!
//! Every effect is an appended Pi entry: a filtered result is the tool's own result followed
//! by a `context_edit` replacing it (the full output stays in the file), a summary is a
//! `compaction` entry (`fromHook: true`), masks are `context_edit`s; each decision is also
//! named in a `custom` entry ([`MEMORY_CUSTOM_TYPE`]) with its slot and owner.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};

use serde_json::{Value, json};
use strata_accounting::{ATTRIBUTION_FIELD, Attribution};
use strata_context::ContextMessage;
use strata_session::{EntryId, PlannedEdit, Replacement, Session, ToolCall};
use strata_tools::ToolOutput;

use super::Agent;
use crate::error::AgentError;

/// The `customType` of the entries naming a memory decision an extension made.
pub const MEMORY_CUSTOM_TYPE: &str = "strata.memory";

/// The slot that rewrites a tool result before it enters the context.
pub const INGRESS_FILTER: &str = "ingress_filter";
/// The slot that writes the summary at a compaction.
pub const COMPACTION: &str = "compaction";
/// The slot that prepares the next summary while the agent is idle.
pub const PRECOMPUTE: &str = "precompute";
/// The slot that chooses which finished outputs to mask.
pub const FORGETTING: &str = "forgetting";

/// Whoever fills the memory slots beside strata's built-in policies (the host's extensions).
pub trait MemoryPlays: Send + Sync {
    /// Gives each slot its first claimant, recording each claim in `session` (appended);
    /// returns the refused claims, each naming the slot's owner. Called once, before the
    /// first request of a run; a second call claims nothing new.
    fn claim(&self, session: &mut Session) -> Vec<String>;

    /// The owner of `slot` now, `None` while strata's built-in policy holds it.
    fn owner(&self, slot: &str) -> Option<String>;

    /// Asks the owner of `slot` (protocol method `memory/<slot>`, `params` as
    /// `docs/extensions.md` gives them); `None`: no owner, no answer in time, or a failure
    /// (the built-in policy decides).
    fn ask<'a>(
        &'a self,
        slot: &'a str,
        params: Value,
    ) -> Pin<Box<dyn Future<Output = Option<Value>> + Send + 'a>>;
}

/// A summary prepared while idle: the messages before `first_kept` summarised, on top of
/// `base` (the previous compaction's summary).
#[derive(Debug, Clone)]
pub(super) struct Precomputed {
    first_kept: EntryId,
    base: Option<String>,
    summary: String,
    owner: String,
    /// Estimated tokens of what it replaces (the summarised messages and `base`).
    replaced_tokens: u64,
}

impl Precomputed {
    /// Whether the summary is smaller than what it replaces (a compaction must shrink the
    /// context, as the built-in one's `NotSmaller` rule says).
    fn worth_taking(&self) -> bool {
        estimate_text_tokens(&self.summary) < self.replaced_tokens
    }
}

/// What the precompute task leaves for the next compaction, and whether it is still at work.
#[derive(Debug, Default)]
pub(super) struct Precompute {
    pending: bool,
    ready: Option<Precomputed>,
    /// Counts the preparations started: only the latest one's answer is kept.
    generation: u64,
}

/// The agent's [`Precompute`], shared with the background task.
pub(super) type PrecomputeCell = Arc<Mutex<Precompute>>;

impl Agent {
    /// Lets `plays` fill the memory slots they claim (`None`: the built-ins fill all).
    pub fn set_memory_plays(&mut self, plays: Option<Arc<dyn MemoryPlays>>) {
        self.memory = plays;
        self.memory_claimed = false;
    }

    /// What memory plays said for the user since the last call (refused claims), oldest
    /// first.
    pub fn take_memory_notices(&mut self) -> Vec<String> {
        std::mem::take(&mut self.memory_notices)
    }

    /// Whether a summary prepared while idle waits for the next compaction.
    pub fn precomputed_summary_ready(&self) -> bool {
        self.precomputed
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .ready
            .is_some()
    }

    /// Whether the precompute slot's owner is still preparing a summary.
    pub fn precompute_pending(&self) -> bool {
        self.precomputed
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .pending
    }

    /// The owner of `slot` now (`None`: strata's built-in policy, or no plays).
    pub fn memory_owner_of(&self, slot: &str) -> Option<String> {
        self.memory.as_ref()?.owner(slot)
    }

    /// The claims, once per agent and plays.
    pub(super) fn claim_memory_slots(&mut self) {
        if self.memory_claimed {
            return;
        }
        let Some(memory) = self.memory.clone() else {
            return;
        };
        self.memory_claimed = true;
        let refused = memory.claim(&mut self.session);
        for notice in &refused {
            tracing::warn!("{notice}");
        }
        self.memory_notices.extend(refused);
    }

    fn memory_owner(&self, slot: &str) -> Option<(Arc<dyn MemoryPlays>, String)> {
        let memory = self.memory.clone()?;
        let owner = memory.owner(slot)?;
        Some((memory, owner))
    }

    /// The ingress filter: the text that enters the context instead of `output`'s, if its
    /// owner rewrote it.
    pub(super) async fn filter_result(
        // `&mut`: a future borrowing the agent shared would need it `Sync`.
        &mut self,
        call: &ToolCall,
        arguments: &Value,
        output: &ToolOutput,
    ) -> Option<(String, String)> {
        let (memory, owner) = self.memory_owner(INGRESS_FILTER)?;
        let params = json!({
            "toolName": call.name,
            "toolInput": arguments,
            "toolUseId": call.id,
            "output": output.text_content(),
            "isError": output.is_error,
        });
        let answer = memory.ask(INGRESS_FILTER, params).await?;
        let text = answer.get("output")?.as_str()?.to_owned();
        (text != output.text_content()).then_some((text, owner))
    }

    /// Replaces the result entry `target` by `text` (a `context_edit`) and names who did it.
    pub(super) fn record_filtered(
        &mut self,
        target: EntryId,
        text: String,
        owner: &str,
    ) -> Result<(), AgentError> {
        // What the model reads instead is written to the cache by the next request.
        let attributed = Attribution::of(
            format!("extension {owner}"),
            &text,
            self.cache_prices().write,
        );
        self.session.append_edit_group(vec![PlannedEdit {
            target_id: target.clone(),
            replacement: Some(Replacement {
                content: Some(Value::String(text)),
                extra: Default::default(),
            }),
        }])?;
        self.record_decision(
            INGRESS_FILTER,
            owner,
            json!({"targets": [target], ATTRIBUTION_FIELD: Attribution::to_value(&[attributed])}),
        )
    }

    fn record_decision(&mut self, slot: &str, owner: &str, data: Value) -> Result<(), AgentError> {
        let mut record = json!({"slot": slot, "owner": owner});
        if let (Some(record), Value::Object(data)) = (record.as_object_mut(), data) {
            record.extend(data);
        }
        self.session
            .append_custom(MEMORY_CUSTOM_TYPE, Some(record))?;
        Ok(())
    }

    /// Forgetting: when an extension owns the slot, it chooses among the finished tool
    /// results (never the current task's) and each chosen one becomes its stub. `Some(n)`:
    /// the owner decided (n results masked); `None`: the built-in policy decides.
    pub(super) async fn forget_by_owner(&mut self) -> Result<Option<usize>, AgentError> {
        let Some((memory, owner)) = self.memory_owner(FORGETTING) else {
            return Ok(None);
        };
        let entries = strata_compaction::mask_entries(self.context()?);
        // The current task (from the last user prompt on) is never offered.
        let current = entries
            .iter()
            .rposition(|e| e.kind == strata_compaction::MaskEntryKind::UserPrompt)
            .unwrap_or(0);
        let candidates: Vec<Value> = entries
            .iter()
            .take(current)
            .filter_map(|entry| match &entry.kind {
                strata_compaction::MaskEntryKind::ToolResult { tool, call, .. } => Some(json!({
                    "id": entry.id,
                    "toolName": tool,
                    "call": call,
                    "tokens": entry.tokens,
                })),
                _ => None,
            })
            .collect();
        if candidates.is_empty() {
            return Ok(Some(0));
        }
        let Some(answer) = memory
            .ask(FORGETTING, json!({"candidates": candidates}))
            .await
        else {
            return Ok(None);
        };
        let offered: Vec<&str> = candidates
            .iter()
            .filter_map(|c| c.get("id").and_then(Value::as_str))
            .collect();
        let mut edits = Vec::new();
        for chosen in answer
            .get("mask")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let (Some(id), Some(stub)) = (
                chosen.get("id").and_then(Value::as_str),
                chosen.get("stub").and_then(Value::as_str),
            ) else {
                continue;
            };
            // Only what was offered: an owner cannot reach into the current task.
            if !offered.contains(&id) || edits.iter().any(|e: &PlannedEdit| e.target_id == id) {
                continue;
            }
            edits.push(PlannedEdit {
                target_id: EntryId::from(id),
                replacement: Some(Replacement {
                    content: Some(Value::String(stub.to_owned())),
                    extra: Default::default(),
                }),
            });
        }
        if edits.is_empty() {
            return Ok(Some(0));
        }
        let targets: Vec<EntryId> = edits.iter().map(|e| e.target_id.clone()).collect();
        let count = edits.len();
        // The stubs are what the next request writes to the cache in their place.
        let stubs: String = edits
            .iter()
            .filter_map(|e| e.replacement.as_ref()?.content.as_ref()?.as_str())
            .collect();
        let attributed = Attribution::of(
            format!("extension {owner}"),
            &stubs,
            self.cache_prices().write,
        );
        self.session.append_edit_group(edits)?;
        self.record_decision(
            FORGETTING,
            &owner,
            json!({"targets": targets, ATTRIBUTION_FIELD: Attribution::to_value(&[attributed])}),
        )?;
        Ok(Some(count))
    }

    /// The summary for `preparation` from the memory slots: a pre-computed one whose cut is
    /// on this path (it keeps from its own cut), else the compaction owner's. `None`: the
    /// built-in summariser writes it.
    pub(super) async fn summary_by_owner(
        &mut self,
        preparation: &strata_compaction::Preparation,
    ) -> Option<(String, EntryId, String, &'static str)> {
        let ready = self
            .precomputed
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .ready
            .clone();
        if let Some(ready) = ready
            && ready.base == preparation.previous_summary
            && self.cut_is_usable(&ready.first_kept, &preparation.first_kept_entry_id)
            && ready.worth_taking()
        {
            self.discard_precomputed();
            return Some((ready.summary, ready.first_kept, ready.owner, PRECOMPUTE));
        }
        // One that does not fit this compaction stays: a threshold compaction that writes
        // nothing (its summary would not be smaller) leaves the next one free to take it.
        let (memory, owner) = self.memory_owner(COMPACTION)?;
        let answer = memory
            .ask(COMPACTION, compaction_params(preparation))
            .await?;
        let summary = answer.get("summary")?.as_str()?.trim().to_owned();
        (!summary.is_empty()).then(|| {
            (
                summary,
                preparation.first_kept_entry_id.clone(),
                owner,
                COMPACTION,
            )
        })
    }

    /// Whether `id` is on the path to the leaf.
    fn on_path(&self, id: &EntryId) -> bool {
        self.session
            .leaf()
            .is_some_and(|leaf| self.session.tree().path_from_root(leaf).contains(&id))
    }

    /// Whether a pre-computed cut at `cut` can stand for one at `wanted`: both on the path to
    /// the leaf, `cut` not after `wanted` (it keeps as much or more).
    fn cut_is_usable(&self, cut: &EntryId, wanted: &EntryId) -> bool {
        let Some(leaf) = self.session.leaf() else {
            return false;
        };
        let path = self.session.tree().path_from_root(leaf);
        let at = |id: &EntryId| path.iter().position(|p| *p == id);
        matches!((at(cut), at(wanted)), (Some(a), Some(b)) if a <= b)
    }

    /// A compaction written from the memory slots' summary, if they give one (after
    /// `CompactionStart`; emits `CompactionEnd`).
    pub(super) async fn compact_by_owner(
        &mut self,
        preparation: &strata_compaction::Preparation,
    ) -> Result<Option<EntryId>, AgentError> {
        let Some(owned) = self.summary_by_owner(preparation).await else {
            return Ok(None);
        };
        let id = self.append_owned_compaction(preparation, owned)?;
        // As after the built-in's: the next request rewrites the messages chapter.
        self.last_sent = None;
        self.requests_since_compaction = 0;
        self.epoch_start_tokens = None;
        self.emit(crate::event::AgentEvent::CompactionEnd {
            entry_id: Some(id.clone()),
            tokens_before: preparation.tokens_before,
            usage: None,
            cost: None,
            error: None,
        });
        Ok(Some(id))
    }

    /// Writes the compaction an owner's summary makes (a Pi `compaction` entry marked
    /// `fromHook`, the file lists appended as the built-in does) and names the owner.
    pub(super) fn append_owned_compaction(
        &mut self,
        preparation: &strata_compaction::Preparation,
        (summary, first_kept, owner, slot): (String, EntryId, String, &'static str),
    ) -> Result<EntryId, AgentError> {
        let details = preparation.file_lists();
        let result = strata_compaction::CompactionResult {
            summary: format!("{summary}{}", details.tags()),
            first_kept_entry_id: first_kept,
            tokens_before: preparation.tokens_before,
            details,
            usage: Default::default(),
            cost: Default::default(),
            mode: strata_compaction::SummaryMode::Transcript,
        };
        let mut entry = strata_compaction::compaction_entry(&result, self.context()?);
        entry.from_hook = Some(true);
        let id = self.session.append_compaction(entry)?;
        self.record_decision(slot, &owner, json!({"compaction": id}))?;
        Ok(id)
    }

    /// Forgetting before a request: the owner's choice when an extension holds the slot,
    /// else the built-in masking and folding ([`Agent::mask_if_due`]).
    pub(super) async fn forget_if_due(
        &mut self,
        rewritten_anyway: bool,
    ) -> Result<usize, AgentError> {
        match self.forget_by_owner().await? {
            Some(count) => Ok(count),
            None => self.mask_if_due(rewritten_anyway),
        }
    }

    /// When the agent is idle (a run ended, the session moved to another branch): when an
    /// extension owns pre-computation, it prepares, in the background, the summary a
    /// compaction would write now, replacing what it prepared before (the agent is free
    /// meanwhile; a compaction that comes before it is ready does not wait for it).
    pub(super) fn precompute_while_idle(&mut self) {
        self.precompute(true);
    }

    /// Before a request of a run: when nothing is prepared for the next compaction (or being
    /// prepared), the owner prepares it while the model answers. Its cut is the one a
    /// compaction would make now; the compaction that comes later cuts at or after it, so it
    /// fits, keeping the messages in between as well.
    pub(super) fn precompute_during_run(&mut self) {
        self.precompute(false);
    }

    fn precompute(&mut self, refresh: bool) {
        let Some((memory, owner)) = self.memory_owner(PRECOMPUTE) else {
            return;
        };
        if !refresh && self.precompute_pending() {
            return;
        }
        let Some(leaf) = self.session.leaf().cloned() else {
            return;
        };
        let settings = self.compaction_settings();
        let Ok(Some(preparation)) =
            strata_compaction::prepare(self.session.tree(), &leaf, &settings)
        else {
            return;
        };
        if preparation.messages_to_summarize.is_empty() {
            return;
        }
        let ready = self
            .precomputed
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .ready
            .clone();
        // Not again for the same messages (the same answer would come); during a run, not
        // while the one at hand is of use (on this path, smaller than what it replaces).
        if let Some(ready) = ready
            && self.on_path(&ready.first_kept)
            && ((ready.first_kept == preparation.first_kept_entry_id
                && ready.base == preparation.previous_summary)
                || (!refresh && ready.worth_taking()))
        {
            return;
        }
        let params = compaction_params(&preparation);
        let cell = Arc::clone(&self.precomputed);
        let generation = {
            let mut state = cell.lock().unwrap_or_else(PoisonError::into_inner);
            state.generation += 1;
            state.pending = true;
            state.generation
        };
        tokio::spawn(async move {
            let summary = memory
                .ask(PRECOMPUTE, params)
                .await
                .and_then(|answer| answer.get("summary")?.as_str().map(str::to_owned))
                .filter(|s| !s.trim().is_empty());
            let mut state = cell.lock().unwrap_or_else(PoisonError::into_inner);
            // A later preparation (the path moved on meanwhile) owns the cell.
            if state.generation != generation {
                return;
            }
            state.pending = false;
            if let Some(summary) = summary {
                state.ready = Some(Precomputed {
                    first_kept: preparation.first_kept_entry_id.clone(),
                    base: preparation.previous_summary.clone(),
                    summary: summary.trim().to_owned(),
                    owner,
                    replaced_tokens: preparation.replaced_tokens(),
                });
            }
        });
    }

    /// At a threshold compaction with nothing usable prepared: when an extension owns
    /// pre-computation and the context still fits below the window limit, the compaction
    /// waits for no model — the owner starts preparing it now, while the next request goes
    /// out with the context as it is, and a later check takes the prepared summary. `true`:
    /// deferred. Past the window limit the compaction is made now, as without the slot.
    pub(super) fn defer_to_precompute(
        &mut self,
        preparation: &strata_compaction::Preparation,
    ) -> bool {
        if self.memory_owner(PRECOMPUTE).is_none() {
            return false;
        }
        // The window limit (window − reserve), whatever trigger the settings choose.
        let limit = self
            .config
            .model
            .context_window
            .saturating_sub(self.compaction_settings().reserve_tokens);
        if preparation.tokens_before > limit {
            return false;
        }
        let usable = self
            .precomputed
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .ready
            .clone()
            .is_some_and(|ready| {
                ready.base == preparation.previous_summary
                    && ready.worth_taking()
                    && self.cut_is_usable(&ready.first_kept, &preparation.first_kept_entry_id)
            });
        if usable {
            return false;
        }
        self.precompute(false);
        true
    }

    /// Forgets a prepared summary: it was taken, or a compaction changed what it builds on.
    pub(super) fn discard_precomputed(&self) {
        self.precomputed
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .ready = None;
    }
}

/// Tokens of `text` as the compaction estimates them (characters / 4).
fn estimate_text_tokens(text: &str) -> u64 {
    (text.encode_utf16().count() as u64).div_ceil(4)
}

/// `memory/compaction` and `memory/precompute` params: the messages the summary covers (Pi's
/// message shapes), the previous summary, the file lists and the first kept entry.
fn compaction_params(preparation: &strata_compaction::Preparation) -> Value {
    let messages: Vec<&ContextMessage> = preparation
        .messages_to_summarize
        .iter()
        .chain(&preparation.turn_prefix)
        .collect();
    let lists = preparation.file_lists();
    json!({
        "messages": messages,
        "previousSummary": preparation.previous_summary,
        "readFiles": lists.read_files,
        "modifiedFiles": lists.modified_files,
        "firstKeptEntryId": preparation.first_kept_entry_id,
        "tokensBefore": preparation.tokens_before,
    })
}
