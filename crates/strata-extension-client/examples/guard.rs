//! A rules-layer guard as an extension: before a `bash` call whose command is destructive
//! (`rm -rf`, `git reset --hard`, `dd of=`, …) and names a path outside the project, it asks
//! the user through strata's UI; a "no" (or no one to ask) denies the call with a reason the
//! model reads.
//!
//! Run it as an extension: `program = "cargo", args = ["run", "-q", "-p",
//! "strata-extension-client", "--example", "guard"]`. The guard strata ships is the
//! `strata-play-guard` binary (crates/strata-plays), built on this crate the same way.

use serde_json::{Value, json};
use strata_extension_client::{Handler, Manifest, Ui, run};

struct Guard {
    project: std::path::PathBuf,
}

impl Handler for Guard {
    fn hook(&mut self, event: &str, input: &Value, ui: &mut Ui<'_>) -> Value {
        let command = input["tool_input"]["command"].as_str().unwrap_or_default();
        let destructive = ["rm -rf", "rm -fr", "git reset --hard", "dd of="]
            .iter()
            .any(|pattern| command.contains(pattern));
        let outside = command.split_whitespace().any(|word| {
            word.starts_with('/') && !word.starts_with(&*self.project.to_string_lossy())
        });
        if event != "PreToolUse" || !destructive || !outside {
            return json!({});
        }
        if ui.confirm("Destructive command outside the project", command) {
            return json!({});
        }
        json!({"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny",
            "permissionDecisionReason": format!("the user did not allow `{command}` outside the project")}})
    }
}

fn main() -> std::io::Result<()> {
    let manifest = Manifest {
        name: "guard".into(),
        version: env!("CARGO_PKG_VERSION").into(),
        hooks: vec!["PreToolUse".into()],
        ..Manifest::default()
    };
    let project = std::env::current_dir()?;
    run(manifest, Guard { project })
}
