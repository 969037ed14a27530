//! Prints what a session file paid: `cargo run -p strata-accounting --example totals -- FILE`.

use strata_accounting::{Totals, find_breaks, records};
use strata_session::Session;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let Some(path) = std::env::args().nth(1) else {
        eprintln!("usage: totals SESSION.jsonl");
        return Ok(());
    };
    let opened = Session::open(&path)?;
    let records = records(opened.session.tree());
    let totals = Totals::of(&records);
    println!(
        "{} requests ({} keep-warm), read {}, written {} ({} for an hour), ${:.4}",
        totals.requests,
        totals.pings,
        totals.usage.cache_read,
        totals.usage.cache_write(),
        totals.usage.cache_write_1h,
        totals.cost
    );
    for broke in find_breaks(&records) {
        println!(
            "cache broke at request {} ({}): read {} of {}",
            broke.request, broke.id, broke.cache_read, broke.previous_prompt
        );
    }
    Ok(())
}
