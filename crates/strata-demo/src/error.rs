//! Why the demo could not play: what it was doing, and the error that stopped it.

/// What the demo was doing when it failed, with the cause when there is one.
#[derive(Debug, thiserror::Error)]
#[error("{what}")]
pub struct DemoError {
    what: String,
    #[source]
    source: Option<Box<dyn std::error::Error + Send + Sync>>,
}

impl DemoError {
    /// A failure with no underlying error.
    pub fn new(what: impl Into<String>) -> Self {
        Self {
            what: what.into(),
            source: None,
        }
    }
}

/// Says what was being done when a step failed or found nothing.
pub(crate) trait Doing<T> {
    /// `what` as the error, the failure (if any) as its source.
    fn doing(self, what: impl FnOnce() -> String) -> Result<T, DemoError>;
}

impl<T, E: std::error::Error + Send + Sync + 'static> Doing<T> for Result<T, E> {
    fn doing(self, what: impl FnOnce() -> String) -> Result<T, DemoError> {
        self.map_err(|error| DemoError {
            what: what(),
            source: Some(Box::new(error)),
        })
    }
}

impl<T> Doing<T> for Option<T> {
    fn doing(self, what: impl FnOnce() -> String) -> Result<T, DemoError> {
        self.ok_or_else(|| DemoError::new(what()))
    }
}
