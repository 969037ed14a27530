//! Capabilities learned from the provider: when a request using a feature the row claims is
//! refused with a 400 naming that feature, the adapter records the lesson (provider, model,
//! feature, date, the error) and sends the turn again without it. Lessons live in a JSON file
//! of the user's state; a later session reads them and starts on what was learned. A lesson
//! holds a hash of the row's capabilities for the model as the table had them, so a table
//! refresh that changes the row forgets it.
//!
//! Only features an adapter can leave out by itself are learned here (the request is the same
//! conversation without them): the provider's cache diagnosis, effort said mid-conversation,
//! the output-free warm-up, and message threads.

use std::hash::{DefaultHasher, Hash, Hasher};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::SystemTime;

use serde::{Deserialize, Serialize};

use crate::capabilities::{Capabilities, Prewarm};

/// A row feature an adapter can drop after the provider refused it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Learnable {
    /// `Capabilities::cache_diagnostics`.
    CacheDiagnostics,
    /// `Capabilities::mid_conversation_effort`.
    MidConversationEffort,
    /// `Capabilities::prewarm`.
    Prewarm,
    /// `Capabilities::message_threads`.
    MessageThreads,
}

impl Learnable {
    /// The table's name of the feature.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::CacheDiagnostics => "cache-diagnostics",
            Self::MidConversationEffort => "mid-conversation-effort",
            Self::Prewarm => "prewarm",
            Self::MessageThreads => "message-threads",
        }
    }

    /// Whether `caps` claims the feature.
    pub fn claimed_by(self, caps: &Capabilities) -> bool {
        match self {
            Self::CacheDiagnostics => caps.cache_diagnostics,
            Self::MidConversationEffort => caps.mid_conversation_effort,
            Self::Prewarm => caps.prewarm != Prewarm::None,
            Self::MessageThreads => caps.message_threads,
        }
    }

    fn withdraw(self, caps: &mut Capabilities) {
        match self {
            Self::CacheDiagnostics => caps.cache_diagnostics = false,
            Self::MidConversationEffort => caps.mid_conversation_effort = false,
            Self::Prewarm => caps.prewarm = Prewarm::None,
            Self::MessageThreads => caps.message_threads = false,
        }
    }

    /// The feature a 400's body names, among `used` (the features the refused request relied
    /// on): the wire fields and beta headers of each.
    pub fn named_in(body: &str, used: &[Learnable]) -> Option<Learnable> {
        let marks = |feature: Learnable| -> &'static [&'static str] {
            match feature {
                Self::CacheDiagnostics => {
                    &["diagnostics", "comparison_response_id", "cache-diagnosis"]
                }
                Self::MidConversationEffort => &[
                    "output_config",
                    "configuration_update",
                    "mid-conversation-output-config",
                ],
                Self::Prewarm => &["prewarm", "max_tokens"],
                // anthropic-python 2.17.0 `ThreadUnsupportedRequestError`; the other
                // `thread_*` refusals say to replay, not that threads are unsupported.
                Self::MessageThreads => {
                    &["thread_unsupported_request", "thread:", "message-threads"]
                }
            }
        };
        used.iter()
            .copied()
            .find(|feature| marks(*feature).iter().any(|mark| body.contains(mark)))
    }
}

/// One thing learned about a model.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Lesson {
    /// Provider row id.
    pub provider: String,
    /// Model id.
    pub model: String,
    /// The feature the provider refused.
    pub feature: Learnable,
    /// When, as an HTTP date (`Sat, 05 Dec 2026 13:00:00 GMT`).
    pub learned_at: String,
    /// The provider's error.
    pub error: String,
    /// Hash of the row's capabilities for the model when it was learned.
    pub table: String,
}

impl Lesson {
    /// The lesson as one listing note: what the model does without, since when, and the first
    /// line of the error that taught it (at most 160 characters).
    pub fn note(&self) -> String {
        let error: String = self
            .error
            .lines()
            .next()
            .unwrap_or("")
            .chars()
            .take(160)
            .collect();
        format!(
            "# learned: {}/{} does without {} since {}: {error}",
            self.provider,
            self.model,
            self.feature.as_str(),
            self.learned_at
        )
    }
}

/// Why the lessons file could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum LearnedError {
    /// Reading or writing the file failed.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The file is not a list of lessons.
    #[error("{path}: not a list of learned capabilities: {message}")]
    Format {
        /// The file.
        path: PathBuf,
        /// The parser's message (line and column).
        message: String,
    },
}

/// The lessons of one user, kept in a file (or in memory).
#[derive(Debug, Default)]
pub struct LearnedCapabilities {
    path: Option<PathBuf>,
    lessons: Mutex<Vec<Lesson>>,
}

/// The hash a lesson keeps of the table's capabilities for its model.
pub fn table_hash(caps: &Capabilities) -> String {
    let mut hasher = DefaultHasher::new();
    serde_json::to_string(caps)
        .unwrap_or_default()
        .hash(&mut hasher);
    format!("{:016x}", hasher.finish())
}

impl LearnedCapabilities {
    /// Lessons kept in memory only.
    pub fn in_memory() -> Self {
        Self::default()
    }

