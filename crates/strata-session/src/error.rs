//! Errors and open-time diagnostics.

use std::fmt;
use std::path::PathBuf;

use crate::id::EntryId;

/// Why a session operation failed.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    /// Reading or writing the file failed.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// Another process (or handle) holds the session's write lock.
    #[error("{path}: the session is open for writing elsewhere (its lock is held)")]
    Locked {
        /// The file.
        path: PathBuf,
    },
    /// The first line is not a session header.
    #[error("{path}:{line}: not a session file: {reason}")]
    MissingHeader {
        /// The file.
        path: PathBuf,
        /// The offending line (1-based).
        line: usize,
        /// What is wrong with it, e.g. "the header's `version` is a string, not a number".
        reason: String,
    },
    /// The file is older than version 3 and cannot take appends.
    #[error(
        "{path}: a version {version} session cannot be appended to without rewriting it; fork it into a new file first"
    )]
    LegacyFormat {
        /// The file.
        path: PathBuf,
        /// Its format version.
        version: u32,
    },
    /// The session was opened read-only.
    #[error("{path}: the session was opened read-only")]
    ReadOnly {
        /// The file.
        path: PathBuf,
    },
    /// No entry has this id.
    #[error("{path}: no entry with id {id}")]
    UnknownEntry {
        /// The file.
        path: PathBuf,
        /// The id asked for.
        id: EntryId,
    },
    /// An entry's line does not parse as its type (a field of the wrong type, a missing
    /// field). Context building skips such an entry and reports it ([`Self::diagnostic`]).
    #[error("{path}:{line}: entry {id} is not a valid `{entry_type}` entry: {}", field_reason(.field.as_deref(), .reason))]
    InvalidEntry {
        /// The file.
        path: PathBuf,
        /// Its line (1-based).
        line: usize,
        /// Its id.
        id: EntryId,
        /// Its `type`.
        entry_type: Box<str>,
        /// The field that failed, as a path (`message.content[0].text`), when known.
        field: Option<Box<str>>,
        /// What serde found.
        reason: Box<str>,
    },
    /// An entry could not be written as JSON.
    #[error("{path}: cannot serialize a `{entry_type}` entry: {source}")]
    Serialize {
        /// The file.
        path: PathBuf,
        /// Its `type`.
        entry_type: String,
        /// What serde found.
        #[source]
        source: serde_json::Error,
    },
    /// An argument cannot be used (e.g. appending a `leaf` entry directly).
    #[error("{path}: {reason}")]
    InvalidArgument {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// The path names a device, directory, FIFO or socket, not a session file.
    #[error("{path}: not a regular file")]
    NotRegularFile {
        /// The path.
        path: PathBuf,
    },
    /// The header's version is newer than strata knows: read-only, never appended to.
    #[error(
        "{path}: a version {version} session is newer than this strata understands (version {supported}); it can be read but not appended to"
    )]
    UnsupportedVersion {
        /// The file.
        path: PathBuf,
        /// Its format version.
        version: u32,
        /// The newest version strata writes.
        supported: u32,
    },
    /// The file an open writer appends to was replaced, removed or truncated by someone else;
    /// nothing more is written to it.
    #[error(
        "{path}: the session file was {change} since it was opened; the entry was not written and nothing more will be appended to it{saved}"
    )]
    FileChanged {
        /// The file.
        path: PathBuf,
        /// What happened: "replaced or removed", "truncated", "appended to by another writer".
        change: &'static str,
        /// Where the entries the session held (and the one refused) were saved, as a sentence
        /// ending the message (empty when they could not be saved).
        saved: String,
    },
    /// The target file of a fork or create already exists.
    #[error("{path}: already exists")]
    AlreadyExists {
        /// The file.
        path: PathBuf,
    },
}

/// `field `x`: reason`, or the reason alone.
fn field_reason(field: Option<&str>, reason: &str) -> String {
    match field {
        Some(field) => format!("field `{field}`: {reason}"),
        None => reason.to_owned(),
    }
}

/// serde's message without its position (` at line 1 column 80`): the line is the file's
/// line, reported beside it, and serde's column counts within that line only.
pub(crate) fn serde_reason(error: &serde_json::Error) -> String {
    let text = error.to_string();
    let suffix = format!(" at line {} column {}", error.line(), error.column());
    match text.strip_suffix(&suffix) {
        Some(reason) if error.line() > 0 => reason.to_owned(),
        _ => text,
    }
}

