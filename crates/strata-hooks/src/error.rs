//! Errors reading a hook file.

use std::path::PathBuf;

/// A hook file that could not be read as a whole.
#[derive(Debug, thiserror::Error)]
pub enum HookError {
    /// The file exists but could not be read.
    #[error("{path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The file is not JSON (line and column of the first error).
    #[error("{path}:{line}:{column}: not JSON: {message}")]
    Json {
        /// The file.
        path: PathBuf,
        /// 1-based line.
        line: usize,
        /// 1-based column.
        column: usize,
        /// serde_json's message.
        message: String,
    },
}
