//! Workspace automation for strata, as a library so that its tests can drive it:
//! the cache-efficiency benchmark lives in [`mod@bench`].

pub mod bench;
