//! Why a context could not be built.

use strata_session::EntryId;

/// Why a context could not be built.
#[derive(Debug, thiserror::Error)]
pub enum ContextError {
    /// The requested leaf is not in the session.
    #[error("entry {id} is not in the session")]
    UnknownLeaf {
        /// The requested leaf.
        id: EntryId,
    },
    /// Following `parentId` from the leaf never reached a root.
    #[error("the path from {id} to the root loops: parentId links form a cycle")]
    ParentCycle {
        /// The leaf the walk started at.
        id: EntryId,
    },
    /// An entry on the path could not be parsed.
    #[error("entry {id} on the path cannot be read: {source}")]
    Load {
        /// The entry.
        id: EntryId,
        /// What the session reader said (it names the file and line).
        source: strata_session::SessionError,
    },
    /// The tree's index and the parsed entry disagree about the entry's type.
    #[error("entry {id} parsed as a different type than the session index recorded")]
    KindMismatch {
        /// The entry.
        id: EntryId,
    },
}
