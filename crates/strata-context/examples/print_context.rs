//! Prints the context of a session file as text: `cargo run -p strata-context --example
//! print_context -- SESSION.jsonl [LEAF_ID] [--pi]`.
//!
//! With `--pi` it prints Pi's `{messages, thinkingLevel, model}` JSON instead.

use std::process::ExitCode;

use strata_context::{build, to_pi_json, to_text};
use strata_session::{EntryId, Session};

fn main() -> ExitCode {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let pi = args.iter().any(|arg| arg == "--pi");
    args.retain(|arg| arg != "--pi");
    let Some(path) = args.first() else {
        eprintln!("usage: print_context SESSION.jsonl [LEAF_ID] [--pi]");
        return ExitCode::from(2);
    };
    let opened = match Session::open(path) {
        Ok(opened) => opened,
        Err(error) => {
            eprintln!("{error}");
            return ExitCode::FAILURE;
        }
    };
    for diagnostic in &opened.diagnostics {
        eprintln!("warning: {diagnostic}");
    }
    let tree = opened.session.tree();
    let leaf = match args.get(1) {
        Some(leaf) => Some(EntryId::new(leaf)),
        None => tree.leaf().cloned(),
    };
    match build(tree, leaf.as_ref()) {
        Ok(context) if pi => match serde_json::to_string_pretty(&to_pi_json(&context)) {
            Ok(json) => println!("{json}"),
            Err(error) => {
                eprintln!("{error}");
                return ExitCode::FAILURE;
            }
        },
        Ok(context) => print!("{}", to_text(&context)),
        Err(error) => {
            eprintln!("{path}: {error}");
            return ExitCode::FAILURE;
        }
    }
    ExitCode::SUCCESS
}
