//! Compaction settings (`[compaction]` in config), per-model overrides and the trigger rule.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use strata_provider::{CacheStyle, Capabilities};

use crate::cost::CompactionTrigger;
use crate::error::CompactionError;

/// Pi's default headroom kept free for the answer and the summary.
pub const DEFAULT_RESERVE_TOKENS: u64 = 16384;
/// Pi's default size of the recent tail kept verbatim.
pub const DEFAULT_KEEP_RECENT_TOKENS: u64 = 20000;
/// The share of the context window one tool definition may take by default: one bad MCP
/// server cannot fill every later request.
pub const DEFAULT_MAX_TOOL_SHARE: f64 = 0.25;

/// How the summary request is built.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SummaryMode {
    /// The session's own request (same tools, system and messages bytes) plus one summarise
    /// instruction: its input is read from the prompt cache and nothing new is written.
    #[default]
    CacheFriendly,
    /// Pi's form: the conversation serialized as text in one user message, tool results cut to
    /// 2000 characters, its own cache key and no cache writes.
    Transcript,
}

/// Settings that may differ for one model (every field optional: unset keeps the base value).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct CompactionOverride {
    /// Overrides [`CompactionSettings::enabled`].
    pub enabled: Option<bool>,
    /// Overrides [`CompactionSettings::reserve_tokens`].
    pub reserve_tokens: Option<u64>,
    /// Overrides [`CompactionSettings::keep_recent_tokens`].
    pub keep_recent_tokens: Option<u64>,
    /// Overrides [`CompactionSettings::trigger_percent`].
    pub trigger_percent: Option<f32>,
    /// Overrides [`CompactionSettings::summary_mode`].
    pub summary_mode: Option<SummaryMode>,
    /// Overrides [`CompactionSettings::compaction_model`].
    pub compaction_model: Option<String>,
    /// Overrides [`CompactionSettings::trigger`].
    pub trigger: Option<CompactionTrigger>,
}

/// When and how a session is compacted (config table `[compaction]`, snake_case keys).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct CompactionSettings {
    /// Compaction runs at all (off means off: no trigger, no overflow recovery).
    pub enabled: bool,
    /// Compact when context tokens exceed `window - reserve_tokens`; also sizes the summary
    /// output (80% of it for the history summary, 50% for a turn prefix).
    pub reserve_tokens: u64,
    /// Tokens of recent conversation kept verbatim after the summary.
    pub keep_recent_tokens: u64,
    /// Compact at this percentage of the window instead (`0 < p <= 100`), when set.
    pub trigger_percent: Option<f32>,
    /// How the summary request is built.
    pub summary_mode: SummaryMode,
    /// Overrides by model, keyed `provider/model` or the bare model id.
    pub models: BTreeMap<String, CompactionOverride>,
    /// A separate (cheaper) model for summaries, `provider/model`; it cannot read the
    /// session's cache, so summaries made with it use the transcript form.
    pub compaction_model: Option<String>,
    /// `cost` (default, chosen by the bench: docs/benchmarks.md): compact as soon as
    /// re-reading the context over the expected remaining requests costs more than summarising
    /// it and writing the smaller context once (see [`crate::cost_says_compact`]), the window
    /// limit as a backstop. `window`: compact near the window limit only.
    pub trigger: CompactionTrigger,
    /// For the `cost` trigger: requests still expected in the session; unset, as many as the
    /// context already holds (a session tends to go on about as long as it has gone on).
    pub expected_remaining_requests: Option<u64>,
    /// Cache-aware observation masking (`[compaction.masking]`, see [`crate::plan_masking`]).
    pub masking: crate::mask::MaskingSettings,
    /// The share of the window one tool definition may take (`0 < share <= 1`; `0` sets no
    /// limit). A larger one is not declared, and one already declared leaves the request at
    /// the next compaction.
    pub max_tool_share: f64,
}

impl Default for CompactionSettings {
    fn default() -> Self {
        Self {
            enabled: true,
            reserve_tokens: DEFAULT_RESERVE_TOKENS,
            keep_recent_tokens: DEFAULT_KEEP_RECENT_TOKENS,
            trigger_percent: None,
            summary_mode: SummaryMode::CacheFriendly,
            models: BTreeMap::new(),
            compaction_model: None,
            trigger: CompactionTrigger::Cost,
            expected_remaining_requests: None,
            masking: crate::mask::MaskingSettings::default(),
            max_tool_share: DEFAULT_MAX_TOOL_SHARE,
        }
    }
}

impl CompactionSettings {
    /// The settings in effect for `provider/model_id`: the override keyed by the qualified
    /// id wins over one keyed by the bare id, which wins over the base.
    pub fn for_model(&self, provider: &str, model_id: &str) -> CompactionSettings {
        let mut resolved = self.clone();
        let qualified = format!("{provider}/{model_id}");
        for key in [model_id, qualified.as_str()] {
            if let Some(patch) = self.models.get(key) {
                resolved.apply(patch);
            }
        }
        resolved.models = BTreeMap::new();
        resolved
    }

