//! Running a compaction: the summary requests (concurrent for a split turn), checks on the
//! answers, and the entry that records the result.

use serde_json::{Value, json};
use strata_accounting::session_usage;
use strata_context::{Context, SnapshotSource};
use strata_provider::{
    ContentBlock, Cost, Model, Provider, Request, StopReason, StreamOptions, Usage,
};
use strata_session::{CompactionEntry, EntryBase, EntryId, Extra, SystemMessage, ToolDefinition};

use crate::error::CompactionError;
use crate::estimate::js_len;
use crate::files::FileLists;
use crate::prepare::Preparation;
use crate::prompt::{NO_PRIOR_HISTORY, SPLIT_TURN_SEPARATOR, split_turn_parts};
use crate::request::{SummaryPart, cache_friendly_request, transcript_request};
use crate::settings::{CompactionSettings, SummaryMode};

/// Field of a compaction or branch summary entry holding the summary requests' usage
/// (Pi's `Usage` shape with its `cost`); Pi ignores it.
pub use strata_accounting::USAGE_FIELD;
/// Field naming the summary form used (`cache_friendly` or `transcript`).
pub const SUMMARY_MODE_FIELD: &str = "summaryMode";

/// A finished compaction, ready to be written as an entry.
#[derive(Debug, Clone, PartialEq)]
pub struct CompactionResult {
    /// The summary, with the `<read-files>` / `<modified-files>` tags appended.
    pub summary: String,
    /// The first entry kept after the summary.
    pub first_kept_entry_id: EntryId,
    /// Estimated context tokens before compaction.
    pub tokens_before: u64,
    /// Accumulated file lists (`details`).
    pub details: FileLists,
    /// Tokens the summary requests used, both summed for a split turn.
    pub usage: Usage,
    /// What they cost.
    pub cost: Cost,
    /// The form the requests took.
    pub mode: SummaryMode,
}

/// One summary answer.
struct Summary {
    text: String,
    usage: Usage,
    cost: Cost,
}

/// A compaction that failed, with what its completed summary requests used: they were billed
/// even though no entry is written, so the caller records them.
#[derive(Debug, thiserror::Error)]
#[error("{error}")]
pub struct CompactionFailure {
    /// Why it failed.
    pub error: CompactionError,
    /// Tokens the summary requests that completed used (zero when none did).
    pub usage: Usage,
    /// What they cost.
    pub cost: Cost,
}

impl CompactionFailure {
    /// Whether any summary request completed (and was billed) before the failure.
    pub fn spent(&self) -> bool {
        self.usage.total_tokens() > 0
    }

    /// Whether the provider refused a summary request as too long for the window.
    pub fn is_context_overflow(&self) -> bool {
        matches!(
            &self.error,
            CompactionError::Provider { source, .. } if crate::settings::is_context_overflow(source)
        )
    }

    fn plus(mut self, usage: Usage, cost: Cost) -> Self {
        self.usage += usage;
        self.cost += cost;
        self
    }
}

impl From<CompactionError> for CompactionFailure {
    fn from(error: CompactionError) -> Self {
        Self {
            error,
            usage: Usage::default(),
            cost: Cost::default(),
        }
    }
}

/// Compacts with the session's model: see [`compact_with_focus`].
pub async fn compact(
    provider: &dyn Provider,
    model: &Model,
    main_request: &Request,
    preparation: &Preparation,
    settings: &CompactionSettings,
    options: &StreamOptions,
) -> Result<CompactionResult, CompactionError> {
    compact_with_focus(
        provider,
        model,
        main_request,
        preparation,
        settings,
        options,
        None,
    )
    .await
}

/// [`compact_accounted`] for callers that do not record the usage of a failed compaction.
pub async fn compact_with_focus(
    provider: &dyn Provider,
    model: &Model,
    main_request: &Request,
    preparation: &Preparation,
    settings: &CompactionSettings,
    options: &StreamOptions,
    focus: Option<&str>,
) -> Result<CompactionResult, CompactionError> {
    compact_accounted(
        provider,
        model,
        main_request,
        preparation,
        settings,
        options,
        focus,
    )
    .await
    .map_err(|failure| failure.error)
}

