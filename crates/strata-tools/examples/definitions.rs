//! Prints the definitions of every built-in tool as sent to a provider:
//! `cargo run -p strata-tools --example definitions`.

use strata_tools::ToolSet;

fn main() {
    for definition in ToolSet::all().definitions() {
        match serde_json::to_string_pretty(&definition) {
            Ok(json) => println!("{json}"),
            Err(e) => eprintln!("cannot serialize {}: {e}", definition.name),
        }
    }
}
