//! The strategies compared on the same workloads: render and compaction policies the libraries
//! already offer, selected by configuration, never forks of the code.

use strata_compaction::{CompactionSettings, CompactionTrigger, SummaryMode};
use strata_context::RenderPolicy;

/// How a run lays out changes and compacts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Strategy {
    /// strata as built: append-only tools, patches in chapter 3, cache-friendly summaries,
    /// compaction at the window limit.
    Strata,
    /// The system prompt rewritten in place, withdrawn tools cut from the array
    /// (`RenderPolicy::Naive`), the summary request sent as a fresh transcript.
    Naive,
    /// Only the tools the model is guessed to need, per request (`RenderPolicy::DynamicTools`).
    DynamicTools,
    /// strata with the cost-aware compaction trigger (`CompactionTrigger::Cost`).
    CostTrigger,
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
        }
    }

    /// Parses a name from [`Self::name`].
    pub fn parse(name: &str) -> Option<Self> {
        [
            Self::Strata,
            Self::Naive,
            Self::DynamicTools,
            Self::CostTrigger,
        ]
        .into_iter()
        .find(|strategy| strategy.name() == name)
    }

    /// The render policy.
    pub fn render_policy(self) -> RenderPolicy {
        match self {
            Self::Strata | Self::CostTrigger => RenderPolicy::Strata,
            Self::Naive => RenderPolicy::Naive,
            Self::DynamicTools => RenderPolicy::DynamicTools,
        }
    }

    /// The workload's compaction settings as this strategy changes them.
    pub fn compaction(self, base: &CompactionSettings) -> CompactionSettings {
        let mut settings = base.clone();
        match self {
            Self::Strata | Self::DynamicTools => {}
            Self::Naive => settings.summary_mode = SummaryMode::Transcript,
            Self::CostTrigger => settings.trigger = CompactionTrigger::Cost,
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
        for name in ["strata", "naive", "dynamic-tools", "cost-trigger"] {
            assert_eq!(Strategy::parse(name).map(Strategy::name), Some(name));
        }
    }
}
