//! When and how the agent shrinks its context: the compaction triggers (window, cost), observation
//! masking and task folding, the summary request, and what it records.

use super::*;

impl Agent {
    /// Compacts when the context is past the trigger (window − reserve, or the percentage), or
    /// earlier when the cost trigger is chosen and says so.
    pub(super) async fn compact_if_due(&mut self) -> Result<Option<EntryId>, AgentError> {
        let settings = self.compaction_settings();
        if !settings.enabled {
            return Ok(None);
        }
        let tokens = strata_compaction::estimate_context_tokens(self.context()?);
        if !strata_compaction::should_compact(tokens, self.config.model.context_window, &settings)
            && !self.cost_says_compact(tokens, &settings)?
        {
            return Ok(None);
        }
        self.compact(CompactionReason::Threshold, None).await
    }

    /// Cache-aware observation masking (`[compaction.masking]`): when the planner finds a batch
    /// of stale tool outputs whose saved reads over the requests still expected exceed the
    /// rewrite after the first of them (priced at the write of the lifetime in use, and free
    /// when the prefix has expired anyway), each becomes a stub through a Pi 1.x
    /// `context_edit` with a replacement (the full output stays in the session file). The
    /// current task's results are never masked. With `fold_tasks`, finished tasks before the
    /// kept ones are first folded where that pays (`strata_compaction::plan_folding`).
    /// `rewritten_anyway`: the next request writes the messages again whatever is sent (right
    /// after a compaction). Returns how many messages were masked, left out or replaced.
    pub(super) fn mask_if_due(&mut self, rewritten_anyway: bool) -> Result<usize, AgentError> {
        let settings = self.compaction_settings();
        if !settings.enabled || !settings.masking.enabled {
            return Ok(0);
        }
        let outlook = strata_compaction::MaskingOutlook {
            remaining_requests: settings
                .expected_remaining_requests
                .unwrap_or(self.requests_since_compaction),
            prefix_cold: rewritten_anyway || self.prefix_is_cold(),
            lookback_blocks: self
                .config
                .capabilities
                .uses_breakpoints()
                .then_some(strata_compaction::EXPLICIT_LOOKBACK_BLOCKS),
        };
        let prices = self.cache_prices();
        let context = self.context()?;
        let mut entries = strata_compaction::mask_entries(context);
        // Folding first: a folded task leaves nothing for masking to stub.
        let fold =
            strata_compaction::plan_folding(context, &entries, &settings.masking, &prices, outlook);
        let mut folded = 0;
        if let Some(plan) = fold {
            // One group: a fold cut short between its lines would leave results whose calls
            // are omitted, which providers refuse; readers honour the group only whole.
            let mut edits = Vec::new();
            for task in &plan.tasks {
                edits.extend(task.omitted.iter().map(|target| PlannedEdit {
                    target_id: target.clone(),
                    replacement: None,
                }));
                edits.push(PlannedEdit {
                    target_id: task.answer.clone(),
                    replacement: Some(Replacement {
                        content: Some(strata_compaction::fold_replacement(task)),
                        extra: Default::default(),
                    }),
                });
            }
            folded = edits.len();
            self.session.append_edit_group(edits)?;
            entries = strata_compaction::mask_entries(self.context()?);
        }
        let Some(plan) =
            strata_compaction::plan_masking(&entries, &settings.masking, &prices, outlook)
        else {
            return Ok(folded);
        };
        let stubs = plan
            .stubs
            .iter()
            .map(|(target, stub)| PlannedEdit {
                target_id: target.clone(),
                replacement: Some(Replacement {
                    content: Some(serde_json::Value::String(stub.clone())),
                    extra: Default::default(),
                }),
            })
            .collect();
        self.session.append_edit_group(stubs)?;
        Ok(folded + plan.stubs.len())
    }

    /// The model's prices as the cache in use charges them: writes at the lifetime the
    /// session asks for (`[cache] retention`).
    pub(super) fn cache_prices(&self) -> strata_compaction::CachePrices {
        let ttl = self
            .config
            .capabilities
            .cache_ttl(self.config.cache.retention);
        strata_compaction::CachePrices::new(
            &self.config.model.prices,
            ttl == strata_provider::CacheTtl::OneHour,
        )
    }

