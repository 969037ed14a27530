//! Prints what compacting a session would summarize and keep, without calling a model.
//!
//! `cargo run -p strata-compaction --example plan -- SESSION.jsonl [KEEP_RECENT_TOKENS]`

use strata_compaction::{
    CompactionSettings, SummaryPart, cache_friendly_instruction, estimate_context_tokens, prepare,
    should_compact,
};
use strata_session::Session;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let Some(path) = args.next() else {
        eprintln!("usage: plan SESSION.jsonl [KEEP_RECENT_TOKENS]");
        std::process::exit(2);
    };
    let mut settings = CompactionSettings::default();
    if let Some(keep) = args.next() {
        settings.keep_recent_tokens = keep.parse()?;
    }
    let opened = Session::open(&path)?;
    let tree = opened.session.tree();
    let Some(leaf) = tree.leaf().cloned() else {
        println!("empty session");
        return Ok(());
    };
    let context = strata_context::build(tree, Some(&leaf))?;
    let tokens = estimate_context_tokens(&context);
    println!(
        "context: ~{tokens} tokens; due on a 200k window: {}",
        should_compact(tokens, 200_000, &settings)
    );
    match prepare(tree, &leaf, &settings)? {
        None => println!("nothing to compact"),
        Some(preparation) => {
            println!(
                "summarize {} messages{}, keep from {}",
                preparation.messages_to_summarize.len(),
                if preparation.is_split_turn {
                    format!(" + a turn prefix of {}", preparation.turn_prefix.len())
                } else {
                    String::new()
                },
                preparation.first_kept_entry_id
            );
            let lists = preparation.file_lists();
            println!(
                "read: {:?}\nmodified: {:?}",
                lists.read_files, lists.modified_files
            );
            println!(
                "\n--- instruction ---\n{}",
                cache_friendly_instruction(&preparation, SummaryPart::History, None)
            );
        }
    }
    Ok(())
}
