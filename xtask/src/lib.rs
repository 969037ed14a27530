//! Workspace automation for strata, as a library so that its tests can drive it:
//! the cache-efficiency benchmark lives in [`mod@bench`], the fault-and-kill soak of the
//! `strata` binary in [`mod@soak`], the repository rules in [`mod@tidy`].

pub mod bench;
pub mod soak;
pub mod tidy;
