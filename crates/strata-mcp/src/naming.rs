//! Model-facing tool names: Pi 1.x's `mcp__<server>__<tool>`.
//!
//! Pi 1.x and Claude Code both name MCP tools `mcp__<server>__<tool>`; strata takes the same
//! rule, so a session moved between them keeps calling the same names and a Pi session's
//! ledger stays valid in strata. Characters other than ASCII letters, digits and `_` become
//! `_`; a name longer than 64 characters (the providers' limit) or already taken by another
//! tool is cut and given an 8-hex suffix of SHA-256(`server\0tool`), as Pi does.

use sha2::{Digest, Sha256};

/// The longest tool name providers accept.
pub const MAX_TOOL_NAME_LENGTH: usize = 64;

/// The prefix of every MCP tool's name.
pub const PREFIX: &str = "mcp__";

/// The model-facing name of `tool` on `server`; `is_taken` says whether a candidate already
/// belongs to another tool.
pub fn tool_name(server: &str, tool: &str, is_taken: impl Fn(&str) -> bool) -> String {
    let name: String = format!("{PREFIX}{server}__{tool}")
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if name.len() <= MAX_TOOL_NAME_LENGTH && !is_taken(&name) {
        return name;
    }
    let digest = Sha256::digest(format!("{server}\0{tool}").as_bytes());
    let hash: String = digest
        .iter()
        .take(4)
        .map(|byte| format!("{byte:02x}"))
        .collect();
    let keep = MAX_TOOL_NAME_LENGTH - hash.len() - 1;
    let head: String = name.chars().take(keep).collect();
    format!("{head}_{hash}")
}

/// The plain (unsuffixed) name, for collision checks.
pub fn plain_name(server: &str, tool: &str) -> String {
    tool_name(server, tool, |_| false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_pi() {
        assert_eq!(
            tool_name("everything", "echo", |_| false),
            "mcp__everything__echo"
        );
        assert_eq!(
            tool_name("dev-radius", "get.sum", |_| false),
            "mcp__dev_radius__get_sum"
        );
    }

    #[test]
    fn long_or_taken_names_get_a_stable_hash_suffix() {
        let long = "x".repeat(80);
        let name = tool_name("s", &long, |_| false);
        assert_eq!(name.len(), MAX_TOOL_NAME_LENGTH);
        assert_eq!(name, tool_name("s", &long, |_| false), "stable");
        let taken = tool_name("s", "a-b", |candidate| candidate == "mcp__s__a_b");
        assert!(taken.starts_with("mcp__s__a_b_"), "{taken}");
        assert_eq!(taken.len(), "mcp__s__a_b_".len() + 8);
        assert_ne!(taken, tool_name("s", "a_b", |c| c == "mcp__s__a_b"));
    }
}