    /// The lessons in `path` (none when the file does not exist yet); new lessons are saved
    /// there.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, LearnedError> {
        let path = path.as_ref().to_path_buf();
        let lessons = match std::fs::read_to_string(&path) {
            Ok(text) => serde_json::from_str(&text).map_err(|e| LearnedError::Format {
                path: path.clone(),
                message: e.to_string(),
            })?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
            Err(source) => return Err(LearnedError::Io { path, source }),
        };
        Ok(Self {
            path: Some(path),
            lessons: Mutex::new(lessons),
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Lesson>> {
        self.lessons
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Every lesson, in the order learned.
    pub fn lessons(&self) -> Vec<Lesson> {
        self.lock().clone()
    }

    /// `caps` (the table's for `provider`/`model`) without the features learned withdrawn;
    /// lessons made against another version of the row are ignored.
    pub fn apply(&self, provider: &str, model: &str, caps: &Capabilities) -> Capabilities {
        let table = table_hash(caps);
        let mut out = caps.clone();
        for lesson in self.lock().iter() {
            if lesson.provider == provider && lesson.model == model && lesson.table == table {
                lesson.feature.withdraw(&mut out);
            }
        }
        out
    }

    /// The lessons still in force, in the order learned: those made against `table`'s current
    /// capabilities for their provider and model. A lesson made against another version of
    /// the row was forgotten by the table refresh that changed it.
    pub fn in_force(&self, table: impl Fn(&str, &str) -> Capabilities) -> Vec<Lesson> {
        self.lock()
            .iter()
            .filter(|l| l.table == table_hash(&table(&l.provider, &l.model)))
            .cloned()
            .collect()
    }

    /// Records that `provider`/`model` refused `feature` with `error`, where `table` is the
    /// row's capabilities for the model as the table has them; saves the file. The lesson is
    /// kept in memory even when saving fails (the error says why).
    pub fn learn(
        &self,
        provider: &str,
        model: &str,
        table: &Capabilities,
        feature: Learnable,
        error: &str,
    ) -> Result<(), LearnedError> {
        let lesson = Lesson {
            provider: provider.to_owned(),
            model: model.to_owned(),
            feature,
            learned_at: httpdate::fmt_http_date(SystemTime::now()),
            error: error.chars().take(2000).collect(),
            table: table_hash(table),
        };
        let snapshot = {
            let mut lessons = self.lock();
            lessons.retain(|l| {
                !(l.provider == lesson.provider && l.model == lesson.model && l.feature == feature)
            });
            lessons.push(lesson);
            lessons.clone()
        };
        let Some(path) = &self.path else {
            return Ok(());
        };
        let io = |source| LearnedError::Io {
            path: path.clone(),
            source,
        };
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(io)?;
        }
        let text = serde_json::to_string_pretty(&snapshot).unwrap_or_else(|_| "[]".into());
        // Written whole beside the file and renamed over it: a reader never sees half.
        let tmp = path.with_extension("json.tmp");
        std::fs::write(&tmp, text + "\n").map_err(io)?;
        std::fs::rename(&tmp, path).map_err(io)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lesson_withdraws_the_feature_until_the_row_changes() {
        let dir = std::env::temp_dir().join(format!("strata-learned-{}", std::process::id()));
        let path = dir.join("learned.json");
        let _ = std::fs::remove_file(&path);
        let caps = Capabilities {
            cache_diagnostics: true,
            prewarm: Prewarm::ZeroMaxTokens,
            ..Capabilities::default()
        };
        let learned = LearnedCapabilities::open(&path).unwrap();
        assert_eq!(learned.apply("p", "m", &caps), caps);
        learned
            .learn(
                "p",
                "m",
                &caps,
                Learnable::CacheDiagnostics,
                "diagnostics: Extra inputs",
            )
            .unwrap();
        // A later session reads the file.
        let again = LearnedCapabilities::open(&path).unwrap();
        let applied = again.apply("p", "m", &caps);
        assert!(!applied.cache_diagnostics);
        assert_eq!(applied.prewarm, Prewarm::ZeroMaxTokens);
        assert_eq!(again.apply("p", "other", &caps), caps);
        let lesson = &again.lessons()[0];
        assert!(lesson.learned_at.ends_with("GMT"), "{}", lesson.learned_at);
        assert_eq!(lesson.error, "diagnostics: Extra inputs");
        // A refreshed row (here: another minimum) forgets it.
        let refreshed = Capabilities {
            min_cacheable_tokens: 2048,
            ..caps.clone()
        };
        assert!(again.apply("p", "m", &refreshed).cache_diagnostics);
        assert_eq!(again.in_force(|_, _| caps.clone()).len(), 1);
        assert!(again.in_force(|_, _| refreshed.clone()).is_empty());
        std::fs::write(&path, "{not json").unwrap();
        let err = LearnedCapabilities::open(&path).unwrap_err().to_string();
        assert!(err.contains("learned.json"), "{err}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn the_feature_is_found_in_the_error_among_those_used() {
        let used = [Learnable::CacheDiagnostics, Learnable::Prewarm];
        assert_eq!(
            Learnable::named_in("diagnostics: Extra inputs are not permitted", &used),
            Some(Learnable::CacheDiagnostics)
        );
        assert_eq!(
            Learnable::named_in(
                "max_tokens: Input should be greater than or equal to 1",
                &used
            ),
            Some(Learnable::Prewarm)
        );
        assert_eq!(Learnable::named_in("output_config: nope", &used), None);
        assert_eq!(Learnable::named_in("messages.0: bad", &used), None);
    }
}