impl SessionError {
    /// The diagnostic an entry that does not parse becomes when it is skipped instead of
    /// failing (file, line, entry, field); `None` for every other error.
    pub fn diagnostic(&self) -> Option<Diagnostic> {
        match self {
            Self::InvalidEntry {
                path,
                line,
                id,
                entry_type,
                field,
                reason,
            } => Some(Diagnostic {
                path: path.clone(),
                line: *line,
                problem: Problem::InvalidEntry {
                    id: id.clone(),
                    entry_type: entry_type.to_string(),
                    field: field.as_deref().map(str::to_owned),
                    reason: reason.to_string(),
                },
            }),
            _ => None,
        }
    }

    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Self::Io {
            path: path.into(),
            source,
        }
    }
}

/// Something wrong found while opening a file; the rest of the file still opens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostic {
    /// The file.
    pub path: PathBuf,
    /// The line (1-based).
    pub line: usize,
    /// What was wrong.
    pub problem: Problem,
}

/// What a [`Diagnostic`] reports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Problem {
    /// The last line has no newline and does not parse: a write was cut short. It is skipped,
    /// and the next append starts on a new line.
    TornLastLine {
        /// How many bytes the torn line holds.
        bytes: usize,
    },
    /// A line in the middle does not parse; it is skipped.
    MalformedLine {
        /// What is wrong with it.
        reason: String,
    },
    /// A line is not valid UTF-8; invalid bytes were replaced by U+FFFD.
    InvalidUtf8,
    /// An entry has no string `id`; it is skipped.
    MissingId,
    /// A second entry uses an id already taken; lookups find the later one (as in Pi).
    DuplicateId {
        /// The id.
        id: EntryId,
    },
    /// An entry's parent does not exist; it is treated as a root (as in Pi).
    UnknownParent {
        /// The entry.
        id: EntryId,
        /// The missing parent.
        parent: EntryId,
    },
    /// Parent links form a cycle; the entry is treated as a root.
    ParentCycle {
        /// The entry whose parent link was cut.
        id: EntryId,
    },
    /// The last `leaf` entry points at an unknown entry; that entry itself is the leaf (as in Pi).
    UnknownLeafTarget {
        /// The missing target.
        target: EntryId,
    },
    /// An entry is JSON but not a valid entry of its type (e.g. a number where a string
    /// belongs); found when it is read for a context, and skipped there. The file is untouched.
    InvalidEntry {
        /// The entry.
        id: EntryId,
        /// Its `type`.
        entry_type: String,
        /// The field that failed, as a path, when known.
        field: Option<String>,
        /// What is wrong with it.
        reason: String,
    },
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}: ", self.path.display(), self.line)?;
        match &self.problem {
            Problem::TornLastLine { bytes } => {
                write!(
                    f,
                    "torn last line ({bytes} bytes, no newline, not valid JSON) skipped"
                )
            }
            Problem::MalformedLine { reason } => write!(f, "malformed line skipped: {reason}"),
            Problem::InvalidUtf8 => write!(f, "invalid UTF-8 replaced by U+FFFD"),
            Problem::MissingId => write!(f, "entry without an `id` skipped"),
            Problem::DuplicateId { id } => {
                write!(f, "duplicate id {id}; the later entry wins lookups")
            }
            Problem::UnknownParent { id, parent } => {
                write!(
                    f,
                    "entry {id} has unknown parent {parent}; treated as a root"
                )
            }
            Problem::ParentCycle { id } => {
                write!(f, "entry {id} is in a parent cycle; treated as a root")
            }
            Problem::UnknownLeafTarget { target } => {
                write!(
                    f,
                    "`leaf` entry points at unknown entry {target}; the `leaf` entry itself is the leaf"
                )
            }
            Problem::InvalidEntry {
                id,
                entry_type,
                field,
                reason,
            } => write!(
                f,
                "entry {id} is not a valid `{entry_type}` entry ({}); skipped",
                field_reason(field.as_deref(), reason)
            ),
        }
    }
}