    /// Whether the cached prefix has outlived its lifetime since the provider last read it
    /// (a pause longer than it, no keep-warm ping in between). Caches with no stated lifetime
    /// (DeepSeek's disk cache) and an agent that has sent nothing yet count as warm.
    pub(super) fn prefix_is_cold(&self) -> bool {
        let capabilities = &self.config.capabilities;
        let stated = capabilities.cache_style != strata_provider::CacheStyle::None
            && capabilities.wire.usage_dialect != strata_provider::UsageDialect::DeepseekHitMiss
            && !capabilities.ttl_options.is_empty();
        let lifetime = std::time::Duration::from_secs(
            capabilities
                .cache_ttl(self.config.cache.retention)
                .seconds(),
        );
        stated
            && self
                .cache_used_at
                .is_some_and(|used| used.elapsed() > lifetime)
    }

    /// The cost-aware trigger (`trigger = "cost"`): compacting now is cheaper than re-reading
    /// the context over the requests still expected (by default as many as were sent since the
    /// last compaction: an epoch tends to go on about as long as it has gone on), and the
    /// context has grown to the size where a compaction cycle costs least per request at the
    /// growth measured this epoch — past the window limit on a small window, where the window
    /// trigger compacts alone.
    pub(super) fn cost_says_compact(
        &mut self,
        tokens: u64,
        settings: &CompactionSettings,
    ) -> Result<bool, AgentError> {
        let start = *self.epoch_start_tokens.get_or_insert(tokens);
        if settings.trigger != strata_compaction::CompactionTrigger::Cost {
            return Ok(false);
        }
        let remaining = settings
            .expected_remaining_requests
            .unwrap_or(self.requests_since_compaction);
        // The tools and system chapters stay whatever happens: a compaction keeps them, the
        // recent tail and the summary.
        let fixed = self.renderer.rendered().map_or(0, |rendered| {
            (rendered.bytes.tools.len() + rendered.bytes.system.len()) as u64 / 4
        });
        let same_model = self.config.summary_model.is_none();
        let growth_per_request = tokens
            .saturating_sub(start)
            .checked_div(self.requests_since_compaction)
            .unwrap_or(0);
        let estimate = strata_compaction::CostEstimate {
            context_tokens: tokens,
            kept_tokens: settings.keep_recent_tokens + fixed,
            summary_tokens: strata_compaction::EXPECTED_SUMMARY_TOKENS,
            remaining_requests: remaining,
            summary_mode: strata_compaction::resolve_summary_mode(
                settings,
                &self.config.capabilities,
                same_model,
            ),
            growth_per_request,
        };
        Ok(strata_compaction::cost_says_compact(
            &estimate,
            &self.cache_prices(),
        ))
    }

    /// Where summary requests go: the separate summary model, else the session's.
    pub(super) fn summarizer(&self) -> (Arc<dyn Provider>, Model, StreamOptions) {
        match &self.config.summary_model {
            Some(summary) => (
                summary.provider.clone(),
                summary.model.clone(),
                summary.stream.clone(),
            ),
            None => (
                self.provider.clone(),
                self.config.model.clone(),
                self.config.stream.clone(),
            ),
        }
    }

    pub(super) fn compaction_settings(&self) -> CompactionSettings {
        self.config
            .compaction
            .for_model(&self.config.model.provider, &self.config.model.id)
    }

    /// Summarises everything before the kept tail into a compaction entry (with the folded
    /// system snapshot and the live tools), `focus` added to the instructions like Pi's
    /// `/compact <text>`. By default the summary request is the session's own cached request
    /// plus one instruction, so its input is read from cache; it is a transcript where the
    /// provider caches nothing, for a separate summary model, and after a context overflow
    /// (the cached form would be the refused request plus an instruction). The usage of a
    /// failed compaction's answered requests is stored in a `usage` entry (kind `compaction`). `None`:
    /// nothing to compact.
    /// `SessionStart` hooks with source `compact` run after it; what they add follows the
    /// compaction entry.
    pub async fn compact(
        &mut self,
        reason: CompactionReason,
        focus: Option<&str>,
    ) -> Result<Option<EntryId>, AgentError> {
        let compacted = self.compact_once(reason, focus).await?;
        if compacted.is_some() {
            self.session_start("compact").await?;
        }
        Ok(compacted)
    }

