//! Which of strata's environment variables tool commands inherit: everything except
//! credentials, so a model running `env` cannot read a provider key into the session.

use std::collections::BTreeSet;

/// Suffixes of variable names treated as credentials by default.
const CREDENTIAL_SUFFIXES: [&str; 4] = ["_API_KEY", "_OAUTH_TOKEN", "_AUTH_TOKEN", "_SECRET_KEY"];
/// Names treated as credentials by default (AWS keys, strata's own key variable).
const CREDENTIAL_NAMES: [&str; 5] = [
    "STRATA_API_KEY",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "AWS_BEARER_TOKEN_BEDROCK",
    "AWS_ACCESS_KEY_ID",
];

/// The environment policy of tool processes: variables dropped, and an allow-list that
/// passes named ones on on purpose.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolEnvironment {
    dropped_names: BTreeSet<String>,
    dropped_suffixes: Vec<String>,
    allowed: BTreeSet<String>,
}

impl Default for ToolEnvironment {
    /// Drops `*_API_KEY`, `*_OAUTH_TOKEN`, `*_AUTH_TOKEN`, `*_SECRET_KEY`, AWS credentials and
    /// `STRATA_API_KEY`.
    fn default() -> Self {
        Self {
            dropped_names: CREDENTIAL_NAMES.iter().map(|n| (*n).to_owned()).collect(),
            dropped_suffixes: CREDENTIAL_SUFFIXES
                .iter()
                .map(|s| (*s).to_owned())
                .collect(),
            allowed: BTreeSet::new(),
        }
    }
}

impl ToolEnvironment {
    /// A policy that passes every variable on (the behaviour of a plain child process).
    pub fn inherit_all() -> Self {
        Self {
            dropped_names: BTreeSet::new(),
            dropped_suffixes: Vec::new(),
            allowed: BTreeSet::new(),
        }
    }

    /// Also drops these names (e.g. every provider's key variables from the capability table).
    pub fn drop_names<I, S>(mut self, names: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.dropped_names.extend(names.into_iter().map(Into::into));
        self
    }

    /// Passes these names on even when they look like credentials.
    pub fn allow<I, S>(mut self, names: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.allowed.extend(names.into_iter().map(Into::into));
        self
    }

    /// Whether a variable called `name` is kept from tool processes.
    pub fn drops(&self, name: &str) -> bool {
        !self.allowed.contains(name)
            && (self.dropped_names.contains(name)
                || self
                    .dropped_suffixes
                    .iter()
                    .any(|s| name.ends_with(s.as_str())))
    }

    /// Removes the dropped variables of this process's environment from `command`'s.
    pub fn apply(&self, command: &mut tokio::process::Command) {
        for (name, _) in std::env::vars_os() {
            if let Some(text) = name.to_str()
                && self.drops(text)
            {
                command.env_remove(&name);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_drop_unless_allowed() {
        let env = ToolEnvironment::default()
            .drop_names(["GH_TOKEN"])
            .allow(["GITHUB_PAT_API_KEY"]);
        assert!(env.drops("ANTHROPIC_API_KEY"));
        assert!(env.drops("AWS_SECRET_ACCESS_KEY"));
        assert!(env.drops("GH_TOKEN"));
        assert!(!env.drops("GITHUB_PAT_API_KEY"));
        assert!(!env.drops("PATH"));
        assert!(!env.drops("HOME"));
        assert!(!ToolEnvironment::inherit_all().drops("OPENAI_API_KEY"));
    }
}
