//! The plays strata ships as extensions (see the crate's README); this library holds the
//! pure decisions, the binaries the protocol loop.

pub mod digest;
pub mod guard;
pub mod sticky;
