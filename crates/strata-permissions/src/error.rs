//! Errors of reading rules and settings.

use std::path::PathBuf;

/// A rule that cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("permission rule `{rule}`: {reason}")]
pub struct RuleError {
    /// The rule as written.
    pub rule: String,
    /// What is wrong with it.
    pub reason: String,
}

/// A settings file or config section that cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum SettingsError {
    /// The file exists but cannot be read.
    #[error("cannot read {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The file is not the JSON expected.
    #[error("{path}: {message}")]
    Json {
        /// The file.
        path: PathBuf,
        /// The parser's message with the field path, line and column.
        message: String,
    },
    /// A rule in it is malformed.
    #[error("{path}: {field}: {error}")]
    Rule {
        /// The file (or config) it came from.
        path: String,
        /// `permissions.allow[3]` and the like.
        field: String,
        /// The rule's error.
        error: RuleError,
    },
    /// An unknown mode name.
    #[error("{0}")]
    Mode(String),
}
