//! The strategies compared on the same workloads: render and compaction policies the libraries
//! already offer, selected by configuration, never forks of the code.

use strata_agent::CacheSettings;
use strata_compaction::{CompactionSettings, CompactionTrigger, SummaryMode};
use strata_context::RenderPolicy;
use strata_provider::{CacheRetention, Capabilities, Prewarm};

use super::model::CacheModel;

/// How a run lays out changes, compacts and keeps its cache.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Strategy {
    /// strata as built: append-only tools, patches in chapter 3, cache-friendly summaries,
    /// the cost-aware compaction trigger, observation masking and task folding (the
    /// defaults), the cache kept warm through idle gaps.
    Strata,
    /// The system prompt rewritten in place, withdrawn tools cut from the array
    /// (`RenderPolicy::Naive`), the summary request sent as a fresh transcript, compaction
    /// at the window limit, nothing masked.
    Naive,
    /// Only the tools the model is guessed to need, per request (`RenderPolicy::DynamicTools`);
    /// compaction at the window limit, nothing masked.
    DynamicTools,
    /// strata with the cost-aware compaction trigger (`CompactionTrigger::Cost`, the default)
    /// and no observation masking: what the default gains by masking.
    CostTrigger,
    /// strata with the window-limit trigger only (`CompactionTrigger::Window`) and no
    /// masking: the defaults before the bench chose the cost trigger and masking.
    WindowTrigger,
    /// strata's defaults without task folding (`MaskingSettings::fold_tasks` off): the
    /// defaults before folding, what folding gains.
    NoFold,
    /// strata's defaults with `strata-play-lossless` owning the compaction slot (a digest,
    /// no summary request).
    LosslessPlay,
    /// strata's defaults with `strata-play-precompute` owning the precompute slot.
    PrecomputePlay,
    /// strata's defaults with `strata-play-sticky-note` owning the compaction slot and its
    /// note at the end.
    StickyNotePlay,
    /// strata's defaults on the row as it stood before the providers' 2026 cache features:
    /// keep-warm pings ask for output tokens (no `max_tokens: 0` / `prewarm`), and an effort
    /// change goes in the request's parameters, not mid-conversation. What the features gain.
    NoCacheFeatures,
}

impl Strategy {
    /// The strategies every workload runs.
    pub const COMPARED: [Self; 3] = [Self::Strata, Self::Naive, Self::DynamicTools];

