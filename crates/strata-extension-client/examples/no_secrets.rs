//! A small extension: blocks a prompt that looks like it holds a password, and says so in
//! the footer. Run it as an extension with `program = "cargo"`, `args = ["run", "-q", "-p",
//! "strata-extension-client", "--example", "no_secrets"]`; strata's own plays (the
//! rules-layer guard) are built the same way in `crates/strata-plays`.

use serde_json::{Value, json};
use strata_extension_client::{Handler, Manifest, Ui, run};

struct NoSecrets {
    blocked: usize,
}

impl Handler for NoSecrets {
    fn hook(&mut self, event: &str, input: &Value, ui: &mut Ui<'_>) -> Value {
        let prompt = input["prompt"].as_str().unwrap_or_default().to_lowercase();
        if event != "UserPromptSubmit" || !prompt.contains("password") {
            return json!({});
        }
        self.blocked += 1;
        ui.status(&format!("no-secrets: {} blocked", self.blocked));
        json!({"decision": "block", "reason": "that prompt seems to hold a password"})
    }
}

fn main() -> std::io::Result<()> {
    let manifest = Manifest {
        name: "no-secrets".into(),
        version: env!("CARGO_PKG_VERSION").into(),
        hooks: vec!["UserPromptSubmit".into()],
        ..Manifest::default()
    };
    run(manifest, NoSecrets { blocked: 0 })
}
