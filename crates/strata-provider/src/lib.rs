//! Provider-neutral request, event and usage types, the Provider trait, and the provider capability table.
//!
//! - [`Request`] is what render produces: tools, system and messages chapters plus breakpoints.
//! - [`Provider`] streams a request to a model as [`Event`]s; protocol crates implement it.
//! - [`Usage`] is normalized token accounting; [`Usage::cost`] prices it with a model's [`Prices`].
//! - [`Capabilities`] is what one provider + model can do; render and adapters branch on it.
//! - [`Catalog`] is the 41-provider capability table plus every known model
//!   ([`Catalog::builtin`]), with user additions merged by [`Catalog::with_user_config`].

pub mod capabilities;
pub mod catalog;
pub mod diagnosis;
#[cfg(feature = "transport")]
pub mod discovery;
pub mod effort;
pub mod error;
pub mod event;
pub mod learned;
pub mod model;
pub mod pi;
#[cfg(feature = "provider")]
pub mod provider;
pub mod refresh;
pub mod request;
pub mod table;
#[cfg(feature = "testing")]
pub mod testing;
pub mod transport;
pub mod usage;

pub use capabilities::{
    CacheKeyParam, CacheRetention, CacheStyle, Capabilities, ExplicitCache, Feature, FeatureHeader,
    ParamLocation, PeakPricing, Prewarm, Protocol, ReasoningStyle, SystemRole, UsageDialect,
    WireQuirks,
};
pub use catalog::{
    Catalog, CatalogError, ConfigFormat, GuessedModel, ModelsFile, ProviderSummary, Support,
    UserConfig, UserProvider,
};
pub use diagnosis::{CacheDiagnosis, DiagnosedChange, LastResponses};
pub use effort::{EffortChanges, EffortPlan};
pub use error::{ApiKey, ProviderError};
pub use event::{Event, EventStream, MessageAssembler, StopReason};
pub use learned::{Learnable, LearnedCapabilities, LearnedError, Lesson};
pub use model::{Modality, Model};
#[cfg(feature = "provider")]
pub use provider::{Completion, Provider, StreamOptions};
pub use request::{
    Breakpoint, BreakpointPosition, CacheTtl, ContentBlock, Dialect, Message, PROVIDER_ITEM_TYPE,
    Request, Role, SystemBlock, TOOL_SEARCH_TOOL, ThinkingLevel, ToolDefinition, ToolResultContent,
};
pub use table::{
    AuthScheme, CacheSpec, CatalogSource, Endpoint, FeatureSpec, ModelEntry, ModelOverride,
    PricesPatch, ProviderRow, ProviderTable, ServerKind, ServerSpec,
};
pub use usage::{Cost, PriceMultipliers, Prices, Usage};
