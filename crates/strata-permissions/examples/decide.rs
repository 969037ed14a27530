//! Judges a few calls against Claude Code rules: `cargo run -p strata-permissions --example decide`.

use std::path::PathBuf;

use strata_permissions::{Bases, CallView, List, Mode, Policy, Rule, Source};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let bases = Bases {
        home: std::env::var_os("HOME").map(PathBuf::from),
        root: std::env::current_dir()?,
        cwd: std::env::current_dir()?,
    };
    let mut policy = Policy::new(Mode::Ask, vec![bases.root.clone()]);
    for (list, text) in [
        (List::Allow, "Bash(git diff:*)"),
        (List::Deny, "Bash(git push:*)"),
    ] {
        policy.push(Rule::parse(text, &bases)?, list, Source::Session);
    }
    for command in ["git diff HEAD", "git push", "make"] {
        let d = policy.decide(&CallView::command("bash", command));
        println!("{command}: {:?} — {}", d.verdict, d.reason);
    }
    Ok(())
}
