//! The permission modes.

use serde::{Deserialize, Serialize};

/// How calls that no rule decides are treated.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    /// Read-only: calls that change files or run commands are refused; other calls that no
    /// rule allows are asked.
    Plan,
    /// Reads run; every other call that no rule allows is put to the user.
    Ask,
    /// Reads and file edits inside the project run; commands and the rest are asked.
    Edits,
    /// Every call that no rule denies or asks about runs (strata's behaviour before modes).
    #[default]
    Auto,
}

impl Mode {
    /// Every mode, in the order a key cycles through them.
    pub const ALL: [Mode; 4] = [Mode::Auto, Mode::Edits, Mode::Ask, Mode::Plan];

    /// The name used in config, flags and Ops.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Plan => "plan",
            Self::Ask => "ask",
            Self::Edits => "edits",
            Self::Auto => "auto",
        }
    }

    /// Reads a name: strata's (`plan`, `ask`, `edits`, `auto`) or Claude Code's `defaultMode`
    /// values (`plan`, `default`, `acceptEdits`, `bypassPermissions`, `auto`, `dontAsk`).
    pub fn parse(name: &str) -> Option<Self> {
        Some(match name {
            "plan" => Self::Plan,
            "ask" | "default" => Self::Ask,
            "edits" | "acceptEdits" | "accept-edits" => Self::Edits,
            "auto" | "bypassPermissions" | "dontAsk" => Self::Auto,
            _ => return None,
        })
    }

    /// The mode after this one, for a key that cycles.
    pub fn next(self) -> Self {
        let i = Self::ALL.iter().position(|m| *m == self).unwrap_or(0);
        Self::ALL[(i + 1) % Self::ALL.len()]
    }

    /// What the model is told about the mode: the text of the `permissions` system section,
    /// `None` in `auto` (no section: the prompt stays what it was before modes existed).
    pub fn instructions(self) -> Option<&'static str> {
        match self {
            Self::Auto => None,
            Self::Plan => Some(
                "Permission mode: plan. You may read and search files, but tools that change \
                 files or run commands are refused. Investigate and present a plan; the user \
                 switches the mode when it is time to carry it out.",
            ),
            Self::Ask => Some(
                "Permission mode: ask. Reads run; every other tool call that the user's rules \
                 do not allow is put to the user first, who may refuse it with a reason.",
            ),
            Self::Edits => Some(
                "Permission mode: edits. Reads and file edits inside the project run; shell \
                 commands and other tools are put to the user first.",
            ),
        }
    }
}

impl std::fmt::Display for Mode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for Mode {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s).ok_or_else(|| {
            format!("unknown permission mode `{s}` (expected plan, ask, edits or auto)")
        })
    }
}