    fn apply(&mut self, patch: &CompactionOverride) {
        if let Some(enabled) = patch.enabled {
            self.enabled = enabled;
        }
        if let Some(reserve) = patch.reserve_tokens {
            self.reserve_tokens = reserve;
        }
        if let Some(keep) = patch.keep_recent_tokens {
            self.keep_recent_tokens = keep;
        }
        if patch.trigger_percent.is_some() {
            self.trigger_percent = patch.trigger_percent;
        }
        if let Some(mode) = patch.summary_mode {
            self.summary_mode = mode;
        }
        if patch.compaction_model.is_some() {
            self.compaction_model.clone_from(&patch.compaction_model);
        }
        if let Some(trigger) = patch.trigger {
            self.trigger = trigger;
        }
    }

    /// Checks the values a config file may get wrong, naming the field.
    pub fn validate(&self) -> Result<(), CompactionError> {
        let check_percent = |field: String, percent: Option<f32>| match percent {
            Some(p) if !(p > 0.0 && p <= 100.0) => Err(CompactionError::InvalidSetting {
                field,
                reason: format!("{p} is not a percentage in (0, 100]"),
            }),
            _ => Ok(()),
        };
        check_percent("compaction.trigger_percent".into(), self.trigger_percent)?;
        if !(0.0..=1.0).contains(&self.max_tool_share) {
            return Err(CompactionError::InvalidSetting {
                field: "compaction.max_tool_share".into(),
                reason: format!(
                    "{} is not a share of the window in [0, 1] (0 sets no limit)",
                    self.max_tool_share
                ),
            });
        }
        for (model, patch) in &self.models {
            check_percent(
                format!("compaction.models.\"{model}\".trigger_percent"),
                patch.trigger_percent,
            )?;
        }
        Ok(())
    }

    /// Output cap of the history summary: 80% of the reserve, as Pi.
    pub fn history_max_tokens(&self) -> u32 {
        cap(self.reserve_tokens * 8 / 10)
    }

    /// Output cap of a turn-prefix summary: 50% of the reserve, as Pi.
    pub fn turn_prefix_max_tokens(&self) -> u32 {
        cap(self.reserve_tokens / 2)
    }

    /// The token count above which a context of `window` tokens is compacted.
    pub fn threshold(&self, window: u64) -> u64 {
        match self.trigger_percent {
            Some(percent) if percent > 0.0 && percent <= 100.0 => {
                (window as f64 * f64::from(percent) / 100.0).floor() as u64
            }
            _ => window.saturating_sub(self.reserve_tokens),
        }
    }
}

fn cap(tokens: u64) -> u32 {
    u32::try_from(tokens).unwrap_or(u32::MAX).max(1)
}

/// Whether a context of `tokens` in a window of `window` tokens is due for compaction:
/// `tokens > window - reserve_tokens`, or above `trigger_percent` of the window when set.
pub fn should_compact(tokens: u64, window: u64, settings: &CompactionSettings) -> bool {
    settings.enabled && window > 0 && tokens > settings.threshold(window)
}

/// Why a compaction runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum CompactionReason {
    /// The context crossed the threshold; compact, no retry.
    Threshold,
    /// The provider refused the prompt as too long; compact, then retry the turn once.
    Overflow,
    /// The user asked (`/compact`).
    Manual,
}

/// Whether a provider error means the prompt did not fit: compact, then retry once.
pub fn is_context_overflow(error: &strata_provider::ProviderError) -> bool {
    matches!(
        error,
        strata_provider::ProviderError::ContextOverflow { .. }
    )
}

/// Pi's one-retry rule for context overflow: at most one compact-and-retry per user message.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OverflowRecovery {
    attempted: bool,
}

impl OverflowRecovery {
    /// A guard with its attempt unused.
    pub fn new() -> Self {
        Self::default()
    }

    /// Takes the attempt: `true` the first time after [`Self::reset`], `false` after, and
    /// always `false` when compaction is off.
    pub fn try_attempt(&mut self, settings: &CompactionSettings) -> bool {
        if !settings.enabled || self.attempted {
            return false;
        }
        self.attempted = true;
        true
    }

    /// Gives the attempt back (call on each new user message).
    pub fn reset(&mut self) {
        self.attempted = false;
    }
}

