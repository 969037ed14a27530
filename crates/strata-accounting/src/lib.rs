//! What a session paid: usage conversion, per-request records, totals, and every cache break
//! classified ([`cache_report`]: expected, with the entry that explains it, or unexpected).
//!
//! A provider reports [`strata_provider::Usage`] with cache writes split by lifetime; a
//! session (Pi's shape) stores one `cacheWrite` bucket. [`session_usage`] keeps the 1-hour
//! share in a `cacheWrite1h` field Pi ignores, and [`provider_usage`] reads it back, so a
//! write made at the hour rate is priced at the hour rate wherever it is totalled.
//!
//! ```
//! use strata_accounting::{Totals, records};
//! # fn demo(tree: &strata_session::Tree) {
//! let all = records(tree);
//! let totals = Totals::of(&all);
//! println!("{} requests, ${:.4}", totals.requests, totals.cost);
//! # }
//! ```

mod attribution;
mod cache;
mod children;
mod convert;
pub mod logs;
mod record;
pub mod tool_change;
mod totals;

pub use attribution::{
    ATTRIBUTION_CUSTOM_TYPE, ATTRIBUTION_FIELD, Attribution, add_attributions, attribution_lines,
    attributions, attributions_of, sorted_attributions,
};
pub use cache::{
    BelowMinimum, BreakCause, CacheBreak, CacheReport, Disagreement, MIN_CACHEABLE, cache_minimum,
    cache_report,
};
pub use children::{ChildRecords, ChildrenTotals, children, own_part, priced_records};
pub use convert::{
    CACHE_CREATE_FIELD, CACHE_DIAGNOSIS_FIELD, CACHE_STORAGE_FIELD, CACHE_WRITE_1H_FIELD,
    EXPLICIT_CACHE_COST_FIELD, provider_usage, record_diagnosis, session_usage, stored_diagnosis,
};
pub use record::{
    KEEP_WARM_CUSTOM_TYPE, RequestKind, RequestRecord, USAGE_CUSTOM_TYPE, USAGE_FIELD, record_of,
    records, records_from,
};
pub use totals::{Totals, hit_rate};