/// Makes the summary for `preparation` (with `focus` appended as Pi's `/compact <text>`). A
/// split turn is one cache-friendly request answered in two parts, or a history and a
/// turn-prefix transcript request sent together; either way merged in Pi's format.
///
/// `settings.summary_mode` picks the form (resolve it per provider with
/// [`crate::resolve_summary_mode`]); the cache-friendly form falls back to the transcript when
/// `model` is not the one `main_request` goes to (another model cannot read the session's
/// cache), and when the provider refuses it as too long (it is the session's whole request
/// plus an instruction; the transcript leaves out the kept tail, tools and system). A summary
/// cut at the output cap, one without text, or one not smaller than what it replaces is an
/// error. A failure carries the usage of the requests that completed before it.
pub async fn compact_accounted(
    provider: &dyn Provider,
    model: &Model,
    main_request: &Request,
    preparation: &Preparation,
    settings: &CompactionSettings,
    options: &StreamOptions,
    focus: Option<&str>,
) -> Result<CompactionResult, CompactionFailure> {
    let wanted = match settings.summary_mode {
        SummaryMode::CacheFriendly if model.id == main_request.model => SummaryMode::CacheFriendly,
        _ => SummaryMode::Transcript,
    };
    let ask = |mode| {
        summarize_in(
            mode,
            provider,
            model,
            main_request,
            preparation,
            settings,
            options,
            focus,
        )
    };
    let (summary, mode) = match ask(wanted).await {
        Ok(summary) => (summary, wanted),
        Err(failure) if wanted == SummaryMode::CacheFriendly && failure.is_context_overflow() => {
            match ask(SummaryMode::Transcript).await {
                Ok(summary) => (
                    Summary {
                        usage: summary.usage + failure.usage,
                        cost: summary.cost + failure.cost,
                        ..summary
                    },
                    SummaryMode::Transcript,
                ),
                Err(again) => return Err(again.plus(failure.usage, failure.cost)),
            }
        }
        Err(failure) => return Err(failure),
    };

    let summary_tokens = js_len(&summary.text).div_ceil(4);
    let replaced_tokens = preparation.replaced_tokens();
    if summary_tokens >= replaced_tokens {
        return Err(CompactionFailure {
            error: CompactionError::NotSmaller {
                summary_tokens,
                replaced_tokens,
            },
            usage: summary.usage,
            cost: summary.cost,
        });
    }
    let details = preparation.file_lists();
    Ok(CompactionResult {
        summary: format!("{}{}", summary.text, details.tags()),
        first_kept_entry_id: preparation.first_kept_entry_id.clone(),
        tokens_before: preparation.tokens_before,
        details,
        usage: summary.usage,
        cost: summary.cost,
        mode,
    })
}

/// The summary (merged for a split turn) made with requests of one form.
#[expect(
    clippy::too_many_arguments,
    reason = "the inputs of one compaction, passed through"
)]
async fn summarize_in(
    mode: SummaryMode,
    provider: &dyn Provider,
    model: &Model,
    main_request: &Request,
    preparation: &Preparation,
    settings: &CompactionSettings,
    options: &StreamOptions,
    focus: Option<&str>,
) -> Result<Summary, CompactionFailure> {
    let build = |part: SummaryPart, max_tokens: u32| {
        let mut request = match mode {
            SummaryMode::CacheFriendly => {
                cache_friendly_request(main_request, preparation, part, focus, max_tokens)
            }
            SummaryMode::Transcript => {
                transcript_request(main_request, preparation, part, focus, max_tokens)
            }
        };
        request.model.clone_from(&model.id);
        if !model.reasoning {
            request.thinking = strata_provider::ThinkingLevel::Off;
        }
        request
    };
    let history_request = (!preparation.messages_to_summarize.is_empty())
        .then(|| build(SummaryPart::History, settings.history_max_tokens()));
    if !preparation.is_split_turn || preparation.turn_prefix.is_empty() {
        let request = history_request
            .unwrap_or_else(|| build(SummaryPart::History, settings.history_max_tokens()));
        return summarize(provider, model, &request, options, SummaryPart::History).await;
    }
    if mode == SummaryMode::CacheFriendly && history_request.is_some() {
        // The session's request already holds the history and the turn: one answer with both
        // parts reads its cached prefix once instead of twice.
        let cap = settings
            .history_max_tokens()
            .saturating_add(settings.turn_prefix_max_tokens());
        let request = build(SummaryPart::SplitTurn, cap);
        let summary = summarize(provider, model, &request, options, SummaryPart::SplitTurn).await?;
        let text = match split_turn_parts(&summary.text) {
            Some((history, prefix)) => format!("{history}{SPLIT_TURN_SEPARATOR}{prefix}"),
            // Without the marker the answer still summarises everything asked: keep it whole.
            None => summary.text,
        };
        return Ok(Summary { text, ..summary });
    }
    let prefix_request = build(SummaryPart::TurnPrefix, settings.turn_prefix_max_tokens());
    let history = async {
        match &history_request {
            Some(request) => {
                summarize(provider, model, request, options, SummaryPart::History).await
            }
            None => Ok(Summary {
                text: NO_PRIOR_HISTORY.to_owned(),
                usage: Usage::default(),
                cost: Cost::default(),
            }),
        }
    };
    let prefix = summarize(
        provider,
        model,
        &prefix_request,
        options,
        SummaryPart::TurnPrefix,
    );
    // Both run to the end even when one fails: a finished request is billed and recorded.
    match futures::future::join(history, prefix).await {
        (Ok(history), Ok(prefix)) => Ok(Summary {
            text: format!("{}{SPLIT_TURN_SEPARATOR}{}", history.text, prefix.text),
            usage: history.usage + prefix.usage,
            cost: history.cost + prefix.cost,
        }),
        (Err(failure), Ok(other)) | (Ok(other), Err(failure)) => {
            Err(failure.plus(other.usage, other.cost))
        }
        (Err(failure), Err(other)) => Err(failure.plus(other.usage, other.cost)),
    }
}