/// The summary form to use: cache-friendly only when it is asked for, the provider caches
/// prefixes at all, and the summary goes to the session's own model (another model cannot read
/// the session's cache); the transcript form otherwise.
pub fn resolve_summary_mode(
    settings: &CompactionSettings,
    capabilities: &Capabilities,
    same_model_as_session: bool,
) -> SummaryMode {
    match settings.summary_mode {
        SummaryMode::CacheFriendly
            if same_model_as_session && capabilities.cache_style != CacheStyle::None =>
        {
            SummaryMode::CacheFriendly
        }
        _ => SummaryMode::Transcript,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_pis() {
        let settings = CompactionSettings::default();
        assert!(settings.enabled);
        assert_eq!(settings.reserve_tokens, 16384);
        assert_eq!(settings.keep_recent_tokens, 20000);
        assert_eq!(settings.history_max_tokens(), 13107);
        assert_eq!(settings.turn_prefix_max_tokens(), 8192);
    }

    #[test]
    fn threshold_is_strictly_above_window_minus_reserve() {
        let settings = CompactionSettings::default();
        assert!(!should_compact(200_000 - 16384, 200_000, &settings));
        assert!(should_compact(200_000 - 16384 + 1, 200_000, &settings));
    }

    #[test]
    fn percent_trigger_replaces_the_reserve_rule() {
        let settings = CompactionSettings {
            trigger_percent: Some(50.0),
            ..CompactionSettings::default()
        };
        assert!(!should_compact(100_000, 200_000, &settings));
        assert!(should_compact(100_001, 200_000, &settings));
    }

    #[test]
    fn off_means_off() {
        let settings = CompactionSettings {
            enabled: false,
            ..CompactionSettings::default()
        };
        assert!(!should_compact(u64::MAX, 1000, &settings));
        assert!(!OverflowRecovery::new().try_attempt(&settings));
    }

    #[test]
    fn overflow_errors_are_recognized() {
        let overflow = strata_provider::ProviderError::ContextOverflow {
            status: 400,
            request_id: None,
            body: "prompt is too long".into(),
        };
        assert!(is_context_overflow(&overflow));
        assert!(!is_context_overflow(
            &strata_provider::ProviderError::Cancelled
        ));
    }

    #[test]
    fn overflow_recovery_allows_one_attempt_per_message() {
        let settings = CompactionSettings::default();
        let mut guard = OverflowRecovery::new();
        assert!(guard.try_attempt(&settings));
        assert!(!guard.try_attempt(&settings));
        guard.reset();
        assert!(guard.try_attempt(&settings));
    }

    #[test]
    fn qualified_override_beats_bare_override() {
        let toml = r#"
            reserve_tokens = 10000
            summary_mode = "transcript"
            [models."claude-x"]
            keep_recent_tokens = 5000
            reserve_tokens = 1
            [models."anthropic/claude-x"]
            reserve_tokens = 30000
            compaction_model = "anthropic/claude-haiku"
        "#;
        let settings: CompactionSettings = toml::from_str(toml).expect("parse");
        let resolved = settings.for_model("anthropic", "claude-x");
        assert_eq!(resolved.reserve_tokens, 30000);
        assert_eq!(resolved.keep_recent_tokens, 5000);
        assert_eq!(resolved.summary_mode, SummaryMode::Transcript);
        assert_eq!(
            resolved.compaction_model.as_deref(),
            Some("anthropic/claude-haiku")
        );
        let other = settings.for_model("openai", "gpt");
        assert_eq!(other.reserve_tokens, 10000);
    }

    #[test]
    fn the_cost_trigger_is_read_from_config_and_overridable_per_model() {
        let toml = r#"
            trigger = "window"
            expected_remaining_requests = 40
            [models."cheap"]
            trigger = "cost"
        "#;
        let settings: CompactionSettings = toml::from_str(toml).expect("parse");
        assert_eq!(settings.trigger, CompactionTrigger::Window);
        assert_eq!(settings.expected_remaining_requests, Some(40));
        assert_eq!(
            settings.for_model("x", "cheap").trigger,
            CompactionTrigger::Cost
        );
        // The bench's choice (docs/benchmarks.md, "Choosing the default").
        assert_eq!(
            CompactionSettings::default().trigger,
            CompactionTrigger::Cost
        );
    }

    #[test]
    fn bad_percent_names_the_field() {
        let settings = CompactionSettings {
            trigger_percent: Some(150.0),
            ..CompactionSettings::default()
        };
        let error = settings.validate().expect_err("invalid");
        assert!(error.to_string().contains("compaction.trigger_percent"));
        let unknown = toml::from_str::<CompactionSettings>("reserve = 1");
        assert!(unknown.is_err());
    }

    #[test]
    fn cache_friendly_needs_a_cache_and_the_session_model() {
        let settings = CompactionSettings::default();
        let cached = Capabilities {
            cache_style: CacheStyle::ExplicitBreakpoints,
            max_breakpoints: 4,
            ..Capabilities::default()
        };
        assert_eq!(
            resolve_summary_mode(&settings, &cached, true),
            SummaryMode::CacheFriendly
        );
        assert_eq!(
            resolve_summary_mode(&settings, &cached, false),
            SummaryMode::Transcript
        );
        assert_eq!(
            resolve_summary_mode(&settings, &Capabilities::default(), true),
            SummaryMode::Transcript
        );
    }
}
