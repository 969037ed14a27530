//! `strata-play-sticky-note`: a sticky note (see the crate's README). It keeps a short note —
//! goal, files changed, open items — from the `UserPromptSubmit` and `PostToolUse` hooks,
//! adds it at the end of the conversation when it changed since it was last shown, owns the
//! `compaction` slot and answers a compaction with the note instead of a new summary. `/note`
//! shows it.

use serde_json::{Value, json};
use strata_extension_client::{CommandSpec, Handler, Manifest, Ui, run};
use strata_plays::sticky::Note;

#[derive(Default)]
struct Sticky {
    note: Note,
    /// The note as the model last saw it.
    shown: Option<String>,
}

impl Handler for Sticky {
    fn hook(&mut self, event: &str, input: &Value, _ui: &mut Ui<'_>) -> Value {
        match event {
            "UserPromptSubmit" => {
                self.note
                    .prompt(input["prompt"].as_str().unwrap_or_default());
                let text = self.note.render();
                if self.shown.as_deref() == Some(text.as_str()) {
                    return json!({});
                }
                self.shown = Some(text.clone());
                json!({"hookSpecificOutput": {
                    "hookEventName": "UserPromptSubmit",
                    "additionalContext": text,
                }})
            }
            "PostToolUse" => {
                self.note.tool(input);
                json!({})
            }
            _ => json!({}),
        }
    }

    fn memory(&mut self, slot: &str, params: &Value, _ui: &mut Ui<'_>) -> Value {
        if slot != "compaction" {
            return json!({});
        }
        let files = params["modifiedFiles"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        self.note
            .add_changed(files.iter().filter_map(Value::as_str));
        let text = self.note.render();
        // After the compaction the note is the summary: the model has seen this one.
        self.shown = Some(text.clone());
        json!({ "summary": text })
    }

    fn command(&mut self, name: &str, _args: &str, _ui: &mut Ui<'_>) -> String {
        if name == "note" {
            self.note.render()
        } else {
            format!("unknown command {name}")
        }
    }
}

fn main() -> std::io::Result<()> {
    let manifest = Manifest {
        name: "sticky-note".into(),
        version: env!("CARGO_PKG_VERSION").into(),
        hooks: vec!["UserPromptSubmit".into(), "PostToolUse".into()],
        commands: vec![CommandSpec {
            name: "note".into(),
            description: "show the sticky note".into(),
        }],
        slots: vec!["compaction".into()],
        ..Manifest::default()
    };
    run(manifest, Sticky::default())
}