/// Sends one summary request and checks the answer; a refused answer still carries its usage.
pub(crate) async fn summarize_once(
    provider: &dyn Provider,
    model: &Model,
    request: &Request,
    options: &StreamOptions,
    part: &'static str,
) -> Result<(String, Usage, Cost), CompactionFailure> {
    let completion = provider
        .complete(model, request, options)
        .await
        .map_err(|source| CompactionError::Provider { part, source })?;
    let refused = |error| CompactionFailure {
        error,
        usage: completion.usage,
        cost: completion.cost,
    };
    if completion.stop_reason == StopReason::MaxTokens {
        return Err(refused(CompactionError::Truncated {
            part,
            max_tokens: request.max_tokens.unwrap_or_default(),
        }));
    }
    let text: Vec<&str> = completion
        .message
        .content
        .iter()
        .filter_map(|block| match block {
            ContentBlock::Text { text, .. } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    let text = text.join("\n");
    if text.trim().is_empty() {
        return Err(refused(CompactionError::EmptySummary {
            part,
            stop_reason: format!("{:?}", completion.stop_reason),
        }));
    }
    Ok((text, completion.usage, completion.cost))
}

async fn summarize(
    provider: &dyn Provider,
    model: &Model,
    request: &Request,
    options: &StreamOptions,
    part: SummaryPart,
) -> Result<Summary, CompactionFailure> {
    let (text, usage, cost) =
        summarize_once(provider, model, request, options, part.name()).await?;
    Ok(Summary { text, usage, cost })
}

/// The extra field recording a summary's form on its entry (Pi ignores it).
pub(crate) fn summary_mode_fields(mode: Option<SummaryMode>) -> Extra {
    let mut extra = Extra::new();
    if let Some(mode) = mode {
        extra.insert(
            SUMMARY_MODE_FIELD.to_owned(),
            serde_json::to_value(mode).unwrap_or(Value::Null),
        );
    }
    extra
}

/// The `compaction` entry for `result`, with Pi 1.x's checkpoint (`systemMessage`: the
/// folded system sections and the live tool set of `context`, the context at the leaf being
/// compacted; omitted when the chain has neither, as in a Pi session without system
/// messages), and the summary requests' usage in its `usage` field. Append it with
/// `Session::append_compaction`.
pub fn compaction_entry(result: &CompactionResult, context: &Context) -> CompactionEntry {
    // In strata's prompt order, which Pi renders them in; a section a patch removed is empty
    // and left out.
    let sections: Vec<(String, String)> = context
        .system
        .folded()
        .into_iter()
        .filter(|(_, text)| !text.is_empty())
        .map(|(name, text)| (name.as_str().to_owned(), text))
        .collect();
    let tools: Vec<ToolDefinition> = context
        .tools
        .live()
        // Ledger definitions are serialized `ToolDefinition`s, so they always read back.
        .filter_map(|tool| serde_json::from_value(tool.definition.clone()).ok())
        .collect();
    // A chain with no system prompt or tools of its own (a Pi session) gets no snapshot, so
    // the entry says nothing it does not know.
    let snapshot = context.system.source != SnapshotSource::None || !context.tools.is_empty();
    let timestamp = strata_session::parse_iso_millis(&strata_session::now_iso()).unwrap_or(0);
    let system_message = snapshot.then(|| {
        let sections: Vec<(String, Option<String>)> = sections
            .into_iter()
            .map(|(name, text)| (name, Some(text)))
            .collect();
        SystemMessage::new(sections, tools, Vec::new(), timestamp)
    });
    CompactionEntry {
        base: EntryBase::pending(),
        summary: result.summary.clone(),
        first_kept_entry_id: Some(result.first_kept_entry_id.clone()),
        tokens_before: result.tokens_before,
        details: Some(result.details.to_details()),
        from_hook: None,
        usage: Some(session_usage(&result.usage, &result.cost)),
        system_message,
        system: None,
        tools: None,
        extra: summary_mode_fields(Some(result.mode)),
    }
}

/// The summary usage recorded on a compaction or branch summary entry (Pi 1.x's `usage`
/// field, which strata wrote under the same name before), for session totals.
pub fn recorded_usage(entry: &strata_session::Entry) -> Option<strata_session::Usage> {
    match entry {
        strata_session::Entry::Compaction(compaction) => compaction.usage.clone(),
        strata_session::Entry::BranchSummary(summary) => summary.usage.clone(),
        _ => None,
    }
}

pub use strata_accounting::USAGE_CUSTOM_TYPE;

/// The `data` of a [`USAGE_CUSTOM_TYPE`] entry: `{kind, usage}` with `kind` such as
/// `"compaction"` or `"branch_summary"` and `usage` in Pi's shape (cost included).
pub fn usage_record(kind: &str, usage: &Usage, cost: &Cost) -> Value {
    json!({
        "kind": kind,
        "usage": serde_json::to_value(session_usage(usage, cost)).unwrap_or(Value::Null),
    })
}
