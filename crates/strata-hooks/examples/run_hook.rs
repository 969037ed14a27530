//! Runs the `PreToolUse` hooks of a settings file against one bash command and prints the
//! outcome: `cargo run -p strata-hooks --example run_hook -- settings.json 'rm -rf /'`.

use std::time::Duration;

use strata_hooks::{HookEvent, HookInput, HookRunner, HookSet, Scope, ToolNames};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let path = args.next().unwrap_or_else(|| "settings.json".into());
    let command = args.next().unwrap_or_else(|| "ls".into());
    let text = std::fs::read_to_string(&path)?;
    let set = HookSet::parse(&text, path.as_ref(), Scope::User, Duration::from_secs(60))?;
    for problem in set.problems() {
        eprintln!("skipped: {problem}");
    }
    let arguments = serde_json::json!({ "command": command });
    let input = HookInput::new(HookEvent::PreToolUse, "example", "", ".")
        .with("tool_name", ToolNames::hook_name("bash"))
        .with("tool_input", ToolNames::hook_input("bash", &arguments))
        .with_subject("bash")
        .with_subject(ToolNames::hook_name("bash"));
    let outcome = HookRunner::new(set, std::env::current_dir()?)
        .run(&input)
        .await;
    println!(
        "decision: {:?}, reason: {:?}, updated input: {:?}",
        outcome.decision, outcome.reason, outcome.updated_input
    );
    Ok(())
}