    pub(super) async fn compact_once(
        &mut self,
        reason: CompactionReason,
        focus: Option<&str>,
    ) -> Result<Option<EntryId>, AgentError> {
        let Some(leaf) = self.session.leaf().cloned() else {
            return Ok(None);
        };
        let mut settings = self.compaction_settings();
        settings.summary_mode = match reason {
            // The request just refused is the cache-friendly request minus its instruction:
            // that form cannot fit, the transcript (no kept tail, tools or system) may.
            CompactionReason::Overflow => SummaryMode::Transcript,
            CompactionReason::Threshold | CompactionReason::Manual => {
                strata_compaction::resolve_summary_mode(
                    &settings,
                    &self.config.capabilities,
                    self.config.summary_model.is_none(),
                )
            }
        };
        let Some(preparation) = strata_compaction::prepare(self.session.tree(), &leaf, &settings)?
        else {
            return Ok(None);
        };
        // A trigger sees the whole context; what the cut would summarize may be mostly folded
        // or masked already, too little for a summary to shrink.
        if reason == CompactionReason::Threshold
            && (preparation.replaced_tokens() <= self.threshold_floor_tokens
                || self.defer_to_precompute(&preparation))
        {
            return Ok(None);
        }
        self.emit(AgentEvent::CompactionStart {
            reason: reason_name(reason).to_owned(),
        });
        if let Some(id) = self.compact_by_owner(&preparation).await? {
            return Ok(Some(id));
        }
        let main_request = self.request()?;
        let (provider, model, mut options) = self.summarizer();
        options.session_id = Some(self.session.header().id.clone());
        let result = strata_compaction::compact_accounted(
            &*provider,
            &model,
            &main_request,
            &preparation,
            &settings,
            &options,
            focus,
        )
        .await;
        let result = match result {
            Ok(result) => result,
            Err(failure) => {
                // Requests that were answered are billed even though no entry is written:
                // record them where the session's totals find them.
                let spent = failure.spent();
                self.record_summary_usage("compaction", &failure.usage, &failure.cost)?;
                self.emit(AgentEvent::CompactionEnd {
                    entry_id: None,
                    tokens_before: preparation.tokens_before,
                    usage: spent.then_some(failure.usage),
                    cost: spent.then_some(failure.cost),
                    error: Some(failure.error.to_string()),
                });
                // A threshold compaction is optional: one whose summary would not shrink the
                // context leaves it as it is, and the next is tried only once the cut has
                // more to replace.
                if let (
                    CompactionReason::Threshold,
                    strata_compaction::CompactionError::NotSmaller { summary_tokens, .. },
                ) = (reason, &failure.error)
                {
                    self.threshold_floor_tokens = summary_tokens.saturating_mul(2);
                    return Ok(None);
                }
                return Err(failure.error.into());
            }
        };
        let entry = strata_compaction::compaction_entry(&result, self.context()?);
        let id = self.session.append_compaction(entry)?;
        // A prepared summary built on the previous one is stale now.
        self.discard_precomputed();
        // The next request rewrites the messages chapter: the last one is not worth keeping.
        self.last_sent = None;
        self.requests_since_compaction = 0;
        self.epoch_start_tokens = None;
        self.emit(AgentEvent::CompactionEnd {
            entry_id: Some(id.clone()),
            tokens_before: result.tokens_before,
            usage: Some(result.usage),
            cost: Some(result.cost),
            error: None,
        });
        Ok(Some(id))
    }

    /// Stores a failed summary request's usage in a Pi 1.x `usage` entry of `kind`, where
    /// the session's totals find it; a request that used nothing (none was made) is not
    /// recorded.
    pub(super) fn record_summary_usage(
        &mut self,
        kind: &str,
        usage: &Usage,
        cost: &Cost,
    ) -> Result<(), AgentError> {
        if usage.total_tokens() > 0 {
            let (_, model, _) = self.summarizer();
            self.session.append_usage(
                kind,
                &model.provider,
                &model.id,
                strata_compaction::session_usage(usage, cost),
            )?;
        }
        Ok(())
    }
}

pub(super) fn reason_name(reason: CompactionReason) -> &'static str {
    match reason {
        CompactionReason::Threshold => "threshold",
        CompactionReason::Overflow => "overflow",
        CompactionReason::Manual => "manual",
    }
}