    /// The name used in tables and on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Self::Strata => "strata",
            Self::Naive => "naive",
            Self::DynamicTools => "dynamic-tools",
            Self::CostTrigger => "cost-trigger",
            Self::WindowTrigger => "window-trigger",
            Self::NoFold => "no-fold",
            Self::LosslessPlay => "lossless-play",
            Self::PrecomputePlay => "precompute-play",
            Self::StickyNotePlay => "sticky-note-play",
            Self::NoCacheFeatures => "no-cache-features",
        }
    }

    /// The memory play (a `strata-plays` binary) the strategy runs as an extension.
    pub fn play(self) -> Option<&'static str> {
        match self {
            Self::LosslessPlay => Some("strata-play-lossless"),
            Self::PrecomputePlay => Some("strata-play-precompute"),
            Self::StickyNotePlay => Some("strata-play-sticky-note"),
            _ => None,
        }
    }

    /// Parses a name from [`Self::name`].
    pub fn parse(name: &str) -> Option<Self> {
        [
            Self::Strata,
            Self::Naive,
            Self::DynamicTools,
            Self::CostTrigger,
            Self::WindowTrigger,
            Self::NoFold,
            Self::LosslessPlay,
            Self::PrecomputePlay,
            Self::StickyNotePlay,
            Self::NoCacheFeatures,
        ]
        .into_iter()
        .find(|strategy| strategy.name() == name)
    }

    /// The render policy.
    pub fn render_policy(self) -> RenderPolicy {
        match self {
            Self::Strata
            | Self::CostTrigger
            | Self::WindowTrigger
            | Self::NoFold
            | Self::LosslessPlay
            | Self::PrecomputePlay
            | Self::StickyNotePlay
            | Self::NoCacheFeatures => RenderPolicy::Strata,
            Self::Naive => RenderPolicy::Naive,
            Self::DynamicTools => RenderPolicy::DynamicTools,
        }
    }

    /// The cache settings: the cache model's lifetime for every strategy (the 1-hour model is
    /// how a harness opts into Anthropic's hour); keep-warm pings are strata's, not the
    /// layouts other harnesses use.
    pub fn cache(self, cache_model: CacheModel) -> CacheSettings {
        CacheSettings {
            retention: match cache_model {
                CacheModel::AnthropicOneHour => CacheRetention::Long,
                _ => CacheRetention::Auto,
            },
            keep_warm: self.render_policy() == RenderPolicy::Strata,
            ..CacheSettings::default()
        }
    }

    /// The row's capabilities as this strategy uses them: every strategy but
    /// [`Self::NoCacheFeatures`] takes the row as the table gives it.
    pub fn capabilities(self, row: &Capabilities) -> Capabilities {
        let mut capabilities = row.clone();
        if self == Self::NoCacheFeatures {
            capabilities.prewarm = Prewarm::None;
            capabilities.mid_conversation_effort = false;
        }
        capabilities
    }

    /// The workload's compaction settings as this strategy changes them.
    pub fn compaction(self, base: &CompactionSettings) -> CompactionSettings {
        let mut settings = base.clone();
        match self {
            // A play changes one memory slot; the rest stays strata's defaults.
            Self::Strata
            | Self::LosslessPlay
            | Self::PrecomputePlay
            | Self::StickyNotePlay
            | Self::NoCacheFeatures => {}
            // The baselines compact the way a harness without these policies does: at the
            // window limit, nothing masked (they must not inherit strata's defaults).
            Self::DynamicTools => {
                settings.trigger = CompactionTrigger::Window;
                settings.masking.enabled = false;
            }
            Self::Naive => {
                settings.summary_mode = SummaryMode::Transcript;
                settings.trigger = CompactionTrigger::Window;
                settings.masking.enabled = false;
            }
            Self::CostTrigger => {
                settings.trigger = CompactionTrigger::Cost;
                settings.masking.enabled = false;
            }
            Self::WindowTrigger => {
                settings.trigger = CompactionTrigger::Window;
                settings.masking.enabled = false;
            }
            Self::NoFold => settings.masking.fold_tasks = false,
        }
        settings
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strategies_differ_only_where_they_say() {
        let base = CompactionSettings::default();
        assert_eq!(Strategy::Strata.compaction(&base), base);
        assert_eq!(
            Strategy::Naive.compaction(&base).summary_mode,
            SummaryMode::Transcript
        );
        assert_eq!(Strategy::Naive.render_policy(), RenderPolicy::Naive);
        assert_eq!(
            Strategy::CostTrigger.compaction(&base).trigger,
            CompactionTrigger::Cost
        );
        assert!(
            Strategy::Strata
                .cache(CacheModel::AnthropicFiveMinutes)
                .keep_warm
        );
        assert!(
            !Strategy::Naive
                .cache(CacheModel::AnthropicFiveMinutes)
                .keep_warm
        );
        assert_eq!(
            Strategy::Naive
                .cache(CacheModel::AnthropicOneHour)
                .retention,
            CacheRetention::Long
        );
        assert!(base.masking.enabled, "masking is a default");
        for baseline in [Strategy::Naive, Strategy::DynamicTools] {
            let settings = baseline.compaction(&base);
            assert!(!settings.masking.enabled, "{baseline:?} masks nothing");
            assert_eq!(settings.trigger, CompactionTrigger::Window);
        }
        assert!(!Strategy::CostTrigger.compaction(&base).masking.enabled);
        assert!(base.masking.fold_tasks, "folding is a default");
        let no_fold = Strategy::NoFold.compaction(&base);
        assert!(!no_fold.masking.fold_tasks && no_fold.masking.enabled);
        assert_eq!(
            CompactionSettings {
                masking: base.masking.clone(),
                ..no_fold
            },
            base
        );
        assert!(!Strategy::WindowTrigger.compaction(&base).masking.enabled);
        let row = Capabilities {
            prewarm: Prewarm::ZeroMaxTokens,
            mid_conversation_effort: true,
            ..Capabilities::default()
        };
        assert_eq!(Strategy::Strata.capabilities(&row), row);
        let before = Strategy::NoCacheFeatures.capabilities(&row);
        assert_eq!(before.prewarm, Prewarm::None);
        assert!(!before.mid_conversation_effort);
        assert_eq!(
            Capabilities {
                prewarm: row.prewarm,
                mid_conversation_effort: true,
                ..before
            },
            row
        );
        assert_eq!(
            Strategy::WindowTrigger.compaction(&base).trigger,
            CompactionTrigger::Window
        );
        for name in [
            "strata",
            "naive",
            "dynamic-tools",
            "cost-trigger",
            "window-trigger",
            "no-cache-features",
        ] {
            assert_eq!(Strategy::parse(name).map(Strategy::name), Some(name));
        }
    }
}
