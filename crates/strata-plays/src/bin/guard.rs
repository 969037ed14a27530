//! `strata-play-guard`: the rules-layer guard as an extension (see the crate's README).

use serde_json::{Value, json};
use strata_extension_client::{Handler, Manifest, Ui, run};
use strata_plays::guard::{is_destructive, outside_paths};

struct Guard {
    project: std::path::PathBuf,
    home: Option<std::path::PathBuf>,
}

impl Handler for Guard {
    fn hook(&mut self, event: &str, input: &Value, ui: &mut Ui<'_>) -> Value {
        let command = input["tool_input"]["command"].as_str().unwrap_or_default();
        if event != "PreToolUse" || input["tool_name"] != "Bash" || !is_destructive(command) {
            return json!({});
        }
        let outside = outside_paths(command, &self.project, self.home.as_deref());
        if outside.is_empty() {
            return json!({});
        }
        let paths: Vec<String> = outside.iter().map(|p| p.display().to_string()).collect();
        let question = format!(
            "`{command}` changes {} outside the project. Run it?",
            paths.join(", ")
        );
        if ui.confirm("Destructive command outside the project", &question) {
            return json!({});
        }
        json!({"hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "deny",
            "permissionDecisionReason": format!(
                "Blocked by the guard: `{command}` is destructive and reaches {} outside the project; the user did not allow it.",
                paths.join(", ")
            ),
        }})
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
    let home = std::env::var_os("HOME").map(Into::into);
    run(manifest, Guard { project, home })
}
