//! An error and its causes on one line, each said once.

/// `err` and its causes joined with ": ", leaving out a cause whose text the message before it
/// already carries (many errors print their source inside their own message, and anyhow's
/// `{:#}` would say it twice: "X: X").
pub fn chain_text(err: &anyhow::Error) -> String {
    let mut out = String::new();
    let mut previous = String::new();
    for cause in err.chain() {
        let text = cause.to_string();
        if !previous.is_empty() && previous.contains(text.as_str()) {
            continue;
        }
        if !out.is_empty() {
            out.push_str(": ");
        }
        out.push_str(&text);
        previous = text;
    }
    out
}

/// Whether `err` comes from writing to a pipe whose reader has gone (`| head`).
pub fn is_broken_pipe(err: &anyhow::Error) -> bool {
    err.chain().any(|cause| {
        cause
            .downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// As thiserror's `#[error("transport error: {0}")]` with `#[source]` prints.
    #[derive(Debug)]
    struct Wrapping(std::io::Error);

    impl std::fmt::Display for Wrapping {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            write!(f, "transport error: {}", self.0)
        }
    }

    impl std::error::Error for Wrapping {
        fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
            Some(&self.0)
        }
    }

    #[test]
    fn a_cause_already_in_its_message_is_said_once() {
        let io = std::io::Error::other("connection refused");
        let err = anyhow::Error::new(Wrapping(io)).context("the run failed");
        assert_eq!(
            format!("{err:#}"),
            "the run failed: transport error: connection refused: connection refused"
        );
        assert_eq!(
            chain_text(&err),
            "the run failed: transport error: connection refused"
        );
        let plain = anyhow::anyhow!("line 3: bad").context("opening a.jsonl");
        assert_eq!(chain_text(&plain), "opening a.jsonl: line 3: bad");
    }
}
